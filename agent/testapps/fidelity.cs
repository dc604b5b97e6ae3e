// Common library paths for the observer-effect test (agent/tests/fidelity.rs):
// number and date formatting, string interpolation, LINQ, dictionaries,
// async/await, exceptions, reflection. The workload runs twice: once to
// warm up (caches, tiering), once measured. Allocation logging is on only
// around the measured run (clrprof_set_allocations), and the program
// prints what the runtime says it allocated meanwhile
// (GC.GetTotalAllocatedBytes(true)) so the test can compare it with the log.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading.Tasks;

class Item { public int Id; public string Name; public double Price; public DateTime When; }

static class P
{
    [DllImport("clrprof_agent")] static extern int clrprof_set_allocations(int on);

    static long sink;

    // Runs without the agent too (then nothing is switched).
    static void Logging(int on)
    {
        try { clrprof_set_allocations(on); } catch (DllNotFoundException) { }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Numbers(int n)
    {
        for (int i = 0; i < n; i++)
        {
            sink += i.ToString().Length;
            sink += (i * 7919L).ToString(CultureInfo.InvariantCulture).Length;
            sink += (i / 3.0).ToString("F2", CultureInfo.InvariantCulture).Length;
            sink += ((uint)i * 31u).ToString("X8").Length;
            sink += int.Parse((i % 1000).ToString());
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Dates(int n)
    {
        var t0 = new DateTime(2024, 1, 1, 0, 0, 0, DateTimeKind.Utc);
        for (int i = 0; i < n; i++)
        {
            var t = t0.AddMinutes(i * 37);
            sink += t.ToString("yyyy-MM-dd HH:mm:ss", CultureInfo.InvariantCulture).Length;
            sink += t.ToString("O").Length;
            sink += TimeSpan.FromSeconds(i).ToString().Length;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Interpolation(int n)
    {
        for (int i = 0; i < n; i++)
        {
            string s = $"item {i} of {n}: {i * 1.5} ({(i % 2 == 0 ? "even" : "odd")})";
            sink += s.Length;
            var sb = new StringBuilder();
            sb.Append("row ").Append(i).Append(',').Append(i * 2L).Append(';');
            sink += sb.ToString().Length;
            sink += string.Join(",", new[] { "a", i.ToString(), "c" }).Length;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static List<Item> Items(int n)
    {
        var t0 = new DateTime(2024, 1, 1);
        var list = new List<Item>();
        for (int i = 0; i < n; i++) list.Add(new Item { Id = i, Name = "n" + (i % 50), Price = i % 97, When = t0.AddDays(i % 400) });
        return list;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Linq(List<Item> items)
    {
        var groups = items.Where(x => x.Price > 10).GroupBy(x => x.Name).Select(g => new { g.Key, Sum = g.Sum(x => x.Price) }).OrderBy(g => g.Sum).ToList();
        sink += groups.Count;
        sink += items.Select(x => x.Id).Where(x => x % 3 == 0).Take(100).ToArray().Length;
        sink += items.OrderByDescending(x => x.When).ThenBy(x => x.Id).First().Id;
        sink += items.ToDictionary(x => x.Id, x => x.Name).Count;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Dictionaries(int n)
    {
        var d = new Dictionary<string, int>();
        for (int i = 0; i < n; i++) d["k" + (i % 500)] = i;
        var byInt = new Dictionary<int, List<string>>();
        for (int i = 0; i < n; i++)
        {
            if (!byInt.TryGetValue(i % 64, out var l)) { l = new List<string>(); byInt[i % 64] = l; }
            l.Add("v");
        }
        var set = new HashSet<long>();
        for (int i = 0; i < n; i++) set.Add(i * 13L % 1009);
        sink += d.Count + byInt.Count + set.Count;
    }

    // Continuations run on the completing thread (no thread pool: how many
    // pool threads a run starts depends on its speed, and each allocates).
    [MethodImpl(MethodImplOptions.NoInlining)]
    static async Task<int> Leaf(TaskCompletionSource<int> source)
    {
        int v = await source.Task;
        return v * 2;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static async Task<int> Middle(TaskCompletionSource<int> source)
    {
        return await Leaf(source) + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Async(int n)
    {
        int total = 0;
        for (int i = 0; i < n; i++)
        {
            var source = new TaskCompletionSource<int>();
            var task = Middle(source);
            source.SetResult(i);
            total += task.Result;
        }
        var sources = Enumerable.Range(0, 8).Select(_ => new TaskCompletionSource<int>()).ToArray();
        var all = Task.WhenAll(sources.Select(Middle));
        for (int i = 0; i < sources.Length; i++) sources[i].SetResult(i);
        return total + all.Result.Sum();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Throw(int i) { throw new InvalidOperationException("bad " + i); }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Exceptions(int n)
    {
        for (int i = 0; i < n; i++)
        {
            try { Throw(i); }
            catch (InvalidOperationException e) { sink += e.Message.Length; }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Reflection(int n)
    {
        var t = typeof(Item);
        for (int i = 0; i < n; i++)
        {
            var item = (Item)Activator.CreateInstance(t);
            t.GetField("Id").SetValue(item, i);
            sink += (int)t.GetField("Id").GetValue(item);
            sink += t.GetFields().Length;
            sink += typeof(P).GetMethod("Throw", BindingFlags.NonPublic | BindingFlags.Static).Name.Length;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work(int n)
    {
        Numbers(n);
        Dates(n / 2);
        Interpolation(n / 2);
        Linq(Items(n));
        Dictionaries(n);
        sink += Async(n / 20);
        Exceptions(n / 50);
        Reflection(n / 20);
    }

    static void Main(string[] args)
    {
        int n = args.Length > 0 ? int.Parse(args[0]) : 2000;
        int warm = args.Length > 1 ? int.Parse(args[1]) : 3;
        // GC.GetTotalAllocatedBytes(bool) (.NET Core 3.0+) is not in the
        // reference assemblies mcs compiles against: bound through reflection.
        var total = (Func<bool, long>)Delegate.CreateDelegate(typeof(Func<bool, long>),
            typeof(GC).GetMethod("GetTotalAllocatedBytes", new[] { typeof(bool) }));
        Logging(0);
        // Warm up until the code is what it will stay: tiered compilation
        // starts counting calls once no new method was compiled for a
        // while, and compiles hot methods again in the background; what the
        // measured run allocates must not depend on how far that got.
        for (int w = 0; w < warm; w++)
        {
            Work(n);
            System.Threading.Thread.Sleep(300);
        }
        Logging(1);
        long before = total(true);
        Work(n);
        long after = total(true);
        Logging(0);
        Console.WriteLine("{\"allocated\":" + (after - before) + ",\"sink\":" + sink + "}");
    }
}
