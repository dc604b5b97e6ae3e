//! What another local user can try against the collector: a
//! holder of the agents' token (every profiled program) forging a resume
//! of another program's session, and links or files planted in the
//! collector's directory. Each forgery must be refused and change nothing,
//! byte for byte, while genuine sessions go on.

mod fake_agent;
#[path = "../../../tests/common/other_user.rs"]
mod other_user;

use clrprof_collect::admin::{self, Request};
use clrprof_collect::record::{self, SessionState};
use clrprof_collect::{key_file, Collector};
use clrprof_wire::{handshake, Hello, Nonce, Role, SessionKey, Token};
use fake_agent::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn lines(n: usize, tag: &str) -> Vec<u8> {
    (0..n).map(|i| format!("z {tag} line {i}\n")).collect::<String>().into_bytes()
}

fn finished(dir: &Path, session: &str) -> record::SessionRecord {
    eventually(|| record::read(dir, session).ok().filter(|r| r.state != SessionState::Live))
}

/// A session's log and record, byte for byte.
fn files_of(dir: &Path, session: &str) -> (Vec<u8>, Vec<u8>) {
    (std::fs::read(record::log_path(dir, session)).unwrap(), std::fs::read(record::record_path(dir, session)).unwrap())
}

fn resume_hello(pid: u32, program: &str, session: &str, from: u64, catch_up: bool) -> Hello {
    let mut h = hello(Role::Resume, pid, program, &Nonce([0; 32]));
    h.session = Some(session.to_string());
    h.spool = Some(format!("/tmp/{program}.spool.log"));
    h.spool_from = Some(from);
    h.catch_up = catch_up;
    h
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_forged_resume_is_refused_and_changes_nothing_while_the_real_sessions_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    // An ended session, and a live one streaming.
    let ended_log = lines(5_000, "ended");
    let mut e = Fake::connect(&c.target, &c.token, 100, "victim").unwrap();
    e.data(&ended_log);
    e.end();
    e.wait_acked(ended_log.len() as u64);
    assert_eq!(finished(dir.path(), &e.session).state, SessionState::Ended);
    let live_log = lines(20_000, "live");
    let half = live_log.len() / 2;
    let half = live_log[..half].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let mut l = Fake::connect(&c.target, &c.token, 200, "running").unwrap();
    l.data(&live_log[..half]);
    l.wait_acked(half as u64);
    // Every file of a session is private.
    for p in [record::log_path(dir.path(), &e.session), record::record_path(dir.path(), &e.session), key_file::key_path(dir.path(), &e.session)] {
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
    let before_e = files_of(dir.path(), &e.session);
    let before_l = files_of(dir.path(), &l.session);

    // Another program holds the same token and knows the names (the pid
    // is in them). It tries every way it has.
    let other = SessionKey::from_hex(&c.token.to_hex()).unwrap();
    let mine = Fake::connect(&c.target, &c.token, 300, "attacker").unwrap().key;
    for (target, pid, program) in [(&e.session, 100, "victim"), (&l.session, 200, "running")] {
        for catch_up in [false, true] {
            let h = || resume_hello(pid, program, target, 0, catch_up);
            // No proof at all (as an agent from before session keys).
            assert_eq!(Fake::connect_as(&c.target, &c.token, h()).err().as_deref(), Some("closed"));
            // A proof made with the token, or with the key of its own session.
            assert!(Fake::resume(&c.target, &c.token, &other, h()).is_err());
            assert!(Fake::resume(&c.target, &c.token, &mine, h()).is_err());
            // A genuine proof, recorded from another connection (another
            // challenge): a replay.
            let mut replayed = h();
            let real = if target == &e.session { &e.key } else { &l.key };
            replayed.resume_mac = Some(clrprof_wire::token::to_hex(&handshake::resume_mac(real, &Nonce([9; 32]), &Nonce([5; 32]))));
            assert!(Fake::connect_as(&c.target, &c.token, replayed).is_err());
        }
    }
    // Nothing changed, byte for byte.
    assert!(files_of(dir.path(), &e.session) == before_e, "the ended session is untouched");
    assert!(files_of(dir.path(), &l.session) == before_l, "the live session is untouched");
    // The live session was never stopped: it streams on and ends whole.
    l.data(&live_log[half..]);
    l.end();
    l.wait_acked(live_log.len() as u64);
    let r = finished(dir.path(), &l.session);
    assert_eq!((r.state, r.bytes, r.reason), (SessionState::Ended, live_log.len() as u64, None));
    assert!(std::fs::read(record::log_path(dir.path(), &l.session)).unwrap() == live_log, "the live log is whole");

    // The admin listing shows records, never a key.
    let listed = admin::request(&c.admin, &c.token, &Request::List).unwrap();
    let text = serde_json::to_string(&listed.sessions).unwrap();
    for k in [&e.key, &l.key] {
        assert!(!text.contains(&k.to_hex()));
    }

    // The session's own agent, with its key, resumes it (also after a
    // restart of the collector: the key is kept in the directory).
    let o = opts(dir.path());
    c.stop();
    let c = Running::start(o);
    let again = Fake::resume(&c.target, &c.token, &e.key, resume_hello(100, "victim", &e.session, 4_000, false)).unwrap();
    assert_eq!(again.session, e.session);
    let r = record::read(dir.path(), &e.session).unwrap();
    assert_eq!((r.state, r.bytes, r.spool_from), (SessionState::Cut, 4_000, Some(4_000)));
    assert!(std::fs::read(record::log_path(dir.path(), &e.session)).unwrap() == ended_log[..4_000], "cut back to the spool's start");
}

#[test]
fn a_session_without_a_key_file_cannot_be_resumed_and_is_left_as_it_was() {
    // A session stored by a collector from before session keys.
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    let mut a = Fake::connect(&c.target, &c.token, 400, "old").unwrap();
    a.data(b"z 1\nz 2\n");
    a.end();
    a.wait_acked(8);
    finished(dir.path(), &a.session);
    std::fs::remove_file(key_file::key_path(dir.path(), &a.session)).unwrap();
    let before = files_of(dir.path(), &a.session);
    assert!(Fake::resume(&c.target, &c.token, &a.key, resume_hello(400, "old", &a.session, 0, true)).is_err());
    assert!(files_of(dir.path(), &a.session) == before, "the session is untouched");
}

#[test]
fn a_key_file_planted_by_another_user_is_not_believed() {
    let Some(user) = other_user::get("planting a key file of another user in the collector's directory") else { return };
    // A directory others may add files to (sticky, as /tmp).
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let c = Running::start(opts(dir.path()));
    let mut a = Fake::connect(&c.target, &c.token, 500, "keyless").unwrap();
    a.data(b"z 1\nz 2\n");
    a.end();
    a.wait_acked(8);
    finished(dir.path(), &a.session);
    // The session has no key file (stored before keys); the other user
    // writes one with a key of its choosing, and resumes with that key.
    std::fs::remove_file(key_file::key_path(dir.path(), &a.session)).unwrap();
    let planted = SessionKey::from_bytes([0x66; 32]);
    let key_path = key_file::key_path(dir.path(), &a.session);
    user.sh("printf '%s\\n' \"$1\" > \"$2\"", &[planted.to_hex().as_ref(), key_path.as_os_str()]);
    assert_eq!(std::fs::metadata(&key_path).unwrap().uid(), user.uid);
    let before = files_of(dir.path(), &a.session);
    assert!(Fake::resume(&c.target, &c.token, &planted, resume_hello(500, "keyless", &a.session, 0, false)).is_err());
    assert!(files_of(dir.path(), &a.session) == before, "the session is untouched");
    assert!(key_file::read(dir.path(), &a.session).unwrap_err().contains("not by the collector's user"));
}

/// A file outside the collector's directory that planted links point at.
fn precious(top: &Path) -> (PathBuf, Vec<u8>) {
    let p = top.join("precious.txt");
    // No newline at its end: a cut back to whole lines would empty it.
    let content = b"precious data, not a log".to_vec();
    std::fs::write(&p, &content).unwrap();
    (p, content)
}

#[test]
fn a_planted_link_at_a_temporary_record_path_is_not_followed() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("sessions");
    let c = Running::start(opts(&dir));
    assert_eq!(mode(&dir), 0o700, "the collector makes its directory private");
    let (target, content) = precious(top.path());
    let mut a = Fake::connect(&c.target, &c.token, 600, "linked").unwrap();
    a.data(b"z 1\n");
    a.wait_acked(4);
    // Links at the temporary record name a collector used to write through
    // (`.<session>.json.tmp`) and at the record itself.
    let tmp = dir.join(format!(".{}.json.tmp", a.session));
    std::os::unix::fs::symlink(&target, &tmp).unwrap();
    a.end();
    let r = finished(&dir, &a.session);
    assert_eq!((r.state, r.bytes), (SessionState::Ended, 4));
    assert_eq!(std::fs::read(&target).unwrap(), content, "the link's target is unchanged");
    assert!(std::fs::symlink_metadata(&tmp).unwrap().file_type().is_symlink(), "the link is left as it is");
    assert_eq!(mode(&record::record_path(&dir, &a.session)), 0o600);
    // No temporary file is left behind.
    let stray: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n.to_string_lossy().ends_with(".tmp")).collect();
    assert_eq!(stray, vec![tmp.file_name().unwrap().to_owned()]);
}

#[test]
fn a_planted_link_at_a_session_log_is_not_followed_by_a_resume() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("sessions");
    let c = Running::start(opts(&dir));
    let (target, content) = precious(top.path());
    let mut a = Fake::connect(&c.target, &c.token, 700, "relinked").unwrap();
    a.data(b"z 1\nz 2\nz 3\n");
    a.wait_acked(12);
    drop(a.r);
    let rec = finished(&dir, &a.session);
    // The log is replaced by a link; the session's own agent then resumes
    // (catching up, then not).
    let log = record::log_path(&dir, &a.session);
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&target, &log).unwrap();
    let before = std::fs::read(record::record_path(&dir, &a.session)).unwrap();
    for catch_up in [true, false] {
        let h = resume_hello(700, "relinked", &a.session, 4, catch_up);
        assert!(Fake::resume(&c.target, &c.token, &a.key, h).is_err(), "refused: the log is a link");
    }
    assert_eq!(std::fs::read(&target).unwrap(), content, "the link's target is unchanged");
    assert!(std::fs::symlink_metadata(&log).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(record::record_path(&dir, &a.session)).unwrap(), before);
    assert_eq!(record::read(&dir, &a.session).unwrap(), rec);
}

/// A record as a killed collector leaves it: live.
fn live_record(session: &str, pid: u32) -> record::SessionRecord {
    record::SessionRecord {
        session: session.to_string(),
        log: format!("{session}.log"),
        pid,
        program: "planted".into(),
        runtime: "8.0.4".into(),
        peer: "x".into(),
        start: record::now(),
        end: None,
        bytes: 0,
        state: SessionState::Live,
        reason: None,
        spool: None,
        spool_from: None,
    }
}

/// Binds a collector on `dir` (which runs the restart's clean-up) and
/// drops it.
fn restart(dir: &Path) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async { Collector::bind(opts(dir)).await.unwrap().stale_sessions().to_vec() })
}

#[test]
fn a_restart_cuts_no_link_it_finds_at_a_live_sessions_log() {
    // The collector's own record, live (it was killed), and its log
    // replaced by a link.
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("sessions");
    let (target, content) = precious(top.path());
    drop(Running::start(opts(&dir)));
    let name = "planted_1_20250101_000000";
    record::write(&dir, &live_record(name, 1)).unwrap();
    std::os::unix::fs::symlink(&target, record::log_path(&dir, name)).unwrap();
    assert_eq!(restart(&dir), vec![name.to_string()]);
    assert_eq!(std::fs::read(&target).unwrap(), content, "the link's target is unchanged");
    assert!(std::fs::symlink_metadata(record::log_path(&dir, name)).unwrap().file_type().is_symlink());
    let r = record::read(&dir, name).unwrap();
    assert_eq!(r.state, SessionState::Cut);
    let why = r.reason.unwrap();
    assert!(why.contains("not cut back") && why.contains("symbolic link"), "{why}");
}

#[test]
fn a_live_record_and_a_link_planted_by_another_user_are_not_believed_at_restart() {
    let Some(user) = other_user::get("planting a live record and a link in the collector's directory") else { return };
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("sessions");
    let (target, content) = precious(top.path());
    drop(Running::start(opts(&dir)));
    // Others may add files to the directory (sticky, as /tmp).
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let name = "planted_2_20250101_000000";
    let text = serde_json::to_string_pretty(&live_record(name, 2)).unwrap();
    let (rec_path, log_path) = (record::record_path(&dir, name), record::log_path(&dir, name));
    user.sh("printf '%s\\n' \"$1\" > \"$2\" && ln -s \"$3\" \"$4\"", &[text.as_ref(), rec_path.as_os_str(), target.as_os_str(), log_path.as_os_str()]);
    assert_eq!(std::fs::symlink_metadata(&rec_path).unwrap().uid(), user.uid);
    assert_eq!(std::fs::symlink_metadata(&log_path).unwrap().uid(), user.uid);
    let planted = std::fs::read(&rec_path).unwrap();
    assert_eq!(restart(&dir), Vec::<String>::new(), "the planted record is not the collector's");
    assert_eq!(std::fs::read(&target).unwrap(), content, "the link's target is unchanged");
    assert_eq!(std::fs::read(&rec_path).unwrap(), planted, "the planted record is left as it is");
    assert!(std::fs::symlink_metadata(&log_path).unwrap().file_type().is_symlink());
    // The collector does not list it either.
    let c = Running::start(opts(&dir));
    let listed = admin::request(&c.admin, &c.token, &Request::List).unwrap().sessions.unwrap();
    assert!(listed.iter().all(|r| r.session != name), "{listed:?}");
}

#[test]
fn the_directory_must_be_the_collectors_and_closed_to_others() {
    let top = tempfile::tempdir().unwrap();
    let bind = |d: &Path| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { Collector::bind(opts(d)).await.map(|_| ()) })
    };
    // Made private.
    let made = top.path().join("new");
    bind(&made).unwrap();
    assert_eq!(mode(&made), 0o700);
    // Writable by others without the sticky bit: refused.
    let open = top.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = bind(&open).unwrap_err().to_string();
    assert!(e.contains("can be written by other users") && e.contains("open"), "{e}");
    assert!(std::fs::read_dir(&open).unwrap().next().is_none(), "nothing made in it");
    // Owned by another user: refused.
    if let Some(user) = other_user::get("a collector directory owned by another user") {
        let theirs = top.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(user.uid), Some(user.gid)).unwrap();
        let e = bind(&theirs).unwrap_err().to_string();
        assert!(e.contains(&format!("owned by uid {}", user.uid)), "{e}");
    }
}

#[test]
fn a_token_file_of_another_user_is_refused() {
    let Some(user) = other_user::get("a token file owned by another user") else { return };
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("sessions");
    std::fs::create_dir(&dir).unwrap();
    let token_file = dir.join(clrprof_collect::TOKEN_FILE);
    std::fs::write(&token_file, format!("{}\n", Token::from_bytes([0x55; 32]).to_hex())).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&token_file, Some(user.uid), Some(user.gid)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let e = rt.block_on(async { Collector::bind(opts(&dir)).await.map(|_| ()) }).unwrap_err().to_string();
    assert!(e.contains("owned by uid") && e.contains("collector.token"), "{e}");
}
