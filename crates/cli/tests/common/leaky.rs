//! The leaky program (agent/testapps/leaky.cs), driven step by step
//! through its standard input, for `clrprof leaks` and the UI's Leaks view.

use super::dotnet::{Dotnet, Runtime};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The leaky program, driven through its standard input.
pub struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pub pid: u32,
}

fn read_json(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("read the program's output");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("not a JSON line from the program: {line:?}: {e}"))
}

impl Program {
    pub fn start(dn: &Dotnet, rt: Runtime, dir: &Path, mode: &str) -> Program {
        Program::start_with(dn, rt, dir, mode, &[])
    }

    pub fn start_with(dn: &Dotnet, rt: Runtime, dir: &Path, mode: &str, env: &[(&str, &str)]) -> Program {
        let mut child = Command::new(dn.host(rt))
            .args(["leaky.dll", mode])
            .envs(env.iter().copied())
            .current_dir(dir)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start leaky");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let ready = read_json(&mut stdout);
        assert_eq!(ready["ready"], true, "{ready}");
        let pid = ready["pid"].as_u64().expect("pid") as u32;
        Program { child, stdin, stdout, pid }
    }

    pub fn step(&mut self) -> Value {
        writeln!(self.stdin, "step").expect("write to the program");
        self.stdin.flush().expect("flush");
        read_json(&mut self.stdout)
    }

    pub fn finish(mut self) {
        writeln!(self.stdin, "exit").ok();
        drop(self.stdin);
        let done = read_json(&mut self.stdout);
        assert_eq!(done["done"], true, "{done}");
        assert!(self.child.wait().expect("wait").success());
    }
}

/// Runs the program in `mode` under the capture agent (`agent`) with its
/// log at `log` (in `dir`), taking a heap dump into the log with
/// `clrprof heap-dump PID` (the binary `clrprof`) after each of `steps`
/// steps; gives the program's answers.
pub fn agent_log(dn: &Dotnet, rt: Runtime, dir: &Path, agent: &Path, clrprof: &Path, log: &str, steps: usize) -> Vec<Value> {
    let agent = agent.to_string_lossy().into_owned();
    let env = [
        ("CORECLR_ENABLE_PROFILING", "1"),
        ("CORECLR_PROFILER", "{BC620A3A-B286-4C9C-8138-256EE44F802D}"),
        ("CORECLR_PROFILER_PATH", agent.as_str()),
        ("CLRPROF_OUTPUT", log),
    ];
    let mut program = Program::start_with(dn, rt, dir, "leak", &env);
    let mut answers = Vec::new();
    for k in 0..steps {
        answers.push(program.step());
        let out = Command::new(clrprof)
            .args(["heap-dump", &program.pid.to_string(), "--label", &format!("step {k}")])
            .current_dir(dir)
            .output()
            .expect("run clrprof heap-dump");
        assert!(out.status.success(), "heap-dump {k}: {}", String::from_utf8_lossy(&out.stderr));
    }
    program.finish();
    answers
}
