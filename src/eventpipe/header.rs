//! The start of a trace: the `Nettrace` magic, then either the
//! FastSerialization stream header and the Trace object (version 4: the
//! "V4" and "V5" formats) or the V6 version words and TraceBlock.
//!
//! ```text
//! "Nettrace"  len=20 "!FastSerialization.1"
//! 05 05 01 <version:i32> <min-reader:i32> <len:i32>"Trace" 06    the Trace object's type
//!    <SyncTimeUTC: 8 x i16> <SyncTimeQPC:i64> <QPCFrequency:i64>
//!    <PointerSize:i32> <ProcessId:i32> <NumberOfProcessors:i32>
//!    <ExpectedCPUSamplingRate:i32>
//! 06                                                             end of the Trace object
//! ```
//!
//! V6 (a block format, no FastSerialization framing):
//!
//! ```text
//! "Nettrace" <Reserved=0:u32> <MajorVersion=6:u32> <MinorVersion:u32>
//! <BlockHeader: size:u24 | kind=1:u8 << 24>                       the TraceBlock
//!    <SyncTimeUTC: 8 x i16> <SyncTimeTicks:i64> <TickFrequency:i64> <PointerSize:i32>
//!    <KeyValueCount:i32> { <key:string> <value:string> } * KeyValueCount
//! ```
//! (`string`: a varuint32 byte count and UTF-8 bytes). The keys
//! "ProcessId", "HardwareThreadCount" and "ExpectedCPUSamplingRate" carry
//! what were fields of the Trace object before V6.

use super::cursor::{utf8_to_string, Cursor};
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
    /// file format "V4" and "V5" share it), or 6 for a V6 trace (the
    /// format's major version: V6 has no Trace object version).
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
    /// The traced process (V6: the "ProcessId" key, 0 when absent; a V6
    /// trace may hold several processes, see
    /// [`ThreadInfo::os_process_id`](super::ThreadInfo::os_process_id)).
    pub process_id: u32,
    /// Processors of the machine (V6: "HardwareThreadCount", 0 when absent).
    pub processors: u32,
    /// The sample profiler's expected rate (V6: "ExpectedCPUSamplingRate",
    /// 0 when absent).
    pub expected_cpu_sampling_rate: u32,
    /// Where the first object (block) after the Trace object starts.
    pub end_offset: u64,
}

/// The whole start of a trace: the [`TraceHeader`] and what V6 adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceInfo {
    /// What applies to every event.
    pub header: TraceHeader,
    /// The format's minor version (V6; 0 before).
    pub minor_version: u32,
    /// The TraceBlock's key-value pairs, in file order (V6; empty before).
    pub key_values: Vec<(String, String)>,
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

/// Reads the magic, the stream header and the Trace object (V4, V5) or
/// TraceBlock (V6).
pub fn read_header(bytes: &[u8]) -> Result<TraceHeader, Error> {
    read_trace_info(bytes).map(|t| t.header)
}

/// Reads the start of a trace, V6's key-value pairs included.
pub fn read_trace_info(bytes: &[u8]) -> Result<TraceInfo, Error> {
    let mut c = Cursor::new(bytes, 0);
    let magic = c.bytes(8, "the magic \"Nettrace\"")?;
    if magic != MAGIC {
        return Err(Error::invalid(0, "the magic \"Nettrace\"", u64::from(magic[0])));
    }
    let at = c.offset();
    let len = c.u32("the length of \"!FastSerialization.1\"")?;
    if len == 0 {
        // The block format (V6) puts a reserved 0 and its version here.
        let at = c.offset();
        let major = c.u32("the format's major version")?;
        if major < 6 {
            return Err(Error::invalid(at, "a major version of at least 6 after a reserved 0", u64::from(major)));
        }
        if major > 6 {
            return Err(Error::unsupported(at, "NetTrace block format version", u64::from(major)));
        }
        let minor_version = c.u32("the format's minor version")?;
        return read_trace_block(bytes, c.offset(), minor_version);
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
    let header = TraceHeader {
        version,
        sync_time_utc,
        sync_time_qpc,
        qpc_frequency,
        pointer_size,
        process_id,
        processors,
        expected_cpu_sampling_rate,
        end_offset: c.offset(),
    };
    Ok(TraceInfo { header, minor_version: 0, key_values: Vec::new() })
}

/// The V6 TraceBlock, whose block header is at `offset`.
fn read_trace_block(bytes: &[u8], offset: u64, minor_version: u32) -> Result<TraceInfo, Error> {
    let block = match super::block::read_block_v6(bytes, offset)? {
        Some(b) if b.kind == super::BlockKind::Trace => b,
        Some(b) => return Err(Error::invalid(offset, "the TraceBlock (kind 1) first", b.raw_kind.into())),
        None => return Err(Error::invalid(offset, "the TraceBlock (kind 1) first", 0)),
    };
    let mut c = Cursor::new(block.body, block.body_offset);
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
    let at = c.offset();
    let n = c.u32("the number of key-value pairs")? as usize;
    // Each pair takes at least two bytes.
    if n > c.remaining() / 2 {
        return Err(Error::invalid(at, "a key-value count that fits the TraceBlock", n as u64));
    }
    let mut key_values = Vec::with_capacity(n);
    for _ in 0..n {
        let key = utf8_to_string(c.utf8("a key of the TraceBlock")?);
        let value = utf8_to_string(c.utf8("a value of the TraceBlock")?);
        key_values.push((key, value));
    }
    let number = |name: &str| key_values.iter().rev().find(|(k, _)| k == name).and_then(|(_, v)| v.trim().parse::<u32>().ok()).unwrap_or(0);
    let header = TraceHeader {
        version: 6,
        sync_time_utc,
        sync_time_qpc,
        qpc_frequency,
        pointer_size,
        process_id: number("ProcessId"),
        processors: number("HardwareThreadCount"),
        expected_cpu_sampling_rate: number("ExpectedCPUSamplingRate"),
        end_offset: block.end_offset,
    };
    Ok(TraceInfo { header, minor_version, key_values })
}
