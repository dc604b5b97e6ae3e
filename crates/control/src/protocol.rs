//! The agent's control protocol: one JSON object per line each way, one
//! reply per request, on a Unix socket that only the process's user can
//! open.
//!
//! ```text
//! -> {"op":"dump","label":"after warm-up"}
//! <- {"ok":true,"dump":{"index":0,"log":"/tmp/hd/app.log","objects":2103,"roots":145,"bytes":186181,"millis":0}}
//! -> {"op":"dump","output":"/tmp/hd/snap.log"}
//! <- {"ok":true,"dump":{"index":0,"log":"/tmp/hd/snap.log","objects":2103,"roots":145,"bytes":186181,"millis":3}}
//! -> {"op":"comment","text":"phase 2"}
//! <- {"ok":true}
//! -> {"op":"allocations","on":false}
//! <- {"ok":true,"previous":true}
//! -> {"op":"calls","on":true}
//! <- {"ok":false,"error":"call logging was not enabled at start (CLRPROF_CALLS=1)"}
//! -> {"op":"flush"}     {"op":"status"}     {"op":"stop"}
//! ```
//!
//! `stop` ends the recording of an attached agent (`clrprof record -p`):
//! the log is flushed and closed and the agent goes quiet (it stays
//! loaded; a later `heap-dump` finds it through the same socket).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Longest request line the agent reads.
pub const MAX_LINE: usize = 64 << 10;

/// A request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Take a heap dump: into the agent's log, or with `output` into a log
    /// file of its own that loads alone. `label` becomes a `z` comment
    /// just before the dump.
    Dump {
        /// A comment written before the dump.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        /// A file of its own for the dump.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<PathBuf>,
    },
    /// Write a `z` comment into the log.
    Comment {
        /// The text (line breaks become spaces).
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DumpInfo {
    /// The dump's index in the file it went to (as `clrprof dumps` lists them).
    pub index: u32,
    /// The file it went to.
    pub log: PathBuf,
    /// `o` lines written.
    pub objects: u64,
    /// `e` lines written.
    pub roots: u64,
    /// Sum of the dumped objects' sizes.
    pub bytes: u64,
    /// From the request to the end of the GC, in milliseconds.
    pub millis: u64,
}

/// The agent's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The process.
    pub pid: u32,
    /// The agent's log, if it has one (an agent attached only for dumps
    /// has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// Loaded by attaching (not at start).
    pub attached: bool,
    /// Allocation logging is on.
    pub allocations: bool,
    /// Call logging is on.
    pub calls: bool,
    /// Heap dumps taken so far.
    pub dumps: u32,
    /// The agent's version.
    pub version: String,
}

/// A reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The request was done.
    pub ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For `dump`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump: Option<DumpInfo>,
    /// For `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For `allocations` and `calls`: the state before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

/// Parses one request line; the error says what was expected.
pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    serde_json::from_slice(line).map_err(|e| {
        format!(
            "bad request at column {}: {e} (expected one JSON object per line, e.g. {{\"op\":\"dump\",\"label\":\"x\"}})",
            e.column()
        )
    })
}

/// One line of JSON with its newline.
pub fn to_line<T: Serialize>(value: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec(value).unwrap_or_else(|e| format!("{{\"ok\":false,\"error\":\"{e}\"}}").into_bytes());
    v.push(b'\n');
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_say_why() {
        let reqs = [
            Request::Dump { label: Some("a b".into()), output: None },
            Request::Dump { label: None, output: Some("/tmp/x y.log".into()) },
            Request::Comment { text: "hi".into() },
            Request::Allocations { on: false },
            Request::Calls { on: true },
            Request::Flush,
            Request::Status,
            Request::Stop,
        ];
        for r in reqs {
            let line = to_line(&r);
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(parse_request(&line).unwrap(), r);
        }
        assert_eq!(parse_request(br#"{"op":"dump"}"#).unwrap(), Request::Dump { label: None, output: None });
        let e = parse_request(br#"{"op":"explode"}"#).unwrap_err();
        assert!(e.contains("unknown variant") && e.contains("column"), "{e}");
        let e = parse_request(b"dump now").unwrap_err();
        assert!(e.contains("expected one JSON object"), "{e}");
    }
}
