//! What to generate: [`GenOptions`] and the named [`Preset`]s.

use super::error::GenError;
use clrprof::format::Style;
use std::fmt;
use std::str::FromStr;

/// The pointer width of the simulated process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointerBits {
    /// A 32-bit process: 4-byte pointers, 8-digit `%p` addresses.
    Bits32,
    /// A 64-bit process: 8-byte pointers, 16-digit `%p` addresses.
    Bits64,
}

impl serde::Serialize for PointerBits {
    /// As the number of bits.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.bits())
    }
}

impl PointerBits {
    /// Bytes in a pointer.
    pub fn bytes(self) -> u64 {
        match self {
            PointerBits::Bits32 => 4,
            PointerBits::Bits64 => 8,
        }
    }

    /// Bits in a pointer.
    pub fn bits(self) -> u32 {
        match self {
            PointerBits::Bits32 => 32,
            PointerBits::Bits64 => 64,
        }
    }

    /// The width for a number of bits (32 or 64).
    pub fn from_bits(bits: u32) -> Option<PointerBits> {
        match bits {
            32 => Some(PointerBits::Bits32),
            64 => Some(PointerBits::Bits64),
            _ => None,
        }
    }

    /// How the writer formats addresses for this width.
    pub fn style(self) -> Style {
        match self {
            PointerBits::Bits32 => Style::BITS32,
            PointerBits::Bits64 => Style::BITS64,
        }
    }
}

/// A named workload size.
///
/// | preset | objects | mean size | allocated | GCs | threads | log | with `--calls` |
/// |---|---|---|---|---|---|---|---|
/// | `tiny` | 20,000 | ~100 B | ~2 MB | 8 | 3 | 0.7 MB | 1.6 MB |
/// | `small` | 300,000 | ~100 B | ~30 MB | 16 | 4 | 10 MB | 38 MB |
/// | `medium` | 3,000,000 | 150 B | ~450 MB | 24 | 6 | 96 MB | 0.65 GB |
/// | `seed` | 19,700,000 | 195 B | ~3.84 GB | 32 | 8 | 0.64 GB | 9.9 GB |
///
/// `seed` has the shape of the 10 GB profile in Feng Yuan's CLRProfiler 4
/// work: 19.7 million objects, 3.85 GB allocated, 32 GCs, about 0.66 GB of
/// text, about 10 GB with `--calls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preset {
    /// A quick log for unit tests.
    Tiny,
    /// A log for integration tests.
    Small,
    /// A log for benchmarks that should finish in seconds.
    Medium,
    /// The seed-scale log of the published CLRProfiler work.
    Seed,
}

impl Preset {
    /// Every preset, smallest first.
    pub const ALL: [Preset; 4] = [Preset::Tiny, Preset::Small, Preset::Medium, Preset::Seed];

    /// The preset's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Tiny => "tiny",
            Preset::Small => "small",
            Preset::Medium => "medium",
            Preset::Seed => "seed",
        }
    }

    /// The options this preset stands for.
    pub fn options(self) -> GenOptions {
        let base = GenOptions {
            preset: self.name().to_string(),
            seed: 1,
            objects: 20_000,
            mean_size: 100.0,
            gcs: 8,
            induced: 2,
            threads: 3,
            calls: false,
            calls_per_alloc: 4.0,
            heap_dumps: 1,
            handles_per_million: 2_000.0,
            finalizers: true,
            comments: 3,
            pointer_bits: PointerBits::Bits64,
            tick_start: 0,
            alloc_rate_mb_per_s: 150.0,
            loh_fraction: 0.06,
            functions: 150,
            app_types: 60,
        };
        match self {
            Preset::Tiny => base,
            Preset::Small => GenOptions {
                seed: 2,
                objects: 300_000,
                gcs: 16,
                induced: 3,
                threads: 4,
                calls_per_alloc: 8.0,
                heap_dumps: 2,
                handles_per_million: 400.0,
                comments: 4,
                functions: 400,
                app_types: 100,
                ..base
            },
            Preset::Medium => GenOptions {
                seed: 3,
                objects: 3_000_000,
                mean_size: 150.0,
                gcs: 24,
                induced: 3,
                threads: 6,
                calls_per_alloc: 16.0,
                heap_dumps: 2,
                handles_per_million: 100.0,
                comments: 8,
                functions: 1_000,
                app_types: 200,
                ..base
            },
            Preset::Seed => GenOptions {
                seed: 4,
                objects: 19_700_000,
                mean_size: 195.0,
                gcs: 32,
                induced: 4,
                threads: 8,
                calls_per_alloc: 39.0,
                heap_dumps: 2,
                handles_per_million: 50.0,
                comments: 12,
                functions: 2_000,
                app_types: 300,
                ..base
            },
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Preset {
    type Err = GenError;
    fn from_str(s: &str) -> Result<Preset, GenError> {
        Preset::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| GenError::Options(format!("unknown preset `{s}` (tiny, small, medium, seed)")))
    }
}

/// Everything that decides a generated log. Same options, same bytes.
///
/// Start from a preset ([`Preset::options`]; [`Default`] is `tiny`) and
/// change fields:
///
/// ```
/// use clrprof_gen::{GenOptions, Preset};
/// let opts = GenOptions { objects: 5_000, seed: 9, ..Preset::Tiny.options() };
/// assert!(opts.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GenOptions {
    /// The preset these options came from (recorded in the truth file).
    pub preset: String,
    /// Seed of every random choice.
    pub seed: u64,
    /// Objects to allocate.
    pub objects: u64,
    /// Target mean object size in bytes, large objects included.
    pub mean_size: f64,
    /// Garbage collections to run (gen 0, 1 and 2 together).
    pub gcs: u32,
    /// How many of them are induced (`GC.Collect`, condemning gen 2);
    /// raised to `heap_dumps` if lower.
    pub induced: u32,
    /// Managed threads.
    pub threads: u32,
    /// Log every call (`c` lines).
    pub calls: bool,
    /// Mean calls between two allocations when `calls` is on (when off,
    /// stacks still change, at about one call per allocation).
    pub calls_per_alloc: f64,
    /// Heap dumps (`e`/`r`/`o` lines), each during an induced gen-2 GC.
    pub heap_dumps: u32,
    /// GC handles created per million allocations (0: no `h`/`j` lines).
    pub handles_per_million: f64,
    /// Include finalizable types (`t` flag 1, `l` lines).
    pub finalizers: bool,
    /// User comments (`z` lines), spread over the run.
    pub comments: u32,
    /// Address width.
    pub pointer_bits: PointerBits,
    /// Milliseconds on the first `i` line; values are written modulo 2^32,
    /// so a start near 2^32 (or 2^31, where CLRProfiler's signed reading
    /// wraps) makes the log cross the wraparound.
    pub tick_start: u64,
    /// Simulated allocation rate, which sets how fast the clock runs.
    pub alloc_rate_mb_per_s: f64,
    /// Share of allocated bytes in large objects (85,000 bytes or more).
    pub loh_fraction: f64,
    /// Functions in the synthetic call tree (library functions included).
    pub functions: u32,
    /// Application types (in addition to the framework types).
    pub app_types: u32,
}

impl Default for GenOptions {
    fn default() -> Self {
        Preset::Tiny.options()
    }
}

impl GenOptions {
    /// Checks ranges; the generator calls this first.
    pub fn validate(&self) -> Result<(), GenError> {
        let bad = |m: &str| Err(GenError::Options(m.to_string()));
        if self.objects == 0 {
            return bad("--objects must be at least 1");
        }
        if self.objects > u32::MAX as u64 {
            return bad("--objects must be below 2^32");
        }
        if !(self.mean_size >= 32.0 && self.mean_size <= 20_000.0) {
            return bad("--mean-size must be between 32 and 20000 bytes");
        }
        if self.gcs > 60_000 {
            return bad("--gcs must be at most 60000");
        }
        if self.threads == 0 || self.threads > 1_000 {
            return bad("--threads must be between 1 and 1000");
        }
        if !(self.calls_per_alloc >= 0.0 && self.calls_per_alloc <= 10_000.0) {
            return bad("calls per allocation must be between 0 and 10000");
        }
        if self.heap_dumps > self.gcs {
            return bad("--heap-dumps cannot exceed --gcs (each dump is a GC)");
        }
        if !(self.handles_per_million >= 0.0 && self.handles_per_million <= 100_000.0) {
            return bad("handles per million allocations must be between 0 and 100000");
        }
        if !(self.alloc_rate_mb_per_s >= 0.001 && self.alloc_rate_mb_per_s <= 1e6) {
            return bad("the allocation rate must be between 0.001 and 1e6 MB/s");
        }
        if !(0.0..=0.5).contains(&self.loh_fraction) {
            return bad("the large-object share must be between 0 and 0.5");
        }
        if self.functions < 40 || self.functions > 1_000_000 {
            return bad("the call tree needs between 40 and 1000000 functions");
        }
        if self.app_types > 3_000 {
            return bad("at most 3000 application types");
        }
        if self.comments as u64 > self.objects {
            return bad("more comments than objects");
        }
        Ok(())
    }

    /// Induced GCs after raising them to the number of heap dumps and
    /// capping them at the number of GCs.
    pub fn effective_induced(&self) -> u32 {
        self.induced.max(self.heap_dumps).min(self.gcs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_and_validate() {
        for p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
            p.options().validate().unwrap();
        }
        assert!("huge".parse::<Preset>().is_err());
        assert_eq!(GenOptions::default(), Preset::Tiny.options());
    }

    #[test]
    fn bad_options_are_refused() {
        let o = GenOptions { objects: 0, ..GenOptions::default() };
        assert!(o.validate().is_err());
        let o = GenOptions { heap_dumps: 9, gcs: 3, ..GenOptions::default() };
        assert!(o.validate().is_err());
        let o = GenOptions { induced: 1, heap_dumps: 3, ..GenOptions::default() };
        assert_eq!(o.effective_induced(), 3);
    }
}
