//! Whether a program `record --sampled` would start can take part:
//! the session reaches a started program through `DOTNET_DiagnosticPorts`,
//! which only .NET 5 and later know. CoreCLR 3.x runs the program to its
//! end without connecting, so a `dotnet app.dll` whose
//! `app.runtimeconfig.json` names an older runtime (and does not let the
//! host roll forward to a newer major version) is refused before it
//! starts.

use super::dotnet_app::HostedApp;
use anyhow::{bail, Result};
use std::ffi::OsString;

/// The shared runtime's framework name.
const FRAMEWORK: &str = "Microsoft.NETCore.App";

/// The runtime a `runtimeconfig.json` names: its version, and whether the
/// host may move to a later major version (`rollForward` `Major` or
/// `LatestMajor`, in the file or in `DOTNET_ROLL_FORWARD`).
fn framework(config: &serde_json::Value, roll_env: Option<&str>) -> Option<(String, bool)> {
    let options = config.get("runtimeOptions")?;
    let named = |f: &serde_json::Value| f.get("name").and_then(|n| n.as_str()) == Some(FRAMEWORK);
    let f = match options.get("framework") {
        Some(f) if named(f) => f,
        _ => options.get("frameworks")?.as_array()?.iter().find(|f| named(f))?,
    };
    let version = f.get("version")?.as_str()?.to_string();
    let roll = f.get("rollForward").or_else(|| options.get("rollForward")).and_then(|r| r.as_str()).or(roll_env);
    let across_majors = roll.is_some_and(|r| r.eq_ignore_ascii_case("Major") || r.eq_ignore_ascii_case("LatestMajor"));
    Some((version, across_majors))
}

/// Refuses a `dotnet app.dll` command whose runtime cannot take part in
/// a session started through `DOTNET_DiagnosticPorts`; any other command
/// (one this cannot tell about) passes.
pub(crate) fn refuse_before_start(command: &[OsString]) -> Result<()> {
    let Some(app) = HostedApp::parse(command) else { return Ok(()) };
    if app.explicit_config {
        return Ok(());
    }
    let path = app.config_path();
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(()) };
    let Ok(config) = serde_json::from_str::<serde_json::Value>(&text) else { return Ok(()) };
    let roll_env = std::env::var("DOTNET_ROLL_FORWARD").ok();
    let Some((version, across_majors)) = framework(&config, roll_env.as_deref()) else { return Ok(()) };
    let major: Option<u32> = version.split('.').next().and_then(|m| m.parse().ok());
    match major {
        Some(m) if m < 5 && !across_majors => bail!(
            "{} names {FRAMEWORK} {version}: `record --sampled` starts a program under its session through \
             DOTNET_DiagnosticPorts, which only a .NET 5 or later runtime knows, so a .NET {m} program would run to \
             its end without it; nothing was started. Start the program yourself and attach: `clrprof record --sampled -p PID`",
            path.display()
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::framework;
    use serde_json::json;

    #[test]
    fn the_runtime_named_and_whether_it_may_roll_to_a_later_major() {
        let one = |v: &str| json!({"runtimeOptions": {"framework": {"name": "Microsoft.NETCore.App", "version": v}}});
        assert_eq!(framework(&one("3.1.0"), None), Some(("3.1.0".into(), false)));
        assert_eq!(framework(&one("3.1.0"), Some("LatestMajor")), Some(("3.1.0".into(), true)));
        let rolled =
            json!({"runtimeOptions": {"rollForward": "Major", "framework": {"name": "Microsoft.NETCore.App", "version": "3.1.0"}}});
        assert_eq!(framework(&rolled, None), Some(("3.1.0".into(), true)));
        let many = json!({"runtimeOptions": {"frameworks": [
            {"name": "Microsoft.AspNetCore.App", "version": "8.0.0"},
            {"name": "Microsoft.NETCore.App", "version": "8.0.0"}
        ]}});
        assert_eq!(framework(&many, None), Some(("8.0.0".into(), false)));
        assert_eq!(framework(&json!({"runtimeOptions": {}}), None), None);
    }
}
