//! The collector's directory and the files in it, trusting nothing another
//! local user could have put there.
//!
//! Rules:
//!
//! - The directory is made mode 0700 when the collector makes it. An
//!   existing one must be a directory owned by the collector's user, and
//!   not writable by group or others, even with its sticky bit set (others
//!   could add files of their own). Anything else is refused at start,
//!   naming the directory; `clrprof sessions`, `ctl` and `ui --collector`
//!   refuse it too ([`check_own_dir`]).
//! - Records, logs and keys are believed only when they are regular files
//!   owned by the collector's user, opened without following a link; the
//!   readers (`sessions`, `ui --collector`) apply the same rule.
//! - Every file the collector makes there (logs, records and their
//!   temporary files, session keys) is created exclusively (`O_CREAT |
//!   O_EXCL`, which never follows a link) with `O_NOFOLLOW`, mode 0600
//!   less the umask, through `clrprof_files`. Temporary files have random
//!   names and are renamed over their target, which replaces a link
//!   rather than writing through it.
//! - An existing file the collector reads to act on, or opens to cut or
//!   append to (a resume, a restart), is opened with `O_NOFOLLOW` and
//!   `O_NONBLOCK` (a planted FIFO cannot block it), then checked on the
//!   open descriptor: a regular file owned by the collector's user.
//!   Anything else is refused with a message naming the path, and left
//!   untouched.

use crate::CollectError;
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// The collector's effective user id.
pub fn euid() -> u32 {
    clrprof_files::my_uid()
}

/// Makes the directory (mode 0700) if it is missing, then checks it (see
/// [`check_own_dir`]).
pub fn check_dir(dir: &Path) -> Result<(), CollectError> {
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(CollectError::io(format!("cannot create {}", dir.display())))?;
    }
    check_own_dir(dir)
}

/// Checks that an existing `dir` is a directory owned by this process's
/// user that no other user can write to: not writable by group or others,
/// sticky bit or not (in a sticky folder others cannot remove the
/// collector's files, but they can add their own: records, logs, sockets
/// under names the collector and its readers look for). The collector, `clrprof
/// sessions`, `clrprof ctl` and `clrprof ui --collector` all apply it.
pub fn check_own_dir(dir: &Path) -> Result<(), CollectError> {
    let meta = std::fs::metadata(dir).map_err(CollectError::io(format!("cannot read {}", dir.display())))?;
    if !meta.is_dir() {
        return Err(CollectError::Invalid(format!("{} is not a directory", dir.display())));
    }
    let me = euid();
    if meta.uid() != me {
        return Err(CollectError::Invalid(format!(
            "{} is owned by uid {}, not by the collector's user (uid {me}): its owner could plant or replace the sessions' files; use a directory of your own",
            dir.display(),
            meta.uid()
        )));
    }
    let mode = meta.mode();
    if mode & 0o022 != 0 {
        let sticky = if mode & 0o1000 != 0 { ", sticky or not" } else { "" };
        return Err(CollectError::Invalid(format!(
            "{} can be written by other users (mode {:o}{sticky}): they could plant session records, logs and sockets in it; use a directory of your own, or chmod go-w it",
            dir.display(),
            mode & 0o7777
        )));
    }
    Ok(())
}

/// Creates a new file for writing: never over an existing file or link,
/// mode 0600 less the umask.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    clrprof_files::create_new(path)
}

pub use clrprof_files::Access;

/// Why an existing file was not opened.
#[derive(Debug)]
pub enum OpenError {
    /// There is no such file.
    Missing,
    /// A link, not a regular file, or owned by another user: refused and
    /// left untouched (the message names the path).
    Refused(String),
    /// Another error (the message names the path).
    Io(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Missing => f.write_str("no such file"),
            OpenError::Refused(m) | OpenError::Io(m) => f.write_str(m),
        }
    }
}

/// Opens an existing regular file without following a link; with `owner`,
/// it must belong to that user (`clrprof_files::open_existing`: checked on
/// the open descriptor, so what is checked is what is used).
pub fn open_existing(path: &Path, access: Access, owner: Option<u32>) -> Result<File, OpenError> {
    clrprof_files::open_existing(path, access, owner).map_err(|e| {
        if clrprof_files::is_refusal(&e) {
            // The owner asked for here is always the collector's user.
            OpenError::Refused(e.to_string().replace("not by this user", "not by the collector's user"))
        } else if e.kind() == std::io::ErrorKind::NotFound {
            OpenError::Missing
        } else {
            OpenError::Io(format!("cannot open {}: {e}", path.display()))
        }
    })
}

/// Replaces `path` with `bytes` whole: written to a new file of a random
/// name beside it, then renamed over it (a link at `path` is replaced, its
/// target untouched).
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), CollectError> {
    clrprof_files::write_whole(path, bytes, true).map_err(CollectError::io(format!("cannot write {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn directory_rules() {
        let top = tempfile::tempdir().unwrap();
        let made = top.path().join("a/b");
        check_dir(&made).unwrap();
        assert_eq!(std::fs::metadata(&made).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o775)).unwrap();
        let e = check_dir(&made).unwrap_err().to_string();
        assert!(e.contains("can be written by other users (mode 775)") && e.contains("a/b"), "{e}");
        // Sticky, as /tmp: others may still add files.
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = check_dir(&made).unwrap_err().to_string();
        assert!(e.contains("(mode 1777, sticky or not)"), "{e}");
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o1755)).unwrap();
        check_dir(&made).unwrap();
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o755)).unwrap();
        check_dir(&made).unwrap();
        if euid() == 0 {
            // Owned by another user: refused, whatever its mode.
            std::os::unix::fs::chown(&made, Some(65534), None).unwrap();
            let e = check_dir(&made).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
        std::fs::write(top.path().join("f"), "x").unwrap();
        assert!(check_dir(&top.path().join("f")).unwrap_err().to_string().contains("not a directory"));
    }

    #[test]
    fn links_fifos_and_foreign_owners_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // Creation never goes through a link, even a dangling one.
        assert_eq!(create_new(&link).unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(create_new(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
        for access in [Access::Read, Access::Append] {
            match open_existing(&link, access, None) {
                Err(OpenError::Refused(m)) => assert!(m.contains("symbolic link") && m.contains("link"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(open_existing(&dir.path().join("none"), Access::Read, None), Err(OpenError::Missing)));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // Safety: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Opened without blocking, then refused.
        for access in [Access::Read, Access::Append] {
            assert!(matches!(open_existing(&fifo, access, None), Err(OpenError::Refused(_))));
        }
        assert!(open_existing(&target, Access::Read, Some(euid())).is_ok());
        match open_existing(&target, Access::Append, Some(euid() + 1)) {
            Err(OpenError::Refused(m)) => assert!(m.contains("not by the collector's user"), "{m}"),
            other => panic!("{other:?}"),
        }
        // Replacing a link replaces the link.
        replace(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_file());
        assert_eq!(std::fs::metadata(&link).unwrap().permissions().mode() & 0o077, 0);
    }
}
