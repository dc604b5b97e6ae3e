// GC handles made after heap dumps that held objects the log never saw
// allocated alive, for crates/cli/tests/handle_stacks.rs:
//   - with "off": 100 Unseen objects made while allocation logging is off
//     (kept to the end);
//   - two heap dumps (ClrProfControl.DumpHeap), then handles: 40 made in
//     P::MakeHandles on the main thread (15 freed in P::FreeHandles), and
//     10 made in P::ThreadHandles on each of two threads started at
//     P::Worker (none freed);
//   - the truth on standard output: {"main":[made,freed],"threads":made}.
// On .NET 8 the second dump alone holds such objects: the frozen (non-GC)
// heap's strings and types, outside every generation range of the log.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class Unseen { public int X; }
class Held { public int X; }

static class P
{
    static readonly List<Unseen> KeepUnseen = new List<Unseen>();
    static readonly List<GCHandle> Handles = new List<GCHandle>();
    static readonly List<GCHandle> OfThreads = new List<GCHandle>();
    static readonly object Lock = new object();
    static int Made, Freed, ThreadMade;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeUnseen(int n)
    {
        for (int i = 0; i < n; i++) KeepUnseen.Add(new Unseen());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeHandles(int n)
    {
        for (int i = 0; i < n; i++)
        {
            Handles.Add(GCHandle.Alloc(new Held(), GCHandleType.Normal));
            Made++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void FreeHandles(int n)
    {
        for (int i = 0; i < n; i++)
        {
            Handles[Handles.Count - 1].Free();
            Handles.RemoveAt(Handles.Count - 1);
            Freed++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void ThreadHandles(int n)
    {
        for (int i = 0; i < n; i++)
        {
            GCHandle h = GCHandle.Alloc(new Held(), GCHandleType.Normal);
            lock (Lock)
            {
                OfThreads.Add(h);
                ThreadMade++;
            }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Worker()
    {
        ThreadHandles(10);
    }

    static int Main(string[] args)
    {
        if (Array.IndexOf(args, "off") >= 0)
        {
            ClrProfControl.AllocationLoggingActive = false;
            MakeUnseen(100);
            ClrProfControl.AllocationLoggingActive = true;
        }
        ClrProfControl.DumpHeap("first");
        ClrProfControl.DumpHeap("second");
        var threads = new[] { new Thread(Worker), new Thread(Worker) };
        foreach (var t in threads) t.Start();
        MakeHandles(40);
        FreeHandles(15);
        foreach (var t in threads) t.Join();
        GC.KeepAlive(KeepUnseen);
        Console.WriteLine("{\"main\":[" + Made + "," + Freed + "],\"threads\":" + ThreadMade + "}");
        return 0;
    }
}
