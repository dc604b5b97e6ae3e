// Builds a known object graph, says so, and waits for commands on standard
// input, so that a test can take heap dumps of it (agent/tests/heapdump.rs,
// tests/heap_dump.rs):
//   - a static cache Dictionary<int, List<Marker>> with N entries of K markers,
//   - a linked list of M Node objects held by a local of Main,
//   - a pinned byte[4099] held by a GCHandle,
//   - F finalizable FinObj objects waiting for finalization (the first
//     finalizer blocks until the program ends, the rest wait behind it).
// Commands: "drop" removes every second cache entry (N/2 of them) and
// collects; "exit" ends the program. Each is answered by a JSON line.
// Arguments: N K M F [threads] [exceptions]: with threads > 0, that many
// threads allocate garbage until exit; with exceptions = 1, one more
// thread throws and catches in a loop.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class Marker { public int Id; public Marker(int id) { Id = id; } }
class Node { public Node Next; public int V; }
class FinObj
{
    public static ManualResetEvent Release = new ManualResetEvent(false);
    public static int Entered;
    public int X;
    ~FinObj()
    {
        if (Interlocked.Increment(ref Entered) == 1) Release.WaitOne();
        // Keep the object being finalized on this thread's stack while its
        // finalizer blocks: optimized code (the agent's hooks switch tiering
        // off) would otherwise let it go, and the dump would hold F - 1.
        GC.KeepAlive(this);
    }
}
class Garbage { public long A; }

static class P
{
    static Dictionary<int, List<Marker>> Cache = new Dictionary<int, List<Marker>>();
    static volatile bool Stop;
    static long Allocated;
    static long Thrown;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeFinalizable(int f)
    {
        for (int i = 0; i < f; i++) new FinObj();
    }

    // A method of its own, so that no stack slot of Main keeps a marker.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void BuildCache(int n, int k)
    {
        for (int i = 0; i < n; i++)
        {
            var list = new List<Marker>(k);
            for (int j = 0; j < k; j++) list.Add(new Marker(i * k + j));
            Cache[i] = list;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Drop(int n)
    {
        for (int i = 0; i < n; i += 2) Cache.Remove(i);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static Node MakeList(int m)
    {
        Node head = null;
        for (int i = 0; i < m; i++) head = new Node { Next = head, V = i };
        return head;
    }

    static void Churn()
    {
        var keep = new Garbage[64];
        int i = 0;
        // At least one round, so that the last line does not depend on
        // whether the thread got to run before "exit" arrived.
        do
        {
            keep[i++ & 63] = new Garbage();
            Interlocked.Increment(ref Allocated);
        } while (!Stop);
    }

    static void Storm()
    {
        do
        {
            try { throw new InvalidOperationException("storm"); }
            catch (InvalidOperationException) { Interlocked.Increment(ref Thrown); }
        } while (!Stop);
    }

    static int Main(string[] args)
    {
        int n = int.Parse(args[0]), k = int.Parse(args[1]), m = int.Parse(args[2]), f = int.Parse(args[3]);
        int threads = args.Length > 4 ? int.Parse(args[4]) : 0;
        bool storm = args.Length > 5 && args[5] == "1";
        BuildCache(n, k);
        Node head = MakeList(m);
        var pinned = GCHandle.Alloc(new byte[4099], GCHandleType.Pinned);
        MakeFinalizable(f);
        GC.Collect();
        // GC.WaitForPendingFinalizers would wait for ever (the first
        // finalizer blocks): wait until the finalizer thread has entered it.
        while (Volatile.Read(ref FinObj.Entered) == 0) Thread.Sleep(5);
        var workers = new List<Thread>();
        for (int t = 0; t < threads; t++) { var th = new Thread(Churn); th.Start(); workers.Add(th); }
        if (storm) { var th = new Thread(Storm); th.Start(); workers.Add(th); }
        Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id
            + ",\"runtime\":\"" + Environment.Version + "\",\"server_gc\":" + (System.Runtime.GCSettings.IsServerGC ? "true" : "false") + "}");
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            if (line == "drop")
            {
                Drop(n);
                GC.Collect();
                Console.WriteLine("{\"dropped\":" + ((n + 1) / 2) + ",\"left\":" + Cache.Count + "}");
            }
            else if (line == "exit") break;
            else Console.WriteLine("{\"unknown\":\"" + line + "\"}");
            Console.Out.Flush();
        }
        Stop = true;
        foreach (var th in workers) th.Join();
        int nodes = 0;
        for (var x = head; x != null; x = x.Next) nodes++;
        GC.KeepAlive(pinned.Target);
        pinned.Free();
        Console.WriteLine("{\"done\":true,\"nodes\":" + nodes + ",\"cache\":" + Cache.Count
            + ",\"churned\":" + (Interlocked.Read(ref Allocated) > 0 ? "true" : "false")
            + ",\"thrown\":" + (Interlocked.Read(ref Thrown) > 0 ? "true" : "false") + "}");
        FinObj.Release.Set();
        return 3;
    }
}
