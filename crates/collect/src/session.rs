//! One agent connection after the handshake.
//!
//! `stream`: frames are read one after the other; the log bytes of `D`
//! frames are written to the session's log up to the last newline received
//! (a line is never split across what is on disk), and each write is
//! acknowledged with the number of bytes stored, so that an agent whose
//! stream breaks knows where its spool must start. A line longer than
//! [`Options::max_line`](crate::Options::max_line), a protocol error, or a
//! connection that closes without an `E` frame cuts the session: the
//! record says which, and how many bytes of an unfinished line were
//! dropped.
//!
//! `resume`: an agent whose stream broke names its session and the offset
//! at which its spool starts, and proves the session's own key (made at
//! the session's first handshake and kept in `<session>.key`; see
//! [`clrprof_wire::handshake`]). Until that proof is checked nothing is
//! done to the session: a resume without it (another holder of the
//! agents' token, an agent or a session from before keys) is refused and
//! leaves the log, the record and a live connection as they were. Then
//! the stored log is cut back to that offset
//! (bytes stored but not acknowledged are in the spool too) and the
//! record names the spool. With `catch_up` in its hello the agent then
//! sends the spool's bytes and goes on streaming: the session is live
//! again, takes commands, and ends whole (see `catch_up` below).
//!
//! `spooled`: an agent that could not connect at start; a session with an
//! empty stored part and the spool named (or, with `catch_up`, a session
//! that takes the whole log from the spool on).

use crate::buffers::Share;
use crate::files::{self, Access, OpenError};
use crate::key_file;
use crate::record::{self, SessionRecord, SessionState};
use crate::registry::{Live, ReplyTo};
use crate::server::{Handshaken, Reader, Writer};
use clrprof_wire::frame::{small_frame, HEADER};
use clrprof_wire::{handshake, Command, Content, FrameHeader, FrameKind, WireError};
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch, Notify};

/// How a stream ended.
enum Outcome {
    Ended,
    Cut(String),
}

fn new_record(c: &Handshaken, session: &str) -> SessionRecord {
    SessionRecord {
        session: session.to_string(),
        log: format!("{session}.{}", c.hello.content.extension()),
        pid: c.hello.pid,
        program: c.hello.program.chars().take(256).collect(),
        runtime: c.hello.runtime.chars().take(64).collect(),
        peer: c.peer.clone(),
        start: record::now(),
        end: None,
        bytes: 0,
        state: SessionState::Live,
        reason: None,
        spool: None,
        spool_from: None,
    }
}

type Pending = Arc<Mutex<HashMap<u64, ReplyTo>>>;

fn pending_lock(p: &Pending) -> std::sync::MutexGuard<'_, HashMap<u64, ReplyTo>> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sends acknowledgements and commands to the agent.
async fn write_loop(mut w: Writer, mut acks: watch::Receiver<u64>, mut cmds: mpsc::Receiver<(Command, ReplyTo)>, pending: Pending) {
    let mut seq = 0u64;
    loop {
        let frame = tokio::select! {
            r = acks.changed() => {
                if r.is_err() { return; }
                let stored = *acks.borrow_and_update();
                small_frame(FrameKind::Ack, &stored.to_be_bytes())
            }
            Some((cmd, reply)) = cmds.recv() => {
                seq += 1;
                pending_lock(&pending).insert(seq, reply);
                small_frame(FrameKind::Command, format!("{seq} {}", cmd.text()).as_bytes())
            }
        };
        if w.write_all(&frame).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
}

async fn read_header(r: &mut Reader) -> Result<Option<FrameHeader>, String> {
    let mut h = [0u8; HEADER];
    match r.read_exact(&mut h[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("read error: {e}")),
    }
    r.read_exact(&mut h[1..]).await.map_err(|e| format!("closed in the middle of a frame header ({e})"))?;
    FrameHeader::parse(h).map(Some).map_err(|e: WireError| format!("protocol error: {e}"))
}

/// How much of a data frame is read at a time (the frame's payload is
/// never held whole: only the unfinished line after its last newline is
/// kept between reads).
const CHUNK: usize = 64 << 10;

/// The longest reply to a command an agent may send (`<seq> ok ...`: a
/// line of text).
pub const MAX_REPLY: u32 = 64 << 10;

/// What [`read_loop`] reads into and keeps between frames.
struct Buffered {
    /// Bytes after the last newline stored (log text only).
    line: Vec<u8>,
    /// One chunk of a frame's payload.
    chunk: Vec<u8>,
    /// This session's share of the collector's buffers.
    share: Share,
    /// Log text, stored in whole lines (else a trace, stored as it comes).
    whole_lines: bool,
    /// The longest line accepted.
    max_line: usize,
}

impl Buffered {
    fn new(share: Share, whole_lines: bool, max_line: usize) -> Buffered {
        Buffered { line: Vec::new(), chunk: vec![0u8; CHUNK], share, whole_lines, max_line }
    }
}

/// Reads frames until the stream ends; writes whole lines to `file` (with
/// `whole_lines`: log text), or every byte as it comes (a trace).
async fn read_loop(
    r: &mut Reader,
    file: &mut std::fs::File,
    stored: &mut u64,
    mut b: Buffered,
    acks: &watch::Sender<u64>,
    pending: &Pending,
) -> Outcome {
    let unfinished = |n: usize| if n == 0 { String::new() } else { format!("; an unfinished line of {n} bytes was dropped") };
    loop {
        let h = match read_header(r).await {
            Ok(Some(h)) => h,
            Ok(None) => return Outcome::Cut(format!("the connection closed before the end of the log{}", unfinished(b.line.len()))),
            Err(e) => return Outcome::Cut(format!("{e}{}", unfinished(b.line.len()))),
        };
        match h.kind {
            FrameKind::Data => {
                let mut left = h.len as usize;
                while left > 0 {
                    let n = left.min(CHUNK);
                    if let Err(e) = r.read_exact(&mut b.chunk[..n]).await {
                        return Outcome::Cut(format!("closed in the middle of a data frame ({e}){}", unfinished(b.line.len())));
                    }
                    left -= n;
                    let before = *stored;
                    if let Err(why) = store(&mut b, n, file, stored) {
                        return Outcome::Cut(why);
                    }
                    if *stored != before {
                        let _ = acks.send(*stored);
                    }
                }
            }
            FrameKind::End => {
                if b.line.is_empty() {
                    return Outcome::Ended;
                }
                return Outcome::Cut(format!("the log ended in the middle of a line{}", unfinished(b.line.len())));
            }
            FrameKind::Reply => {
                if h.len > MAX_REPLY {
                    return Outcome::Cut(format!(
                        "protocol error: a reply of {} bytes (at most {MAX_REPLY}){}",
                        h.len,
                        unfinished(b.line.len())
                    ));
                }
                let mut p = vec![0u8; h.len as usize];
                if r.read_exact(&mut p).await.is_err() {
                    return Outcome::Cut(format!("closed in the middle of a reply frame{}", unfinished(b.line.len())));
                }
                let text = String::from_utf8_lossy(&p);
                let (seq, rest) = text.split_once(' ').unwrap_or((&text, ""));
                if let Some(to) = seq.parse::<u64>().ok().and_then(|s| pending_lock(pending).remove(&s)) {
                    let _ = to.send(match rest.strip_prefix("error ") {
                        Some(e) => Err(e.to_string()),
                        None => Ok(rest.to_string()),
                    });
                }
            }
            FrameKind::Ack | FrameKind::Command => {
                return Outcome::Cut(format!("protocol error: the agent sent a {:?} frame{}", h.kind, unfinished(b.line.len())));
            }
        }
    }
}

/// Stores the `n` bytes read into `b.chunk`: log text up to its last
/// newline (with the unfinished line before it), the rest kept in
/// `b.line` within `max_line` and the collector's buffers; a trace's
/// bytes as they come. Gives why the session is to be cut.
fn store(b: &mut Buffered, n: usize, file: &mut std::fs::File, stored: &mut u64) -> Result<(), String> {
    let max_line = b.max_line;
    let chunk = &b.chunk[..n];
    let cut = if b.whole_lines { chunk.iter().rposition(|&c| c == b'\n').map(|nl| nl + 1) } else { Some(n) };
    let rest = match cut {
        Some(end) => {
            let write = |f: &mut std::fs::File, bytes: &[u8]| f.write_all(bytes).map_err(|e| format!("cannot write the log: {e}"));
            write(file, &b.line)?;
            write(file, &chunk[..end])?;
            *stored += (b.line.len() + end) as u64;
            if b.line.capacity() > CHUNK {
                // A long line was stored: its memory is given back.
                b.line = Vec::new();
                let _ = b.share.hold(0);
            } else {
                b.line.clear();
            }
            &chunk[end..]
        }
        None => chunk,
    };
    let len = b.line.len() + rest.len();
    if len > max_line {
        return Err(format!("a line longer than {max_line} bytes at byte {} of the log (refused; {len} bytes of it dropped)", *stored));
    }
    if len > b.line.capacity() {
        // Grown as a `Vec` grows (doubling), counted by what is allocated.
        let capacity = len.max(b.line.capacity() * 2).min(max_line);
        if let Err(full) = b.share.hold(capacity) {
            return Err(format!(
                "the collector's buffers for unfinished lines are full ({} bytes in all) and this session's line, {len} bytes at byte {} of the log, is the longest (refused)",
                full.max, *stored
            ));
        }
        b.line.reserve_exact(capacity - b.line.len());
    }
    b.line.extend_from_slice(rest);
    Ok(())
}

/// Why a session cut to make room for another's unfinished line was cut.
fn cut_for_room(max: usize) -> String {
    format!("the collector's buffers for unfinished lines were full ({max} bytes in all) and this session held the most: cut to make room")
}

/// Serves an agent's stream after the handshake: registers the session
/// for commands, sends the `OK` line, then stores the log bytes of its
/// frames in `file` (counting on from `rec.bytes`, so acknowledgements are
/// log offsets) until the log ends or the stream is cut.
async fn serve(mut c: Handshaken, name: &str, file: &mut std::fs::File, rec: &mut SessionRecord) -> Outcome {
    let (cmd_tx, cmd_rx) = mpsc::channel(16);
    let cancel = Arc::new(Notify::new());
    let ctx = Arc::clone(&c.ctx);
    ctx.registry.insert(name, Live { commands: cmd_tx, cancel: Arc::clone(&cancel) });
    let outcome = match c.accept(name).await {
        Err(e) => Outcome::Cut(format!("the agent went away during the handshake ({e})")),
        Ok(()) => {
            let Handshaken { mut reader, writer, .. } = c;
            let (ack_tx, ack_rx) = watch::channel(rec.bytes);
            let pending: Pending = Arc::default();
            let whole_lines = record::content_of(rec) == Content::Log;
            let w = tokio::spawn(write_loop(writer, ack_rx, cmd_rx, Arc::clone(&pending)));
            let share = ctx.buffers.share();
            let cut = Arc::clone(&share.cut);
            let outcome = tokio::select! {
                o = read_loop(&mut reader, file, &mut rec.bytes, Buffered::new(share, whole_lines, ctx.opts.max_line), &ack_tx, &pending) => o,
                _ = cancel.notified() => Outcome::Cut("the agent reconnected to say its stream broke".into()),
                _ = cut.notified() => Outcome::Cut(cut_for_room(ctx.opts.max_buffered)),
            };
            // On a clean end the agent gets its last acknowledgement
            // (the whole log is stored) before the connection closes.
            ctx.registry.remove(name);
            drop(ack_tx);
            if matches!(outcome, Outcome::Ended) {
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), w).await;
            } else {
                w.abort();
            }
            for (_, to) in pending_lock(&pending).drain() {
                let _ = to.send(Err("the session ended before the agent replied".into()));
            }
            outcome
        }
    };
    ctx.registry.remove(name);
    let _ = file.flush();
    outcome
}

/// Writes a session's record (errors go to standard error).
fn save(dir: &std::path::Path, rec: &SessionRecord) -> bool {
    match record::write(dir, rec) {
        Ok(()) => true,
        Err(e) => {
            crate::say!("clrprof collect: {e}");
            false
        }
    }
}

fn said_end(name: &str, rec: &SessionRecord) {
    crate::say!(
        "clrprof collect: session {name} {} ({} bytes){}",
        if rec.state == SessionState::Ended { "ended" } else { "cut" },
        rec.bytes,
        rec.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
    );
}

/// A new streamed session.
pub(crate) async fn stream(c: Handshaken) {
    let dir = c.ctx.opts.dir.clone();
    let on_ended = c.ctx.opts.on_ended.clone();
    let (name, mut file) = match record::create_log(&dir, &c.hello.program, c.hello.pid, c.hello.content) {
        Ok(x) => x,
        Err(e) => {
            crate::say!("clrprof collect: session from {}: {e}", c.peer);
            return;
        }
    };
    if let Err(e) = key_file::create(&dir, &name, &c.session_key(&name)) {
        crate::say!("clrprof collect: session from {}: {e}", c.peer);
        return;
    }
    let mut rec = new_record(&c, &name);
    if !save(&dir, &rec) {
        return;
    }
    let files = c.ctx.registry.files_lock(&name);
    let _held = files.lock().await;
    crate::say!("clrprof collect: session {name} from {} (pid {}, runtime {})", c.peer, rec.pid, rec.runtime);
    let outcome = serve(c, &name, &mut file, &mut rec).await;
    rec.end = Some(record::now());
    match outcome {
        Outcome::Ended => rec.state = SessionState::Ended,
        Outcome::Cut(why) => {
            rec.state = SessionState::Cut;
            rec.reason = Some(why);
        }
    }
    said_end(&name, &rec);
    if save(&dir, &rec) {
        ended(on_ended, &dir, &rec);
    }
}

/// Hands a session that ended whole to [`crate::Options::on_ended`].
fn ended(on_ended: Option<crate::OnEnded>, dir: &std::path::Path, rec: &SessionRecord) {
    if rec.state != SessionState::Ended {
        return;
    }
    if let Some(f) = on_ended {
        let (log, rec) = (dir.join(&rec.log), rec.clone());
        tokio::task::spawn_blocking(move || (f.0)(&log, &rec));
    }
}

/// An agent catching up from its spool (`catch_up` in its hello): the
/// stored log, cut back to `from` (where the spool starts), takes the
/// spool's bytes and then the rest of the log as a stream. At the end the
/// stored log is whole, and the record names no spool. If the catch-up is
/// cut, what it added is cut away again (it is all in the spool), so the
/// stored part followed by the spool is still the log, byte for byte.
async fn catch_up(c: Handshaken, name: &str, mut file: std::fs::File, mut rec: SessionRecord, from: u64, broke: &str) {
    let dir = c.ctx.opts.dir.clone();
    let on_ended = c.ctx.opts.on_ended.clone();
    let spool = rec.spool.clone().unwrap_or_default();
    rec.state = SessionState::Live;
    rec.end = None;
    rec.bytes = from;
    rec.reason = Some(format!("{broke}; the agent is sending the rest from its spool {spool}"));
    if !save(&dir, &rec) {
        return;
    }
    crate::say!("clrprof collect: session {name}: the agent catches up from its spool {spool} (byte {from} on)");
    let outcome = serve(c, name, &mut file, &mut rec).await;
    rec.end = Some(record::now());
    match outcome {
        Outcome::Ended => {
            rec.state = SessionState::Ended;
            rec.reason = Some(format!("{broke}; the agent sent the rest from its spool {spool}: the stored log is whole"));
            rec.spool = None;
            rec.spool_from = None;
        }
        Outcome::Cut(why) => {
            let added = rec.bytes - from;
            if let Err(e) = file.set_len(from) {
                crate::say!("clrprof collect: cannot cut session {name} back to {from} bytes: {e}");
            } else {
                rec.bytes = from;
            }
            rec.state = SessionState::Cut;
            rec.reason = Some(format!(
                "{broke}; catching up from the spool stopped ({why}) after {added} bytes, cut away again: the log goes on from byte {from} in the agent's spool file"
            ));
            rec.spool_from = Some(from);
        }
    }
    said_end(name, &rec);
    if save(&dir, &rec) {
        ended(on_ended, &dir, &rec);
    }
}

/// An agent whose stream broke: its log goes on in a spool file from
/// `spool_from`. The resume must prove the session's key before anything
/// is done to the session.
pub(crate) async fn resume(mut c: Handshaken) {
    let dir = c.ctx.opts.dir.clone();
    let (Some(name), Some(spool), Some(from)) = (c.hello.session.clone(), c.hello.spool.clone(), c.hello.spool_from) else {
        c.ctx.refusals.log(&c.peer, "resume without session, spool and spool_from");
        return;
    };
    if !record::is_session_name(&name) {
        c.ctx.refusals.log(&c.peer, "resume names an invalid session");
        return;
    }
    let key = match key_file::read(&dir, &name) {
        Ok(k) => k,
        Err(why) => {
            c.ctx.refusals.log(&c.peer, &format!("resume of session {name} refused, the session left as it was: {why}"));
            return;
        }
    };
    if let Err(e) = handshake::verify_resume(&c.hello, &key, &c.server) {
        let why = match e {
            WireError::BadProof => "the resume proof does not match the session's key".to_string(),
            e => format!("no valid resume proof ({e})"),
        };
        c.ctx.refusals.log(&c.peer, &format!("resume of session {name} refused, the session left as it was: {why}"));
        return;
    }
    // A live task for the session (the old connection, still open) stops
    // first; the files lock is held until it has written its record.
    c.ctx.registry.cancel(&name);
    let files = c.ctx.registry.files_lock(&name);
    let _held = files.lock().await;
    let mut rec = match record::read_own(&dir, &name) {
        Ok(r) if r.pid == c.hello.pid => r,
        Ok(_) => {
            c.ctx.refusals.log(&c.peer, &format!("resume of session {name} from another process"));
            return;
        }
        Err(e) => {
            c.ctx.refusals.log(&c.peer, &format!("resume of an unknown session: {e}"));
            return;
        }
    };
    if record::content_of(&rec) != c.hello.content {
        c.ctx.refusals.log(&c.peer, &format!("resume of session {name} with other content than it began with"));
        return;
    }
    let Some(path) = record::data_path(&dir, &rec) else {
        c.ctx.refusals.log(&c.peer, &format!("resume of session {name}: its record names no file of its own"));
        return;
    };
    let (file, len) = match files::open_existing(&path, Access::Append, Some(files::euid())) {
        Ok(f) => {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            (Some(f), len)
        }
        Err(OpenError::Missing) => (None, 0),
        Err(e) => {
            crate::say!("clrprof collect: resume of session {name} refused: {e}");
            return;
        }
    };
    // Why the stream broke, as far as this side knows (its own restart
    // says only that it stopped).
    let cause = match (&rec.spool_from, &rec.reason) {
        (Some(_), _) => "a catch-up from the spool stopped too".to_string(),
        (None, Some(r)) if !r.starts_with(record::STOPPED_WHILE_LIVE) => r.clone(),
        _ => "the collector stopped".to_string(),
    };
    let broke = format!("the stream broke at byte {from} ({cause})");
    let mut file = file;
    if c.hello.catch_up && len >= from {
        match file.take().map(|f| f.set_len(from).map(|_| f)) {
            Some(Ok(f)) => {
                rec.spool = Some(spool);
                rec.spool_from = Some(from);
                catch_up(c, &name, f, rec, from, &broke).await;
                return;
            }
            Some(Err(e)) => crate::say!("clrprof collect: cannot cut {} back to {from} bytes: {e}", path.display()),
            None => crate::say!("clrprof collect: cannot catch session {name} up: {} is missing", path.display()),
        }
    }
    let mut reason = format!("{broke}; the log goes on from byte {from} in the agent's spool file");
    if len >= from {
        if let Some(Err(e)) = file.as_ref().map(|f| f.set_len(from)) {
            crate::say!("clrprof collect: cannot cut {} back to {from} bytes: {e}", path.display());
        }
        rec.bytes = from;
    } else {
        rec.bytes = len;
        reason.push_str(&format!("; LOST: only {len} bytes were stored, {} bytes are missing", from - len));
    }
    rec.state = SessionState::Cut;
    rec.reason = Some(reason);
    rec.spool = Some(spool);
    rec.spool_from = Some(from);
    if rec.end.is_none() {
        rec.end = Some(record::now());
    }
    if let Err(e) = record::write(&dir, &rec) {
        crate::say!("clrprof collect: {e}");
        return;
    }
    crate::say!("clrprof collect: session {name}: the agent goes on in its spool {} from byte {from}", rec.spool.as_deref().unwrap_or(""));
    let _ = c.accept(&name).await;
}

/// An agent that could not reach the collector at start.
pub(crate) async fn spooled(mut c: Handshaken) {
    let dir = c.ctx.opts.dir.clone();
    let Some(spool) = c.hello.spool.clone() else {
        c.ctx.refusals.log(&c.peer, "spooled without a spool path");
        return;
    };
    let (name, file) = match record::create_log(&dir, &c.hello.program, c.hello.pid, c.hello.content) {
        Ok(x) => x,
        Err(e) => {
            crate::say!("clrprof collect: {e}");
            return;
        }
    };
    if let Err(e) = key_file::create(&dir, &name, &c.session_key(&name)) {
        crate::say!("clrprof collect: {e}");
        return;
    }
    let mut rec = new_record(&c, &name);
    rec.spool = Some(spool);
    rec.spool_from = Some(0);
    if c.hello.catch_up {
        let broke = "the agent could not reach the collector at start";
        let files = c.ctx.registry.files_lock(&name);
        let _held = files.lock().await;
        catch_up(c, &name, file, rec, 0, broke).await;
        return;
    }
    rec.state = SessionState::Cut;
    rec.end = Some(record::now());
    rec.reason = Some("the agent could not reach the collector at start: its whole log is in its spool file".into());
    if let Err(e) = record::write(&dir, &rec) {
        crate::say!("clrprof collect: {e}");
        return;
    }
    crate::say!("clrprof collect: session {name}: spooled from the start in {}", rec.spool.as_deref().unwrap_or(""));
    let _ = c.accept(&name).await;
}
