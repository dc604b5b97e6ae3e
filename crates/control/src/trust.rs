//! Checking a socket before anything is sent to it.
//!
//! The runtime's diagnostics socket and the agent's control socket live in
//! a temporary directory that every local user can write to (`/tmp`), so
//! another user can plant a socket under the name a process's socket will
//! have, or a link to one of their own. Two checks stand between clrprof
//! and such a peer, and nothing (no token, no setting) is written before
//! both pass:
//!
//! 1. **The file.** Looked at without following links, it must be a
//!    socket owned by the target process's user ([`check_file`]).
//! 2. **The peer.** After connecting, the kernel says who listens on the
//!    other end (`SO_PEERCRED`): it must be the target process itself, by
//!    process id and user ([`check_peer`]). This also closes the gap
//!    between the first check and the connection, in which a planted file
//!    could be swapped in.
//!
//! The peer check compares process ids as this process sees them: the
//! kernel gives `SO_PEERCRED`'s process id in the reader's PID namespace,
//! so a target in a container below ours (its socket found through
//! `/proc/PID/root`, named by its id inside: [`crate::paths::place_of`])
//! is checked by the id it has here. A peer with no id here (a namespace
//! that is not below ours) reports 0 and is refused.

use crate::Error;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Who is at the other end of a Unix socket, as the kernel says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    /// The peer's process id (the process that bound or connected it).
    pub pid: u32,
    /// Its effective user id.
    pub uid: u32,
}

/// The credentials of `stream`'s peer (`SO_PEERCRED`).
pub fn peer_cred(stream: &UnixStream) -> std::io::Result<PeerCred> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // Safety: getsockopt writes at most `len` bytes into `cred`, a local.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(PeerCred { pid: cred.pid as u32, uid: cred.uid })
}

/// Checks that `path` is a socket (not a link, not a file) owned by
/// `owner`, the target process's user.
pub fn check_file(path: &Path, owner: u32) -> Result<(), Error> {
    let meta = path.symlink_metadata().map_err(|e| Error::io(format!("cannot look at {}", path.display()), path, e))?;
    let ft = meta.file_type();
    let what = if ft.is_symlink() {
        Some("is a symbolic link, not a socket".to_string())
    } else if !ft.is_socket() {
        Some("is not a socket".to_string())
    } else if meta.uid() != owner {
        Some(format!("belongs to user {}, not to the process's user {owner}", meta.uid()))
    } else {
        None
    };
    match what {
        Some(why) => Err(Error::Untrusted { path: path.to_path_buf(), why }),
        None => Ok(()),
    }
}

/// Checks that the peer of `stream` (connected at `path`) is process `pid`
/// running as `owner`.
pub fn check_peer(stream: &UnixStream, path: &Path, pid: u32, owner: u32) -> Result<(), Error> {
    let cred = peer_cred(stream).map_err(|e| Error::io(format!("cannot ask who listens on {}", path.display()), path, e))?;
    if cred.pid != pid || cred.uid != owner {
        return Err(Error::Untrusted {
            path: path.to_path_buf(),
            why: format!(
                "is answered by process {} of user {}, not by process {pid} of user {owner}",
                cred.pid, cred.uid
            ),
        });
    }
    Ok(())
}

/// Connects to the socket at `path` of process `pid` (user `owner`) after
/// [`check_file`], and returns the stream only if [`check_peer`] passes.
/// A refused or missing socket gives the system's error as
/// [`Error::Io`]/[`Error::Permission`] (callers that treat "nothing
/// listens" as an answer look at [`connect_error_kind`]).
pub fn connect(path: &Path, pid: u32, owner: u32) -> Result<UnixStream, ConnectError> {
    match path.symlink_metadata() {
        Err(e) => return Err(ConnectError::Absent(e)),
        Ok(_) => check_file(path, owner).map_err(ConnectError::Refused)?,
    }
    let stream = UnixStream::connect(path).map_err(ConnectError::Absent)?;
    check_peer(&stream, path, pid, owner).map_err(ConnectError::Refused)?;
    Ok(stream)
}

/// Why [`connect`] gave no stream.
#[derive(Debug)]
pub enum ConnectError {
    /// Nothing (or nothing listening) is at the path: the system's error.
    Absent(std::io::Error),
    /// Something is there that failed a check: never talked to.
    Refused(Error),
}

/// The kind of the system's error behind an absent socket.
pub fn connect_error_kind(e: &ConnectError) -> Option<std::io::ErrorKind> {
    match e {
        ConnectError::Absent(io) => Some(io.kind()),
        ConnectError::Refused(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn our_own_socket_passes_and_the_wrong_pid_is_refused() {
        let d = std::env::temp_dir().join(format!("clrprof-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("s.sock");
        let _l = UnixListener::bind(&p).unwrap();
        let me = crate::process::my_uid();
        let pid = std::process::id();
        let s = connect(&p, pid, me).unwrap();
        assert_eq!(peer_cred(&s).unwrap(), PeerCred { pid, uid: me });
        // The right file, but the peer is not the process asked for.
        match connect(&p, pid + 1, me) {
            Err(ConnectError::Refused(e)) => assert!(e.to_string().contains(&format!("not by process {}", pid + 1)), "{e}"),
            other => panic!("{other:?}"),
        }
        // Another owner than the one expected.
        match connect(&p, pid, me + 1) {
            Err(ConnectError::Refused(e)) => assert!(e.to_string().contains("belongs to user"), "{e}"),
            other => panic!("{other:?}"),
        }
        // A link to a good socket is refused as a link.
        let link = d.join("link.sock");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        match connect(&link, pid, me) {
            Err(ConnectError::Refused(e)) => assert!(e.to_string().contains("symbolic link"), "{e}"),
            other => panic!("{other:?}"),
        }
        // A plain file.
        let f = d.join("file.sock");
        std::fs::write(&f, b"").unwrap();
        assert!(matches!(connect(&f, pid, me), Err(ConnectError::Refused(_))));
        // Nothing there.
        let e = connect(&d.join("none.sock"), pid, me).unwrap_err();
        assert_eq!(connect_error_kind(&e), Some(std::io::ErrorKind::NotFound));
        let _ = std::fs::remove_dir_all(&d);
    }
}
