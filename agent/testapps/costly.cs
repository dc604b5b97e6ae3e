// What a heap dump costs the program dumped (scripts/dump-cost.sh and
// crates/cli/tests/dump_cost.rs). `costly MB [THREADS]` keeps about MB
// megabytes of heap built by THREADS threads (default 4): two fifths in
// many small objects (linked Node chains, each Node with a small int[]),
// the rest in large arrays (long[] of 100,000, on the large object heap).
// The builders then go on allocating a little garbage every millisecond,
// and a ticker thread wakes every millisecond and keeps its longest gap:
// the program's own stall, which a heap walk's blocking GC lengthens.
// Prints {"ready":true,"pid":P,"nodes":N,"arrays":A,"bytes":B}, then takes
// commands on its standard input, one a line, each answered with a line:
//   stall   {"stall_ms":longest gap since the last `stall`}
//   exit    ends (status 0)
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;

class Node { public Node Next; public long Value; public int[] Small; }

static class P
{
    const int Chain = 1000;
    const int LargeLongs = 100000;
    static readonly List<Node>[] Chains = new List<Node>[64];
    static readonly List<long[]>[] Large = new List<long[]>[64];
    static long maxGapTicks;
    static volatile bool stop;

    static void Main(string[] args)
    {
        long mb = args.Length > 0 ? long.Parse(args[0]) : 100;
        int threads = args.Length > 1 ? int.Parse(args[1]) : 4;
        long bytes = mb << 20;
        // A Node is 40 bytes, its int[4] 40: 80 bytes per pair.
        long nodesPerThread = bytes * 2 / 5 / 80 / threads;
        long arraysPerThread = bytes * 3 / 5 / (LargeLongs * 8L + 24) / threads;
        var built = new CountdownEvent(threads);
        var workers = new List<Thread>();
        for (int t = 0; t < threads; t++)
        {
            int me = t;
            var th = new Thread(() =>
            {
                var heads = new List<Node>();
                Node head = null;
                for (long i = 0; i < nodesPerThread; i++)
                {
                    head = new Node { Next = head, Value = i, Small = new int[4] };
                    if ((i + 1) % Chain == 0) { heads.Add(head); head = null; }
                }
                if (head != null) heads.Add(head);
                var large = new List<long[]>();
                for (long i = 0; i < arraysPerThread; i++)
                {
                    // Written to, one long per 4 KB page: resident, as a
                    // program's data is (a fresh array's pages are not).
                    var a = new long[LargeLongs];
                    for (int j = 0; j < LargeLongs; j += 512) a[j] = j;
                    large.Add(a);
                }
                Chains[me] = heads;
                Large[me] = large;
                built.Signal();
                // A little garbage every millisecond: the thread runs managed
                // code, so a GC has to stop it.
                while (!stop)
                {
                    for (int k = 0; k < 100; k++) { var g = new byte[64]; g[0] = 1; }
                    Thread.Sleep(1);
                }
            });
            th.IsBackground = true;
            th.Start();
            workers.Add(th);
        }
        built.Wait();
        GC.Collect();
        var ticker = new Thread(() =>
        {
            var sw = Stopwatch.StartNew();
            long last = sw.ElapsedTicks;
            while (!stop)
            {
                Thread.Sleep(1);
                long now = sw.ElapsedTicks;
                long gap = now - last;
                last = now;
                long seen;
                do { seen = Interlocked.Read(ref maxGapTicks); }
                while (gap > seen && Interlocked.CompareExchange(ref maxGapTicks, gap, seen) != seen);
            }
        });
        ticker.IsBackground = true;
        ticker.Start();
        Console.WriteLine("{\"ready\":true,\"pid\":" + Process.GetCurrentProcess().Id
            + ",\"nodes\":" + (nodesPerThread * threads) + ",\"arrays\":" + (arraysPerThread * threads)
            + ",\"bytes\":" + GC.GetTotalMemory(false) + "}");
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            if (line == "stall")
            {
                long ticks = Interlocked.Exchange(ref maxGapTicks, 0);
                Console.WriteLine("{\"stall_ms\":" + (ticks * 1000 / Stopwatch.Frequency) + "}");
            }
            else if (line == "exit")
            {
                stop = true;
                Console.WriteLine("{\"exit\":true,\"kept\":" + Kept() + "}");
                Console.Out.Flush();
                return;
            }
            else Console.WriteLine("{\"error\":\"unknown command\"}");
            Console.Out.Flush();
        }
    }

    // Keeps the heap alive to the end.
    static long Kept()
    {
        long n = 0;
        for (int i = 0; i < Chains.Length; i++)
            if (Chains[i] != null) n += Chains[i].Count + Large[i].Count;
        return n;
    }
}
