// A program with a cache of Leak.Node entries, built twice by
// crates/cli/tests/check.rs: as is, the cache keeps its last 100 entries;
// built with -define:LEAK (the "second build"), it never evicts one. Each
// build adds 5,000 entries (each with a 64-byte payload) and allocates
// garbage strings beside them, collects, takes a heap dump through the
// in-process API when it runs under the agent, and prints one JSON line
// with the entries it keeps.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

namespace Leak
{
    class Node
    {
        public long Id;
        public byte[] Payload = new byte[64];
    }
}

static class Program
{
    const int Entries = 5000;
    const int Kept = 100;

    static readonly List<Leak.Node> Cache = new List<Leak.Node>();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Add(Leak.Node n)
    {
        Cache.Add(n);
#if !LEAK
        if (Cache.Count > Kept) Cache.RemoveAt(0);
#endif
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static string Garbage(int i)
    {
        return new string('x', 16 + i % 32);
    }

    static int Main()
    {
        Cache.Capacity = Entries;
        int chars = 0;
        for (int i = 0; i < Entries; i++)
        {
            Add(new Leak.Node { Id = i });
            chars += Garbage(i).Length;
        }
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
        if (ClrProfControl.ProcessIsUnderProfiler)
            ClrProfControl.DumpHeap("end");
        GC.KeepAlive(Cache);
        Console.WriteLine("{\"kept\":" + Cache.Count + ",\"entries\":" + Entries + ",\"chars\":" + chars + "}");
        return 0;
    }
}
