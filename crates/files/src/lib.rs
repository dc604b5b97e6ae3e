//! Files that another local user cannot redirect.
//!
//! Every file clrprof writes (logs, heap dumps, spools, session files,
//! exports, the model cache, temporary files) is made through this crate,
//! so that one rule holds everywhere:
//!
//! - **Never through a link.** A new file is created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW`: if anything is already at the path (a
//!   file, a symbolic link planted in a shared folder such as `/tmp`, a
//!   hard link), the creation fails and nothing is written.
//! - **Never over a user's data unasked.** [`create`] without `force`
//!   refuses an existing path. With `force` the entry at the path is
//!   removed first (a link is removed itself, its target is left as it
//!   is) and a new file is created exclusively in its place; a directory
//!   is refused.
//! - **Owner-only.** New files get mode `0600` (profile data holds type
//!   and function names and comments); the user's umask can only take
//!   bits away, so it may ask for less, never more.
//! - **Whole or not at all.** [`write_whole`] writes a small file (a
//!   record, a status) to a fresh temporary name beside it and renames it
//!   into place, so a reader never sees half of it and a planted link at
//!   the name is replaced, not followed.
//! - **Opened again only if it is ours.** [`open_existing`] opens an existing
//!   file without following a link and checks, on the open descriptor,
//!   that it is a regular file owned by the calling user.
//!
//! # API structure
//!
//! - [`create_new`], [`create`], [`replace`]: a new file for writing.
//! - [`create_numbered`]: a new file under a default name, `_2`, `_3`,
//!   ... when the name is taken.
//! - [`write_whole`]: a small file replaced whole.
//! - [`private_temp_dir`], [`temporary_beside`]: places no one else can
//!   plant in or guess.
//! - [`open_existing`]: an existing file of ours, for reading or appending.
//! - [`PrivateDir`]: a folder of the user's own (made 0700, or checked:
//!   the user's, not a link, writable by no one else), held open, with
//!   every folder and file inside it made through the open descriptor,
//!   never through a link ([`private_dir`]); [`user_temp_dir`] is the
//!   user's own temporary folder, for spools and other files whose names
//!   could be guessed.
//! - [`PROFILE_MODE`]: the mode new files get.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod private_dir;

pub use private_dir::{user_temp_dir, user_temp_path, PrivateDir};

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The mode new files are created with (before the umask): read and write
/// for the owner only.
pub const PROFILE_MODE: u32 = 0o600;

/// Creates `path` for writing, exclusively: fails with
/// [`io::ErrorKind::AlreadyExists`] if anything is at the path, a link
/// included (a link is never followed). Mode [`PROFILE_MODE`].
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PROFILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Creates `path` for reading and writing, exclusively (as [`create_new`]).
pub fn create_new_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(PROFILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Replaces whatever is at `path` by a new, empty file: the entry is
/// removed (a link itself, never its target; a directory is refused) and
/// a file is created exclusively. If another process puts something at
/// the path in between, the creation fails rather than follow it.
pub fn replace(path: &Path) -> io::Result<File> {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a directory", path.display())))
        }
        Ok(_) => match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    create_new(path)
}

/// [`create_new`], or with `force` [`replace`].
pub fn create(path: &Path, force: bool) -> io::Result<File> {
    if force {
        replace(path)
    } else {
        create_new(path)
    }
}

/// Creates a new file at `path`, or, when something is already there, at
/// `stem_2.ext`, `stem_3.ext`, ... (up to 999): for default names, which
/// another user can guess. Returns the file and the path used.
pub fn create_numbered(path: &Path) -> io::Result<(File, PathBuf)> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    let mut candidate = path.to_path_buf();
    for n in 2..1000 {
        match create_new(&candidate) {
            Ok(f) => return Ok((f, candidate)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                candidate = path.with_file_name(format!("{stem}_{n}{ext}"));
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("no free name beside {}", path.display())))
}

/// A temporary name beside `path` that no one can guess in advance: the
/// file name, the process id and 64 random bits.
pub fn temporary_beside(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{:016x}.tmp", std::process::id(), random_u64()))
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // Safety: `b` is a writable buffer of the length given.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // Unreachable on Linux 3.17+; the name is still checked by the
        // exclusive creation, so a guessable one only risks a retry.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        return t ^ u64::from(std::process::id()).rotate_left(32);
    }
    u64::from_le_bytes(b)
}

/// Makes a new folder only the calling user can enter (mode 0700) in the
/// system's temporary folder, named `PREFIX-PID-RANDOM`: for files that
/// must not sit in a folder every user can write to. `mkdir` never
/// follows a link, so a name planted in advance makes it fail, not
/// redirect it.
pub fn private_temp_dir(prefix: &str) -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..8 {
        let dir = base.join(format!("{prefix}-{}-{:016x}", std::process::id(), random_u64()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::AlreadyExists, "no free folder name")))
}

/// Writes `bytes` as the whole content of `path`: to a new temporary file
/// beside it (created exclusively), synced, then renamed over `path`. The
/// rename replaces a link at `path` and never writes through it. Without
/// `replace_existing`, an existing `path` is refused first.
pub fn write_whole(path: &Path, bytes: &[u8], replace_existing: bool) -> io::Result<()> {
    if !replace_existing && path.symlink_metadata().is_ok() {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists", path.display())));
    }
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a directory", path.display())));
    }
    let mut last = None;
    for _ in 0..8 {
        let tmp = temporary_beside(path);
        match create_new(&tmp) {
            Ok(mut f) => {
                let written = f.write_all(bytes).and_then(|()| f.sync_all()).and_then(|()| std::fs::rename(&tmp, path));
                if written.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                return written;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name")))
}

/// How an existing file is opened by [`open_existing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Read, and written at its end (and cut with `set_len`).
    Append,
    /// Read and written anywhere (and cut with `set_len`).
    ReadWrite,
}

/// Why [`open_existing`] refused a file that is there: a link, not a
/// regular file, or another user's. It is the inner error of an
/// [`io::ErrorKind::PermissionDenied`] error ([`is_refusal`] tells), and its
/// text names the path.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refused(text: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Refused(text))
}

/// Whether `e` is [`open_existing`]'s refusal of a planted or foreign file
/// (not a system error such as a missing file).
pub fn is_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Refused>())
}

/// Opens an existing file without following a link at its last component,
/// and checks on the open descriptor (so what is checked is what is used)
/// that it is a regular file and, with `owner`, that it belongs to that
/// user. A link, a device, a FIFO (opened without blocking, so a planted
/// one cannot hang the caller) or another user's file is refused
/// ([`is_refusal`]) and left untouched; a missing file is
/// [`io::ErrorKind::NotFound`].
pub fn open_existing(path: &Path, access: Access, owner: Option<u32>) -> io::Result<File> {
    let mut o = OpenOptions::new();
    match access {
        Access::Read => o.read(true),
        Access::Append => o.read(true).append(true),
        Access::ReadWrite => o.read(true).write(true),
    };
    let f = o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK).open(path).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::ELOOP) => refused(format!("{} is a symbolic link: not followed, left untouched", path.display())),
            Some(libc::ENXIO) => refused(format!("{} is not a regular file: left untouched", path.display())),
            _ => e,
        }
    })?;
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(refused(format!("{} is not a regular file: left untouched", path.display())));
    }
    if let Some(uid) = owner {
        if m.uid() != uid {
            return Err(refused(format!(
                "{} is owned by uid {}, not by this user (uid {uid}): not trusted, left untouched",
                path.display(),
                m.uid()
            )));
        }
    }
    Ok(f)
}

/// The calling process's effective user id.
pub fn my_uid() -> u32 {
    // Safety: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn new_files_are_exclusive_and_owner_only() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.log");
        create_new(&p).unwrap().write_all(b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & !PROFILE_MODE, 0, "mode {mode:o}");
        assert_eq!(create_new(&p).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(create(&p, false).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
    }

    #[test]
    fn links_are_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.path().join("out.log");
        symlink(&target, &link).unwrap();
        // Without force: refused.
        assert_eq!(create_new(&link).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        let e = open_existing(&link, Access::Append, None).unwrap_err();
        assert!(is_refusal(&e) && e.to_string().contains("symbolic link"), "{e}");
        // A dangling link is not followed either (it would create the target).
        let dangling = d.path().join("dangling.log");
        symlink(d.path().join("made-through-link"), &dangling).unwrap();
        assert!(create_new(&dangling).is_err());
        assert!(!d.path().join("made-through-link").exists());
        // With force the link is replaced, the target kept.
        replace(&link).unwrap().write_all(b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(!link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        // write_whole replaces a link too.
        let link2 = d.path().join("rec.json");
        symlink(&target, &link2).unwrap();
        assert_eq!(write_whole(&link2, b"{}", false).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        write_whole(&link2, b"{}", true).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(std::fs::read(&link2).unwrap(), b"{}");
        // A directory is never replaced.
        assert_eq!(replace(d.path()).unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn numbered_names_step_over_planted_entries() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("heapdump_1.log");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        symlink(&victim, &p).unwrap();
        let (mut f, used) = create_numbered(&p).unwrap();
        f.write_all(b"dump").unwrap();
        assert_eq!(used, d.path().join("heapdump_1_2.log"));
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn open_existing_refuses_what_is_not_a_regular_file_of_the_owner() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"1").unwrap();
        assert!(open_existing(&p, Access::Read, Some(my_uid())).is_ok());
        assert!(is_refusal(&open_existing(&p, Access::Append, Some(my_uid() + 1)).unwrap_err()));
        assert!(is_refusal(&open_existing(d.path(), Access::Read, None).unwrap_err()));
        let missing = open_existing(&d.path().join("none"), Access::Read, None).unwrap_err();
        assert!(missing.kind() == io::ErrorKind::NotFound && !is_refusal(&missing));
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // Safety: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(is_refusal(&open_existing(&fifo, Access::Read, None).unwrap_err()));
    }

    #[test]
    fn private_folders_are_the_owners_only() {
        let d = private_temp_dir("clrprof-files-test").unwrap();
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_ne!(d, private_temp_dir("clrprof-files-test").unwrap());
        std::fs::remove_dir(&d).unwrap();
    }

    #[test]
    fn temporary_names_differ() {
        let p = Path::new("/x/y.json");
        let (a, b) = (temporary_beside(p), temporary_beside(p));
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(Path::new("/x")));
    }
}
