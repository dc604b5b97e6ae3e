// An allocation-heavy program for agent/bench/overhead.sh: builds and drops
// small trees of objects at a few stack depths, with strings and arrays,
// so that allocation, stacks and GCs all matter.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;

class Node { public Node Left, Right; public int Value; }

static class P
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static Node Tree(int depth)
    {
        var n = new Node { Value = depth };
        if (depth > 0) { n.Left = Tree(depth - 1); n.Right = Tree(depth - 1); }
        return n;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Strings(int count)
    {
        for (int i = 0; i < count; i++) sink += ("item" + i).Length;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Lists(int count)
    {
        var keep = new List<int[]>();
        for (int i = 0; i < count; i++)
        {
            keep.Add(new int[i % 32 + 1]);
            if (keep.Count > 1000) keep.Clear();
        }
        sink += keep.Count;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Level(int level, int rounds)
    {
        if (level > 0) { Level(level - 1, rounds); return; }
        for (int r = 0; r < rounds; r++)
        {
            sink += Tree(10).Value;
            Strings(200);
            Lists(200);
        }
    }

    static void Main(string[] args)
    {
        int rounds = args.Length > 0 ? int.Parse(args[0]) : 1000;
        var sw = Stopwatch.StartNew();
        Level(12, rounds);
        Console.WriteLine("{\"ms\":" + sw.ElapsedMilliseconds + ",\"gc\":[" + GC.CollectionCount(0) + "," + GC.CollectionCount(1) + "," + GC.CollectionCount(2) + "],\"sink\":" + sink + "}");
    }
}
