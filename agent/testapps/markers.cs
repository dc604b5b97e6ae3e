// Allocates known numbers of marker objects and prints what it did as JSON.
// Built with Mono's mcs, run on CoreCLR 3.1 and .NET 8 under the agent
// (see agent/tests/runtime.rs).
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class MarkerA { public int Value; }
struct MarkerStruct { public long A; }
class MarkerBox<T> { public T Item; }
class FinMarker { public static int Finalized; ~FinMarker() { Interlocked.Increment(ref Finalized); } }
class ThreadMarker { public long A, B; }
class ExcMarker { public int X; }
class HandleMarker { public int X; }

static class P
{
    const int MarkerACount = 5000;
    const int ArrayCount = 300;
    const int GenericIntCount = 700;
    const int GenericStringCount = 400;
    const int LargeCount = 12;
    const int FinCount = 250;
    const int ThreadCount = 4;
    const int PerThread = 3000;
    const int ExcRounds = 40;
    const int HandleCount = 64;
    const int StringCount = 500;

    static readonly List<object> Keep = new List<object>();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AllocMarkers()
    {
        for (int i = 0; i < MarkerACount; i++)
        {
            var m = new MarkerA();
            if (i % 10 == 0) Keep.Add(m);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AllocArrays()
    {
        for (int i = 0; i < ArrayCount; i++) Keep.Add(new MarkerStruct[i % 50 + 1]);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AllocGenerics()
    {
        for (int i = 0; i < GenericIntCount; i++) Keep.Add(new MarkerBox<int>());
        for (int i = 0; i < GenericStringCount; i++) Keep.Add(new MarkerBox<string>());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AllocLarge()
    {
        // 16 bytes per element: well above the 85,000-byte large object limit.
        for (int i = 0; i < LargeCount; i++) Keep.Add(new MarkerBox<long>[12000]);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AllocStrings()
    {
        for (int i = 0; i < StringCount; i++) Keep.Add(new string('x', 10 + i % 7));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AllocFinalizable()
    {
        for (int i = 0; i < FinCount; i++) new FinMarker();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void ThreadBody()
    {
        var local = new List<ThreadMarker>();
        for (int i = 0; i < PerThread; i++)
        {
            var t = new ThreadMarker();
            if (i % 100 == 0) local.Add(t);
        }
        lock (Keep) Keep.Add(local);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunThreads()
    {
        var threads = new Thread[ThreadCount];
        for (int i = 0; i < ThreadCount; i++) { threads[i] = new Thread(ThreadBody); threads[i].Start(); }
        foreach (var t in threads) t.Join();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Thrower(int depth)
    {
        if (depth == 0) throw new InvalidOperationException("marker");
        Thrower(depth - 1);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AfterCatch()
    {
        Keep.Add(new ExcMarker());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void RunExceptions()
    {
        for (int i = 0; i < ExcRounds; i++)
        {
            try { Thrower(3); } catch (InvalidOperationException) { }
            AfterCatch();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static GCHandle[] MakeHandles()
    {
        var handles = new GCHandle[HandleCount];
        for (int i = 0; i < HandleCount; i++) handles[i] = GCHandle.Alloc(new HandleMarker(), GCHandleType.Normal);
        return handles;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void FreeHandles(GCHandle[] handles)
    {
        foreach (var h in handles) h.Free();
    }

    static void Main()
    {
        AllocMarkers();
        AllocArrays();
        AllocGenerics();
        AllocLarge();
        AllocStrings();
        GC.Collect(0);
        AllocFinalizable();
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect(1);
        RunThreads();
        RunExceptions();
        var handles = MakeHandles();
        GC.Collect();
        FreeHandles(handles);
        GC.Collect(2, GCCollectionMode.Forced, true, true);
        GC.KeepAlive(Keep);
        Console.WriteLine("{"
            + "\"runtime\":\"" + Environment.Version + "\","
            + "\"types\":{"
            + "\"MarkerA\":" + MarkerACount + ","
            + "\"MarkerStruct []\":" + ArrayCount + ","
            + "\"MarkerBox<System.Int32>\":" + GenericIntCount + ","
            + "\"MarkerBox<System.String>\":" + GenericStringCount + ","
            + "\"MarkerBox<System.Int64> []\":" + LargeCount + ","
            + "\"FinMarker\":" + FinCount + ","
            + "\"ThreadMarker\":" + (ThreadCount * PerThread) + ","
            + "\"ExcMarker\":" + ExcRounds + ","
            + "\"HandleMarker\":" + HandleCount
            + "},"
            + "\"strings_in_AllocStrings\":" + StringCount + ","
            + "\"threads\":" + ThreadCount + ","
            + "\"finalized\":" + FinMarker.Finalized + ","
            + "\"handles\":" + HandleCount + ","
            + "\"gc\":[" + GC.CollectionCount(0) + "," + GC.CollectionCount(1) + "," + GC.CollectionCount(2) + "]"
            + "}");
    }
}
