// The truth program of the EventPipe matrix (crates/cli/tests/eventpipe_matrix.rs).
// It counts what it does and prints it as one JSON line:
//   - four threads allocate at once: thread 0 interleaves two types of
//     different sizes (MxSmall, 24 bytes; MxLarge, 128 bytes), chosen at
//     random, keeping a quarter of the MxSmalls; thread 1 makes MxMid
//     (56 bytes) and keeps half; thread 2 makes large arrays (MxBlock[] of
//     20,000 longs, 160,024 bytes, on the large object heap) and keeps a
//     quarter; thread 3 makes MxTemp (32 bytes) and keeps none. What is
//     kept is chosen by a seeded random generator of the thread's own, so
//     it owes nothing to where the runtime's samples fall;
//   - then, on the main thread, induced GCs that cut the program into
//     intervals, each allocating one type: GC.Collect(2); MxPhaseA (32
//     bytes, none kept); GC.Collect(0); MxPhaseB (64 bytes, all kept);
//     GC.Collect(1); MxPhaseC (40 bytes, none kept); GC.Collect(2). The
//     number the runtime gives each induced GC (its gen 0 count right
//     after it) and its generation are in the truth;
//   - the GC counts are read before anything a capture does can cause a
//     GC (a heap dump's GC comes in the held phase);
//   - a held phase: it prints its truth and waits for "exit" on standard
//     input.
// Handshakes, no clock: it writes "started" into its working directory
// as its first act, prints {"ready":true,"pid":N} and waits for "go" on
// standard input before allocating anything.
// Argument: SCALE (default 1): every count is multiplied by it.
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;

class MxSmall { public long A; }
class MxLarge { public long A, B, C, D, E, F, G, H, I, J, K, L, M, N; }
class MxMid { public long A, B, C, D, E; }
class MxTemp { public long A, B; }
class MxPhaseA { public long A, B; }
class MxPhaseB { public long A, B, C, D, E, F; }
class MxPhaseC { public long A, B, C; }
struct MxBlock { public long V; }

static class MxHolder
{
    public static List<MxSmall> Smalls = new List<MxSmall>();
    public static List<MxMid> Mids = new List<MxMid>();
    public static List<MxBlock[]> Blocks = new List<MxBlock[]>();
    public static List<MxPhaseB> Phased = new List<MxPhaseB>();
}

static class P
{
    const int BLOCK = 20000;
    static int Scale = 1;
    // Per type: objects allocated, objects kept.
    static readonly Dictionary<string, long[]> Counts = new Dictionary<string, long[]>();

    // The bytes of the program's other large arrays (its lists' backing
    // arrays of 85,000 bytes or more) per interval: they share the large
    // object heap's sampling counter with MxBlock[].
    static readonly long[] LargeOther = new long[4];

    static void NoteList(int interval, int capacity)
    {
        long bytes = 8L * capacity + 24;
        if (bytes >= 85000) lock (LargeOther) LargeOther[interval] += bytes;
    }

    static void Count(string type, long made, long kept)
    {
        lock (Counts)
        {
            long[] c;
            if (!Counts.TryGetValue(type, out c)) { c = new long[2]; Counts[type] = c; }
            c[0] += made;
            c[1] += kept;
        }
    }

    // xorshift64*: a seeded generator of the thread's own.
    static ulong Next(ref ulong s)
    {
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
        return s * 2685821657736338717UL;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Interleaved()
    {
        ulong rng = 0x9E3779B97F4A7C15UL, keep = 0xD1B54A32D192ED03UL;
        int n = 600000 * Scale;
        var mine = new List<MxSmall>(n / 6);
        long smalls = 0, larges = 0;
        MxLarge last = null;
        for (int i = 0; i < n; i++)
        {
            if ((Next(ref rng) >> 33) % 2 == 0)
            {
                var s = new MxSmall { A = i };
                smalls++;
                if ((Next(ref keep) >> 33) % 4 == 0) mine.Add(s);
            }
            else
            {
                last = new MxLarge { A = i };
                larges++;
            }
        }
        GC.KeepAlive(last);
        Count("MxSmall", smalls, mine.Count);
        Count("MxLarge", larges, 0);
        NoteList(0, mine.Capacity);
        lock (MxHolder.Smalls) { MxHolder.Smalls.AddRange(mine); NoteList(0, MxHolder.Smalls.Capacity); }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Mids()
    {
        ulong keep = 0x2545F4914F6CDD1DUL;
        int n = 400000 * Scale;
        var mine = new List<MxMid>(n / 2 + 16);
        for (int i = 0; i < n; i++)
        {
            var m = new MxMid { A = i };
            if ((Next(ref keep) >> 33) % 2 == 0) mine.Add(m);
        }
        Count("MxMid", n, mine.Count);
        NoteList(0, mine.Capacity);
        lock (MxHolder.Mids) { MxHolder.Mids.AddRange(mine); NoteList(0, MxHolder.Mids.Capacity); }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Blocks()
    {
        ulong keep = 0x6A09E667F3BCC909UL;
        int n = 120 * Scale;
        var mine = new List<MxBlock[]>();
        for (int i = 0; i < n; i++)
        {
            var b = new MxBlock[BLOCK];
            b[0].V = i;
            if ((Next(ref keep) >> 33) % 4 == 0) mine.Add(b);
        }
        Count("MxBlock[]", n, mine.Count);
        NoteList(0, mine.Capacity);
        lock (MxHolder.Blocks) { MxHolder.Blocks.AddRange(mine); NoteList(0, MxHolder.Blocks.Capacity); }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Temps()
    {
        int n = 600000 * Scale;
        MxTemp last = null;
        for (int i = 0; i < n; i++) last = new MxTemp { A = i };
        GC.KeepAlive(last);
        Count("MxTemp", n, 0);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void PhaseA(int n)
    {
        MxPhaseA last = null;
        for (int i = 0; i < n; i++) last = new MxPhaseA { A = i };
        GC.KeepAlive(last);
        Count("MxPhaseA", n, 0);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void PhaseB(int n)
    {
        MxHolder.Phased.Capacity = n;
        NoteList(2, n);
        for (int i = 0; i < n; i++) MxHolder.Phased.Add(new MxPhaseB { A = i });
        Count("MxPhaseB", n, n);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void PhaseC(int n)
    {
        MxPhaseC last = null;
        for (int i = 0; i < n; i++) last = new MxPhaseC { A = i };
        GC.KeepAlive(last);
        Count("MxPhaseC", n, 0);
    }

    static string Gcs()
    {
        return "[" + GC.CollectionCount(0) + "," + GC.CollectionCount(1) + "," + GC.CollectionCount(2) + "]";
    }

    static readonly StringBuilder Induced = new StringBuilder();

    // An induced GC: the runtime's number for it (its gen 0 count right
    // after it, when it was the only GC of the call), the generation asked
    // for and the generation it was (the highest whose count moved).
    static void Collect(int generation)
    {
        // At least 3 ms between the last allocation and the GC, and between
        // the GC and the next allocation: a trace's time line is read in
        // whole milliseconds, so no allocation shares the GC's millisecond
        // (a gap, not a race: more time only widens it).
        Thread.Sleep(3);
        int[] before = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        GC.Collect(generation, GCCollectionMode.Forced, true);
        Thread.Sleep(3);
        int[] after = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        int was = 0;
        for (int g = 0; g < 3; g++) if (after[g] > before[g]) was = g;
        if (Induced.Length > 0) Induced.Append(",");
        Induced.Append("{\"number\":" + after[0] + ",\"gcs\":" + (after[0] - before[0]) + ",\"asked\":" + generation
            + ",\"generation\":" + was + "}");
    }

    static void Wait(string word)
    {
        string line;
        while ((line = Console.ReadLine()) != null && line.Trim() != word) { }
    }

    static int Main(string[] args)
    {
        File.WriteAllText("started", "started");
        if (args.Length > 0) Scale = int.Parse(args[0]);
        Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id + "}");
        Console.Out.Flush();
        Wait("go");
        string atGo = Gcs();
        var threads = new Thread[] { new Thread(Interleaved), new Thread(Mids), new Thread(Blocks), new Thread(Temps) };
        foreach (var th in threads) th.Start();
        foreach (var th in threads) th.Join();
        Collect(2);
        PhaseA(300000 * Scale);
        Collect(0);
        PhaseB(150000 * Scale);
        Collect(1);
        PhaseC(240000 * Scale);
        Collect(2);
        string atEnd = Gcs();
        var sb = new StringBuilder();
        sb.Append("{\"truth\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id);
        sb.Append(",\"gc_at_go\":" + atGo + ",\"gc\":" + atEnd + ",\"induced\":[" + Induced + "]");
        sb.Append(",\"block_length\":" + BLOCK + ",\"large_other\":[" + string.Join(",", LargeOther) + "],\"types\":{");
        bool first = true;
        foreach (var kv in Counts)
        {
            if (!first) sb.Append(",");
            first = false;
            sb.Append("\"" + kv.Key + "\":{\"allocated\":" + kv.Value[0] + ",\"kept\":" + kv.Value[1] + "}");
        }
        sb.Append("}}");
        Console.WriteLine(sb.ToString());
        Console.Out.Flush();
        Wait("exit");
        GC.KeepAlive(MxHolder.Smalls);
        GC.KeepAlive(MxHolder.Mids);
        GC.KeepAlive(MxHolder.Blocks);
        GC.KeepAlive(MxHolder.Phased);
        return 0;
    }
}
