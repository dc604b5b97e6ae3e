// The launch port's program (crates/cli/tests/launch_port.rs): started by
// `clrprof record --sampled -- dotnet spawner.dll MODE MS [MARKER]`, it
// waits MS milliseconds (long after its own start, when the port's first
// two connections are long done), then starts a .NET process of its own,
// which inherits DOTNET_DiagnosticPorts and so waits at its start until
// the port resumes it.
//   child MARKER          the started process: writes MARKER and ends.
//   parent MS             starts `child` and waits for it (at most 60 s),
//                         then prints {"child_ended":..,"child_exit":..}.
//   orphan MS MARKER      starts `sh -c "sleep 2; exec dotnet spawner.dll
//                         child MARKER"` with its output closed and ends
//                         at once: the .NET process starts after this
//                         program has ended.
using System;
using System.Diagnostics;
using System.IO;
using System.Threading;

static class P
{
    static int Main(string[] args)
    {
        string mode = args.Length > 0 ? args[0] : "parent";
        if (mode == "child")
        {
            if (args.Length > 1)
                File.WriteAllText(args[1], "child " + Process.GetCurrentProcess().Id + "\n");
            return 0;
        }
        string host = Process.GetCurrentProcess().MainModule.FileName;
        string dll = typeof(P).Assembly.Location;
        Thread.Sleep(args.Length > 1 ? int.Parse(args[1]) : 2000);
        if (mode == "orphan")
        {
            string script = "exec </dev/null >/dev/null 2>&1; sleep 2; exec \"$0\" \"$1\" child \"$2\"";
            var o = new ProcessStartInfo("/bin/sh");
            // Arguments are split as on Windows: double quotes, \" inside.
            o.Arguments = "-c \"" + script.Replace("\"", "\\\"") + "\" \"" + host + "\" \"" + dll + "\" \"" + args[2] + "\"";
            o.UseShellExecute = false;
            Process.Start(o);
            Console.WriteLine("{\"orphan\":true}");
            return 0;
        }
        var p = new ProcessStartInfo(host);
        p.Arguments = "\"" + dll + "\" child";
        p.UseShellExecute = false;
        var c = Process.Start(p);
        bool ended = c.WaitForExit(60000);
        if (!ended)
            c.Kill();
        Console.WriteLine("{\"child_ended\":" + (ended ? "true" : "false") + ",\"child_exit\":" + (ended ? c.ExitCode : -1) + "}");
        return ended ? 0 : 3;
    }
}
