// Ends in the way its first argument names, while a second thread is
// still allocating: the agent must end its log whole (or leave a spool
// that completes it) on every path. Prints the count of ExitMarker
// objects it made before ending (and HandlerMarker objects made in its
// exit handler, for "sigterm-handler").
//
//   return           Main returns
//   exit             Environment.Exit(3)
//   throw            an unhandled exception on the main thread
//   throw-worker     an unhandled exception on another thread
//   sigterm          SIGTERM, no handler of the program's
//   sigterm-handler  SIGTERM, with a ProcessExit handler that allocates
//   sigint           SIGINT
//   native-exit      exit(4) from native code (libc, by P/Invoke)
//   wait             returns once standard input ends (the parent killed;
//                    SIGKILL)
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

class ExitMarker { public int X; }
class HandlerMarker { public int X; }
class ChurnMarker { public long A, B; }

static class P
{
    public const int Count = 20000;
    public const int InHandler = 3000;
    static readonly List<object> Keep = new List<object>();
    static volatile object Sink;

    [DllImport("libc", EntryPoint = "kill")]
    static extern int Kill(int pid, int sig);
    [DllImport("libc", EntryPoint = "getpid")]
    static extern int GetPid();
    [DllImport("libc", EntryPoint = "exit")]
    static extern void NativeExit(int code);

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Alloc()
    {
        for (int i = 0; i < Count; i++) Keep.Add(new ExitMarker());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Churn()
    {
        // Allocates until the process ends: the agent ends the log while
        // this thread is still writing records.
        // (a bounded rate: 200 objects a millisecond at most).
        var t = new Thread(() =>
        {
            while (true)
            {
                for (int i = 0; i < 200; i++) Sink = new ChurnMarker();
                Thread.Sleep(1);
            }
        });
        t.IsBackground = true;
        t.Start();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Die()
    {
        throw new InvalidOperationException("clrprof exit test");
    }

    static void Say(string json)
    {
        Console.WriteLine(json);
        Console.Out.Flush();
    }

    static int Main(string[] args)
    {
        string path = args.Length > 0 ? args[0] : "return";
        Churn();
        Alloc();
        if (path == "sigterm-handler")
        {
            AppDomain.CurrentDomain.ProcessExit += (s, e) =>
            {
                for (int i = 0; i < InHandler; i++) Keep.Add(new HandlerMarker());
                Say("{\"handler\":{\"HandlerMarker\":" + InHandler + "}}");
            };
        }
        Say("{\"path\":\"" + path + "\",\"pid\":" + GetPid() + ",\"types\":{\"ExitMarker\":" + Count + "}}");
        switch (path)
        {
            case "return":
                return 0;
            case "exit":
                Environment.Exit(3);
                break;
            case "throw":
                Die();
                break;
            case "throw-worker":
                new Thread(Die).Start();
                Thread.Sleep(Timeout.Infinite);
                break;
            case "sigterm":
            case "sigterm-handler":
                Kill(GetPid(), 15);
                Thread.Sleep(Timeout.Infinite);
                break;
            case "sigint":
                Kill(GetPid(), 2);
                Thread.Sleep(Timeout.Infinite);
                break;
            case "native-exit":
                NativeExit(4);
                break;
            case "wait":
                while (Console.In.ReadLine() != null) { }
                return 0;
        }
        return 1;
    }
}
