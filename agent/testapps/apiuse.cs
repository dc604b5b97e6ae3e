// Uses the in-process API (agent/dotnet/ClrProfControl.cs, compiled in):
// comments around a phase, a phase with allocation logging off, two heap
// dumps, and prints what it did as JSON. Run with and without the agent.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

class ApiA { public int X; }
class ApiOff { public int X; }
class ApiB { public int X; }

static class P
{
    const int CountA = 1000, CountOff = 700, CountB = 300;
    static readonly List<object> Keep = new List<object>();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Make<T>(int n) where T : new()
    {
        for (int i = 0; i < n; i++) Keep.Add(new T());
    }

    static int Main()
    {
        bool under = ClrProfControl.ProcessIsUnderProfiler;
        ClrProfControl.LogWriteLine("phase A start");
        Make<ApiA>(CountA);
        ClrProfControl.LogWriteLine("phase A end");
        ClrProfControl.AllocationLoggingActive = false;
        bool offSeen = ClrProfControl.AllocationLoggingActive;
        ClrProfControl.LogWriteLine("logging off");
        Make<ApiOff>(CountOff);
        ClrProfControl.AllocationLoggingActive = true;
        ClrProfControl.LogWriteLine("logging on");
        Make<ApiB>(CountB);
        int d1 = ClrProfControl.DumpHeap("api dump one");
        int d2 = ClrProfControl.DumpHeap("api dump two");
        GC.KeepAlive(Keep);
        Console.WriteLine("{\"under_profiler\":" + (under ? "true" : "false")
            + ",\"allocations_while_off\":" + (offSeen ? "true" : "false")
            + ",\"dumps\":[" + d1 + "," + d2 + "]"
            + ",\"types\":{\"ApiA\":" + CountA + ",\"ApiOff\":" + CountOff + ",\"ApiB\":" + CountB + "}}");
        return 0;
    }
}
