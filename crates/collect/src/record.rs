//! Session files: `DIR/<program>_<pid>_<yyyyMMdd>_<HHmmss>.log` and the
//! session record beside it (`.json`), and the session's key
//! ([`crate::key_file`]).
//!
//! A log file is created with `create_new` and `O_NOFOLLOW`, mode 0600: an
//! existing file or link is never opened for writing; a second session in
//! the same second gets `_2`, `_3`, ... A record is replaced whole
//! (written to a new temporary file of a random name, then renamed), so a
//! reader never sees half a record and a link planted at any of these
//! paths is never written through (see [`crate::files`] for the rules).
//!
//! A record is read only if it is a regular file (not a link) owned by
//! this process's user: the collector, `clrprof sessions` and `clrprof ui
//! --collector` believe no record another user put in the directory, and
//! a live session's log counts only when it is a regular file of that
//! user too.

use crate::files::{self, Access, OpenError};
use crate::CollectError;
use clrprof_wire::Content;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// Connected and streaming.
    Live,
    /// The agent sent the end of its log: the stored log is complete.
    Ended,
    /// The stream stopped before the end; `reason` says why.
    Cut,
}

/// A session record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The session's name (the log's file stem).
    pub session: String,
    /// The log's file name in the collector's directory.
    pub log: String,
    /// The profiled process's id.
    pub pid: u32,
    /// The program's name as the agent gave it.
    pub program: String,
    /// The runtime's version as the agent gave it.
    pub runtime: String,
    /// The agent's address.
    pub peer: String,
    /// When the session started (UTC, RFC 3339).
    pub start: String,
    /// When it ended or was cut (UTC, RFC 3339).
    pub end: Option<String>,
    /// Bytes of the log stored (whole lines).
    pub bytes: u64,
    /// Live, ended or cut.
    pub state: SessionState,
    /// Why it was cut (or other facts about its end).
    pub reason: Option<String>,
    /// The agent's spool file (on the agent's machine), where the log goes
    /// on after the stored part.
    pub spool: Option<String>,
    /// The log offset at which the spool starts (equal to `bytes`).
    pub spool_from: Option<u64>,
}

/// How the reason of a session that was live when the collector stopped
/// begins.
pub const STOPPED_WHILE_LIVE: &str = "the collector stopped while the session was live";

/// Now, UTC, RFC 3339 with seconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A program name made safe for a file name: letters, digits, `.`, `-`
/// and `_`; anything else becomes `_`; at most 64 characters; never
/// empty or starting with `.`.
pub fn safe_name(program: &str) -> String {
    let mut s: String = program
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, 'p');
    }
    s
}

/// True for a name this module could have made (used to refuse paths in
/// session names that come from a network peer or a command line).
pub fn is_session_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// The record's path for a session.
pub fn record_path(dir: &Path, session: &str) -> PathBuf {
    dir.join(format!("{session}.json"))
}

/// The log's path for a session of log text (the agent's).
pub fn log_path(dir: &Path, session: &str) -> PathBuf {
    dir.join(format!("{session}.log"))
}

/// The path of the file a session's record names (`<session>.log`, or
/// `<session>.nettrace` for a trace); `None` when the record names
/// anything but a file of its own session in `dir`.
pub fn data_path(dir: &Path, rec: &SessionRecord) -> Option<PathBuf> {
    let ok = [Content::Log, Content::NetTrace].iter().any(|c| rec.log == format!("{}.{}", rec.session, c.extension()));
    (ok && is_session_name(&rec.session)).then(|| dir.join(&rec.log))
}

/// What a session's stored file holds, by the name its record gives it.
pub fn content_of(rec: &SessionRecord) -> Content {
    if rec.log.ends_with(".nettrace") {
        Content::NetTrace
    } else {
        Content::Log
    }
}

/// Creates a new, empty log file for `program`/`pid` at the present time
/// and gives its session name and the open file: `<session>.log`, or
/// `<session>.nettrace` for a trace.
pub fn create_log(dir: &Path, program: &str, pid: u32, content: Content) -> Result<(String, std::fs::File), CollectError> {
    let stamp = chrono::Utc::now().format("%Y%m%d_%H%M%S");
    let base = format!("{}_{pid}_{stamp}", safe_name(program));
    for n in 1..10_000u32 {
        let name = if n == 1 { base.clone() } else { format!("{base}_{n}") };
        let taken = |p: PathBuf| std::fs::symlink_metadata(p).is_ok();
        if taken(record_path(dir, &name)) || taken(crate::key_file::key_path(dir, &name)) {
            continue;
        }
        match files::create_new(&dir.join(format!("{name}.{}", content.extension()))) {
            Ok(f) => return Ok((name, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(CollectError::Io { what: format!("cannot create a log in {}", dir.display()), source: e }),
        }
    }
    Err(CollectError::Invalid(format!("{}: 10,000 logs named {base} already exist", dir.display())))
}

/// Writes `rec` (replacing the previous version; a new file of mode 0600
/// renamed over it).
pub fn write(dir: &Path, rec: &SessionRecord) -> Result<(), CollectError> {
    let text = serde_json::to_string_pretty(rec).map_err(|e| CollectError::Invalid(e.to_string()))?;
    files::replace(&record_path(dir, &rec.session), (text + "\n").as_bytes())
}

/// The longest record read.
const MAX_RECORD: u64 = 1 << 20;

/// Why a record was not read.
enum Unread {
    /// Not opened (missing, refused, an error).
    Open(OpenError),
    /// Opened but not a record.
    Bad(CollectError),
}

fn load(dir: &Path, session: &str, owner: Option<u32>) -> Result<SessionRecord, Unread> {
    use std::io::Read;
    let path = record_path(dir, session);
    let f = files::open_existing(&path, Access::Read, owner).map_err(Unread::Open)?;
    let mut text = String::new();
    f.take(MAX_RECORD)
        .read_to_string(&mut text)
        .map_err(|e| Unread::Bad(CollectError::Io { what: format!("cannot read {}", path.display()), source: e }))?;
    serde_json::from_str(&text).map_err(|e| Unread::Bad(CollectError::Invalid(format!("{}: {e}", path.display()))))
}

fn read_by(dir: &Path, session: &str, owner: Option<u32>) -> Result<SessionRecord, CollectError> {
    load(dir, session, owner).map_err(|e| match e {
        Unread::Open(OpenError::Missing) => CollectError::Io {
            what: format!("cannot read {}", record_path(dir, session).display()),
            source: std::io::ErrorKind::NotFound.into(),
        },
        Unread::Open(e) => CollectError::Invalid(e.to_string()),
        Unread::Bad(e) => e,
    })
}

/// Reads a session's record: a regular file (not a link) owned by this
/// process's user; another user's record is refused.
pub fn read(dir: &Path, session: &str) -> Result<SessionRecord, CollectError> {
    read_by(dir, session, Some(files::euid()))
}

/// [`read`] (the name says what it checks).
pub fn read_own(dir: &Path, session: &str) -> Result<SessionRecord, CollectError> {
    read(dir, session)
}

/// Every session record in `dir` owned by this process's user, oldest
/// first (by start, then name), a live session with the bytes stored so
/// far. Files that are not such records (links, other users' files) are
/// skipped.
pub fn list(dir: &Path) -> Result<Vec<SessionRecord>, CollectError> {
    list_by(dir, Some(files::euid()), |_| {})
}

/// [`list`] (the name says what it checks).
pub fn list_own(dir: &Path) -> Result<Vec<SessionRecord>, CollectError> {
    list(dir)
}

/// Whether `path` is a regular file (not a link) owned by this process's
/// user: a session's log that its readers may open.
pub fn is_own_file(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file() && m.uid() == files::euid())
}

/// [`list`] of the records owned by `owner` (all with `None`); `refused`
/// hears why a record file was refused (a link, another user's file).
fn list_by(dir: &Path, owner: Option<u32>, mut refused: impl FnMut(String)) -> Result<Vec<SessionRecord>, CollectError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(CollectError::io(format!("cannot list {}", dir.display())))?;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".json") else { continue };
        if !is_session_name(stem) {
            continue;
        }
        match load(dir, stem, owner) {
            Ok(mut r) => {
                if r.state == SessionState::Live {
                    // The record is rewritten at the end; meanwhile the log
                    // (whole lines, written as they arrive) says how far it is.
                    let log = data_path(dir, &r).unwrap_or_else(|| log_path(dir, stem));
                    if let Ok(m) = std::fs::symlink_metadata(&log) {
                        if is_own_file(&log) {
                            r.bytes = m.len();
                        }
                    }
                }
                out.push(r);
            }
            Err(Unread::Open(OpenError::Refused(why))) => refused(why),
            Err(_) => {}
        }
    }
    out.sort_by(|a, b| (&a.start, &a.session).cmp(&(&b.start, &b.session)));
    Ok(out)
}

/// At start-up: records still `live` belong to a collector that stopped
/// without closing them (killed). They are marked cut, and their logs are
/// cut back to whole lines, or, for a catch-up from a spool, back to where
/// the spool starts (what the catch-up added is all in the spool: the part
/// followed by the spool stays the log). Gives the names of the sessions
/// marked.
///
/// Only records owned by this process's user are believed (others are
/// ignored, untouched, and said on standard error), and a log is cut only
/// if it is a regular file owned by this user: a link or another user's
/// file there is left untouched, and the record says so.
pub fn close_stale(dir: &Path) -> Result<Vec<String>, CollectError> {
    let mut marked = Vec::new();
    let own = list_by(dir, Some(files::euid()), |why| crate::say!("clrprof collect: session record ignored: {why}"))?;
    for mut r in own {
        if r.state != SessionState::Live || !is_session_name(&r.session) {
            continue;
        }
        let path = data_path(dir, &r).unwrap_or_else(|| log_path(dir, &r.session));
        let cut = match files::open_existing(&path, Access::Append, Some(files::euid())) {
            Ok(f) => {
                // A log is cut back to whole lines; a trace's bytes are
                // kept as stored (its reader stops at the last whole block).
                let whole = match content_of(&r) {
                    Content::Log => whole_lines_len_of(&f).unwrap_or(0),
                    Content::NetTrace => f.metadata().map(|m| m.len()).unwrap_or(0),
                };
                let len = r.spool_from.map_or(whole, |from| from.min(whole));
                let _ = f.set_len(len);
                Ok(len)
            }
            Err(OpenError::Missing) => Ok(0),
            Err(e) => Err(e.to_string()),
        };
        r.state = SessionState::Cut;
        r.end = Some(now());
        match cut {
            Ok(len) => {
                r.bytes = len;
                r.reason = Some(match r.spool_from {
                    Some(from) => format!(
                        "{STOPPED_WHILE_LIVE}, catching up from the agent's spool: the log goes on from byte {from} in the spool file"
                    ),
                    None => format!("{STOPPED_WHILE_LIVE} (the log holds what was stored until then)"),
                });
            }
            Err(why) => {
                crate::say!("clrprof collect: session {}: {why}", r.session);
                r.reason = Some(format!("{STOPPED_WHILE_LIVE}; its log was not cut back: {why}"));
            }
        }
        write(dir, &r)?;
        marked.push(r.session);
    }
    Ok(marked)
}

/// The length of the file up to and including its last newline: the part
/// of a session's log that holds whole lines while the agent may still be
/// writing the rest.
pub fn whole_lines_len(path: &Path) -> std::io::Result<u64> {
    whole_lines_len_of(&std::fs::File::open(path)?)
}

/// [`whole_lines_len`] of an open file (read with `pread`: its position
/// and append mode do not matter).
fn whole_lines_len_of(f: &std::fs::File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut end = f.metadata()?.len();
    let mut buf = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        f.read_exact_at(&mut buf[..n], start)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = create_log(dir.path(), "my app/../x", 7, Content::Log).unwrap();
        let (b, _) = create_log(dir.path(), "my app/../x", 7, Content::Log).unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("my_app_.._x_7_"), "{a}");
        assert!(is_session_name(&a) && is_session_name(&b));
        assert!(!is_session_name("../etc/passwd") && !is_session_name(".hidden") && !is_session_name(""));
        assert_eq!(safe_name(".x"), "p.x");
    }

    #[test]
    fn stale_live_records_are_cut_to_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = create_log(dir.path(), "p", 1, Content::Log).unwrap();
        std::fs::write(log_path(dir.path(), &s), "a 1\nb 2\nc hal").unwrap();
        let rec = SessionRecord {
            session: s.clone(),
            log: format!("{s}.log"),
            pid: 1,
            program: "p".into(),
            runtime: "8.0.4".into(),
            peer: "x".into(),
            start: now(),
            end: None,
            bytes: 0,
            state: SessionState::Live,
            reason: None,
            spool: None,
            spool_from: None,
        };
        write(dir.path(), &rec).unwrap();
        assert_eq!(close_stale(dir.path()).unwrap(), vec![s.clone()]);
        let r = read(dir.path(), &s).unwrap();
        assert_eq!(r.state, SessionState::Cut);
        assert_eq!(r.bytes, 8);
        assert_eq!(std::fs::read(log_path(dir.path(), &s)).unwrap(), b"a 1\nb 2\n");
        assert_eq!(list(dir.path()).unwrap().len(), 1);
    }
}
