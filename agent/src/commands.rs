//! The collector's commands, run on the agent's network thread (never in
//! a runtime callback).

use clrprof_wire::Command;

/// Runs `cmd`; gives the text of the reply (`ok`) or why it failed.
pub fn run(cmd: &Command) -> Result<String, String> {
    let Some(agent) = crate::agent::get() else { return Err("the agent is not running".into()) };
    match cmd {
        Command::Flush => {
            agent.flush_async();
            Ok("ok".into())
        }
        other => Err(format!("{} is not available in this agent", other.text())),
    }
}
