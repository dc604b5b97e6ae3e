// ClrProfControl: a program's own calls into the clrprof agent, as
// CLRProfiler's CLRProfilerControl class offered them. Add this file to a
// project; every call does nothing when the agent is not loaded (the
// program runs normally without a profiler).
//
//   ClrProfControl.LogWriteLine("phase 2");          // a comment (z line) in the log
//   ClrProfControl.DumpHeap("after warm-up");         // a heap dump into the log
//   ClrProfControl.AllocationLoggingActive = false;   // stop logging allocations ...
//   ClrProfControl.AllocationLoggingActive = true;    // ... and start again
//   ClrProfControl.CallLoggingActive = false;         // the same for calls (CLRPROF_CALLS=1)
//
// The functions are exported by libclrprof_agent.so, whose soname makes
// DllImport find the copy the runtime loaded as profiler.
using System;
using System.Runtime.InteropServices;

public static class ClrProfControl
{
    const string Agent = "clrprof_agent";

    [DllImport(Agent, EntryPoint = "clrprof_active")] static extern int NativeActive();
    [DllImport(Agent, EntryPoint = "clrprof_comment", CharSet = CharSet.Unicode)] static extern int NativeComment(string text);
    [DllImport(Agent, EntryPoint = "clrprof_dump_heap", CharSet = CharSet.Unicode)] static extern int NativeDumpHeap(string label);
    [DllImport(Agent, EntryPoint = "clrprof_set_allocations")] static extern int NativeSetAllocations(int on);
    [DllImport(Agent, EntryPoint = "clrprof_set_calls")] static extern int NativeSetCalls(int on);
    [DllImport(Agent, EntryPoint = "clrprof_allocations")] static extern int NativeAllocations();
    [DllImport(Agent, EntryPoint = "clrprof_calls")] static extern int NativeCalls();

    static readonly bool loaded = Probe();

    static bool Probe()
    {
        try { return NativeActive() == 1; }
        catch (DllNotFoundException) { return false; }
        catch (EntryPointNotFoundException) { return false; }
        catch (BadImageFormatException) { return false; }
    }

    /// True when the clrprof agent profiles this process.
    public static bool ProcessIsUnderProfiler { get { return loaded; } }

    /// Writes a comment into the log (a z line, in this thread's time order).
    public static void LogWriteLine(string text)
    {
        if (loaded) NativeComment(text ?? "");
    }

    /// Writes a formatted comment into the log.
    public static void LogWriteLine(string format, params object[] args)
    {
        if (loaded) NativeComment(string.Format(format, args));
    }

    /// Takes a heap dump into the log (after a comment with the label, if
    /// one is given) and waits for it. Returns the dump's index in the
    /// log, or -1 when there is no agent or the dump failed.
    public static int DumpHeap(string label = null)
    {
        if (!loaded) return -1;
        int r = NativeDumpHeap(label);
        return r < 0 ? -1 : r;
    }

    /// Whether allocations are logged (false when there is no agent).
    public static bool AllocationLoggingActive
    {
        get { return loaded && NativeAllocations() == 1; }
        set { if (loaded) NativeSetAllocations(value ? 1 : 0); }
    }

    /// Whether calls are logged (false when there is no agent, or call
    /// logging was not enabled at start).
    public static bool CallLoggingActive
    {
        get { return loaded && NativeCalls() == 1; }
        set { if (loaded) NativeSetCalls(value ? 1 : 0); }
    }
}
