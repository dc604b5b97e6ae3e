// The EventPipe import's program (tests/eventpipe_runtime.rs): it
// allocates known volumes of four marker types, keeps a known share of
// them, induces two GCs, and prints its own truth as one JSON line: for
// each marker type the objects and the bytes it allocated (the runtime's
// own per-thread allocation counter around each loop), and the GC counts.
// The runtime itself writes the trace (DOTNET_EnableEventPipe).
using System;
using System.Collections.Generic;
using System.Text;

class MarkerA { public long X, Y; }
class MarkerB { public long A, B, C, D, E, F, G, H; }
struct MarkerS { public long X; }
struct MarkerL { public long X; }

static class P
{
    static readonly List<object> Kept = new List<object>();

    static long Bytes() { return GC.GetAllocatedBytesForCurrentThread(); }

    static void Main(string[] args)
    {
        int scale = args.Length > 0 ? int.Parse(args[0]) : 1;
        // "pause": say so and wait for a line before allocating (a test
        // starts a session here) and again before ending (it stops the
        // session); the GC counts are then the ones in between.
        bool pause = args.Length > 1 && args[1] == "pause";
        int[] gcBefore = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        if (pause)
        {
            Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id + "}");
            Console.Out.Flush();
            Console.ReadLine();
            gcBefore = new[] { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        }
        var truth = new StringBuilder();
        truth.Append("{\"markers\":{");
        Kept.Capacity = 100000;

        int n = 3000000 * scale;
        long before = Bytes();
        for (int i = 0; i < n; i++) { var o = new MarkerA(); if (i % 1000 == 0) Kept.Add(o); }
        truth.Append("\"MarkerA\":{\"objects\":" + n + ",\"bytes\":" + (Bytes() - before) + "},");

        n = 1000000 * scale;
        before = Bytes();
        for (int i = 0; i < n; i++) { var o = new MarkerB(); if (i % 1000 == 0) Kept.Add(o); }
        truth.Append("\"MarkerB\":{\"objects\":" + n + ",\"bytes\":" + (Bytes() - before) + "},");

        n = 60000 * scale;
        before = Bytes();
        for (int i = 0; i < n; i++) { var o = new MarkerS[100]; if (i % 1000 == 0) Kept.Add(o); }
        truth.Append("\"MarkerS[]\":{\"objects\":" + n + ",\"bytes\":" + (Bytes() - before) + "},");

        n = 300 * scale;
        before = Bytes();
        for (int i = 0; i < n; i++) { var o = new MarkerL[20000]; if (i % 100 == 0) Kept.Add(o); }
        // CoreCLR 3.1's per-thread counter leaves out the large object
        // heap: there, the bytes are the arrays' size (header, length and
        // 20,000 longs, on 64 bits).
        long large = Bytes() - before;
        if (large < (long)n * (24 + 20000 * 8)) large = (long)n * (24 + 20000 * 8);
        truth.Append("\"MarkerL[]\":{\"objects\":" + n + ",\"bytes\":" + large + "}},");

        GC.Collect();
        GC.Collect(0);
        truth.Append("\"kept\":" + Kept.Count + ",");
        truth.Append("\"gc\":[" + (GC.CollectionCount(0) - gcBefore[0]) + "," + (GC.CollectionCount(1) - gcBefore[1]) + "," + (GC.CollectionCount(2) - gcBefore[2]) + "]}");
        Console.WriteLine(truth.ToString());
        Console.Out.Flush();
        if (pause) Console.ReadLine();
    }
}
