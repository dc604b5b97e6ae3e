// A heap of a given number of small live objects for the heap dump
// benchmark (agent/bench/heapdump.sh): Item objects in Item[] chunks of
// 1000, held by a static. A thread measures the longest stretch it could
// not run (what a dump's pause looks like to the program).
// Reads commands on standard input: "pause" prints and resets the longest
// gap seen (ms); "exit" ends.
using System;
using System.Diagnostics;
using System.Threading;

class Item { public Item Next; public long V; }

static class P
{
    static Item[][] Heap;
    static long MaxGapTicks;
    static volatile bool Stop;
    static long Sink;

    static void Watch()
    {
        var sw = Stopwatch.StartNew();
        long last = sw.ElapsedTicks;
        while (!Stop)
        {
            long now = sw.ElapsedTicks;
            long gap = now - last;
            if (gap > Interlocked.Read(ref MaxGapTicks)) Interlocked.Exchange(ref MaxGapTicks, gap);
            last = now;
            // Managed work only: a thread in native code (SpinWait, Sleep)
            // keeps running during a GC and would not see the pause.
            for (int k = 0; k < 200; k++) Sink += k;
        }
    }

    static int Main(string[] args)
    {
        long n = long.Parse(args[0]);
        long chunks = (n + 999) / 1000;
        Heap = new Item[chunks][];
        for (long c = 0; c < chunks; c++)
        {
            var a = new Item[1000];
            Item prev = null;
            for (int i = 0; i < 1000 && c * 1000 + i < n; i++) { a[i] = new Item { Next = prev, V = i }; prev = a[i]; }
            Heap[c] = a;
        }
        GC.Collect();
        var w = new Thread(Watch); w.IsBackground = true; w.Start();
        Thread.Sleep(200);
        Interlocked.Exchange(ref MaxGapTicks, 0);
        Console.WriteLine("{\"ready\":true,\"pid\":" + Process.GetCurrentProcess().Id + ",\"objects\":" + n + "}");
        string line;
        while ((line = Console.ReadLine()) != null && line != "exit")
        {
            if (line == "pause")
            {
                long t = Interlocked.Exchange(ref MaxGapTicks, 0);
                Console.WriteLine("{\"max_pause_ms\":" + (t * 1000.0 / Stopwatch.Frequency).ToString("F1") + "}");
            }
        }
        Stop = true;
        GC.KeepAlive(Heap);
        return 0;
    }
}
