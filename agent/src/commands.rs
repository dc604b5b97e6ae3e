//! The collector's commands, run on the agent's network thread (never in
//! a runtime callback) through [`crate::control`], the same functions the
//! control socket and the program's own P/Invoke calls use.

use crate::control;
use clrprof_wire::Command;

fn was(previous: bool) -> String {
    format!("ok (was {})", if previous { "on" } else { "off" })
}

/// Runs `cmd`; gives the text of the reply or why it failed.
pub fn run(cmd: &Command) -> Result<String, String> {
    let done = match cmd {
        Command::Comment(text) => control::comment(text).map(|()| "ok".to_string()),
        Command::Dump => control::heap_dump(None, None)
            .map(|d| format!("ok heap dump {}: {} objects, {} bytes, {} roots, {} ms", d.index, d.objects, d.bytes, d.roots, d.millis)),
        Command::Allocations(on) => control::set_allocations(*on).map(was),
        Command::Calls(on) => control::set_calls(*on).map(was),
        Command::Flush => control::flush().map(|()| "ok".to_string()),
    };
    done.map_err(|e| e.to_string())
}
