//! The start of a trace: the `Nettrace` magic, the FastSerialization
//! stream header and the Trace object (version 4).
//!
//! ```text
//! "Nettrace"  len=20 "!FastSerialization.1"
//! 05 05 01 <version:i32> <min-reader:i32> <len:i32>"Trace" 06    the Trace object's type
//!    <SyncTimeUTC: 8 x i16> <SyncTimeQPC:i64> <QPCFrequency:i64>
//!    <PointerSize:i32> <ProcessId:i32> <NumberOfProcessors:i32>
//!    <ExpectedCPUSamplingRate:i32>
//! 06                                                             end of the Trace object
//! ```

use super::cursor::Cursor;
use super::error::Error;
use super::ids::Timestamp;

/// The magic at byte 0 of every NetTrace file.
pub const MAGIC: &[u8; 8] = b"Nettrace";
const SERIALIZATION: &[u8] = b"!FastSerialization.1";

/// FastSerialization tags.
pub(crate) mod tag {
    pub(crate) const NULL_REFERENCE: u8 = 1;
    pub(crate) const BEGIN_PRIVATE_OBJECT: u8 = 5;
    pub(crate) const END_OBJECT: u8 = 6;
}

/// The Trace object: what applies to every event of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceHeader {
    /// The Trace object's version (4 for .NET Core 3.0 to .NET 9; the
    /// file format "V4" and "V5" share it).
    pub version: u32,
    /// Wall-clock time when the trace started: year, month, day of week,
    /// day, hour, minute, second, millisecond (UTC).
    pub sync_time_utc: [u16; 8],
    /// The timestamp (in ticks) taken at `sync_time_utc`.
    pub sync_time_qpc: Timestamp,
    /// Ticks per second.
    pub qpc_frequency: i64,
    /// 4 or 8: the size of pointers in payloads and of stack frames.
    pub pointer_size: u32,
    /// The traced process.
    pub process_id: u32,
    /// Processors of the machine.
    pub processors: u32,
    /// The sample profiler's expected rate (samples per second).
    pub expected_cpu_sampling_rate: u32,
    /// Where the first object after the Trace object starts.
    pub end_offset: u64,
}

impl TraceHeader {
    /// Milliseconds from the trace's start to `t` (TraceEvent's `MSec`).
    pub fn msec(&self, t: Timestamp) -> f64 {
        if self.qpc_frequency <= 0 {
            return 0.0;
        }
        (t.0 - self.sync_time_qpc.0) as f64 * 1000.0 / self.qpc_frequency as f64
    }
}

/// Whether `bytes` start like a NetTrace file (for recognising inputs by
/// their first bytes).
pub fn is_nettrace(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Reads a FastSerialization type: `05 01 version min-version name 06`,
/// after the object's own `05`. Returns (version, min version, name).
pub(crate) fn read_type<'a>(c: &mut Cursor<'a>) -> Result<(u32, u32, &'a [u8]), Error> {
    expect_tag(c, tag::BEGIN_PRIVATE_OBJECT, "the tag BeginPrivateObject (5) starting a type")?;
    expect_tag(c, tag::NULL_REFERENCE, "the tag NullReference (1), the type of a type")?;
    let version = c.u32("a type's version")?;
    let min = c.u32("a type's minimum reader version")?;
    let at = c.offset();
    let len = c.u32("the length of a type's name")?;
    if len > 64 {
        return Err(Error::invalid(at, "a type name of at most 64 bytes", u64::from(len)));
    }
    let name = c.bytes(len as usize, "a type's name")?;
    expect_tag(c, tag::END_OBJECT, "the tag EndObject (6) ending a type")?;
    Ok((version, min, name))
}

pub(crate) fn expect_tag(c: &mut Cursor<'_>, t: u8, expected: &'static str) -> Result<(), Error> {
    let at = c.offset();
    let b = c.u8(expected)?;
    if b != t {
        return Err(Error::invalid(at, expected, u64::from(b)));
    }
    Ok(())
}

/// Reads the magic, the stream header and the Trace object.
pub fn read_header(bytes: &[u8]) -> Result<TraceHeader, Error> {
    let mut c = Cursor::new(bytes, 0);
    let magic = c.bytes(8, "the magic \"Nettrace\"")?;
    if magic != MAGIC {
        return Err(Error::invalid(0, "the magic \"Nettrace\"", u64::from(magic[0])));
    }
    let at = c.offset();
    let len = c.u32("the length of \"!FastSerialization.1\"")?;
    if len == 0 {
        // The block format (V6) puts a reserved 0 and its version here.
        let major = c.u32("the format's major version")?;
        return Err(Error::unsupported(at, "NetTrace block format version", u64::from(major)));
    }
    if len as usize != SERIALIZATION.len() {
        return Err(Error::invalid(at, "20, the length of \"!FastSerialization.1\"", u64::from(len)));
    }
    let at = c.offset();
    if c.bytes(SERIALIZATION.len(), "\"!FastSerialization.1\"")? != SERIALIZATION {
        return Err(Error::invalid(at, "\"!FastSerialization.1\"", 0));
    }
    expect_tag(&mut c, tag::BEGIN_PRIVATE_OBJECT, "the tag BeginPrivateObject (5) starting the Trace object")?;
    let at = c.offset();
    let (version, min, name) = read_type(&mut c)?;
    if name != b"Trace" {
        return Err(Error::invalid(at, "the type \"Trace\"", name.len() as u64));
    }
    if min > 4 || version < 4 {
        return Err(Error::unsupported(at, "Trace object version", u64::from(version)));
    }
    let mut sync_time_utc = [0u16; 8];
    for v in &mut sync_time_utc {
        *v = c.u16("the trace's start time")?;
    }
    let sync_time_qpc = Timestamp(c.u64("the trace's start timestamp")? as i64);
    let qpc_frequency = c.u64("the timestamp frequency")? as i64;
    let at = c.offset();
    let pointer_size = c.u32("the pointer size")?;
    if pointer_size != 4 && pointer_size != 8 {
        return Err(Error::invalid(at, "a pointer size of 4 or 8", u64::from(pointer_size)));
    }
    let process_id = c.u32("the process id")?;
    let processors = c.u32("the number of processors")?;
    let expected_cpu_sampling_rate = c.u32("the CPU sampling rate")?;
    expect_tag(&mut c, tag::END_OBJECT, "the tag EndObject (6) ending the Trace object")?;
    Ok(TraceHeader {
        version,
        sync_time_utc,
        sync_time_qpc,
        qpc_frequency,
        pointer_size,
        process_id,
        processors,
        expected_cpu_sampling_rate,
        end_offset: c.offset(),
    })
}
