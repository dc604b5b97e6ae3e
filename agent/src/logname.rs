//! The log's name and how it is opened: never over an existing file.
//!
//! Without `CLRPROF_OUTPUT` the log is `<program>_<pid>_<yyyyMMdd>_<HHmmss>.log`
//! in the current directory: the program is the first `.dll` or `.exe`
//! argument of the process (`dotnet app.dll` gives `app`), else the
//! executable's own name. The process id keeps two recordings started in
//! the same second apart.
//!
//! The file is created exclusively and never through a link
//! (`O_EXCL|O_NOFOLLOW`, mode 0600 less the umask; see `clrprof_files`): an
//! existing file is never overwritten unless `CLRPROF_FORCE=1`, and then the
//! entry at the path is replaced (a link itself, never its target). A default name that exists all the
//! same (a process id reused within the second) gets `_2`, `_3`, ...; a
//! named file that exists is an error the agent reports in its status.
//!
//! Before anything is written the agent asks how much room the file system
//! has: less than [`MIN_FREE`] is reported as an error at start, not found
//! out when the log is cut short.

use std::fs::File;
use std::path::{Path, PathBuf};

/// The least free space the agent starts with (bytes).
pub const MIN_FREE: u64 = 16 << 20;

/// The default log name for process `pid`, from `/proc/self/cmdline` and
/// the local time.
pub fn default_name(pid: u32) -> PathBuf {
    let args: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
        .unwrap_or_default();
    PathBuf::from(format!("{}_{pid}_{}.log", program(&args), local_stamp()))
}

/// The program's name from a command line: the first `.dll`/`.exe`
/// argument's stem, else the executable's, else `program`.
pub fn program(args: &[String]) -> String {
    let stem = |a: &String| Path::new(a).file_stem().map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty());
    let managed = args.iter().skip(1).find(|a| {
        Path::new(a).extension().is_some_and(|e| e.eq_ignore_ascii_case("dll") || e.eq_ignore_ascii_case("exe"))
    });
    let name = managed.and_then(stem).or_else(|| args.first().and_then(stem)).unwrap_or_else(|| "program".into());
    name.chars().map(|c| if c.is_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// Local time as `yyyyMMdd_HHmmss`.
pub fn local_stamp() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as libc::time_t;
    // Safety: a zeroed `tm` is a valid plain C struct; localtime_r fills it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // Safety: both pointers are to locals.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return now.to_string();
    }
    format!(
        "{:04}{:02}{:02}_{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Bytes free for an unprivileged writer on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // Safety: a zeroed statvfs is a valid plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // Safety: `c` is NUL-terminated, `st` is ours.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Creates the log: exclusively unless `force`; a `default` name that
/// exists gets a numbered suffix. Fails with a message naming the path
/// when the file exists, the place is not writable, or the file system is
/// (nearly) full. Returns the file and the path actually used.
pub fn create(path: &Path, default: bool, force: bool) -> Result<(File, PathBuf), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Some(free) = free_bytes(&dir) {
        if free < MIN_FREE {
            return Err(format!(
                "the file system of {} is full ({} bytes free, the agent wants at least {MIN_FREE})",
                dir.display(),
                free
            ));
        }
    }
    let mut candidate = path.to_path_buf();
    for n in 2..1000 {
        match clrprof_files::create(&candidate, force) {
            Ok(f) => return Ok((f, candidate)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && default => {
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                candidate = path.with_file_name(format!("{stem}_{n}.log"));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(format!("{} exists; the agent never overwrites a log (CLRPROF_FORCE=1 allows it)", path.display()))
            }
            Err(e) => return Err(format!("cannot create {}: {e}", candidate.display())),
        }
    }
    Err(format!("cannot find a free name beside {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn program_names() {
        assert_eq!(program(&v(&["/usr/bin/dotnet", "bin/App.Web.dll", "x"])), "App.Web");
        assert_eq!(program(&v(&["dotnet", "exec", "--runtimeconfig", "a.json", "tool.exe"])), "tool");
        assert_eq!(program(&v(&["/opt/app/MyService"])), "MyService");
        assert_eq!(program(&v(&[])), "program");
        assert_eq!(program(&v(&["/x/my app"])), "my_app");
    }

    #[test]
    fn never_overwrites() {
        let dir = std::env::temp_dir().join(format!("clrprof-logname-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.log");
        std::fs::write(&p, "keep").unwrap();
        let e = create(&p, false, false).unwrap_err();
        assert!(e.contains("exists"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep");
        let (_, used) = create(&p, true, false).unwrap();
        assert_eq!(used, dir.join("a_2.log"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep");
        let (_, used) = create(&p, false, true).unwrap();
        assert_eq!(used, p);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
        // A link at the path: refused without force, replaced (not
        // followed) with it.
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.join("l.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(create(&link, false, false).unwrap_err().contains("exists"));
        let (_, used) = create(&link, true, false).unwrap();
        assert_eq!(used, dir.join("l_2.log"));
        create(&link, false, true).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!link.symlink_metadata().unwrap().file_type().is_symlink());
        let e = create(Path::new("/proc/clrprof-nope/x.log"), false, false).unwrap_err();
        assert!(e.contains("cannot create"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
