//! Session keys: `DIR/<session>.key`, the key both sides derived at the
//! session's first handshake (see [`clrprof_wire::handshake`], "Session
//! keys and resumes"), 64 hex digits and a newline, mode 0600.
//!
//! A key file is created once, with the session, exclusively and without
//! following a link; it is never rewritten. It is read only to check a
//! resume, and only if it is a regular file owned by the collector's user.
//! Nothing serves it: the admin listing and `clrprof ui` read only the
//! sessions' records (`.json`) and logs (`.log`).

use crate::files::{self, Access, OpenError};
use crate::record;
use crate::CollectError;
use clrprof_wire::SessionKey;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The key file's path for a session.
pub fn key_path(dir: &Path, session: &str) -> PathBuf {
    dir.join(format!("{session}.key"))
}

/// Writes a new session's key (a new file: an existing one, or a link, is
/// an error).
pub fn create(dir: &Path, session: &str, key: &SessionKey) -> Result<(), CollectError> {
    let path = key_path(dir, session);
    files::create_new(&path)
        .and_then(|mut f| f.write_all(format!("{}\n", key.to_hex()).as_bytes()))
        .map_err(CollectError::io(format!("cannot create the session key {}", path.display())))
}

/// Reads a session's key. `Err` says why there is none to check a resume
/// with (a session stored by a collector from before keys, a link or a
/// file of another user, a damaged file); the text never shows the
/// file's content.
pub fn read(dir: &Path, session: &str) -> Result<SessionKey, String> {
    if !record::is_session_name(session) {
        return Err("not a session name".into());
    }
    let path = key_path(dir, session);
    let f = match files::open_existing(&path, Access::Read, Some(files::euid())) {
        Ok(f) => f,
        Err(OpenError::Missing) => return Err(format!("the session has no key file {}", path.display())),
        Err(e) => return Err(e.to_string()),
    };
    let mut text = String::new();
    if f.take(256).read_to_string(&mut text).is_err() {
        return Err(format!("{}: not a session key", path.display()));
    }
    SessionKey::from_hex(&text).map_err(|_| format!("{}: not a session key", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn made_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let k = SessionKey::from_bytes([3; 32]);
        create(dir.path(), "s_1", &k).unwrap();
        assert_eq!(std::fs::metadata(key_path(dir.path(), "s_1")).unwrap().permissions().mode() & 0o077, 0);
        assert_eq!(read(dir.path(), "s_1").unwrap(), k);
        assert!(create(dir.path(), "s_1", &SessionKey::from_bytes([4; 32])).is_err(), "never rewritten");
        assert_eq!(read(dir.path(), "s_1").unwrap(), k);
        assert!(read(dir.path(), "s_2").unwrap_err().contains("no key file"));
        assert!(read(dir.path(), "../s_1").is_err());
        std::fs::write(key_path(dir.path(), "bad"), "not hex at all").unwrap();
        let e = read(dir.path(), "bad").unwrap_err();
        assert!(e.contains("not a session key") && !e.contains("not hex"), "{e}");
        std::os::unix::fs::symlink(key_path(dir.path(), "s_1"), key_path(dir.path(), "linked")).unwrap();
        assert!(read(dir.path(), "linked").unwrap_err().contains("symbolic link"));
    }
}
