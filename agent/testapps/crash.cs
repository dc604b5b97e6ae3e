// Allocates marker objects, then dies of an unhandled exception: the agent
// gets no Shutdown callback, and the log must still load.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

class CrashMarker { public int X; }

static class P
{
    public const int Count = 100;
    static readonly List<object> Keep = new List<object>();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Alloc()
    {
        for (int i = 0; i < Count; i++) Keep.Add(new CrashMarker());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Die()
    {
        throw new InvalidOperationException("clrprof crash test");
    }

    static void Main()
    {
        Alloc();
        Console.WriteLine("{\"types\":{\"CrashMarker\":" + Count + "}}");
        Console.Out.Flush();
        Die();
    }
}
