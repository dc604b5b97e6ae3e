//! The agent's control protocol: one request line, one reply line, on a
//! Unix socket that only the process's user can open.
//!
//! A line is a verb followed by `key=value` fields, all separated by tabs
//! (`→` below;
//! values never hold a tab or a line break: a client turns those into
//! spaces). Numbers are decimal, switches `0` or `1`.
//!
//! ```text
//! -> status
//! <- ok→pid=5440→log=/tmp/hd/app.log→attached=0→allocations=1→calls=0→dumps=0→version=0.1.0
//! -> dump→label=after warm-up
//! <- ok→index=0→log=/tmp/hd/app.log→objects=2104→roots=145→bytes=186241→millis=2
//! -> dump→output=/tmp/hd/snap.log
//! -> comment→text=phase 2
//! <- ok
//! -> allocations→on=0
//! <- ok→previous=1
//! -> calls→on=1
//! <- error→message=call logging was not enabled at start (...)
//! -> flush        stop
//! ```
//!
//! `stop` ends the recording of an attached agent (`clrprof record -p`):
//! the log is flushed and closed and the agent stays loaded, quiet; a
//! later `heap-dump` finds it through the same socket. The format is
//! hand-written on purpose: the agent links no serialization crate.

use std::path::PathBuf;

/// Longest request line the agent reads.
pub const MAX_LINE: usize = 64 << 10;

/// A request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Take a heap dump: into the agent's log, or with `output` into a log
    /// file of its own that loads alone. `label` becomes a `z` comment
    /// just before the dump.
    Dump {
        /// A comment written before the dump.
        label: Option<String>,
        /// A file of its own for the dump.
        output: Option<PathBuf>,
    },
    /// Write a `z` comment into the log.
    Comment {
        /// The text.
        text: String,
    },
    /// Switch allocation logging on or off.
    Allocations {
        /// On or off.
        on: bool,
    },
    /// Switch call logging on or off.
    Calls {
        /// On or off.
        on: bool,
    },
    /// Write everything buffered to the log file now.
    Flush,
    /// What the agent is doing.
    Status,
    /// Stop recording (attached agents): flush and close the log.
    Stop,
}

/// What a dump wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpInfo {
    /// The dump's index in the file it went to (as `clrprof dumps` lists them).
    pub index: u32,
    /// The file it went to.
    pub log: PathBuf,
    /// `o` lines written.
    pub objects: u64,
    /// `e` lines written that name an object (a null root is written too,
    /// but the log's readers drop it, as CLRProfiler does).
    pub roots: u64,
    /// Sum of the dumped objects' sizes.
    pub bytes: u64,
    /// From the request to the end of the GC, in milliseconds.
    pub millis: u64,
}

/// The agent's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The process.
    pub pid: u32,
    /// The agent's log, if it has one (an agent attached only for dumps
    /// has none).
    pub log: Option<PathBuf>,
    /// Loaded by attaching (not at start).
    pub attached: bool,
    /// Allocation logging is on.
    pub allocations: bool,
    /// Call logging is on.
    pub calls: bool,
    /// Heap dumps taken into the log so far.
    pub dumps: u32,
    /// The agent's version.
    pub version: String,
}

/// A reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// The request was done.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// For `dump`.
    pub dump: Option<DumpInfo>,
    /// For `status`.
    pub status: Option<Status>,
    /// For `allocations` and `calls`: the state before.
    pub previous: Option<bool>,
}

impl Reply {
    /// A plain success.
    pub fn ok() -> Reply {
        Reply { ok: true, ..Reply::default() }
    }

    /// A failure.
    pub fn error(message: impl Into<String>) -> Reply {
        Reply { ok: false, error: Some(message.into()), ..Reply::default() }
    }
}

/// A line being built: the verb, then `\tkey=value` fields.
struct Line(String);

impl Line {
    fn new(verb: &str) -> Line {
        Line(verb.to_string())
    }

    fn field(mut self, key: &str, value: &str) -> Line {
        self.0.push('\t');
        self.0.push_str(key);
        self.0.push('=');
        self.0.extend(value.chars().map(|c| if matches!(c, '\t' | '\n' | '\r') { ' ' } else { c }));
        self
    }

    fn opt(self, key: &str, value: Option<&str>) -> Line {
        match value {
            Some(v) => self.field(key, v),
            None => self,
        }
    }

    fn end(mut self) -> Vec<u8> {
        self.0.push('\n');
        self.0.into_bytes()
    }
}

fn switch(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

/// The line of a request, newline included.
pub fn request_line(r: &Request) -> Vec<u8> {
    match r {
        Request::Dump { label, output } => {
            let out = output.as_ref().map(|p| p.to_string_lossy().into_owned());
            Line::new("dump").opt("label", label.as_deref()).opt("output", out.as_deref()).end()
        }
        Request::Comment { text } => Line::new("comment").field("text", text).end(),
        Request::Allocations { on } => Line::new("allocations").field("on", switch(*on)).end(),
        Request::Calls { on } => Line::new("calls").field("on", switch(*on)).end(),
        Request::Flush => Line::new("flush").end(),
        Request::Status => Line::new("status").end(),
        Request::Stop => Line::new("stop").end(),
    }
}

/// The line of a reply, newline included.
pub fn reply_line(r: &Reply) -> Vec<u8> {
    if !r.ok {
        return Line::new("error").field("message", r.error.as_deref().unwrap_or("failed")).end();
    }
    let mut l = Line::new("ok");
    if let Some(d) = &r.dump {
        l = l
            .field("index", &d.index.to_string())
            .field("log", &d.log.to_string_lossy())
            .field("objects", &d.objects.to_string())
            .field("roots", &d.roots.to_string())
            .field("bytes", &d.bytes.to_string())
            .field("millis", &d.millis.to_string());
    }
    if let Some(s) = &r.status {
        let log = s.log.as_ref().map(|p| p.to_string_lossy().into_owned());
        l = l
            .field("pid", &s.pid.to_string())
            .opt("log", log.as_deref())
            .field("attached", switch(s.attached))
            .field("allocations", switch(s.allocations))
            .field("calls", switch(s.calls))
            .field("dumps", &s.dumps.to_string())
            .field("version", &s.version);
    }
    if let Some(p) = r.previous {
        l = l.field("previous", switch(p));
    }
    l.end()
}

/// A parsed line: the verb and its fields, in order.
struct Fields<'a> {
    verb: &'a str,
    fields: Vec<(&'a str, &'a str)>,
}

const EXAMPLE: &str = "(expected a verb and tab-separated key=value fields, e.g. \"dump<TAB>label=after warm-up\")";

fn split(line: &[u8]) -> Result<Fields<'_>, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8 at byte {} {EXAMPLE}", e.valid_up_to()))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    let mut parts = text.split('\t');
    let verb = parts.next().unwrap_or("");
    if verb.is_empty() {
        return Err(format!("empty line {EXAMPLE}"));
    }
    let mut fields = Vec::new();
    for (i, p) in parts.enumerate() {
        let (k, v) = p.split_once('=').ok_or_else(|| format!("field {} ({p:?}) has no '=' {EXAMPLE}", i + 1))?;
        if fields.iter().any(|(key, _)| *key == k) {
            return Err(format!("field {} repeats {k:?}", i + 1));
        }
        fields.push((k, v));
    }
    Ok(Fields { verb, fields })
}

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn only(&self, allowed: &[&str]) -> Result<(), String> {
        match self.fields.iter().find(|(k, _)| !allowed.contains(k)) {
            Some((k, _)) => Err(format!(
                "{} takes no field {k:?} (it takes: {})",
                self.verb,
                if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") }
            )),
            None => Ok(()),
        }
    }

    fn need(&self, key: &str) -> Result<&'a str, String> {
        self.get(key).ok_or_else(|| format!("{} needs a field {key}=...", self.verb))
    }

    fn switch(&self, key: &str) -> Result<bool, String> {
        match self.need(key)? {
            "1" => Ok(true),
            "0" => Ok(false),
            v => Err(format!("{key}={v}: expected 0 or 1")),
        }
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> Result<T, String> {
        let v = self.need(key)?;
        v.parse().map_err(|_| format!("{key}={v}: expected a decimal number"))
    }
}

/// Parses one request line; the error says what was expected.
pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    let f = split(line)?;
    let r = match f.verb {
        "dump" => {
            f.only(&["label", "output"])?;
            Request::Dump { label: f.get("label").map(str::to_string), output: f.get("output").map(PathBuf::from) }
        }
        "comment" => {
            f.only(&["text"])?;
            Request::Comment { text: f.need("text")?.to_string() }
        }
        "allocations" => {
            f.only(&["on"])?;
            Request::Allocations { on: f.switch("on")? }
        }
        "calls" => {
            f.only(&["on"])?;
            Request::Calls { on: f.switch("on")? }
        }
        "flush" | "status" | "stop" => {
            f.only(&[])?;
            match f.verb {
                "flush" => Request::Flush,
                "status" => Request::Status,
                _ => Request::Stop,
            }
        }
        v => return Err(format!("unknown request {v:?} (expected dump, comment, allocations, calls, flush, status or stop)")),
    };
    Ok(r)
}

/// Parses one reply line; the error says what was expected.
pub fn parse_reply(line: &[u8]) -> Result<Reply, String> {
    let f = split(line)?;
    match f.verb {
        "error" => Ok(Reply::error(f.get("message").unwrap_or("failed (no reason given)"))),
        "ok" => {
            // Both would write `log`: such a reply could not be written
            // back (found by fuzzing).
            if f.get("index").is_some() && f.get("pid").is_some() {
                return Err("a reply carries a dump (index=) or a status (pid=), not both".to_string());
            }
            let mut r = Reply::ok();
            if f.get("index").is_some() {
                r.dump = Some(DumpInfo {
                    index: f.number("index")?,
                    log: PathBuf::from(f.need("log")?),
                    objects: f.number("objects")?,
                    roots: f.number("roots")?,
                    bytes: f.number("bytes")?,
                    millis: f.number("millis")?,
                });
            }
            if f.get("pid").is_some() {
                r.status = Some(Status {
                    pid: f.number("pid")?,
                    log: f.get("log").map(PathBuf::from),
                    attached: f.switch("attached")?,
                    allocations: f.switch("allocations")?,
                    calls: f.switch("calls")?,
                    dumps: f.number("dumps")?,
                    version: f.need("version")?.to_string(),
                });
            }
            if f.get("previous").is_some() {
                r.previous = Some(f.switch("previous")?);
            }
            Ok(r)
        }
        v => Err(format!("a reply starts with ok or error, not {v:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_with_a_dump_and_a_status_is_refused() {
        let line = b"ok\tindex=1\tlog=/tmp/a.log\tobjects=1\troots=1\tbytes=1\tmillis=1\tpid=4\tattached=1\tallocations=1\tcalls=0\tdumps=1\tversion=1\n";
        let e = parse_reply(line).unwrap_err();
        assert!(e.contains("not both"), "{e}");
    }

    #[test]
    fn requests_round_trip_and_bad_ones_say_why() {
        let reqs = [
            Request::Dump { label: Some("a b=c".into()), output: None },
            Request::Dump { label: None, output: Some("/tmp/x y.log".into()) },
            Request::Dump { label: None, output: None },
            Request::Comment { text: "hi".into() },
            Request::Allocations { on: false },
            Request::Calls { on: true },
            Request::Flush,
            Request::Status,
            Request::Stop,
        ];
        for r in reqs {
            let line = request_line(&r);
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(parse_request(&line).unwrap(), r);
        }
        // Tabs and line breaks in values become spaces.
        let line = request_line(&Request::Comment { text: "a\tb\nc".into() });
        assert_eq!(line, b"comment\ttext=a b c\n");
        assert_eq!(parse_request(b"dump\r\n").unwrap(), Request::Dump { label: None, output: None });
        for (bad, why) in [
            (&b"explode"[..], "unknown request"),
            (b"dump now", "unknown request"),
            (b"dump\tnow", "has no '='"),
            (b"dump\tlabel=a\tlabel=b", "repeats"),
            (b"dump\tsize=3", "takes no field"),
            (b"allocations\ton=yes", "expected 0 or 1"),
            (b"comment", "needs a field text"),
            (b"", "empty line"),
            (b"dump\tlabel=\xff", "not UTF-8 at byte 11"),
        ] {
            let e = parse_request(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn replies_round_trip() {
        let replies = [
            Reply::ok(),
            Reply::error("no\tlog"),
            Reply { previous: Some(true), ..Reply::ok() },
            Reply { dump: Some(DumpInfo { index: 2, log: "/t/a b.log".into(), objects: 5, roots: 6, bytes: 7, millis: 8 }), ..Reply::ok() },
            Reply {
                status: Some(Status {
                    pid: 9,
                    log: None,
                    attached: true,
                    allocations: false,
                    calls: false,
                    dumps: 3,
                    version: "0.1.0".into(),
                }),
                ..Reply::ok()
            },
        ];
        for r in replies {
            let back = parse_reply(&reply_line(&r)).unwrap();
            if r.ok {
                assert_eq!(back, r);
            } else {
                assert_eq!(back.error.as_deref(), Some("no log"));
            }
        }
        assert!(parse_reply(b"ok\tindex=x\tlog=a\tobjects=1\troots=1\tbytes=1\tmillis=1")
            .unwrap_err()
            .contains("index=x: expected a decimal number"));
        assert!(parse_reply(b"maybe").unwrap_err().contains("ok or error"));
    }
}
