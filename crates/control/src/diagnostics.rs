//! The runtime's diagnostics IPC (`dotnet/diagnostics`,
//! `documentation/design-docs/ipc-protocol.md`): the `AttachProfiler`
//! command, which makes a running .NET Core 3.0+ process load a profiler.
//!
//! ```text
//! header  : magic "DOTNET_IPC_V1\0" (14) | size u16 | command set u8 | command id u8 | reserved u16
//! request : header{set 0x03, id 0x01} | timeout ms u32 | CLSID (16) | path: u32 count + UTF-16 with NUL | data: u32 len + bytes
//! reply   : header{set 0xFF, id 0x00 OK | 0xFF error} | HRESULT i32
//! ```
//!
//! All numbers little-endian. The runtime keeps the connection open while
//! it loads the profiler and calls its `InitializeForAttach`.

use crate::{paths, trust, Error};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

/// The magic every message of the diagnostics IPC starts with.
pub const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
/// Bytes of a message's header.
pub const HEADER: usize = 20;
const SET_PROFILER: u8 = 0x03;
const ID_ATTACH: u8 = 0x01;
const SET_SERVER: u8 = 0xFF;
const ID_OK: u8 = 0x00;
const ID_ERROR: u8 = 0xFF;

/// A COM class id in its in-memory layout (`data1` to `data3`
/// little-endian, then 8 bytes).
pub type Clsid = (u32, u16, u16, [u8; 8]);

/// Encodes an `AttachProfiler` request.
pub fn attach_request(timeout_ms: u32, clsid: Clsid, profiler: &Path, client_data: &[u8]) -> Result<Vec<u8>, String> {
    let mut p = Vec::new();
    p.extend_from_slice(&timeout_ms.to_le_bytes());
    p.extend_from_slice(&clsid.0.to_le_bytes());
    p.extend_from_slice(&clsid.1.to_le_bytes());
    p.extend_from_slice(&clsid.2.to_le_bytes());
    p.extend_from_slice(&clsid.3);
    let path: Vec<u16> = profiler.to_string_lossy().encode_utf16().chain(std::iter::once(0)).collect();
    p.extend_from_slice(&(path.len() as u32).to_le_bytes());
    for u in path {
        p.extend_from_slice(&u.to_le_bytes());
    }
    p.extend_from_slice(&(client_data.len() as u32).to_le_bytes());
    p.extend_from_slice(client_data);
    message(SET_PROFILER, ID_ATTACH, &p).map_err(|e| format!("the AttachProfiler {e}"))
}

/// A message of the diagnostics IPC: the header (magic, whole size,
/// command set and id) and `payload`; an error when it would pass the
/// protocol's 64 KB.
pub fn message(set: u8, id: u8, payload: &[u8]) -> Result<Vec<u8>, String> {
    let size = HEADER + payload.len();
    let size = u16::try_from(size).map_err(|_| format!("request is {size} bytes; the protocol allows 65535"))?;
    let mut msg = Vec::with_capacity(size as usize);
    msg.extend_from_slice(MAGIC);
    msg.extend_from_slice(&size.to_le_bytes());
    msg.push(set);
    msg.push(id);
    msg.extend_from_slice(&0u16.to_le_bytes());
    msg.extend_from_slice(payload);
    Ok(msg)
}

/// Decodes the runtime's reply: `Ok(hresult)` for an OK or error message.
pub fn parse_reply(bytes: &[u8]) -> Result<i32, String> {
    if bytes.len() < HEADER + 4 {
        return Err(format!("{} bytes, expected a 20-byte header and a 4-byte HRESULT", bytes.len()));
    }
    if &bytes[..14] != MAGIC {
        return Err("the reply does not start with DOTNET_IPC_V1".into());
    }
    let (set, id) = (bytes[16], bytes[17]);
    if set != SET_SERVER || !(id == ID_OK || id == ID_ERROR) {
        return Err(format!("command 0x{set:02X}{id:02X} at byte 16, expected 0xFF00 (OK) or 0xFFFF (error)"));
    }
    let hr = i32::from_le_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    Ok(hr)
}

/// What an `AttachProfiler` HRESULT means.
pub fn describe(hr: u32) -> &'static str {
    match hr {
        0x8013_1367 => "a profiler is already loaded in this process (not clrprof's agent, or one whose control socket is gone)",
        0x8013_136C => "the profiler library could not be loaded or initialized in time",
        0x8013_1384 => "the runtime could not read the request",
        0x8013_1385 => "the runtime does not know the AttachProfiler command (too old)",
        0x8013_1515 => "attaching is not supported by this runtime",
        0x8013_135B => "the runtime is not ready yet",
        0x8013_1371 => "the runtime is not initialized",
        0x8000_4005 => "the agent's InitializeForAttach failed (see the process's standard error)",
        0x8007_007E | 0x8007_0002 => "the runtime could not load the profiler library (file not found or not loadable)",
        _ => "attach failed",
    }
}

/// Asks process `pid`'s runtime to load the profiler `clsid` from
/// `profiler` with `client_data`, waiting up to `timeout`.
///
/// The socket must be one `pid`'s user made, and the peer that answers it
/// must be `pid` itself ([`crate::trust`]): `client_data` (which may hold
/// a collector's token) is sent to nobody else.
pub fn attach_profiler(pid: u32, clsid: Clsid, profiler: &Path, client_data: &[u8], timeout: Duration) -> Result<(), Error> {
    let owner = crate::process::find(pid)?.uid;
    let socket = paths::diagnostics_socket_for(pid, owner)?;
    let what = |w: &str| format!("{w} the diagnostics socket {}", socket.display());
    let mut s = match trust::connect(&socket, pid, owner) {
        Ok(s) => s,
        Err(trust::ConnectError::Refused(e)) => return Err(e),
        Err(trust::ConnectError::Absent(e)) => return Err(Error::io(what("cannot connect to"), &socket, e)),
    };
    let ms = timeout.as_millis().min(u32::MAX as u128) as u32;
    let msg = attach_request(ms, clsid, profiler, client_data).map_err(|w| Error::BadReply { peer: "clrprof".into(), what: w })?;
    s.set_read_timeout(Some(timeout + Duration::from_secs(5))).map_err(|e| Error::io(what("cannot use"), &socket, e))?;
    s.write_all(&msg).map_err(|e| Error::io(what("cannot write to"), &socket, e))?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 64];
    while reply.len() < HEADER + 4 {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(Error::Timeout(format!("the runtime of process {pid} did not answer AttachProfiler")));
            }
            Err(e) => return Err(Error::io(what("cannot read from"), &socket, e)),
        }
    }
    let hr = parse_reply(&reply).map_err(|w| Error::BadReply { peer: socket.display().to_string(), what: w })?;
    if hr < 0 {
        return Err(Error::AttachRefused { hresult: hr as u32, message: describe(hr as u32).into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout() {
        let clsid = (0xBC62_0A3A, 0xB286, 0x4C9C, [0x81, 0x38, 0x25, 0x6E, 0xE4, 0x4F, 0x80, 0x2D]);
        let m = attach_request(5000, clsid, Path::new("/a.so"), b"K=V\n").unwrap();
        assert_eq!(&m[..14], MAGIC);
        assert_eq!(u16::from_le_bytes([m[14], m[15]]) as usize, m.len());
        assert_eq!((m[16], m[17], m[18], m[19]), (3, 1, 0, 0));
        assert_eq!(u32::from_le_bytes(m[20..24].try_into().unwrap()), 5000);
        assert_eq!(&m[24..28], &[0x3A, 0x0A, 0x62, 0xBC]);
        assert_eq!(&m[28..32], &[0x86, 0xB2, 0x9C, 0x4C]);
        assert_eq!(&m[32..40], &clsid.3);
        // "/a.so" + NUL = 6 UTF-16 units.
        assert_eq!(u32::from_le_bytes(m[40..44].try_into().unwrap()), 6);
        assert_eq!(&m[44..46], &[b'/', 0]);
        assert_eq!(&m[54..56], &[0, 0]);
        assert_eq!(u32::from_le_bytes(m[56..60].try_into().unwrap()), 4);
        assert_eq!(&m[60..], b"K=V\n");
        assert!(attach_request(0, clsid, Path::new("/a"), &vec![0u8; 70_000]).unwrap_err().contains("65535"));
    }

    #[test]
    fn replies() {
        let mut ok = MAGIC.to_vec();
        ok.extend_from_slice(&24u16.to_le_bytes());
        ok.extend_from_slice(&[0xFF, 0x00, 0, 0]);
        ok.extend_from_slice(&0i32.to_le_bytes());
        assert_eq!(parse_reply(&ok), Ok(0));
        let mut err = ok.clone();
        err[17] = 0xFF;
        err[20..24].copy_from_slice(&0x8013_1367u32.to_le_bytes());
        assert_eq!(parse_reply(&err), Ok(0x8013_1367u32 as i32));
        assert!(parse_reply(&ok[..10]).unwrap_err().contains("expected a 20-byte header"));
        let mut bad = ok.clone();
        bad[0] = b'X';
        assert!(parse_reply(&bad).is_err());
        let mut cmd = ok;
        cmd[16] = 3;
        assert!(parse_reply(&cmd).unwrap_err().contains("byte 16"));
    }
}
