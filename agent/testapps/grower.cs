// The watch tests' program (crates/cli/tests/watch.rs): prints
// {"ready":true,"pid":P} (P as its own namespace names it), then takes
// commands on its standard input, one a line, and answers each with one
// JSON line:
//   grow N MS   keeps N more Chunk objects (each holding 10,000 bytes),
//               one every MS milliseconds, then answers with the count
//   count       {"chunks": kept so far}
//   exit        ends (status 0)
using System;
using System.Collections.Generic;
using System.Threading;

class Chunk { public byte[] Data = new byte[10000]; }

static class P
{
    static readonly List<Chunk> Kept = new List<Chunk>();

    static void Main()
    {
        Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id + "}");
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null)
        {
            var w = line.Split(' ');
            if (w[0] == "grow")
            {
                int n = int.Parse(w[1]);
                int ms = w.Length > 2 ? int.Parse(w[2]) : 0;
                for (int i = 0; i < n; i++)
                {
                    Kept.Add(new Chunk());
                    if (ms > 0) Thread.Sleep(ms);
                }
            }
            else if (w[0] == "exit")
            {
                Console.WriteLine("{\"chunks\":" + Kept.Count + "}");
                return;
            }
            Console.WriteLine("{\"chunks\":" + Kept.Count + "}");
            Console.Out.Flush();
        }
    }
}
