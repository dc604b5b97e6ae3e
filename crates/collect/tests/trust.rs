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
    for p in
        [record::log_path(dir.path(), &e.session), record::record_path(dir.path(), &e.session), key_file::key_path(dir.path(), &e.session)]
    {
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
    // The directory is opened to others (sticky, as /tmp) after the
    // collector started in it: it refuses such a directory at start, but
    // goes on believing no file another user adds.
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
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
    let stray: Vec<_> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n.to_string_lossy().ends_with(".tmp")).collect();
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
    user.sh(
        "printf '%s\\n' \"$1\" > \"$2\" && ln -s \"$3\" \"$4\"",
        &[text.as_ref(), rec_path.as_os_str(), target.as_os_str(), log_path.as_os_str()],
    );
    assert_eq!(std::fs::symlink_metadata(&rec_path).unwrap().uid(), user.uid);
    assert_eq!(std::fs::symlink_metadata(&log_path).unwrap().uid(), user.uid);
    let planted = std::fs::read(&rec_path).unwrap();
    // The user closes the directory again; what was planted stays.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
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

/// What another user plants in a folder open to all: the record of an
/// ended session naming a trace of theirs, the trace, and a socket at the
/// admin socket's name (stale: nobody listens on it). Gives the session's
/// name.
fn plant_a_session(user: &other_user::OtherUser, dir: &Path) -> String {
    let name = "planted_9_20250101_000000";
    let mut rec = live_record(name, 9);
    rec.log = format!("{name}.nettrace");
    rec.state = SessionState::Ended;
    rec.end = Some(record::now());
    rec.bytes = 8;
    let text = serde_json::to_string_pretty(&rec).unwrap();
    let (rec_path, trace) = (record::record_path(dir, name), dir.join(format!("{name}.nettrace")));
    let socket = dir.join(clrprof_collect::ADMIN_SOCKET);
    user.sh(
        "printf '%s\\n' \"$1\" > \"$2\" && printf 'Nettrace' > \"$3\" && \
         python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \"$4\"",
        &[text.as_ref(), rec_path.as_os_str(), trace.as_os_str(), socket.as_os_str()],
    );
    for p in [&rec_path, &trace, &socket] {
        assert_eq!(std::fs::symlink_metadata(p).unwrap().uid(), user.uid, "{}", p.display());
    }
    name.to_string()
}

fn bind_error(dir: &Path) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async { Collector::bind(opts(dir)).await.err().map(|e| e.to_string()) })
}

#[test]
fn a_folder_open_to_others_is_refused_even_sticky() {
    let Some(user) = other_user::get("planting a session in a shared collector folder") else { return };
    // A folder as /tmp: everyone may add files, the sticky bit keeps them
    // from removing others'.
    let dir = other_user::shared_dir("collect-sticky");
    let name = plant_a_session(&user, &dir);
    let before: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    let e = bind_error(&dir).expect("the collector refuses a folder open to others");
    assert!(e.contains("can be written by other users (mode 1777, sticky or not)") && e.contains(dir.to_str().unwrap()), "{e}");
    let after: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(before.len(), after.len(), "nothing made in it: {after:?}");
    // `clrprof sessions`, `ctl` and `ui --collector` refuse it too.
    let e = clrprof_collect::files::check_own_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("can be written by other users"), "{e}");
    // Group-writable, sticky: refused too.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1770)).unwrap();
    assert!(bind_error(&dir).is_some_and(|e| e.contains("mode 1770")));
    let _ = name;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn records_traces_and_sockets_another_user_left_are_not_believed() {
    let Some(user) = other_user::get("planting a session and sockets in a collector folder") else { return };
    // Another user plants while the folder is open to all; then its owner
    // closes it (what was planted stays).
    let dir = other_user::shared_dir("collect-closed");
    let name = plant_a_session(&user, &dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // The readers (`sessions`, `ui --collector`) neither list nor read it.
    clrprof_collect::files::check_own_dir(&dir).unwrap();
    assert!(record::list(&dir).unwrap().iter().all(|r| r.session != name));
    let e = record::read(&dir, &name).unwrap_err().to_string();
    assert!(e.contains(&format!("owned by uid {}", user.uid)), "{e}");
    // The collector starts: the stale socket of the other user at its admin
    // socket's name is removed and said, and its own takes the place.
    let c = Running::start(opts(&dir));
    let admin = dir.join(clrprof_collect::ADMIN_SOCKET);
    assert_eq!(std::fs::symlink_metadata(&admin).unwrap().uid(), clrprof_collect::files::euid());
    let listed = admin::request(&c.admin, &c.token, &Request::List).unwrap().sessions.unwrap();
    assert!(listed.iter().all(|r| r.session != name), "{listed:?}");
    drop(c);
    // A live socket of the other user there (left from when the folder was
    // open): not stopped by it either, and nothing reaches it.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let _ = std::fs::remove_file(&admin);
    let squatter = other_user::FakeServer::start(user, &admin, b"CLRPROF-COLLECT 1 00\n");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let c = Running::start(opts(&dir));
    assert!(admin::request(&c.admin, &c.token, &Request::List).unwrap().ok);
    assert!(squatter.received().is_empty(), "the planted socket received {:?}", squatter.received());
    drop(c);
    drop(squatter);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn another_users_socket_at_the_agents_path_is_refused_and_named() {
    let Some(user) = other_user::get("a socket of another user at the collector's --listen path") else { return };
    let shared = other_user::shared_dir("collect-listen");
    let path = shared.join("agents.sock");
    user.sh("python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \"$1\"", &[path.as_os_str()]);
    let dir = tempfile::tempdir().unwrap();
    let o = clrprof_collect::Options { listen: clrprof_collect::ListenAddr::Unix(path.clone()), ..opts(dir.path()) };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let e = rt.block_on(async { Collector::bind(o).await.err().map(|e| e.to_string()) }).expect("refused");
    assert!(e.contains(path.to_str().unwrap()) && e.contains(&format!("socket of another user (uid {},", user.uid)), "{e}");
    assert_eq!(std::fs::symlink_metadata(&path).unwrap().uid(), user.uid, "left as it is");
    std::fs::remove_dir_all(&shared).unwrap();
}
