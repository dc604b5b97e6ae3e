// Allocation patterns with known truth, for the measurement of the
// sampled estimates (GC/AllocationTick) against the program's own counts
// (crates/cli/tests/eventpipe_estimates.rs, docs/src/eventpipe.md):
//   - thread 0 interleaves two types of different sizes in a fixed
//     pattern: Quokka (32 bytes) every step, Ocelot (136 bytes) every
//     other step;
//   - thread 1 alternates a small object, Wren (24 bytes), and an array
//     of 125 references, Wren[] (1,024 bytes);
//   - thread 2 mixes at random (seeded): 4 in 5 Lynx (40 bytes), 1 in 5
//     Cage<Den.Mole> (200 bytes: a generic type of a nested type);
//   - thread 3 allocates one type alone, the nested Den.Mole (48 bytes).
// Nothing is kept but each thread's last object. It prints one JSON line
// of its truth: per type, the objects made and their size; with "hold"
// it then waits for "exit" on standard input (for a heap dump).
// Arguments: STEPS [hold] (steps per thread).
using System;
using System.Threading;

class Quokka { public long A, B; }
class Ocelot { public long A, B, C, D, E, F, G, H, I, J, K, L, M, N, O; }
class Wren { public int V; }
class Lynx { public long A, B, C; }
static class Den
{
    public class Mole { public long A, B, C, D; }
}
class Cage<T> { public T Item; public long A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, U, V, W; }

static class P
{
    static int Steps;
    static long[] Made = new long[8];
    static object[] Last = new object[4];

    static void Pattern(object arg)
    {
        int t = (int)arg;
        object last = null;
        long a = 0, b = 0;
        if (t == 0)
        {
            for (int i = 0; i < Steps; i++)
            {
                last = new Quokka { A = i }; a++;
                if ((i & 1) == 0) { last = new Ocelot { A = i }; b++; }
            }
        }
        else if (t == 1)
        {
            for (int i = 0; i < Steps; i++)
            {
                last = new Wren { V = i }; a++;
                last = new Wren[125]; b++;
            }
        }
        else if (t == 2)
        {
            var r = new Random(12345);
            for (int i = 0; i < Steps; i++)
            {
                if (r.Next(5) == 0) { last = new Cage<Den.Mole> { A = i }; b++; }
                else { last = new Lynx { A = i }; a++; }
            }
        }
        else
        {
            for (int i = 0; i < Steps; i++) { last = new Den.Mole { A = i }; a++; }
        }
        Made[2 * t] = a;
        Made[2 * t + 1] = b;
        Last[t] = last;
    }

    static int Main(string[] args)
    {
        Steps = int.Parse(args[0]);
        var threads = new Thread[4];
        for (int t = 0; t < 4; t++) { threads[t] = new Thread(Pattern); threads[t].Start(t); }
        foreach (var th in threads) th.Join();
        Console.WriteLine("{\"types\":{"
            + "\"Quokka\":[" + Made[0] + ",32],\"Ocelot\":[" + Made[1] + ",136],"
            + "\"Wren\":[" + Made[2] + ",24],\"Wren[]\":[" + Made[3] + ",1024],"
            + "\"Lynx\":[" + Made[4] + ",40],\"Cage<Den.Mole>\":[" + Made[5] + ",200],"
            + "\"Den.Mole\":[" + Made[6] + ",48]},\"pid\":"
            + System.Diagnostics.Process.GetCurrentProcess().Id + "}");
        Console.Out.Flush();
        if (args.Length > 1 && args[1] == "hold")
        {
            string line;
            while ((line = Console.ReadLine()) != null && line != "exit") { }
        }
        GC.KeepAlive(Last);
        return 0;
    }
}
