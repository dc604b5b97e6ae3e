//! The collector against fake agents: clean sessions, refusals, cuts,
//! resumes and commands, with a well-behaved session running alongside.

mod fake_agent;

use clrprof_collect::admin::{self, Request};
use clrprof_collect::record::{self, SessionState};
use clrprof_collect::ListenAddr;
use clrprof_wire::{handshake, Nonce, Role, Token};
use fake_agent::*;
use std::io::Write;
use std::time::Duration;

fn lines(n: usize, tag: &str) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        writeln!(v, "z {tag} line {i} {}", "x".repeat(i % 50)).unwrap();
    }
    v
}

fn finished(dir: &std::path::Path, session: &str) -> record::SessionRecord {
    eventually(|| record::read(dir, session).ok().filter(|r| r.state != SessionState::Live))
}

#[test]
fn a_clean_session_is_stored_whole_and_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    let mut a = Fake::connect(&c.target, &c.token, 4242, "My App").unwrap();
    assert!(a.session.starts_with("My_App_4242_"), "{}", a.session);
    let live = record::read(dir.path(), &a.session).unwrap();
    assert_eq!(live.state, SessionState::Live);
    let log = lines(20_000, "clean");
    // Frames cut anywhere, even inside lines: only whole lines are stored.
    let mut sent = 0;
    for chunk in log.chunks(7_777) {
        a.data(chunk);
        sent += chunk.len();
        // Read while the collector writes: what is there is a prefix of
        // what was sent, and never more than was sent (a read can see a
        // write half done, so whole lines are checked once it has ended,
        // and after cuts by the tests below).
        let on_disk = std::fs::read(record::log_path(dir.path(), &a.session)).unwrap();
        assert!(on_disk.len() <= sent);
        assert!(log.starts_with(&on_disk));
    }
    a.end();
    a.wait_acked(log.len() as u64);
    let r = finished(dir.path(), &a.session);
    assert_eq!(r.state, SessionState::Ended, "{r:?}");
    assert_eq!(r.bytes, log.len() as u64);
    assert_eq!((r.pid, r.program.as_str(), r.runtime.as_str()), (4242, "My App", "8.0.4"));
    assert!(r.end.is_some() && r.reason.is_none());
    assert_eq!(std::fs::read(record::log_path(dir.path(), &a.session)).unwrap(), log);
    let text = std::fs::read_to_string(record::record_path(dir.path(), &a.session)).unwrap();
    assert!(!text.contains(&c.token.to_hex()));
}

#[test]
fn bad_clients_are_refused_or_cut_and_a_good_session_is_unaffected() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.handshake_timeout = Duration::from_millis(500);
    let c = Running::start(o);
    let mut good = Fake::connect(&c.target, &c.token, 1, "good").unwrap();
    let good_log = lines(300_000, "good");
    let mut sent = 0usize;
    let mut step = |good: &mut Fake| {
        good.data(&good_log[sent..sent + (64 << 10)]);
        sent += 64 << 10;
    };

    // Wrong token: closed right after the challenge, no session made.
    let wrong = Token::from_bytes([0x77; 32]);
    assert_eq!(Fake::connect(&c.target, &wrong, 2, "wrong").err().as_deref(), Some("closed"));
    step(&mut good);
    // No token: something else instead of a handshake.
    let (mut r, _) = challenge(&c.target);
    r.get_mut().write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(answer(&mut r).is_none());
    step(&mut good);
    // Garbage bytes.
    let (mut r, _) = challenge(&c.target);
    r.get_mut().write_all(&[0u8, 255, 13, 10]).unwrap();
    assert!(answer(&mut r).is_none());
    // A HELLO without a valid MAC.
    let (mut r, _) = challenge(&c.target);
    r.get_mut().write_all(b"HELLO 00 {\"role\":\"stream\"}\n").unwrap();
    assert!(answer(&mut r).is_none());
    step(&mut good);
    // Silent: closed after the handshake timeout.
    let (mut r, _) = challenge(&c.target);
    assert!(answer(&mut r).is_none());
    step(&mut good);
    // An admin hello on the agents' port is refused too.
    let (mut r, server) = challenge(&c.target);
    let h = handshake::hello_line(&c.token, &server, &hello(Role::Admin, 3, "x", &Nonce([1; 32]))).unwrap();
    r.get_mut().write_all(h.as_bytes()).unwrap();
    assert!(answer(&mut r).is_none());
    // None of them made a file.
    let names: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(names.iter().all(|n| n.starts_with("good_1_") || n.starts_with("collector.")), "{names:?}");

    // Stops mid-line.
    let mut mid = Fake::connect(&c.target, &c.token, 4, "midline").unwrap();
    mid.data(b"z one\nz two\nz thr");
    mid.wait_acked(12);
    drop(mid.r);
    let r = finished(dir.path(), &mid.session);
    assert_eq!(r.state, SessionState::Cut);
    assert_eq!(r.bytes, 12);
    let why = r.reason.unwrap();
    assert!(why.contains("closed before the end") && why.contains("unfinished line of 5 bytes"), "{why}");
    assert_eq!(std::fs::read(record::log_path(dir.path(), &mid.session)).unwrap(), b"z one\nz two\n");
    step(&mut good);

    // Ends (E frame) in the middle of a line.
    let mut e = Fake::connect(&c.target, &c.token, 5, "endmid").unwrap();
    e.data(b"z a\nz b");
    e.end();
    let r = finished(dir.path(), &e.session);
    assert_eq!((r.state, r.bytes), (SessionState::Cut, 4));
    assert!(r.reason.unwrap().contains("ended in the middle of a line"));

    // A line of 100 MB (the limit is 64 MB): cut, the lines before it kept.
    let mut big = Fake::connect(&c.target, &c.token, 6, "bigline").unwrap();
    big.data(b"z before\n");
    let mb = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        if big.r.get_mut().write_all(&clrprof_wire::FrameHeader::encode(clrprof_wire::FrameKind::Data, mb.len() as u32)).is_err()
            || big.r.get_mut().write_all(&mb).is_err()
        {
            break; // the collector closed the connection once over the limit
        }
    }
    let r = finished(dir.path(), &big.session);
    assert_eq!((r.state, r.bytes), (SessionState::Cut, 9));
    assert!(r.reason.as_deref().unwrap().contains("a line longer than 67108864 bytes at byte 9"), "{r:?}");
    assert_eq!(std::fs::read(record::log_path(dir.path(), &big.session)).unwrap(), b"z before\n");

    // A frame header announcing more than the protocol allows.
    let mut huge = Fake::connect(&c.target, &c.token, 7, "hugeframe").unwrap();
    huge.r.get_mut().write_all(&[b'D', 0x7f, 0xff, 0xff, 0xff]).unwrap();
    let r = finished(dir.path(), &huge.session);
    assert!(r.reason.unwrap().contains("exceeds the limit"));

    // The good session goes on and ends whole.
    step(&mut good);
    good.data(&good_log[sent..]);
    good.end();
    let r = finished(dir.path(), &good.session);
    assert_eq!(r.state, SessionState::Ended);
    assert_eq!(std::fs::read(record::log_path(dir.path(), &good.session)).unwrap(), good_log);
    // Refusals never show the token in records.
    for n in std::fs::read_dir(dir.path()).unwrap() {
        let p = n.unwrap().path();
        if p.extension().is_some_and(|e| e == "json") {
            assert!(!std::fs::read_to_string(&p).unwrap().contains(&c.token.to_hex()));
        }
    }
}

#[test]
fn commands_go_through_the_admin_socket_and_need_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    let mut a = Fake::connect(&c.target, &c.token, 9, "ctl").unwrap();
    a.data(b"z start\n");
    a.wait_acked(8);
    let session = a.session.clone();
    let admin = c.admin.clone();
    let token = c.token.clone();
    let asker = std::thread::spawn(move || {
        admin::request(&admin, &token, &Request::Ctl { session, command: "comment phase two".into() }).unwrap()
    });
    let (seq, text) = a.next_command();
    assert_eq!(text, "comment phase two");
    a.reply(&format!("{seq} ok"));
    let reply = asker.join().unwrap();
    assert!(reply.ok, "{reply:?}");
    assert_eq!(reply.reply.as_deref(), Some("ok"));
    // An agent's error comes back as an error.
    let (admin, token, session) = (c.admin.clone(), c.token.clone(), a.session.clone());
    let asker = std::thread::spawn(move || admin::request(&admin, &token, &Request::Ctl { session, command: "dump".into() }).unwrap());
    let (seq, text) = a.next_command();
    assert_eq!(text, "dump");
    a.reply(&format!("{seq} error heap dumps need the GC events"));
    let reply = asker.join().unwrap();
    assert!(!reply.ok && reply.error.unwrap().contains("heap dumps need"));
    // Unknown command, unknown session, wrong token.
    let r = admin::request(&c.admin, &c.token, &Request::Ctl { session: a.session.clone(), command: "reboot".into() }).unwrap();
    assert!(!r.ok && r.error.unwrap().contains("unknown command"));
    let r = admin::request(&c.admin, &c.token, &Request::Ctl { session: "nope".into(), command: "dump".into() }).unwrap();
    assert!(!r.ok && r.error.unwrap().contains("not live"));
    let e = admin::request(&c.admin, &Token::from_bytes([1; 32]), &Request::List).unwrap_err().to_string();
    assert!(e.contains("refused the token"), "{e}");
    let listed = admin::request(&c.admin, &c.token, &Request::List).unwrap().sessions.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, SessionState::Live);
    assert_eq!(listed[0].bytes, 8, "a live session lists the bytes stored so far");
    // The admin socket is private.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&c.admin).unwrap().permissions().mode() & 0o777, 0o600);
    a.end();
    assert_eq!(finished(dir.path(), &a.session).state, SessionState::Ended);
}

#[test]
fn a_resume_cuts_the_part_back_to_the_spool_start_and_names_the_spool() {
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    let mut a = Fake::connect(&c.target, &c.token, 11, "resumer").unwrap();
    a.data(b"z 1\nz 2\nz 3\n");
    a.wait_acked(12);
    // The agent believes only 8 bytes are stored (the last ack was lost):
    // its spool starts at 8, and the stored part must end there. The old
    // connection is still open: the resume supersedes it.
    let mut h = hello(Role::Resume, 11, "resumer", &Nonce([0; 32]));
    h.session = Some(a.session.clone());
    h.spool = Some("/tmp/resumer.spool.log".into());
    h.spool_from = Some(8);
    let again = Fake::resume(&c.target, &c.token, &a.key, h).unwrap();
    assert_eq!(again.session, a.session);
    let r = record::read(dir.path(), &a.session).unwrap();
    assert_eq!((r.state, r.bytes, r.spool_from), (SessionState::Cut, 8, Some(8)));
    assert_eq!(r.spool.as_deref(), Some("/tmp/resumer.spool.log"));
    assert_eq!(std::fs::read(record::log_path(dir.path(), &a.session)).unwrap(), b"z 1\nz 2\n");
    // The old connection was closed by the collector.
    assert!(a.frame().is_none());
    // A resume for a session of another process is refused.
    let mut h = hello(Role::Resume, 12, "x", &Nonce([0; 32]));
    h.session = Some(a.session.clone());
    h.spool = Some("/tmp/x".into());
    h.spool_from = Some(0);
    assert!(Fake::resume(&c.target, &c.token, &a.key, h).is_err());
    let mut h = hello(Role::Resume, 11, "x", &Nonce([0; 32]));
    h.session = Some("../../etc/passwd".into());
    h.spool = Some("/tmp/x".into());
    h.spool_from = Some(0);
    assert!(Fake::resume(&c.target, &c.token, &a.key, h).is_err());
    // Spooled from the start.
    let mut h = hello(Role::Spooled, 13, "late", &Nonce([0; 32]));
    h.spool = Some("/tmp/late.spool.log".into());
    let s = Fake::connect_as(&c.target, &c.token, h).unwrap();
    let r = record::read(dir.path(), &s.session).unwrap();
    assert_eq!((r.state, r.bytes, r.spool_from), (SessionState::Cut, 0, Some(0)));
    assert!(r.reason.unwrap().contains("could not reach the collector at start"));
}

#[test]
fn a_catch_up_makes_the_stored_log_whole_and_a_cut_one_leaves_part_plus_spool() {
    let dir = tempfile::tempdir().unwrap();
    let c = Running::start(opts(dir.path()));
    let log = lines(3_000, "caught");
    let mut a = Fake::connect(&c.target, &c.token, 31, "catcher").unwrap();
    a.data(&log[..5_000]);
    a.wait_acked(4_900);
    // The agent's spool starts at a line boundary the collector had
    // stored: one line before its last acknowledgement (that one was
    // lost), so the collector must cut a stored line away.
    let stored = a.acked as usize;
    let from = log[..stored - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) as u64;
    let mut h = hello(Role::Resume, 31, "catcher", &Nonce([0; 32]));
    h.session = Some(a.session.clone());
    h.spool = Some("/tmp/catcher.spool.log".into());
    h.spool_from = Some(from);
    h.catch_up = true;
    let mut b = Fake::resume(&c.target, &c.token, &a.key, h).unwrap();
    assert_eq!(b.session, a.session);
    // The old connection is closed; the part is cut back to the spool's
    // start and the session is live again.
    assert!(a.frame().is_none());
    let r = record::read(dir.path(), &a.session).unwrap();
    assert_eq!((r.state, r.bytes, r.spool_from), (SessionState::Live, from, Some(from)), "{r:?}");
    assert_eq!(std::fs::read(record::log_path(dir.path(), &a.session)).unwrap(), &log[..from as usize]);
    // Acknowledgements are log offsets; commands reach the agent again.
    b.data(&log[from as usize..from as usize + 1_000]);
    b.wait_acked(from + 1);
    assert!(b.acked > from && b.acked <= from + 1_000);
    let (admin, token, session) = (c.admin.clone(), c.token.clone(), a.session.clone());
    let asker = std::thread::spawn(move || admin::request(&admin, &token, &Request::Ctl { session, command: "comment back".into() }).unwrap());
    let (seq, text) = b.next_command();
    assert_eq!(text, "comment back");
    b.reply(&format!("{seq} ok"));
    assert!(asker.join().unwrap().ok);
    b.data(&log[from as usize + 1_000..]);
    b.end();
    b.wait_acked(log.len() as u64);
    let r = finished(dir.path(), &a.session);
    assert_eq!((r.state, r.bytes), (SessionState::Ended, log.len() as u64), "{r:?}");
    assert_eq!((r.spool.as_deref(), r.spool_from), (None, None), "a whole log names no spool");
    let reason = r.reason.unwrap();
    assert!(reason.contains(&format!("broke at byte {from}")) && reason.contains("whole"), "{reason}");
    assert_eq!(std::fs::read(record::log_path(dir.path(), &a.session)).unwrap(), log);

    // Spooled from the start, caught up in part, then the connection
    // drops in the middle of a line: what the catch-up added is cut away,
    // so the part (empty) followed by the spool is the log.
    let mut h = hello(Role::Spooled, 32, "dropper", &Nonce([0; 32]));
    h.spool = Some("/tmp/dropper.spool.log".into());
    h.catch_up = true;
    let mut d = Fake::connect_as(&c.target, &c.token, h).unwrap();
    assert_eq!(record::read(dir.path(), &d.session).unwrap().state, SessionState::Live);
    d.data(&log[..2_345]);
    d.wait_acked(1);
    let name = d.session.clone();
    let key = d.key.clone();
    drop(d);
    let r = finished(dir.path(), &name);
    assert_eq!((r.state, r.bytes, r.spool_from), (SessionState::Cut, 0, Some(0)), "{r:?}");
    assert_eq!(r.spool.as_deref(), Some("/tmp/dropper.spool.log"));
    assert!(r.reason.as_deref().unwrap().contains("catching up from the spool stopped"), "{r:?}");
    assert!(std::fs::read(record::log_path(dir.path(), &name)).unwrap().is_empty());

    // A catch-up can resume again: the part is cut back to the spool's
    // start once more and the whole log comes.
    let mut h = hello(Role::Resume, 32, "dropper", &Nonce([0; 32]));
    h.session = Some(name.clone());
    h.spool = Some("/tmp/dropper.spool.log".into());
    h.spool_from = Some(0);
    h.catch_up = true;
    let mut e = Fake::resume(&c.target, &c.token, &key, h).unwrap();
    e.data(&log);
    e.end();
    e.wait_acked(log.len() as u64);
    let r = finished(dir.path(), &name);
    assert_eq!((r.state, r.bytes, r.spool.as_deref()), (SessionState::Ended, log.len() as u64, None), "{r:?}");
    assert_eq!(std::fs::read(record::log_path(dir.path(), &name)).unwrap(), log);
}

#[test]
fn unix_socket_listener_and_a_restart_closes_stale_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agents.sock");
    let mut o = opts(dir.path());
    o.listen = ListenAddr::Unix(sock.clone());
    let c = Running::start(o.clone());
    let token = c.token.clone();
    assert_eq!(c.target, format!("unix:{}", sock.display()));
    let mut a = Fake::connect(&c.target, &c.token, 21, "unixy").unwrap();
    a.data(b"z hello\n");
    a.wait_acked(8);
    let name = a.session.clone();
    // A second one was catching up from a spool that starts at byte 8.
    let mut b = Fake::connect(&c.target, &c.token, 23, "catching").unwrap();
    b.data(b"z hello\nz from the spool\n");
    b.wait_acked(25);
    let caught = b.session.clone();
    // Pretend the collector was killed: its records stay live.
    let mut rec = record::read(dir.path(), &name).unwrap();
    drop(a);
    drop(b);
    let _ = finished(dir.path(), &name);
    let mut rec_b = finished(dir.path(), &caught);
    c.stop();
    rec.state = SessionState::Live;
    record::write(dir.path(), &rec).unwrap();
    std::fs::OpenOptions::new().append(true).open(record::log_path(dir.path(), &name)).unwrap().write_all(b"z half").unwrap();
    rec_b.state = SessionState::Live;
    rec_b.spool = Some("/tmp/catching.spool.log".into());
    rec_b.spool_from = Some(8);
    record::write(dir.path(), &rec_b).unwrap();
    // The restart marks them cut, back to whole lines (the catch-up back
    // to its spool's start: the rest is in the spool), and the same token
    // file is used again.
    let c2 = Running::start(o);
    assert_eq!(c2.token, token);
    let r = record::read(dir.path(), &name).unwrap();
    assert_eq!((r.state, r.bytes), (SessionState::Cut, 8));
    assert!(r.reason.unwrap().contains("collector stopped"));
    assert_eq!(std::fs::read(record::log_path(dir.path(), &name)).unwrap(), b"z hello\n");
    let r = record::read(dir.path(), &caught).unwrap();
    assert_eq!((r.state, r.bytes, r.spool_from), (SessionState::Cut, 8, Some(8)), "{r:?}");
    assert!(r.reason.unwrap().contains("catching up from the agent's spool"));
    assert_eq!(std::fs::read(record::log_path(dir.path(), &caught)).unwrap(), b"z hello\n");
    assert!(Fake::connect(&c2.target, &c2.token, 22, "again").is_ok());
}
