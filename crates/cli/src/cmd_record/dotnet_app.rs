//! A .NET assembly given to `record`: `dotnet app.dll`, or `app.dll`
//! alone (then run with the `dotnet` on `PATH`).
//!
//! The `dotnet` host runs `app.dll` only with an `app.runtimeconfig.json`
//! beside it naming the shared runtime (`dotnet build` writes one; a
//! compiler such as Mono's `mcs` does not). Without it the host gives up
//! ("The library 'libhostpolicy.so' required to execute the application
//! was not found"). When that file is missing, `record` writes one for
//! the newest runtime installed beside the host it is about to run
//! (`<host dir>/shared/Microsoft.NETCore.App/<version>`), created
//! exclusively and never through a link ([`clrprof_files::create_new`]);
//! a file already at the name, even a dangling link, is left as it is.

use anyhow::{bail, Result};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The shared runtime's framework name.
const FRAMEWORK: &str = "Microsoft.NETCore.App";

/// Host options (`dotnet [options] app.dll`) that take a value.
const OPTIONS_WITH_VALUE: [&str; 7] = [
    "--additionalprobingpath",
    "--additional-deps",
    "--depsfile",
    "--fx-version",
    "--roll-forward",
    "--roll-forward-on-no-candidate-fx",
    "--runtimeconfig",
];

/// The command to start: `app.dll ARGS` alone becomes `dotnet app.dll
/// ARGS` with the `dotnet` found on `PATH`; anything else is unchanged.
pub(super) fn command_for(command: &[OsString]) -> Result<Vec<OsString>> {
    let Some(first) = command.first() else { return Ok(Vec::new()) };
    if !is_dll(first) || !Path::new(first).is_file() {
        return Ok(command.to_vec());
    }
    let Some(host) = on_path(OsStr::new("dotnet")) else {
        bail!(
            "{} is a .NET assembly, which runs as `dotnet {}`, and there is no `dotnet` on PATH \
             (`bash scripts/setup-dotnet.sh` installs one and prints the `export PATH=...` line that puts it there)",
            first.to_string_lossy(),
            first.to_string_lossy()
        );
    };
    Ok(std::iter::once(host.into_os_string()).chain(command.iter().cloned()).collect())
}

/// The host and the assembly of a `dotnet [options] [exec [options]]
/// app.dll ...` command line.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct HostedApp {
    /// The `dotnet` host as given (a name looked up on `PATH`, or a path).
    pub host: OsString,
    /// The assembly, as given.
    pub app: PathBuf,
    /// `--runtimeconfig FILE` was given: the host reads that instead.
    pub explicit_config: bool,
}

impl HostedApp {
    /// The command's host and assembly, when the command starts a `dotnet`
    /// host on a `.dll` (not an SDK command such as `dotnet run`).
    pub(super) fn parse(command: &[OsString]) -> Option<HostedApp> {
        let host = command.first()?;
        if Path::new(host).file_name()? != "dotnet" {
            return None;
        }
        let mut explicit_config = false;
        let mut rest = command[1..].iter();
        let mut exec_seen = false;
        while let Some(arg) = rest.next() {
            let text = arg.to_string_lossy();
            if text == "exec" && !exec_seen {
                exec_seen = true;
                continue;
            }
            if let Some((name, _)) = text.split_once('=').filter(|(n, _)| OPTIONS_WITH_VALUE.contains(n)) {
                explicit_config |= name == "--runtimeconfig";
                continue;
            }
            if OPTIONS_WITH_VALUE.contains(&text.as_ref()) {
                explicit_config |= text == "--runtimeconfig";
                rest.next();
                continue;
            }
            if text.starts_with('-') {
                // --info, --version, --list-runtimes...: no program runs.
                return None;
            }
            return is_dll(arg).then(|| HostedApp { host: host.clone(), app: PathBuf::from(arg), explicit_config });
        }
        None
    }

    /// `app.runtimeconfig.json` beside `app.dll`.
    pub(super) fn config_path(&self) -> PathBuf {
        self.app.with_extension("runtimeconfig.json")
    }
}

/// What [`ensure_config`] did.
#[derive(Debug)]
pub(super) enum ConfigOutcome {
    /// Nothing was needed (a file is there, or the command names its own).
    NotNeeded,
    /// Wrote `path` for runtime `version`, of the host at `host`.
    Written { path: PathBuf, version: String, host: PathBuf },
}

/// Writes the missing `app.runtimeconfig.json` for the runtime of the
/// host, or says, as an error, exactly what file to write when it cannot.
pub(super) fn ensure_config(app: &HostedApp) -> Result<ConfigOutcome> {
    let config = app.config_path();
    let folder = app.app.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // A self-contained app carries the host policy itself and needs no
    // framework.
    if app.explicit_config || config.symlink_metadata().is_ok() || !app.app.is_file() || folder.join("libhostpolicy.so").exists() {
        return Ok(ConfigOutcome::NotNeeded);
    }
    let host = resolve_host(&app.host);
    let newest = host.as_deref().and_then(newest_runtime);
    let Some((host, version)) = host.zip(newest) else {
        bail!(
            "{} has no {} beside it, which `dotnet` needs to run it, and the runtimes of `{}` cannot be \
             found (no shared/{FRAMEWORK}/ beside it); write it with the version `{} --list-runtimes` \
             shows for {FRAMEWORK}, e.g. for 8.0.4: {}",
            app.app.display(),
            file_name(&config),
            app.host.to_string_lossy(),
            app.host.to_string_lossy(),
            config_text("8.0.0").trim_end()
        );
    };
    let text = config_text(&version);
    let cannot = |e: &dyn std::fmt::Display| {
        anyhow::anyhow!(
            "{} has no {} beside it, which `dotnet` needs to run it, and it cannot be written ({e}); \
             nothing was started. Write it yourself with this content: {}",
            app.app.display(),
            config.display(),
            text.trim_end()
        )
    };
    let mut file = clrprof_files::create_new(&config).map_err(|e| cannot(&e))?;
    if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.sync_all()) {
        drop(file);
        // Ours (created exclusively above): not left half written.
        let _ = std::fs::remove_file(&config);
        return Err(cannot(&e));
    }
    Ok(ConfigOutcome::Written { path: config, version, host })
}

/// The file's text: the framework at `version`; the host rolls forward to
/// the newest patch of that major.minor.
pub(super) fn config_text(version: &str) -> String {
    format!("{{\n  \"runtimeOptions\": {{\n    \"framework\": {{\n      \"name\": \"{FRAMEWORK}\",\n      \"version\": \"{version}\"\n    }}\n  }}\n}}\n")
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn is_dll(arg: &OsStr) -> bool {
    Path::new(arg).extension().is_some_and(|e| e.eq_ignore_ascii_case("dll"))
}

/// An executable named `name` in a `PATH` folder, as the shell finds it.
fn on_path(name: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| if d.as_os_str().is_empty() { PathBuf::from(".") } else { d })
        .map(|d| d.join(name))
        .find(|f| f.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The host's real path (links resolved, as the host finds its runtimes
/// from its own real place).
fn resolve_host(host: &OsStr) -> Option<PathBuf> {
    let found = if Path::new(host).components().count() > 1 { Some(PathBuf::from(host)) } else { on_path(host) };
    std::fs::canonicalize(found?).ok()
}

/// The newest release runtime beside `host`, as `major.minor.0`.
fn newest_runtime(host: &Path) -> Option<String> {
    let dir = host.parent()?.join("shared").join(FRAMEWORK);
    let versions = std::fs::read_dir(dir).ok()?;
    versions
        .flatten()
        .filter(|e| e.path().join("libcoreclr.so").is_file())
        .filter_map(|e| release_version(&e.file_name().to_string_lossy()))
        .max()
        .map(|(major, minor, _)| format!("{major}.{minor}.0"))
}

/// `8.0.4` as numbers; previews (`9.0.0-rc.1`) and other names are `None`.
fn release_version(name: &str) -> Option<(u32, u32, u32)> {
    let mut parts = name.split('.');
    let v = (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
    parts.next().is_none().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn finds_the_app_of_a_host_command_line() {
        let app = |v: &[&str]| HostedApp::parse(&os(v)).map(|a| (a.app.display().to_string(), a.explicit_config));
        assert_eq!(app(&["dotnet", "app.dll", "x.dll"]), Some(("app.dll".into(), false)));
        assert_eq!(app(&["/opt/dn/dotnet", "--roll-forward", "Major", "bin/A.DLL"]), Some(("bin/A.DLL".into(), false)));
        assert_eq!(app(&["dotnet", "exec", "--depsfile", "d.json", "a.dll"]), Some(("a.dll".into(), false)));
        assert_eq!(app(&["dotnet", "--runtimeconfig", "r.json", "a.dll"]), Some(("a.dll".into(), true)));
        assert_eq!(app(&["dotnet", "--runtimeconfig=r.json", "a.dll"]), Some(("a.dll".into(), true)));
        assert_eq!(app(&["dotnet", "run"]), None);
        assert_eq!(app(&["dotnet", "--info"]), None);
        assert_eq!(app(&["./Service", "a.dll"]), None);
        assert_eq!(app(&["dotnet"]), None);
        let a = HostedApp::parse(&os(&["dotnet", "dir/my.app.dll"])).map(|a| a.config_path());
        assert_eq!(a, Some(PathBuf::from("dir/my.app.runtimeconfig.json")));
    }

    #[test]
    fn versions() {
        assert_eq!(release_version("8.0.4"), Some((8, 0, 4)));
        assert_eq!(release_version("3.1.23"), Some((3, 1, 23)));
        assert_eq!(release_version("9.0.0-rc.1.24431.7"), None);
        assert_eq!(release_version("8.0"), None);
        assert!(release_version("10.0.1") > release_version("9.0.12"));
    }

    /// The text is the JSON the host reads.
    #[test]
    fn config_is_json() {
        let v: serde_json::Value = serde_json::from_str(&config_text("8.0.0")).unwrap();
        assert_eq!(v["runtimeOptions"]["framework"]["name"], "Microsoft.NETCore.App");
        assert_eq!(v["runtimeOptions"]["framework"]["version"], "8.0.0");
    }

    /// The newest release runtime with a `libcoreclr.so`, as major.minor.0.
    #[test]
    fn newest_runtime_beside_the_host() {
        let dir = std::env::temp_dir().join(format!("clrprof-dotnet-app-{}", std::process::id()));
        let shared = dir.join("shared").join(FRAMEWORK);
        for v in ["3.1.23", "8.0.4", "9.0.0-rc.1"] {
            std::fs::create_dir_all(shared.join(v)).unwrap();
            std::fs::write(shared.join(v).join("libcoreclr.so"), b"").unwrap();
        }
        std::fs::create_dir_all(shared.join("10.0.0")).unwrap(); // no runtime in it
        assert_eq!(newest_runtime(&dir.join("dotnet")), Some("8.0.0".into()));
        assert_eq!(newest_runtime(&dir.join("nowhere/dotnet")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
