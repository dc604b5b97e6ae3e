//! Private folders: a folder of the calling user's own, held open, and
//! everything inside it made through that open folder without following a
//! link.
//!
//! A path such as `/tmp/X/objects/log=s1/part-0.parquet` is looked up
//! again, component by component, every time it is used: if another user
//! owns `/tmp/X`, or can write to it, they can put a link at `objects`
//! between one use and the next and have the writer create files wherever
//! the link points. A [`PrivateDir`] closes that:
//!
//! 1. **The folder is checked once, on an open descriptor.** It is opened
//!    with `O_DIRECTORY | O_NOFOLLOW` (a link at its name is refused, not
//!    followed) and `fstat`ed: it must be a directory, owned by the
//!    calling user, and writable by no one else (no group or other write
//!    bit, sticky or not). A missing folder is made first, mode 0700.
//! 2. **Everything inside is made relative to that descriptor**
//!    (`mkdirat`, `openat`, `renameat`, `unlinkat`), one name at a time,
//!    each opened with `O_NOFOLLOW`: renaming or replacing the folder's
//!    path afterwards changes nothing about where the files go.
//!    Sub-folders are made 0700 and checked by the same rule when they
//!    exist already, so a link, another user's folder or a folder others
//!    can write to is refused with a message naming it.
//! 3. **Files are created exclusively** (`O_CREAT | O_EXCL | O_NOFOLLOW`,
//!    mode [`crate::PROFILE_MODE`]); a file replaced is unlinked first
//!    (a link itself, never its target) and created exclusively again.
//!
//! Only the last component of the folder's own path is checked: the
//! folders above it are the caller's choice (a link in `~/data` that the
//! user made is followed as usual). A refusal is an
//! [`io::ErrorKind::PermissionDenied`] error that [`crate::is_refusal`]
//! recognises; its text names the path and says why.
//!
//! [`user_temp_dir`] is the per-user folder for files whose names others
//! could guess (spools): `$TMPDIR/clrprof-<uid>`, made 0700 or checked by
//! the rule above; when another user holds that name, a fresh folder with
//! an unguessable name is used instead.

use crate::{my_uid, random_u64, refused, PROFILE_MODE};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The mode new private folders are made with (before the umask).
pub const FOLDER_MODE: u32 = 0o700;

/// A folder of the calling user's own, held open: see the module's
/// documentation for the rule it enforces.
#[derive(Debug)]
pub struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name holds a NUL byte"))
}

/// One component: not empty, no `/`, not `.` or `..`.
fn component(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("`{name}` is not a single file name")));
    }
    cstring(OsStr::new(name))
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `fstat` of an open descriptor.
fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // Safety: `st` is a writable buffer of the size fstat fills.
    cvt(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
    // Safety: fstat succeeded, so it filled `st`.
    Ok(unsafe { st.assume_init() })
}

/// The trust rule on an open folder: a directory, the caller's, writable
/// by no one else.
fn check(fd: RawFd, path: &Path) -> io::Result<()> {
    let st = fstat(fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(refused(format!("{} is not a folder: nothing was written in it", path.display())));
    }
    let me = my_uid();
    if st.st_uid != me {
        return Err(refused(format!(
            "{} is owned by uid {}, not by this user (uid {me}): its owner could redirect what is written inside it; nothing was written, use a folder of your own",
            path.display(),
            st.st_uid
        )));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(refused(format!(
            "{} can be written by other users (mode {:o}): they could plant links inside it; nothing was written, `chmod go-w` it or use another folder",
            path.display(),
            st.st_mode & 0o7777
        )));
    }
    Ok(())
}

/// Why opening a folder's last component failed, in words. `is_link`
/// tells, without following it, whether the entry is a symbolic link
/// (`O_DIRECTORY | O_NOFOLLOW` on a link gives `ENOTDIR` or `ELOOP`).
fn open_error(e: io::Error, path: &Path, is_link: impl FnOnce() -> bool) -> io::Error {
    if !matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
        return e;
    }
    if is_link() {
        refused(format!("{} is a symbolic link: not followed, nothing was written through it", path.display()))
    } else {
        refused(format!("{} is not a folder: nothing was written in it", path.display()))
    }
}

const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

impl PrivateDir {
    /// The folder at `path`: made (mode 0700, and any missing folders
    /// above it too) when missing; otherwise opened without following a
    /// link at its name and checked (the caller's, writable by no one
    /// else). Refused ([`crate::is_refusal`]) when it is a link, not a
    /// folder, another user's, or writable by others.
    pub fn create_or_check(path: &Path) -> io::Result<PrivateDir> {
        if path.as_os_str().is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty folder name"));
        }
        // Without a trailing `/`, which would make the kernel follow a
        // link at the last name in spite of O_NOFOLLOW.
        let path: PathBuf = path.components().collect();
        let path = path.as_path();
        let c = cstring(path.as_os_str())?;
        // Safety: a NUL-terminated path.
        match cvt(unsafe { libc::mkdir(c.as_ptr(), FOLDER_MODE as libc::mode_t) }) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new().recursive(true).mode(FOLDER_MODE).create(parent)?;
                }
                // Safety: a NUL-terminated path.
                match cvt(unsafe { libc::mkdir(c.as_ptr(), FOLDER_MODE as libc::mode_t) }) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        // Safety: a NUL-terminated path; the flags open a directory only.
        let fd = cvt(unsafe { libc::open(c.as_ptr(), DIR_FLAGS) })
            .map_err(|e| open_error(e, path, || path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())))?;
        // Safety: `fd` was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        check(fd.as_raw_fd(), path)?;
        Ok(PrivateDir { fd, path: path.to_path_buf() })
    }

    /// The folder's path, as given (for messages; the files go where the
    /// open descriptor is, whatever the path names now).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `self.path()` joined with `name`, for messages.
    pub fn shown(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn open_child(&self, name: &str, c: &CStr) -> io::Result<PrivateDir> {
        let path = self.path.join(name);
        // Safety: `self.fd` is an open directory; `c` a NUL-terminated name.
        let fd = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), DIR_FLAGS) })
            .map_err(|e| open_error(e, &path, || self.lstat(c).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)))?;
        // Safety: `fd` was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        check(fd.as_raw_fd(), &path)?;
        Ok(PrivateDir { fd, path })
    }

    fn mkdir(&self, c: &CStr) -> io::Result<()> {
        // Safety: `self.fd` is an open directory; `c` a NUL-terminated name.
        cvt(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), FOLDER_MODE as libc::mode_t) }).map(|_| ())
    }

    /// The sub-folder `name` (one component): made 0700 when missing,
    /// otherwise opened without following a link and checked as
    /// [`PrivateDir::create_or_check`] checks.
    pub fn subdir(&self, name: &str) -> io::Result<PrivateDir> {
        let c = component(name)?;
        match self.mkdir(&c) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        self.open_child(name, &c)
    }

    /// A new sub-folder `name`, mode 0700: fails with
    /// [`io::ErrorKind::AlreadyExists`] when anything is at the name.
    pub fn create_subdir(&self, name: &str) -> io::Result<PrivateDir> {
        let c = component(name)?;
        self.mkdir(&c)?;
        self.open_child(name, &c)
    }

    /// An existing sub-folder `name`, checked; `None` when nothing is at
    /// the name.
    pub fn existing_subdir(&self, name: &str) -> io::Result<Option<PrivateDir>> {
        let c = component(name)?;
        match self.open_child(name, &c) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `fstatat` of the entry `c`, not following a link.
    fn lstat(&self, c: &CStr) -> io::Result<libc::stat> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // Safety: an open directory, a NUL-terminated name, a buffer of
        // the size fstatat fills.
        cvt(unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) })?;
        // Safety: fstatat succeeded, so it filled `st`.
        Ok(unsafe { st.assume_init() })
    }

    /// Whether anything (a file, a folder, a link: not followed) is at
    /// `name`.
    pub fn contains(&self, name: &str) -> io::Result<bool> {
        match self.lstat(&component(name)?) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn open_file(&self, c: &CStr, read: bool) -> io::Result<File> {
        let access = if read { libc::O_RDWR } else { libc::O_WRONLY };
        let flags = access | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // Safety: an open directory, a NUL-terminated name; the mode is
        // passed as the variadic argument O_CREAT needs.
        let fd = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, PROFILE_MODE as libc::c_uint) })?;
        // Safety: `fd` was just opened and is owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// A new file `name` for writing, created exclusively (never through
    /// a link; [`io::ErrorKind::AlreadyExists`] when anything is at the
    /// name), mode [`crate::PROFILE_MODE`].
    pub fn create_file(&self, name: &str) -> io::Result<File> {
        self.open_file(&component(name)?, false)
    }

    /// As [`PrivateDir::create_file`], opened for reading too.
    pub fn create_file_rw(&self, name: &str) -> io::Result<File> {
        self.open_file(&component(name)?, true)
    }

    /// Removes the entry `name` if it is not a folder (a link itself,
    /// never its target), then creates the file exclusively.
    pub fn replace_file(&self, name: &str) -> io::Result<File> {
        let c = component(name)?;
        match self.unlink(&c, 0) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EISDIR) | Some(libc::EPERM)) => {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a folder", self.shown(name).display())))
            }
            Err(e) => return Err(e),
        }
        self.open_file(&c, false)
    }

    fn unlink(&self, c: &CStr, flags: libc::c_int) -> io::Result<()> {
        // Safety: an open directory, a NUL-terminated name.
        cvt(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), flags) }).map(|_| ())
    }

    /// Removes the file (or link) `name`.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        self.unlink(&component(name)?, 0)
    }

    /// Removes the empty sub-folder `name`.
    pub fn remove_dir(&self, name: &str) -> io::Result<()> {
        self.unlink(&component(name)?, libc::AT_REMOVEDIR)
    }

    /// Moves the entry `from` of this folder to `to` in the folder `into`
    /// (`renameat`; an entry at `to` is replaced, a link there is
    /// replaced, not followed).
    pub fn rename(&self, from: &str, into: &PrivateDir, to: &str) -> io::Result<()> {
        let (f, t) = (component(from)?, component(to)?);
        // Safety: two open directories and two NUL-terminated names.
        cvt(unsafe { libc::renameat(self.fd.as_raw_fd(), f.as_ptr(), into.fd.as_raw_fd(), t.as_ptr()) }).map(|_| ())
    }

    /// Writes `bytes` as the whole content of `name`: to a new file of an
    /// unguessable name in this folder, synced, then renamed over `name`.
    /// Without `replace_existing`, an existing entry is refused
    /// ([`io::ErrorKind::AlreadyExists`]).
    pub fn write_whole(&self, name: &str, bytes: &[u8], replace_existing: bool) -> io::Result<()> {
        component(name)?;
        if !replace_existing && self.contains(name)? {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists", self.shown(name).display())));
        }
        let mut last = None;
        for _ in 0..8 {
            let tmp = format!(".{name}.{}.{:016x}.tmp", std::process::id(), random_u64());
            match self.create_file(&tmp) {
                Ok(mut f) => {
                    let written = f.write_all(bytes).and_then(|()| f.sync_all()).and_then(|()| self.rename(&tmp, self, name));
                    if written.is_err() {
                        let _ = self.remove_file(&tmp);
                    }
                    return written;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name")))
    }

    /// The names in the folder (without `.` and `..`), read through the
    /// open descriptor.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        // A descriptor of its own: closedir closes the one it is given.
        // Safety: an open directory and a NUL-terminated name.
        let fd = cvt(unsafe { libc::openat(self.fd.as_raw_fd(), c".".as_ptr(), DIR_FLAGS) })?;
        // Safety: `fd` is an open directory that the stream now owns.
        let dir = unsafe { libc::fdopendir(fd) };
        if dir.is_null() {
            let e = io::Error::last_os_error();
            // Safety: fdopendir failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let mut names = Vec::new();
        let result = loop {
            // readdir signals its errors through errno only.
            // Safety: errno is a thread-local variable.
            unsafe { *libc::__errno_location() = 0 };
            // Safety: `dir` is an open stream.
            let entry = unsafe { libc::readdir(dir) };
            if entry.is_null() {
                let e = io::Error::last_os_error();
                break if e.raw_os_error().unwrap_or(0) == 0 { Ok(()) } else { Err(e) };
            }
            // Safety: readdir gave an entry whose name is NUL-terminated.
            let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        };
        // Safety: `dir` is an open stream, closed once.
        unsafe { libc::closedir(dir) };
        result.map(|()| names)
    }
}

/// Where [`user_temp_dir`] looks: `$TMPDIR/clrprof-<uid>` (the system's
/// temporary folder when `TMPDIR` is unset).
pub fn user_temp_path() -> PathBuf {
    std::env::temp_dir().join(format!("clrprof-{}", my_uid()))
}

/// The calling user's private temporary folder, for files whose names
/// another user could guess (spools): [`user_temp_path`] made 0700 or
/// checked ([`PrivateDir::create_or_check`]). When another user holds that
/// name (a folder of theirs, a link, a file) or has made it writable by
/// others, a new folder `clrprof-<uid>-<pid>-<random>` (mode 0700, a name
/// no one can guess) is used instead, and the second value says why.
pub fn user_temp_dir() -> io::Result<(PrivateDir, Option<String>)> {
    let fixed = user_temp_path();
    match PrivateDir::create_or_check(&fixed) {
        Ok(d) => Ok((d, None)),
        Err(e) if crate::is_refusal(&e) => {
            let fresh = crate::private_temp_dir(&format!("clrprof-{}", my_uid()))?;
            let d = PrivateDir::create_or_check(&fresh)?;
            Ok((d, Some(format!("{e}; using {} instead", fresh.display()))))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn made_private_and_used_through_the_descriptor() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("a/b/ds");
        let d = PrivateDir::create_or_check(&root).unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&top.path().join("a")), 0o700);
        let sub = d.subdir("objects").unwrap();
        assert_eq!(mode(&root.join("objects")), 0o700);
        let part = sub.create_subdir("log=x").unwrap();
        assert_eq!(sub.create_subdir("log=x").unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        part.create_file("f").unwrap().write_all(b"1").unwrap();
        assert_eq!(part.create_file("f").unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        part.replace_file("f").unwrap().write_all(b"2").unwrap();
        assert_eq!(std::fs::read(root.join("objects/log=x/f")).unwrap(), b"2");
        assert_eq!(mode(&root.join("objects/log=x/f")) & !PROFILE_MODE, 0);
        // The folder moved away: the files follow the descriptor, not the path.
        std::fs::rename(&root, top.path().join("moved")).unwrap();
        d.create_file("after").unwrap();
        assert!(top.path().join("moved/after").is_file());
        assert!(!root.exists());
        // Listing, renaming, whole writes.
        d.write_whole("README.md", b"r", false).unwrap();
        assert_eq!(d.write_whole("README.md", b"r", false).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        d.rename("after", &part, "g").unwrap();
        let mut names = d.names().unwrap();
        names.sort();
        assert_eq!(names, ["README.md", "objects"]);
        assert!(part.contains("g").unwrap() && !d.contains("after").unwrap());
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(d.create_file(bad).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn links_and_open_folders_are_refused() {
        let top = tempfile::tempdir().unwrap();
        let victim = top.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A link as the folder itself.
        let link = top.path().join("ds");
        symlink(&victim, &link).unwrap();
        let e = PrivateDir::create_or_check(&link).unwrap_err();
        assert!(crate::is_refusal(&e) && e.to_string().contains("symbolic link"), "{e}");
        // With a trailing slash too (which alone would follow the link).
        let e = PrivateDir::create_or_check(Path::new(&format!("{}/", link.display()))).unwrap_err();
        assert!(crate::is_refusal(&e) && e.to_string().contains("symbolic link"), "{e}");
        // A link inside.
        let ds = top.path().join("ds2");
        let d = PrivateDir::create_or_check(&ds).unwrap();
        symlink(&victim, ds.join("objects")).unwrap();
        let e = d.subdir("objects").unwrap_err();
        assert!(crate::is_refusal(&e) && e.to_string().contains("ds2/objects is a symbolic link"), "{e}");
        assert!(d.existing_subdir("objects").is_err());
        symlink(victim.join("f"), ds.join("f")).unwrap();
        assert_eq!(d.create_file("f").unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert!(std::fs::read_dir(&victim).unwrap().next().is_none(), "nothing written through a link");
        // A file where a folder should be.
        std::fs::write(ds.join("plain"), b"").unwrap();
        assert!(crate::is_refusal(&d.subdir("plain").unwrap_err()));
        // Writable by others, sticky or not.
        for m in [0o777, 0o1777, 0o720] {
            let open = top.path().join(format!("open{m:o}"));
            std::fs::create_dir(&open).unwrap();
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(m)).unwrap();
            let e = PrivateDir::create_or_check(&open).unwrap_err();
            assert!(crate::is_refusal(&e) && e.to_string().contains("can be written by other users"), "{e}");
        }
        // Readable by others but not writable: the user's choice, used.
        let shared = top.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        PrivateDir::create_or_check(&shared).unwrap();
        assert_eq!(d.existing_subdir("none").unwrap().map(|_| ()), None);
    }

    #[test]
    fn the_user_temp_dir_is_private() {
        let (d, note) = user_temp_dir().unwrap();
        let m = std::fs::metadata(d.path()).unwrap();
        assert!(m.permissions().mode() & 0o022 == 0, "{note:?}");
    }
}
