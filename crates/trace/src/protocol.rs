//! The diagnostics IPC's EventPipe and process commands
//! (`dotnet/diagnostics`, `documentation/design-docs/ipc-protocol.md`).
//!
//! ```text
//! header          : "DOTNET_IPC_V1\0" (14) | size u16 (whole message) | command set u8 | command id u8 | reserved u16
//! CollectTracing  : set 0x02 id 0x02 | buffer MB u32 | format u32 (1 = NetTrace) | providers
//! CollectTracing2 : set 0x02 id 0x03 | buffer MB u32 | format u32 | rundown u8 | providers      (.NET 5+)
//! providers       : count u32, each: keywords u64 | level u32 | name string | filter string
//! string          : UTF-16 units u32 (with the NUL; 0 for none) | UTF-16LE with NUL
//! StopTracing     : set 0x02 id 0x01 | session id u64
//! ResumeRuntime   : set 0x04 id 0x01                                                            (.NET 5+)
//! reply           : header{set 0xFF, id 0x00 OK | 0xFF error} | OK: session id u64 (tracing) | error: HRESULT u32
//! advertise       : "ADVR_V1\0" (8) | cookie (16) | pid u64 | reserved u16   (a runtime connecting to us)
//! ```
//!
//! All numbers little-endian.

use clrprof_control::diagnostics::message;
pub use clrprof_control::diagnostics::{HEADER, MAGIC};
/// The reverse-connection greeting's magic.
pub const ADVERTISE_MAGIC: &[u8; 8] = b"ADVR_V1\0";
/// The greeting's length.
pub const ADVERTISE_LEN: usize = 34;

const SET_EVENTPIPE: u8 = 0x02;
const SET_PROCESS: u8 = 0x04;
const SET_SERVER: u8 = 0xFF;
const ID_STOP: u8 = 0x01;
const ID_COLLECT: u8 = 0x02;
const ID_COLLECT2: u8 = 0x03;
const ID_RESUME: u8 = 0x01;
const ID_OK: u8 = 0x00;
const ID_ERROR: u8 = 0xFF;
/// The NetTrace format.
const FORMAT_NETTRACE: u32 = 1;

/// An EventPipe provider and what is asked of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    /// Its name (`Microsoft-Windows-DotNETRuntime`).
    pub name: String,
    /// Keywords.
    pub keywords: u64,
    /// Level: 4 Informational, 5 Verbose.
    pub level: u32,
    /// Arguments (`key=value;...`), if any.
    pub filter: Option<String>,
}

/// Which `CollectTracing` a runtime takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collect {
    /// `CollectTracing` (.NET Core 3.x): rundown comes from the rundown
    /// provider being in the list.
    V1,
    /// `CollectTracing2` (.NET 5+): rundown asked for with a flag.
    V2 {
        /// Ask for the rundown at the session's end.
        rundown: bool,
    },
}

fn string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.extend_from_slice(&0u32.to_le_bytes()),
        Some(s) => {
            let units: Vec<u16> = s.encode_utf16().chain(std::iter::once(0)).collect();
            out.extend_from_slice(&(units.len() as u32).to_le_bytes());
            for u in units {
                out.extend_from_slice(&u.to_le_bytes());
            }
        }
    }
}

/// Encodes a `CollectTracing` or `CollectTracing2` request.
pub fn collect_request(collect: Collect, buffer_mb: u32, providers: &[Provider]) -> Result<Vec<u8>, String> {
    let mut p = Vec::new();
    p.extend_from_slice(&buffer_mb.to_le_bytes());
    p.extend_from_slice(&FORMAT_NETTRACE.to_le_bytes());
    let id = match collect {
        Collect::V1 => ID_COLLECT,
        Collect::V2 { rundown } => {
            p.push(u8::from(rundown));
            ID_COLLECT2
        }
    };
    p.extend_from_slice(&(providers.len() as u32).to_le_bytes());
    for pr in providers {
        p.extend_from_slice(&pr.keywords.to_le_bytes());
        p.extend_from_slice(&pr.level.to_le_bytes());
        string(&mut p, Some(&pr.name));
        string(&mut p, pr.filter.as_deref());
    }
    message(SET_EVENTPIPE, id, &p)
}

/// Encodes a `StopTracing` request.
pub fn stop_request(session: u64) -> Vec<u8> {
    // 28 bytes: always within the size limit.
    message(SET_EVENTPIPE, ID_STOP, &session.to_le_bytes()).unwrap_or_default()
}

/// Encodes a `ResumeRuntime` request.
pub fn resume_request() -> Vec<u8> {
    message(SET_PROCESS, ID_RESUME, &[]).unwrap_or_default()
}

/// A reply: `Ok(payload)` for OK, `Err(hresult)` for an error message;
/// the outer error says what was wrong with the bytes.
pub fn parse_reply(bytes: &[u8]) -> Result<Result<Vec<u8>, u32>, String> {
    if bytes.len() < HEADER {
        return Err(format!("{} bytes, expected a 20-byte header", bytes.len()));
    }
    if &bytes[..14] != MAGIC {
        return Err("a reply that does not start with DOTNET_IPC_V1".into());
    }
    let size = u16::from_le_bytes([bytes[14], bytes[15]]) as usize;
    if size < HEADER || size > bytes.len() {
        return Err(format!("a reply of size {size} at byte 14 in {} bytes", bytes.len()));
    }
    let payload = bytes[HEADER..size].to_vec();
    match (bytes[16], bytes[17]) {
        (SET_SERVER, ID_OK) => Ok(Ok(payload)),
        (SET_SERVER, ID_ERROR) => {
            let hr = payload.get(..4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            Ok(Err(hr))
        }
        (set, id) => Err(format!("command 0x{set:02X}{id:02X} at byte 16, expected 0xFF00 (OK) or 0xFFFF (error)")),
    }
}

/// The size a reply's header announces (once 16 bytes are in).
pub fn reply_size(head: &[u8]) -> Option<usize> {
    (head.len() >= 16).then(|| u16::from_le_bytes([head[14], head[15]]) as usize)
}

/// What an HRESULT of the diagnostics server means.
pub fn describe(hr: u32) -> &'static str {
    match hr {
        0x8013_1384 => "the runtime could not read the request",
        0x8013_1385 => "the runtime does not know this command (too old for it)",
        0x8013_1386 => "the runtime's diagnostics server is busy or the session could not be made",
        0x8013_138A => "the request is not supported by this runtime",
        0x8007_0057 => "an argument was refused (a provider, a buffer size)",
        0x8007_000E => "the runtime ran out of memory for the session's buffers",
        _ => "the command failed",
    }
}

/// A reverse connection's greeting: the runtime's process id and its
/// instance cookie (16 bytes drawn once per runtime, the same on each of
/// its reconnections).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Advertise {
    /// The process id the runtime says it is.
    pub pid: u64,
    /// The runtime instance's cookie.
    pub cookie: [u8; 16],
}

/// Reads a reverse connection's greeting.
pub fn parse_advertise(bytes: &[u8]) -> Result<Advertise, String> {
    if bytes.len() < ADVERTISE_LEN || &bytes[..8] != ADVERTISE_MAGIC {
        return Err("a connection that did not start with the runtime's ADVR_V1 greeting".into());
    }
    let mut cookie = [0u8; 16];
    cookie.copy_from_slice(&bytes[8..24]);
    let mut pid = [0u8; 8];
    pid.copy_from_slice(&bytes[24..32]);
    Ok(Advertise { pid: u64::from_le_bytes(pid), cookie })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(m: &[u8], k: usize) -> u32 {
        u32::from_le_bytes(m[k..k + 4].try_into().unwrap())
    }

    #[test]
    fn collect_tracing2_layout() {
        let p = Provider { name: "AB".into(), keywords: 0x1_0000_0001, level: 5, filter: None };
        let m = collect_request(Collect::V2 { rundown: true }, 256, &[p]).unwrap();
        assert_eq!(&m[..14], MAGIC);
        assert_eq!(u16::from_le_bytes([m[14], m[15]]) as usize, m.len());
        assert_eq!((m[16], m[17]), (2, 3));
        assert_eq!(u32_at(&m, 20), 256);
        assert_eq!(u32_at(&m, 24), 1);
        assert_eq!(m[28], 1);
        assert_eq!(u32_at(&m, 29), 1);
        assert_eq!(u64::from_le_bytes(m[33..41].try_into().unwrap()), 0x1_0000_0001);
        assert_eq!(u32_at(&m, 41), 5);
        assert_eq!(u32_at(&m, 45), 3, "two characters and the NUL");
        assert_eq!(&m[49..55], &[b'A', 0, b'B', 0, 0, 0]);
        assert_eq!(u32_at(&m, 55), 0, "no filter");
        assert_eq!(m.len(), 59);
        let v1 = collect_request(Collect::V1, 256, &[]).unwrap();
        assert_eq!((v1[17], v1.len()), (2, 32));
    }

    #[test]
    fn replies() {
        let mut ok = message(0xFF, 0, &7u64.to_le_bytes()).unwrap();
        assert_eq!(parse_reply(&ok).unwrap().unwrap(), 7u64.to_le_bytes());
        let err = message(0xFF, 0xFF, &0x8013_1384u32.to_le_bytes()).unwrap();
        assert_eq!(parse_reply(&err).unwrap(), Err(0x8013_1384));
        ok[16] = 2;
        assert!(parse_reply(&ok).is_err());
        assert!(parse_reply(b"DOTNET").is_err());
        assert_eq!(stop_request(9).len(), 28);
        assert_eq!(resume_request(), message(4, 1, &[]).unwrap());
        let mut adv = ADVERTISE_MAGIC.to_vec();
        adv.extend_from_slice(&[7; 16]);
        adv.extend_from_slice(&1234u64.to_le_bytes());
        adv.extend_from_slice(&[0, 0]);
        assert_eq!(parse_advertise(&adv), Ok(Advertise { pid: 1234, cookie: [7; 16] }));
        assert!(parse_advertise(&adv[..20]).is_err());
    }
}
