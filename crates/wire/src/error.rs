//! The one error type of the protocol.

/// What was wrong with bytes a peer sent.
///
/// Messages name what was expected and never contain a token or a MAC.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    /// A line did not start with the expected word.
    #[error("expected a line starting with {expected:?}")]
    Expected {
        /// The word that should have started the line.
        expected: &'static str,
    },
    /// A hex field had the wrong length or a non-hex character.
    #[error("{field}: expected {digits} hex digits")]
    Hex {
        /// Which field.
        field: &'static str,
        /// How many digits it needs.
        digits: usize,
    },
    /// A field of a `HELLO` line was missing or malformed.
    #[error("hello field {field}: expected {expected}")]
    Field {
        /// Which field.
        field: &'static str,
        /// What it should hold.
        expected: &'static str,
    },
    /// The MAC of a `HELLO` or `OK` line did not match.
    #[error("the token proof does not match")]
    BadProof,
    /// A frame header named an unknown kind.
    #[error("unknown frame kind byte 0x{0:02x}")]
    FrameKind(u8),
    /// A frame was larger than the protocol allows.
    #[error("frame of {len} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge {
        /// The length in the header.
        len: u32,
        /// The largest allowed.
        limit: u32,
    },
    /// A command text was not one the agent knows.
    #[error("unknown command {0:?}: expected comment TEXT, dump, allocations on|off, calls on|off or flush")]
    Command(String),
    /// A line was too long or not UTF-8.
    #[error("{0}")]
    Line(&'static str),
}
