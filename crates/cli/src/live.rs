//! Reaching a running .NET process: through the control socket of a
//! clrprof agent it already has, or by loading the agent into it through
//! the runtime's diagnostics socket (AttachProfiler), with the agent's
//! settings as the attach request's client data.

use anyhow::{Context, Result};
use clrprof_control::client::Client;
use clrprof_control::{diagnostics, process};
use std::path::Path;
use std::time::Duration;

/// The agent's class id as the attach request carries it.
const CLSID: diagnostics::Clsid = (0xBC62_0A3A, 0xB286, 0x4C9C, [0x81, 0x38, 0x25, 0x6E, 0xE4, 0x4F, 0x80, 0x2D]);

/// How long the runtime may take to load and initialize the agent.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);

/// The agent already running in `pid`, if any (after checking the
/// process exists and is ours).
pub fn existing_agent(pid: u32) -> Result<Option<Client>> {
    process::find(pid)?;
    Ok(Client::connect(pid)?)
}

/// Loads the agent into `pid` (which has none) with `settings` as
/// `KEY=VALUE` lines, and connects to its control socket.
pub fn attach(pid: u32, agent: Option<&Path>, settings: &[(&str, String)]) -> Result<Client> {
    let (_, runtime) = process::attachable(pid)?;
    let agent = crate::cmd_record::find_agent(agent)?;
    let mut data = String::new();
    for (k, v) in settings {
        data.push_str(k);
        data.push('=');
        data.push_str(v);
        data.push('\n');
    }
    diagnostics::attach_profiler(pid, CLSID, &agent, data.as_bytes(), ATTACH_TIMEOUT).with_context(|| {
        format!(
            "cannot load the agent {} into process {pid} (.NET {})",
            agent.display(),
            runtime.version.as_deref().unwrap_or("of unknown version")
        )
    })?;
    Ok(Client::wait_for(pid, ATTACH_TIMEOUT)?)
}
