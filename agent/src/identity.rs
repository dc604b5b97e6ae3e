//! Who the profiled process is, for the collector's handshake: its
//! program name and the runtime's version, read from `/proc/self` (no
//! call into the runtime).

/// This process, for the collector's handshake.
pub fn current() -> clrprof_stream::Identity {
    clrprof_stream::Identity { pid: std::process::id(), program: program(), runtime: runtime_version() }
}

/// The program's name: the main assembly's file stem for `dotnet app.dll`
/// (and `dotnet exec app.dll`), else the executable's file name.
pub fn program() -> String {
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    program_from_args(cmdline.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()))
}

fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".dll").or_else(|| name.strip_suffix(".exe")).unwrap_or(name)
}

fn program_from_args(args: impl Iterator<Item = String>) -> String {
    let args: Vec<String> = args.collect();
    let Some(first) = args.first() else { return "dotnet-app".into() };
    if file_stem(first) == "dotnet" {
        // The first argument ending in .dll is the app (options such as
        // `exec`, `--roll-forward X` come before it).
        if let Some(dll) = args.iter().skip(1).find(|a| a.ends_with(".dll")) {
            return file_stem(dll).to_string();
        }
    }
    file_stem(first).to_string()
}

/// The runtime's version: the directory of the loaded `libcoreclr.so`
/// (`.../Microsoft.NETCore.App/8.0.4/libcoreclr.so` gives `8.0.4`), or
/// `unknown`.
pub fn runtime_version() -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    version_from_maps(&maps).unwrap_or_else(|| "unknown".into())
}

fn version_from_maps(maps: &str) -> Option<String> {
    maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.ends_with("/libcoreclr.so")).and_then(|p| {
        let dir = p.strip_suffix("/libcoreclr.so")?;
        let v = dir.rsplit('/').next()?;
        v.chars().next().filter(char::is_ascii_digit).map(|_| v.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> String {
        program_from_args(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn names_and_versions() {
        assert_eq!(args(&["/usr/bin/dotnet", "/w/markers.dll", "x.dll"]), "markers");
        assert_eq!(args(&["dotnet", "exec", "--roll-forward", "Major", "app.dll"]), "app");
        assert_eq!(args(&["/srv/myservice"]), "myservice");
        assert_eq!(args(&[]), "dotnet-app");
        let maps = "7f00-7f01 r-xp 00000000 08:01 12 /v/dnv/net/runtime/.net/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so\n";
        assert_eq!(version_from_maps(maps).as_deref(), Some("8.0.4"));
        assert_eq!(version_from_maps("7f00-7f01 r-xp 0 0 0 /lib/libc.so\n"), None);
    }
}
