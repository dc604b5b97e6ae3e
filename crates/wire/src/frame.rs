//! Frames after the handshake: a 5-byte header, then the payload.
//!
//! ```text
//! +------+----------------+-----------------+
//! | kind | length (u32 BE)| payload ...     |
//! +------+----------------+-----------------+
//! ```
//!
//! | kind | from | payload |
//! |---|---|---|
//! | `D` | agent | log bytes (the agent sends whole lines) |
//! | `E` | agent | empty: the log is complete, the stream ends cleanly |
//! | `R` | agent | `<seq> ok` or `<seq> error <text>`: a command's result |
//! | `A` | collector | u64 BE: bytes of the log stored so far |
//! | `C` | collector | `<seq> <command text>` |

use crate::WireError;

/// The largest payload either side accepts.
pub const MAX_FRAME: u32 = 16 << 20;
/// The size of a header.
pub const HEADER: usize = 5;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// Log bytes.
    Data,
    /// The end of a complete log.
    End,
    /// A command's result.
    Reply,
    /// Bytes stored so far.
    Ack,
    /// A command.
    Command,
}

impl FrameKind {
    fn byte(self) -> u8 {
        match self {
            FrameKind::Data => b'D',
            FrameKind::End => b'E',
            FrameKind::Reply => b'R',
            FrameKind::Ack => b'A',
            FrameKind::Command => b'C',
        }
    }
}

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// The kind.
    pub kind: FrameKind,
    /// The payload's length.
    pub len: u32,
}

impl FrameHeader {
    /// The header's bytes.
    pub fn encode(kind: FrameKind, len: u32) -> [u8; HEADER] {
        let l = len.to_be_bytes();
        [kind.byte(), l[0], l[1], l[2], l[3]]
    }

    /// Parses a header, refusing unknown kinds and payloads over
    /// [`MAX_FRAME`].
    pub fn parse(bytes: [u8; HEADER]) -> Result<FrameHeader, WireError> {
        let kind = match bytes[0] {
            b'D' => FrameKind::Data,
            b'E' => FrameKind::End,
            b'R' => FrameKind::Reply,
            b'A' => FrameKind::Ack,
            b'C' => FrameKind::Command,
            k => return Err(WireError::FrameKind(k)),
        };
        let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        if len > MAX_FRAME {
            return Err(WireError::FrameTooLarge { len, limit: MAX_FRAME });
        }
        let fixed = match kind {
            FrameKind::End => Some(0),
            FrameKind::Ack => Some(8),
            _ => None,
        };
        if fixed.is_some_and(|f| f != len) {
            return Err(WireError::Line("an E frame is empty and an A frame holds 8 bytes"));
        }
        Ok(FrameHeader { kind, len })
    }
}

/// A whole small frame (acks, commands, replies, end) as bytes.
pub fn small_frame(kind: FrameKind, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + payload.len());
    v.extend_from_slice(&FrameHeader::encode(kind, payload.len() as u32));
    v.extend_from_slice(payload);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        for k in [FrameKind::Data, FrameKind::Reply, FrameKind::Command] {
            let h = FrameHeader::encode(k, 1234);
            assert_eq!(FrameHeader::parse(h).unwrap(), FrameHeader { kind: k, len: 1234 });
        }
        assert!(FrameHeader::parse(FrameHeader::encode(FrameKind::Ack, 8)).is_ok());
        assert!(FrameHeader::parse(FrameHeader::encode(FrameKind::Ack, 9)).is_err());
        assert!(FrameHeader::parse(FrameHeader::encode(FrameKind::End, 1)).is_err());
        assert!(FrameHeader::parse(FrameHeader::encode(FrameKind::Data, MAX_FRAME + 1)).is_err());
        assert_eq!(FrameHeader::parse(*b"GET /"), Err(WireError::FrameKind(b'G')));
    }
}
