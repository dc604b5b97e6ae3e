// Allocates marker objects in three phases and waits for a line on
// standard input between them, so that a test can act on the recording
// at known points (a comment, a heap dump, allocation logging off for
// phase B). Prints "phase X done" after each phase and a JSON line with
// its counts at the end. Run by crates/cli/tests/collect.rs under the
// agent, streaming to `clrprof collect`.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

class PhaseA { public int V; }
class PhaseB { public int V; }
class PhaseC { public int V; }

static class P
{
    const int ACount = 1000;
    const int BCount = 2000;
    const int CCount = 3000;

    static readonly List<object> Keep = new List<object>();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunA() { for (int i = 0; i < ACount; i++) Keep.Add(new PhaseA { V = i }); }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunB() { for (int i = 0; i < BCount; i++) { var b = new PhaseB { V = i }; if (i % 2 == 0) Keep.Add(b); } }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunC() { for (int i = 0; i < CCount; i++) { var c = new PhaseC { V = i }; if (i % 3 == 0) Keep.Add(c); } }

    static void Step(string name)
    {
        Console.WriteLine("phase " + name + " done");
        Console.Out.Flush();
        Console.In.ReadLine();
    }

    static void Main()
    {
        Keep.Capacity = ACount + BCount + CCount;
        RunA();
        Step("A");
        RunB();
        Step("B");
        RunC();
        GC.Collect();
        GC.KeepAlive(Keep);
        Console.WriteLine("{\"types\":{\"PhaseA\":" + ACount + ",\"PhaseB\":" + BCount + ",\"PhaseC\":" + CCount + "},"
            + "\"gc\":[" + GC.CollectionCount(0) + "," + GC.CollectionCount(1) + "," + GC.CollectionCount(2) + "]}");
    }
}
