// The capture matrix's program (crates/cli/tests/capture_matrix.rs): it
// does known things and counts its own truth, so that a recording of it in
// any mode can be compared figure by figure.
//
// What it does, in order:
//   pause "start"   (a test attaches here)
//   phase A: 3,000 TruthA (the first 1,000 kept), 500 TruthCache added to a
//            cache that only grows, 400 TruthTemp kept in a list, 60 GC
//            handles to TruthHandle objects (20 freed), 400 finalizable
//            TruthFin (garbage; the first finalizer waits until two more
//            GCs have seen the f-reachable queue), induced GCs 2, 0, 1, 2
//   pause "dump1"   (DumpHeap here with --api-dump; a test's heap-dump here)
//   phase off: 200 TruthA (garbage) and 700 TruthOff (kept), with
//            allocation logging off when --off is given
//   phase B: 500 more TruthCache, the TruthTemp list cleared, 10 more
//            handles freed, induced GCs 0, 1 and a compacting 2
//   pause "dump2"
//   end: a full GC, the finalizers waited for, another full GC
//
// At each pause it prints one JSON line (the live marker objects at that
// moment, the GC counts) and, under the agent, writes the comments
// "pause NAME" and "resume NAME" around it; it then reads one line from
// standard input ("go") before going on. At the end it prints its truth as
// one JSON line. The agent is touched (ClrProfControl, compiled in) only
// after the start pause, so that an agent attached there is found.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

class TruthA { public int X; }
class TruthCache { public long Key; }
class TruthTemp { public int X; }
class TruthHandle { public int X; }
class TruthOff { public int X; }
class TruthFin
{
    public static int Finalized;
    public static int Blocked;
    public static readonly ManualResetEvent Gate = new ManualResetEvent(false);
    ~TruthFin()
    {
        // The first finalizer holds the others back, so the objects stay on
        // the f-reachable queue across the GCs that follow (the runtime
        // reports the queue again at each of them).
        if (Interlocked.Exchange(ref Blocked, 1) == 0) Gate.WaitOne(10000);
        Interlocked.Increment(ref Finalized);
    }
}

static class P
{
    const int ACount = 3000, AKept = 1000, OffACount = 200, OffCount = 700;
    const int CacheStep = 500, TempCount = 400, HandleCount = 60, HandlesFreedA = 20, HandlesFreedB = 10;
    const int FinCount = 400;

    static readonly List<TruthCache> Cache = new List<TruthCache>();
    static readonly List<TruthA> KeepA = new List<TruthA>();
    static readonly List<TruthTemp> Temp = new List<TruthTemp>();
    static readonly List<TruthOff> KeepOff = new List<TruthOff>();
    static readonly List<GCHandle> Handles = new List<GCHandle>();
    static readonly int[] Induced = new int[3];
    static readonly List<string> Comments = new List<string>();
    static readonly List<int> ApiDumps = new List<int>();
    static readonly StringBuilder LiveAt = new StringBuilder();
    static int HandlesCreated, HandlesFreed, InducedCompacting;
    static bool Under;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeA(int n, int keep)
    {
        for (int i = 0; i < n; i++)
        {
            var a = new TruthA();
            if (i < keep) KeepA.Add(a);
        }
    }

    static object Junk;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Grow(int n)
    {
        for (int i = 0; i < n; i++)
        {
            Cache.Add(new TruthCache { Key = Cache.Count });
            // Garbage between the entries: the compacting GC of phase B
            // moves every entry that lies after it.
            Junk = new byte[64];
        }
        Junk = null;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeTemp(int n)
    {
        for (int i = 0; i < n; i++) Temp.Add(new TruthTemp());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeOff(int n)
    {
        for (int i = 0; i < n; i++) KeepOff.Add(new TruthOff());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeHandles(int n)
    {
        for (int i = 0; i < n; i++)
        {
            Handles.Add(GCHandle.Alloc(new TruthHandle(), GCHandleType.Normal));
            HandlesCreated++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void FreeHandles(int n)
    {
        for (int i = 0; i < n; i++)
        {
            Handles[Handles.Count - 1].Free();
            Handles.RemoveAt(Handles.Count - 1);
            HandlesFreed++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeFin(int n)
    {
        for (int i = 0; i < n; i++) new TruthFin();
    }

    static void Collect(int generation)
    {
        GC.Collect(generation);
        Induced[generation]++;
    }

    static void Comment(string text)
    {
        if (!Under) return;
        ClrProfControl.LogWriteLine(text);
        Comments.Add(text);
    }

    static string Gcs()
    {
        return "[" + GC.CollectionCount(0) + "," + GC.CollectionCount(1) + "," + GC.CollectionCount(2) + "]";
    }

    static string Live()
    {
        return "{\"TruthA\":" + KeepA.Count + ",\"TruthCache\":" + Cache.Count + ",\"TruthTemp\":" + Temp.Count
            + ",\"TruthHandle\":" + Handles.Count + ",\"TruthOff\":" + KeepOff.Count + ",\"TruthFin\":0}";
    }

    static void Pause(string name, bool apiDump)
    {
        Comment("pause " + name);
        if (apiDump && Under) ApiDumps.Add(ClrProfControl.DumpHeap("truth " + name));
        string live = Live();
        if (name != "start")
        {
            if (LiveAt.Length > 0) LiveAt.Append(',');
            LiveAt.Append("\"" + name + "\":" + live);
        }
        Console.WriteLine("{\"pause\":\"" + name + "\",\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id
            + ",\"gc\":" + Gcs() + ",\"live\":" + live + "}");
        Console.Out.Flush();
        string line = Console.ReadLine();
        if (line == null || line.Trim() != "go") Environment.Exit(2);
        Comment("resume " + name);
    }

    static int Main(string[] args)
    {
        bool apiDump = Array.IndexOf(args, "--api-dump") >= 0;
        bool off = Array.IndexOf(args, "--off") >= 0;
        // The GC counts before anything can record a GC: read before the
        // start pause, where a test attaches the agent (an attached agent's
        // periodic dumps may begin before the program reads its standard
        // input again). A launched agent saw every GC of the process, so
        // the test counts from 0 there.
        string gcAtStart = Gcs();
        Pause("start", false);
        Under = ClrProfControl.ProcessIsUnderProfiler;
        Comment("truth start");

        MakeA(ACount, AKept);
        Grow(CacheStep);
        MakeTemp(TempCount);
        MakeHandles(HandleCount);
        FreeHandles(HandlesFreedA);
        MakeFin(FinCount);
        Collect(2);  // queues every TruthFin for finalization
        Collect(0);  // the queue reported again (its first finalizer waits)
        Collect(1);
        TruthFin.Gate.Set();
        GC.WaitForPendingFinalizers();
        Collect(2);  // the finalized TruthFin objects collected
        Pause("dump1", apiDump);

        Comment("off start");
        bool offSeen = true;
        if (off)
        {
            ClrProfControl.AllocationLoggingActive = false;
            offSeen = ClrProfControl.AllocationLoggingActive;
        }
        MakeA(OffACount, 0);
        MakeOff(OffCount);
        if (off) ClrProfControl.AllocationLoggingActive = true;
        Comment("off end");

        Grow(CacheStep);
        Temp.Clear();
        FreeHandles(HandlesFreedB);
        Collect(0);
        Collect(1);
        // A compacting full GC: the cache's entries move (a dump-diff must
        // follow them; without allocation records, through the u records).
        // (The runtime tells a profiler such a GC's reason as "other", not
        // "induced": it is counted apart.)
        GC.Collect(2, GCCollectionMode.Forced, true, true);
        InducedCompacting++;
        Pause("dump2", apiDump);

        Comment("truth end");
        Collect(2);
        GC.WaitForPendingFinalizers();
        Collect(2);

        var json = new StringBuilder();
        json.Append("{\"truth\":true");
        json.Append(",\"runtime\":\"" + Environment.Version + "\"");
        json.Append(",\"under_profiler\":" + (Under ? "true" : "false"));
        json.Append(",\"off\":" + (off ? "true" : "false"));
        json.Append(",\"allocations_while_off\":" + (offSeen ? "true" : "false"));
        json.Append(",\"allocated\":{\"TruthA\":" + (ACount + OffACount) + ",\"TruthCache\":" + (2 * CacheStep)
            + ",\"TruthTemp\":" + TempCount + ",\"TruthHandle\":" + HandleCount + ",\"TruthOff\":" + OffCount
            + ",\"TruthFin\":" + FinCount + "}");
        json.Append(",\"allocated_off_phase\":{\"TruthA\":" + OffACount + ",\"TruthOff\":" + OffCount + "}");
        json.Append(",\"calls\":{\"P::MakeA\":2,\"P::Grow\":2,\"P::MakeFin\":1,\"P::MakeOff\":1}");
        json.Append(",\"finalized\":{\"TruthFin\":" + Volatile.Read(ref TruthFin.Finalized) + "}");
        json.Append(",\"handles\":{\"created\":" + HandlesCreated + ",\"freed\":" + HandlesFreed + "}");
        json.Append(",\"induced\":[" + Induced[0] + "," + Induced[1] + "," + Induced[2] + "]");
        json.Append(",\"induced_compacting\":" + InducedCompacting);
        json.Append(",\"gc_at_start\":" + gcAtStart);
        json.Append(",\"gc\":" + Gcs());
        json.Append(",\"live_at\":{" + LiveAt + "}");
        json.Append(",\"api_dumps\":[" + string.Join(",", ApiDumps) + "]");
        json.Append(",\"comments\":[");
        for (int i = 0; i < Comments.Count; i++) json.Append((i > 0 ? "," : "") + "\"" + Comments[i] + "\"");
        json.Append("]}");
        GC.KeepAlive(Cache);
        GC.KeepAlive(KeepA);
        GC.KeepAlive(KeepOff);
        Console.WriteLine(json.ToString());
        return 0;
    }
}
