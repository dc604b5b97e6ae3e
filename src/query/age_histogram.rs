//! CLRProfiler's "Histogram by Age for Live Objects": the objects alive at
//! a given time, in bars by age, each bar split by type.
//!
//! What CLRProfiler does (its `AgeHistogram` form, read from its sources):
//!
//! - the objects are those of the live-object table at the chosen tick `T`
//!   (here: allocated at or before `T`, not yet dead at `T`, and not under
//!   12 bytes); an object's age is `time(T) - time(its allocation tick)`,
//!   in seconds;
//! - by time scale: bars of a fixed width in seconds, one of 0.05, 0.1,
//!   0.2, 0.5, 1, 2, 5, 10, 20 or 50 ([`TIME_SCALES`]). Unless the user picks
//!   one, it takes the smallest that is at least `time(T) / bars` (the number
//!   of bars its window has room for; the largest scale when none is), and
//!   makes `ceil(time(T) / scale)` bars (at least one). `time(T)` is the
//!   tick's absolute time, so a log whose ticks start late has many empty
//!   old bars. Bar bounds are summed scale by scale (floating point, as it
//!   does); an age past the last bar goes in the last bar;
//! - by markers ("Use Markers"): one bar per interval between the comments
//!   before `T`, youngest first: objects allocated after the last comment,
//!   then between the last two, ..., then before the first;
//! - within a bar, bytes and objects per type; the legend lists types by
//!   their bytes over all bars.
//!
//! Where we differ: types with equal names are merged (CLRProfiler keeps one
//! legend entry per type id); only bars holding objects are listed
//! (`bucket_count` says how many bars there are); the window's width is a
//! parameter (`bars`) instead of a measurement of the screen.

use super::objects::{merge_tallies, par_fold, Clock, RowTypes, Tally};
use super::types::Uncertainty;
use super::Filter;
use crate::model::{Fate, Model, ObjectId, TickIndex};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;

/// The time scales CLRProfiler offers, in seconds per bar.
pub const TIME_SCALES: [f64; 10] = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0];

/// The most bars a histogram may have.
pub const MAX_BARS: usize = 1 << 22;

/// How the bars are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AgeBars {
    /// CLRProfiler's default: the smallest of [`TIME_SCALES`] that shows the
    /// whole age range in about this many bars.
    Auto {
        /// Bars with room on the screen.
        bars: u32,
    },
    /// A fixed scale, seconds per bar.
    Scale(f64),
    /// One bar per interval between comments.
    Markers,
}

impl Default for AgeBars {
    fn default() -> Self {
        AgeBars::Auto { bars: 10 }
    }
}

/// Why the histogram could not be made.
#[derive(Clone, Debug, PartialEq)]
pub enum AgeHistogramError {
    /// The scale is not a positive number.
    BadScale(f64),
    /// The scale makes too many bars.
    TooManyBars {
        /// Bars it would make.
        bars: f64,
        /// The scale.
        scale: f64,
    },
}

impl fmt::Display for AgeHistogramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgeHistogramError::BadScale(s) => write!(f, "the time scale must be a positive number of seconds, not {s}"),
            AgeHistogramError::TooManyBars { bars, scale } => {
                write!(f, "a scale of {scale} s makes {bars:.0} bars (at most {MAX_BARS}): choose a larger scale")
            }
        }
    }
}

impl std::error::Error for AgeHistogramError {}

/// One type's share of a bar (or of the whole histogram).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TypeShare {
    /// The type name.
    pub name: String,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
}

/// One bar.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgeBar {
    /// Its position, 0 = youngest.
    pub index: usize,
    /// Youngest age in the bar, seconds.
    pub min_age_s: f64,
    /// Age the bar ends before, seconds.
    pub max_age_s: f64,
    /// By markers: the comment at the bar's young end (its objects were
    /// allocated before it).
    pub min_comment: Option<String>,
    /// By markers: the comment at the bar's old end (its objects were
    /// allocated after it).
    pub max_comment: Option<String>,
    /// Objects in the bar.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// For a sampled trace: the live samples in the bar and the 95% range
    /// of its figures.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
    /// By type, largest first.
    pub types: Vec<TypeShare>,
}

/// The histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgeHistogram {
    /// The tick index the live objects are taken at.
    pub tick: u32,
    /// Its time, ms.
    pub time_ms: f64,
    /// Seconds per bar (`None` by markers).
    pub scale_s: Option<f64>,
    /// Bars in the histogram.
    pub bucket_count: usize,
    /// The bars holding objects, youngest first (by markers: every bar).
    pub bars: Vec<AgeBar>,
    /// All live objects.
    pub live: Tally,
    /// For a sampled trace: the live samples and the 95% range of `live`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_range: Option<Uncertainty>,
    /// The legend: types by bytes, largest first.
    pub types: Vec<TypeShare>,
}

/// The largest (bar, type) table kept dense.
const DENSE_CELLS: usize = 1 << 18;

/// Counts while folding.
struct BarAcc {
    /// Per bar (empty until the first chunk).
    per_bar: Vec<Tally>,
    /// Per (bar, type slot), as a dense table `bar * types + slot` when
    /// small enough (allocated on first use), else in `sparse`.
    dense: Vec<Tally>,
    sparse: HashMap<(u32, u32), Tally>,
    /// Per type slot.
    legend: Vec<Tally>,
    live: Tally,
    /// Sampled objects per bar (each counted once).
    samples: Vec<u64>,
}

impl BarAcc {
    fn merge(mut self, o: BarAcc) -> BarAcc {
        if self.samples.len() < o.samples.len() {
            self.samples.resize(o.samples.len(), 0);
        }
        for (a, b) in self.samples.iter_mut().zip(&o.samples) {
            *a += b;
        }
        self.per_bar = merge_tallies(self.per_bar, o.per_bar);
        self.dense = merge_tallies(self.dense, o.dense);
        for (k, t) in o.sparse {
            self.sparse.entry(k).or_default().merge(t);
        }
        self.legend = merge_tallies(self.legend, o.legend);
        self.live.merge(o.live);
        self
    }
}

/// CLRProfiler's choice of scale for a suggested scale.
pub fn auto_scale(suggested: f64) -> f64 {
    TIME_SCALES.iter().copied().find(|&s| s >= suggested).unwrap_or(TIME_SCALES[TIME_SCALES.len() - 1])
}

/// Bar bounds `(min, max, min_comment, max_comment)`.
type Bounds = Vec<(f64, f64, Option<String>, Option<String>)>;

fn scale_bounds(scale: f64, max_age: f64) -> Result<Bounds, AgeHistogramError> {
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(AgeHistogramError::BadScale(scale));
    }
    let count = (max_age / scale).ceil();
    if count > MAX_BARS as f64 {
        return Err(AgeHistogramError::TooManyBars { bars: count, scale });
    }
    let count = (count.max(0.0) as usize).max(1);
    let mut age = 0.0f64;
    let mut v = Vec::with_capacity(count);
    for _ in 0..count {
        let min = age;
        age += scale;
        v.push((min, age, None, None));
    }
    Ok(v)
}

fn marker_bounds(model: &Model, clock: &Clock<'_>, at: TickIndex) -> Bounds {
    let comments = model.comments().kept();
    let before = comments.iter().take_while(|c| c.tick < at).count();
    let count = before + 1;
    let now = clock.seconds(at);
    let text = |k: usize| comments.get(k).map(|c| model.names().get(c.text).to_string());
    let mut age = 0.0f64;
    let mut v = Vec::with_capacity(count);
    for i in 0..count {
        let min = age;
        let marker = count - i - 1;
        let min_comment = if i > 0 { text(marker) } else { None };
        age = now;
        let mut max_comment = None;
        if marker > 0 {
            max_comment = text(marker - 1);
            age -= comments.get(marker - 1).map_or(0.0, |c| clock.seconds(c.tick));
        }
        v.push((min, age, min_comment, max_comment));
    }
    v
}

/// The bar of an age: CLRProfiler's estimate from the scale, then moved up
/// or down to the bar whose bounds hold it.
#[inline]
fn bar_of(age: f64, scale: f64, bounds: &Bounds) -> usize {
    let n = bounds.len();
    let q = age / scale;
    let mut i: i64 =
        if q.is_finite() && q > i32::MIN as f64 && q < i32::MAX as f64 { q as i64 } else { i32::MIN as i64 };
    if i >= n as i64 {
        i = n as i64 - 1;
    } else if i < 0 {
        i = 0;
    }
    let mut i = i as usize;
    while i + 1 < n && age >= bounds[i].1 {
        i += 1;
    }
    while i > 0 && age < bounds[i].0 {
        i -= 1;
    }
    i
}

/// The live objects at tick `at` (among those the filter keeps, by
/// allocation time and thread), by age.
pub fn age_histogram_at(
    model: &Model,
    filter: &Filter,
    at: TickIndex,
    bars: AgeBars,
) -> Result<AgeHistogram, AgeHistogramError> {
    let types = RowTypes::new(model);
    let clock = Clock::new(model);
    let at = TickIndex(at.0.min(clock.last().0));
    let now = clock.seconds(at);
    let (bounds, scale) = match bars {
        AgeBars::Auto { bars } => {
            let s = auto_scale(now / bars.max(1) as f64);
            (scale_bounds(s, now)?, Some(s))
        }
        AgeBars::Scale(s) => (scale_bounds(s, now)?, Some(s)),
        AgeBars::Markers => (marker_bounds(model, &clock, at), None),
    };
    let estimate = scale.unwrap_or(0.001);
    let table = model.allocations();
    let range = filter.object_range(model);
    let born_by_then = table.allocated_between(TickIndex(0), at).end;
    let range = range.start..ObjectId(range.end.0.min(born_by_then.0).max(range.start.0));
    let nbars = bounds.len();
    let ntypes = types.len();
    let dense = nbars.saturating_mul(ntypes) <= DENSE_CELLS;
    let acc = par_fold(
        range,
        || BarAcc {
            per_bar: Vec::new(),
            dense: Vec::new(),
            sparse: HashMap::new(),
            legend: vec![Tally::default(); types.len()],
            live: Tally::default(),
            samples: Vec::new(),
        },
        |acc, range| {
            if acc.per_bar.is_empty() {
                acc.per_bar = vec![Tally::default(); nbars];
                acc.samples = vec![0; nbars];
                if dense {
                    acc.dense = vec![Tally::default(); nbars * ntypes];
                }
            }
            table.for_each_in(range, |row, fate| {
                if !filter.has_thread(row.thread) || fate == Fate::Untracked {
                    return;
                }
                if clock.death_tick(fate).is_some_and(|d| d <= at) {
                    return;
                }
                let (slot, size) = types.get(row.stack);
                let age = now - clock.seconds(row.tick);
                let b = bar_of(age, estimate, &bounds);
                let n = types.weight(row.stack);
                acc.per_bar[b].add_n(n, size);
                acc.samples[b] += 1;
                if dense {
                    acc.dense[b * ntypes + slot].add_n(n, size);
                } else {
                    acc.sparse.entry((b as u32, slot as u32)).or_default().add_n(n, size);
                }
                acc.legend[slot].add_n(n, size);
                acc.live.add_n(n, size);
            });
        },
        BarAcc::merge,
    );
    let BarAcc { per_bar, dense: dense_cells, sparse, legend, live, samples } = acc;
    let per_bar = if per_bar.is_empty() { vec![Tally::default(); nbars] } else { per_bar };
    let share =
        |slot: usize, t: Tally| TypeShare { name: types.names[slot].clone(), objects: t.objects, bytes: t.bytes };
    let by_bytes = |a: &TypeShare, b: &TypeShare| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name));
    let mut in_bar: Vec<Vec<TypeShare>> = vec![Vec::new(); bounds.len()];
    for (k, t) in dense_cells.into_iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        in_bar[k / ntypes].push(share(k % ntypes, t));
    }
    for ((b, slot), t) in sparse {
        in_bar[b as usize].push(share(slot as usize, t));
    }
    let markers = scale.is_none();
    let mut out = Vec::new();
    for (i, ((min, max, min_comment, max_comment), mut shares)) in bounds.into_iter().zip(in_bar).enumerate() {
        if per_bar[i].is_empty() && !markers {
            continue;
        }
        shares.sort_by(by_bytes);
        out.push(AgeBar {
            index: i,
            min_age_s: min,
            max_age_s: max,
            min_comment,
            max_comment,
            objects: per_bar[i].objects,
            bytes: per_bar[i].bytes,
            uncertainty: Uncertainty::of_tally(model, samples.get(i).copied().unwrap_or(0), per_bar[i].bytes, per_bar[i].objects),
            types: shares,
        });
    }
    let mut types_out: Vec<TypeShare> =
        legend.iter().enumerate().filter(|(_, t)| !t.is_empty()).map(|(k, &t)| share(k, t)).collect();
    types_out.sort_by(by_bytes);
    Ok(AgeHistogram {
        tick: at.0,
        time_ms: now * 1000.0,
        scale_s: scale,
        bucket_count: per_bar.len(),
        bars: out,
        live,
        live_range: Uncertainty::of_tally(model, samples.iter().sum(), live.bytes, live.objects),
        types: types_out,
    })
}
