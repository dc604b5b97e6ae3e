//! Record statistics of a log: what `clrprof stats` reports.

use super::diagnostics::{Diagnostics, WarningKind};
use super::parallel::{parse_chunks, ChunkOptions};
use super::reader::FrequentVisitor;
use super::record::{Kind, Parsed, Record};
use super::reader::{DumpState, RecordReader};
use super::stats_ids::{IdBits, IdSet};

/// Counts of records, definitions and lines in a log.
#[derive(Clone, Debug, Default)]
pub struct LogStats {
    /// File size in bytes.
    pub bytes: u64,
    /// Number of lines (line ends, plus a last line without one).
    pub lines: u64,
    /// Records per kind, by [`Kind::index`].
    pub records: [u64; Kind::COUNT],
    /// Lines skipped because their first byte names no record kind.
    pub skipped_lines: u64,
    /// Distinct type ids defined (`t`).
    pub types: u64,
    /// Distinct function ids defined (`f`).
    pub functions: u64,
    /// Distinct module ids defined (`m`).
    pub modules: u64,
    /// Distinct stack ids defined (`n` and `s`).
    pub stacks: u64,
    /// The warnings.
    pub diagnostics: Diagnostics,
}

#[derive(Default)]
struct Part {
    records: [u64; Kind::COUNT],
    lines: u64,
    types: IdSet,
    functions: IdSet,
    modules: IdSet,
    stacks: IdSet,
    /// Stack ids of [`IdBits::takes`] used in this part (by allocations and
    /// `n` references): one store a use; the first use of an id that turns
    /// out undefined is found again by reading the part once more.
    used: IdBits,
    /// Ids of `used` defined in this part after a use in it.
    used_before_defined: Vec<i32>,
    /// First use in this part of each other stack id not defined earlier
    /// in it (negative or huge ids, from damaged logs).
    unresolved: Vec<(Kind, i32, u64)>,
    /// Ids of `unresolved`, and such ids defined in this part.
    known: IdSet,
    findings: Vec<(u64, WarningKind)>,
    /// The part's byte range and the reader state it was read with.
    range: (usize, usize, DumpState),
}

impl Part {
    #[inline(always)]
    fn use_stack(&mut self, kind: Kind, id: i32, offset: u64) {
        if IdBits::takes(id) {
            self.used.mark(id);
        } else if id != 0 && !self.known.contains(id) {
            self.first_use(kind, id, offset);
        }
    }

    #[cold]
    #[inline(never)]
    fn first_use(&mut self, kind: Kind, id: i32, offset: u64) {
        self.known.insert(id);
        self.unresolved.push((kind, id, offset));
    }

    fn define_stack(&mut self, id: i32) {
        if IdBits::takes(id) {
            if self.used.contains(id) && !self.stacks.contains(id) {
                self.used_before_defined.push(id);
            }
        } else {
            self.known.insert(id);
        }
        self.stacks.insert(id);
    }

    /// The first use in this part (kind and offset) of each of `ids`
    /// (sorted), found by reading the part again.
    #[cold]
    fn first_uses(&self, data: &[u8], ids: &[i32]) -> Vec<(Kind, i32, u64)> {
        let (start, end, state) = self.range;
        let mut found = Vec::new();
        let mut seen = IdSet::default();
        for rec in RecordReader::range_with_state(data, start, end, state) {
            let id = match rec.record {
                Record::Alloc(a) => a.stack.0,
                Record::Stack(s) => match s.reference {
                    Some(r) => r.0,
                    None => continue,
                },
                _ => continue,
            };
            if ids.binary_search(&id).is_ok() && !seen.contains(id) {
                seen.insert(id);
                found.push((rec.record.kind(), id, rec.offset));
            }
        }
        found
    }
}

impl<'a> FrequentVisitor<'a> for Part {
    /// Counts a frequent record (see `RecordReader::read_frequent`).
    #[inline(always)]
    fn visit(&mut self, rec: Parsed<'a>) {
        let kind = rec.record.kind();
        self.records[kind.index()] += 1;
        if let Record::Alloc(a) = rec.record {
            self.use_stack(kind, a.stack.0, rec.offset);
        }
    }

    /// Counts a `c` record (its stack is not needed).
    #[inline(always)]
    fn call(&mut self, _thread: i32, _stack: i32, _offset: u64) {
        self.records[Kind::Call.index()] += 1;
    }
}

impl Part {
    /// Counts any record.
    fn general(&mut self, rec: Parsed<'_>) {
        let kind = rec.record.kind();
        self.records[kind.index()] += 1;
        match rec.record {
            Record::Type(t) => self.types.insert(t.id.0),
            Record::Function(f) => self.functions.insert(f.id.0),
            Record::Module(m) => self.modules.insert(m.id.0),
            Record::Stack(s) => {
                if let Some(r) = s.reference {
                    self.use_stack(kind, r.0, rec.offset);
                }
                self.define_stack(s.id.0)
            }
            Record::StackOld(s) => self.define_stack(s.id.0),
            Record::Alloc(a) => self.use_stack(kind, a.stack.0, rec.offset),
            Record::GcBoundary(b) => {
                for r in b.ranges.iter() {
                    if r.generation > 3 {
                        let w = WarningKind::UnreadableGeneration { generation: r.generation };
                        self.findings.push((rec.offset, w));
                    }
                }
            }
            _ => {}
        }
    }
}

impl LogStats {
    /// Counts everything in one parallel pass.
    pub fn compute(data: &[u8], options: &ChunkOptions) -> LogStats {
        let mut total = Part::default();
        let mut findings = Vec::new();
        // Undefined stack ids already reported: once per id, at its first
        // use, however the log was cut into chunks.
        let mut reported = IdSet::default();
        let diagnostics = parse_chunks(
            data,
            options,
            |reader| {
                let start = reader.offset();
                let mut p = Part { range: (start, start, reader.initial_state()), ..Part::default() };
                loop {
                    reader.read_frequent(&mut p);
                    let Some(rec) = reader.next_record() else { break };
                    p.general(rec);
                }
                let end = reader.offset();
                p.range.1 = end;
                p.lines = memchr::memchr_iter(b'\n', &data[start..end]).count() as u64;
                p
            },
            |p, _| {
                // Used ids defined neither before this part nor in it, and
                // ids defined in it after a use, not defined before it.
                let mut ids = p.used.missing_from(&[&total.stacks, &p.stacks, &reported]);
                ids.extend(p.used_before_defined.iter().filter(|&&id| !total.stacks.contains(id) && !reported.contains(id)));
                ids.sort_unstable();
                ids.dedup();
                let mut first = if ids.is_empty() { Vec::new() } else { p.first_uses(data, &ids) };
                first.extend(p.unresolved.iter().copied());
                first.sort_unstable_by_key(|f| f.2);
                for (kind, id, offset) in first {
                    if !total.stacks.contains(id) && !reported.contains(id) {
                        reported.insert(id);
                        findings.push((offset, WarningKind::UndefinedStack { kind, id }));
                    }
                }
                findings.extend(p.findings);
                for (a, b) in total.records.iter_mut().zip(p.records) {
                    *a += b;
                }
                total.lines += p.lines;
                total.types.merge(p.types);
                total.functions.merge(p.functions);
                total.modules.merge(p.modules);
                total.stacks.merge(p.stacks);
            },
        );
        let mut diagnostics = diagnostics;
        for (offset, w) in findings {
            diagnostics.push(offset, w);
        }
        diagnostics.sort();
        diagnostics.resolve_lines(data);
        let unterminated = !data.is_empty() && data[data.len() - 1] != b'\n';
        let counts = diagnostics.counts_by_kind();
        LogStats {
            bytes: data.len() as u64,
            lines: total.lines + unterminated as u64,
            records: total.records,
            skipped_lines: counts[0] + counts[1],
            types: total.types.len(),
            functions: total.functions.len(),
            modules: total.modules.len(),
            stacks: total.stacks.len(),
            diagnostics,
        }
    }

    /// Records of one kind.
    pub fn count(&self, kind: Kind) -> u64 {
        self.records[kind.index()]
    }

    /// Total records.
    pub fn total_records(&self) -> u64 {
        self.records.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::RecordReader;

    /// A log mixing canonical frequent lines with lines the fast path
    /// declines, definitions, an undefined stack and a truncated last line.
    fn log() -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(b"t 1 0 System.String\nn 1 1 1 24\nn 2 1 1 48\ni 0\n");
        for k in 0..300u64 {
            let line = match k % 9 {
                0 => format!("! 5 0x{:x} 1\n", 0x1000 + 24 * k),
                1 => format!("! 5 0x{:x}  2\n", 0x1000 + 24 * k),
                2 => format!("! 5 0x{:x} {}\n", 0x1000 + 24 * k, 7 + k % 3),
                3 => format!("c 5 {}\r\n", k % 4),
                4 => format!("u 0x{:x} 0x{:x} 48\n", 0x9000 + k, 0x1000 + k),
                5 => format!("o 0x{:x} 1 24 0x10 0x20\n", 0x1000 + k),
                6 => format!("v 0x{:x} 4294967296\n", 0x1000 + k),
                7 => format!("i {}\n", k),
                _ => "z comment\n".to_string(),
            };
            d.extend_from_slice(line.as_bytes());
        }
        d.extend_from_slice(b"! 5 0x5000 1");
        d
    }

    #[test]
    fn counts_match_the_general_reader_for_any_chunking() {
        let data = log();
        let mut general = RecordReader::new(&data).general_only();
        let mut records = [0u64; Kind::COUNT];
        for p in general.by_ref() {
            records[p.record.kind().index()] += 1;
        }
        let one = LogStats::compute(&data, &ChunkOptions { chunk_bytes: 1 << 20, threads: Some(1), in_flight: 0 });
        assert_eq!(one.records, records);
        assert!(one.count(Kind::Alloc) > 90 && one.count(Kind::HeapObject) > 30);
        // Stack 9 is used but never defined: one finding, at its first use.
        let undefined: Vec<_> = one
            .diagnostics
            .warnings()
            .iter()
            .filter(|w| matches!(w.kind, WarningKind::UndefinedStack { .. }))
            .map(|w| w.offset)
            .collect();
        assert_eq!(undefined.len(), 1, "{:?}", one.diagnostics.warnings());
        assert_eq!(one.diagnostics.total(), general.diagnostics().total() + 1);
        for chunk in [1, 7, 64, 1000] {
            for threads in [1, 2] {
                let s = LogStats::compute(&data, &ChunkOptions { chunk_bytes: chunk, threads: Some(threads), in_flight: 0 });
                assert_eq!(s.records, one.records, "chunk {chunk}, {threads} threads");
                assert_eq!(s.lines, one.lines);
                assert_eq!(s.stacks, one.stacks);
                // Every warning, the undefined stack's included (once, at
                // its first use, whatever the chunking).
                let w = |s: &LogStats| format!("{:?}", s.diagnostics.warnings());
                assert_eq!(w(&s), w(&one), "chunk {chunk}, {threads} threads");
            }
        }
    }

    /// The undefined-stack warnings as a sequential reading gives them: at
    /// the first use of each id not defined before it.
    fn naive_undefined(data: &[u8]) -> Vec<(u64, Kind, i32)> {
        let (mut defined, mut reported) = (std::collections::HashSet::new(), std::collections::HashSet::new());
        let mut out = Vec::new();
        for p in RecordReader::new(data).general_only() {
            let (used, define) = match p.record {
                Record::Alloc(a) => (Some(a.stack.0), None),
                Record::Stack(s) => (s.reference.map(|r| r.0), Some(s.id.0)),
                Record::StackOld(s) => (None, Some(s.id.0)),
                _ => (None, None),
            };
            if let Some(id) = used {
                if id != 0 && !defined.contains(&id) && reported.insert(id) {
                    out.push((p.offset, p.record.kind(), id));
                }
            }
            if let Some(id) = define {
                defined.insert(id);
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Uses and definitions of stack ids in any order: the warnings are
        /// those of a sequential reading, whatever the chunking.
        #[test]
        fn undefined_stacks_are_found_at_their_first_use(
            lines in proptest::collection::vec((0u8..6, 0usize..12, 0usize..12), 1..200),
        ) {
            let ids = [1, 2, 3, 7, 63, 64, 65, 130, 0, -3, 1 << 27, 99_999_999];
            let mut data = Vec::new();
            for &(form, a, b) in &lines {
                let line = match form {
                    0 | 1 => format!("! 5 0x{:x} {}\n", 0x1000 + 24 * a, ids[a]),
                    2 => format!("! 5 0x{:x}  {}\n", 0x1000 + 24 * a, ids[a]),
                    3 => format!("n {} 1 1 24 3\n", ids[a]),
                    4 => format!("n {} 4 {} 3\n", ids[a], ids[b]),
                    _ => format!("i {a}\n"),
                };
                data.extend_from_slice(line.as_bytes());
            }
            let want = naive_undefined(&data);
            for chunk in [1, 40, 300, 1 << 20] {
                let s = LogStats::compute(&data, &ChunkOptions { chunk_bytes: chunk, threads: Some(2), in_flight: 0 });
                let got: Vec<_> = s
                    .diagnostics
                    .warnings()
                    .iter()
                    .filter_map(|w| match w.kind {
                        WarningKind::UndefinedStack { kind, id } => Some((w.offset, kind, id)),
                        _ => None,
                    })
                    .collect();
                proptest::prop_assert_eq!(&got, &want, "chunk {}", chunk);
            }
        }
    }
}
