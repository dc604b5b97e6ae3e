// A program whose survivors are known, for the survival tests
// (crates/cli/tests/eventpipe_survival.rs):
//   - Elder objects (main thread) made old by two GC.Collect(2), Middle
//     objects made older by one GC.Collect(0);
//   - then 4 threads allocate at once, each interleaving Keeper (kept
//     all), Halver (kept at random, one in two: a pattern such as every
//     2nd would line up with where the runtime's sampling falls), Dropper
//     (kept none) and, every 64th
//     step, a large long[] (kept) and a large double[] (dropped);
//   - after the threads: Junior objects made gen 1 by a GC.Collect(0); the
//     generation of every Middle, Elder and Junior object counted (what
//     they die in), Middle and Junior released and GC.Collect(1), Elder
//     released and GC.Collect(2): Junior dies in gen 1, Middle in gen 1 or
//     (when the threads' GCs made it gen 2) at GC.Collect(2) in gen 2,
//     Elder in gen 2;
//   - a JSON line of the truth, then it waits for "exit" on standard
//     input (or ends at once with "exit" as the second argument).
// Arguments: PER_THREAD [exit].
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

class Keeper { public long A, B; }
class Halver { public long A, B, C; }
class Dropper { public long A, B, C, D, E, F, G, H, I, J, K, L, M, N, O; }
class Elder { public long A, B; }
class Middle { public long A, B; }
class Junior { public long A, B; }

static class Held
{
    public static List<object>[] Kept = new List<object>[4];
    public static List<Elder> Elders = new List<Elder>();
    public static List<Middle> Middles = new List<Middle>();
    public static List<Junior> Juniors = new List<Junior>();
}

static class P
{
    const int LARGE_EVERY = 64;
    const int LARGE_LENGTH = 12000; // 96,024 bytes: the large object heap
    static int PerThread;
    static long[] Large = new long[4];
    static long[] HalversKept = new long[4];

    static void Work(object arg)
    {
        int t = (int)arg;
        var kept = new List<object>(PerThread * 2);
        object last = null;
        // xorshift64, seeded per thread: which Halvers are kept.
        ulong x = 0x9E3779B97F4A7C15UL * (ulong)(t + 1);
        for (int i = 0; i < PerThread; i++)
        {
            kept.Add(new Keeper { A = i });
            var h = new Halver { A = i };
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if ((x & 1) == 0) { kept.Add(h); HalversKept[t]++; }
            last = new Dropper { A = i };
            if (i % LARGE_EVERY == 0)
            {
                kept.Add(new long[LARGE_LENGTH]);
                last = new double[LARGE_LENGTH];
                Large[t]++;
            }
        }
        GC.KeepAlive(last);
        Held.Kept[t] = kept;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeOld(int old)
    {
        for (int i = 0; i < old; i++) Held.Elders.Add(new Elder { A = i });
        GC.Collect(2, GCCollectionMode.Forced, true);
        GC.Collect(2, GCCollectionMode.Forced, true);
        for (int i = 0; i < old; i++) Held.Middles.Add(new Middle { A = i });
        GC.Collect(0, GCCollectionMode.Forced, true);
    }

    // The generations of a list's objects (in a method of its own: no
    // enumerator left in Main's frame to keep the list alive).
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int[] Generations<T>(List<T> list)
    {
        var g = new int[3];
        for (int i = 0; i < list.Count; i++) g[GC.GetGeneration(list[i])]++;
        return g;
    }

    // Main never holds the lists itself (an unoptimized frame reports its
    // temporaries to the GC until it returns).
    [MethodImpl(MethodImplOptions.NoInlining)]
    static int[][] CountGenerations()
    {
        return new[] { Generations(Held.Middles), Generations(Held.Elders), Generations(Held.Juniors) };
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeJuniors(int n)
    {
        for (int i = 0; i < n; i++) Held.Juniors.Add(new Junior { A = i });
        GC.Collect(0, GCCollectionMode.Forced, true);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static WeakReference ReleaseMiddlesAndJuniors()
    {
        var w = new WeakReference(Held.Juniors[Held.Juniors.Count - 1]);
        Held.Middles = null;
        Held.Juniors = null;
        return w;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static WeakReference ReleaseElders()
    {
        var w = new WeakReference(Held.Elders[Held.Elders.Count - 1]);
        Held.Elders = null;
        return w;
    }

    static string Gens(int[] g)
    {
        return "[" + g[0] + "," + g[1] + "," + g[2] + "]";
    }

    static int Main(string[] args)
    {
        PerThread = int.Parse(args[0]);
        bool wait = !(args.Length > 1 && args[1] == "exit");
        int old = PerThread / 4;
        MakeOld(old);

        var threads = new Thread[4];
        for (int t = 0; t < 4; t++) { threads[t] = new Thread(Work); threads[t].Start(t); }
        foreach (var th in threads) th.Join();

        // What each dies in: its generation now (nothing runs before the
        // GCs that reclaim them).
        MakeJuniors(old);
        var gens = CountGenerations();
        var middleGen = gens[0];
        var elderGen = gens[1];
        var juniorGen = gens[2];
        int[] before = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        var middle = ReleaseMiddlesAndJuniors();
        GC.Collect(1, GCCollectionMode.Forced, true);
        var elder = ReleaseElders();
        GC.Collect(2, GCCollectionMode.Forced, true);
        // The truth holds only if they are gone.
        if (middle.IsAlive || elder.IsAlive) { Console.Error.WriteLine("released objects still alive"); return 3; }
        int[] after = { GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2) };
        long large = 0;
        foreach (var l in Large) large += l;
        long halvers = 0;
        foreach (var h in HalversKept) halvers += h;
        long n = 4L * PerThread;
        Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id
            + ",\"threads\":4"
            + ",\"allocated\":{\"Keeper\":" + n + ",\"Halver\":" + n + ",\"Dropper\":" + n
            + ",\"Int64[]\":" + large + ",\"Double[]\":" + large + ",\"Elder\":" + old + ",\"Middle\":" + old + ",\"Junior\":" + old + "}"
            + ",\"kept\":{\"Keeper\":" + n + ",\"Halver\":" + halvers + ",\"Dropper\":0"
            + ",\"Int64[]\":" + large + ",\"Double[]\":0,\"Elder\":0,\"Middle\":0,\"Junior\":0}"
            + ",\"died_in_generation\":{\"Middle\":" + Gens(middleGen) + ",\"Elder\":" + Gens(elderGen) + ",\"Junior\":" + Gens(juniorGen) + "}"
            + ",\"gc_before_release\":" + Gens(before)
            + ",\"gc\":" + Gens(after) + "}");
        Console.Out.Flush();
        if (wait)
        {
            string line;
            while ((line = Console.ReadLine()) != null && line != "exit") { }
        }
        GC.KeepAlive(Held.Kept);
        return 0;
    }
}
