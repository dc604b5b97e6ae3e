//! Clock ticks (`i`) and user comments (`z`).

use crate::format::fields::Fields;
use crate::format::scan;
use crate::format::text;

/// `i ms`: milliseconds since the profiler started (unsigned 32-bit,
/// wrapping after 49.7 days).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// The value modulo 2^32.
    pub ms: u32,
}

impl Tick {
    pub(crate) fn parse(f: &mut Fields<'_>) -> Self {
        Tick { ms: f.int("a tick count in milliseconds") as u32 }
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        text::Line::new().dec(self.ms as i64).text(b"i ").finish(out);
    }
}

/// `z text`: a comment the profiled program or the user inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comment<'a> {
    /// The text, Latin-1, up to the first control byte.
    pub text: &'a [u8],
}

impl<'a> Comment<'a> {
    pub(crate) fn parse(f: &mut Fields<'a>) -> Self {
        f.blanks();
        Comment { text: f.text() }
    }

    /// The text as a string.
    pub fn decoded(&self) -> String {
        scan::decode_latin1(self.text)
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"z ");
        out.extend_from_slice(self.text);
        out.push(b'\n');
    }
}
