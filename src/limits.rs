//! The memory rule: what reading one input may cost, in one place.
//!
//! A profile comes from somewhere else (a colleague, a collector's token
//! holder, a file planted in a shared folder), and a few bytes can *claim*
//! gigabytes: an object of 2 GB, a stack that copies 200,000 frames of
//! another, a compressed stream that expands a thousand times. Every
//! reader and table of the library therefore keeps to one rule:
//!
//! > **Peak memory while loading an input is at most
//! > [`MEMORY_BASE`] + [`MEMORY_PER_INPUT_BYTE`] x D**, where D is the
//! > input's size after decompression, and decompression stops past
//! > [`MAX_DECOMPRESSION_RATIO`] (with a floor of
//! > [`DECOMPRESSION_FLOOR`]) or [`MAX_DECOMPRESSED_BYTES`].
//!
//! [`memory_allowance`] computes the bound. An input that would need more
//! is refused with an error naming the record (line and byte offset) or,
//! for decompression, the bytes read so far; nothing is cut silently.
//!
//! The parts of a model that can grow faster than the records that make
//! them each get a share of the allowance:
//!
//! | what grows | why | cap |
//! |---|---|---|
//! | the address history (the sample table and its grain index) | one entry per 1 KB grain an object covers | [`history_bytes`] |
//! | stack frames copied from a reference stack whose kind disagrees with the `n` record's flag | the prefix tree cannot share such a copy | [`copied_frames`] |
//! | stack depth | every frame of a stack is a node; queries walk stacks | [`MAX_STACK_DEPTH`] |
//!
//! Everything else a model holds is made by records one at a time, at
//! most a few dozen bytes per record; the constants were chosen from the
//! peak resident memory of generated logs (`clrprof gen --preset tiny,
//! small, medium`, with and without `--calls`, plain and gzipped), which
//! stay below a tenth of the allowance. The guide's Security chapter
//! ("The memory rule") gives the figures and the commands.

/// Memory any input may take, whatever its size (bytes): the fixed part of
/// the memory rule.
pub const MEMORY_BASE: u64 = 256 << 20;

/// Memory per byte of input after decompression: the proportional part of
/// the memory rule.
pub const MEMORY_PER_INPUT_BYTE: u64 = 16;

/// The memory rule's bound for an input of `input_bytes` bytes (after
/// decompression): [`MEMORY_BASE`] + [`MEMORY_PER_INPUT_BYTE`] x
/// `input_bytes`.
///
/// ```
/// use clrprof::limits::memory_allowance;
/// assert_eq!(memory_allowance(0), 256 << 20);
/// assert_eq!(memory_allowance(1 << 30), (256 << 20) + (16 << 30));
/// ```
pub const fn memory_allowance(input_bytes: u64) -> u64 {
    MEMORY_BASE.saturating_add(MEMORY_PER_INPUT_BYTE.saturating_mul(input_bytes))
}

/// What the address history (the sample table's packed entries and its
/// grain index, while the log loads) may take: half of the allowance.
pub const fn history_bytes(input_bytes: u64) -> u64 {
    memory_allowance(input_bytes) / 2
}

/// Bytes one prefix-tree node of the stack table takes while a log loads
/// (parent, frame, depth, largest frame below and a jump pointer).
pub const STACK_NODE_BYTES: u64 = 20;

/// How many frames `n` records may copy from reference stacks of the other
/// kind (an allocation stack copied as frames, or frames copied from an
/// offset): a quarter of the allowance, in prefix-tree nodes. Copies from a
/// reference of the same kind share the reference's nodes and cost nothing.
pub const fn copied_frames(input_bytes: u64) -> u64 {
    memory_allowance(input_bytes) / 4 / STACK_NODE_BYTES
}

/// The deepest stack a log may define (frames). .NET threads overflow
/// their stacks long before (a 1 MB thread stack holds some 10,000 to
/// 100,000 frames).
pub const MAX_STACK_DEPTH: u32 = 1 << 20;

/// Largest expansion of a compressed log (decompressed bytes per
/// compressed byte) read by default. Generated logs reach 4.8-6.2x with
/// `gzip -9` and 6.0-8.6x with `zstd -19`, the reference corpus' largest
/// log 16x (see the guide); gzip itself cannot exceed about 1,032x, zstd's
/// run-length blocks 32,768x.
pub const MAX_DECOMPRESSION_RATIO: u64 = 250;

/// Decompressed bytes always allowed, whatever the ratio (a small
/// compressed file of a very regular log).
pub const DECOMPRESSION_FLOOR: u64 = 64 << 20;

/// Largest decompressed log read by default (bytes): a decompressed log is
/// held in memory.
pub const MAX_DECOMPRESSED_BYTES: u64 = 32 << 30;

/// Limits on decompressing one log, with the defaults above; a caller
/// that trusts its input may raise them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecompressLimits {
    /// Most decompressed bytes per compressed byte (past
    /// [`DecompressLimits::floor`]).
    pub max_ratio: u64,
    /// Decompressed bytes allowed whatever the ratio.
    pub floor: u64,
    /// Most decompressed bytes in all.
    pub max_bytes: u64,
}

impl Default for DecompressLimits {
    fn default() -> Self {
        DecompressLimits { max_ratio: MAX_DECOMPRESSION_RATIO, floor: DECOMPRESSION_FLOOR, max_bytes: MAX_DECOMPRESSED_BYTES }
    }
}

impl DecompressLimits {
    /// No limit at all (trusted input only).
    pub const UNLIMITED: DecompressLimits = DecompressLimits { max_ratio: u64::MAX, floor: u64::MAX, max_bytes: u64::MAX };

    /// Decompressed bytes allowed after `compressed` bytes of input.
    pub fn allowed(&self, compressed: u64) -> u64 {
        self.max_ratio.saturating_mul(compressed).max(self.floor).min(self.max_bytes)
    }
}
