// A multi-threaded program with known truth, for the EventPipe tests
// (crates/cli/tests/eventpipe_threads.rs):
//   - 4 threads allocate at once, each interleaving two types of different
//     sizes (Quokka, 32 bytes; Ocelot, 136 bytes) and keeping every
//     KEEP-th Quokka; the kept ones end in the static list Holder.Kept;
//   - a large array of references, Holder.Big (an object[] of BIG
//     references to as many Pellet objects), filled by the main thread;
//   - two induced GCs: GC.Collect(1) then GC.Collect(2), after the threads
//     are done; "induced" gives the generations the runtime did them at
//     (it may do the first as a gen 2);
//   - a held phase: it prints a JSON line of its truth and waits for
//     "exit" on standard input (or ends at once with "exit" as the
//     second argument).
// Arguments: PER_THREAD BIG [exit]: Quokkas per thread (each thread also
// makes PER_THREAD / 2 Ocelots).
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

class Quokka { public long A, B; }
class Ocelot { public long A, B, C, D, E, F, G, H, I, J, K, L, M, N, O; }
class Pellet { public int V; }

static class Holder
{
    public static List<Quokka> Kept = new List<Quokka>();
    public static object[] Big;
}

static class P
{
    const int KEEP = 4;
    static int PerThread;
    static long[] OcelotsMade = new long[4];

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work(object arg)
    {
        int t = (int)arg;
        var mine = new List<Quokka>(PerThread / KEEP + 1);
        Ocelot last = null;
        for (int i = 0; i < PerThread; i++)
        {
            var q = new Quokka { A = i };
            if (i % KEEP == 0) mine.Add(q);
            if ((i & 1) == 0) { last = new Ocelot { A = i }; OcelotsMade[t]++; }
        }
        GC.KeepAlive(last);
        lock (Holder.Kept) Holder.Kept.AddRange(mine);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void FillBig(int n)
    {
        var big = new object[n];
        for (int i = 0; i < n; i++) big[i] = new Pellet { V = i };
        Holder.Big = big;
    }

    static int Main(string[] args)
    {
        PerThread = int.Parse(args[0]);
        int bigCount = int.Parse(args[1]);
        bool wait = !(args.Length > 2 && args[2] == "exit");
        var threads = new Thread[4];
        for (int t = 0; t < 4; t++) { threads[t] = new Thread(Work); threads[t].Start(t); }
        FillBig(bigCount);
        foreach (var th in threads) th.Join();
        int[] before = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        // The runtime may raise an induced GC's generation (a gen-1 request
        // done as a gen 2 when gen 2's budget is spent): the generation it
        // did is read from its own counters.
        GC.Collect(1, GCCollectionMode.Forced, true);
        int firstInduced = GC.CollectionCount(2) > before[2] ? 2 : 1;
        GC.Collect(2, GCCollectionMode.Forced, true);
        int[] after = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        long ocelots = 0;
        foreach (var o in OcelotsMade) ocelots += o;
        Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id
            + ",\"threads\":4,\"quokkas\":" + (4L * PerThread) + ",\"quokka_size\":32"
            + ",\"kept_quokkas\":" + Holder.Kept.Count + ",\"ocelots\":" + ocelots + ",\"ocelot_size\":136"
            + ",\"pellets\":" + bigCount
            + ",\"gc_before\":[" + before[0] + "," + before[1] + "," + before[2] + "]"
            + ",\"gc\":[" + after[0] + "," + after[1] + "," + after[2] + "]"
            + ",\"induced\":[" + firstInduced + ",2]}");
        Console.Out.Flush();
        if (wait)
        {
            string line;
            while ((line = Console.ReadLine()) != null && line != "exit") { }
        }
        GC.KeepAlive(Holder.Big);
        return 0;
    }
}
