//! The figures of one log that rules ask for, each computed once and only
//! when a rule needs it (a function's figures walk every stack, a dump's
//! retained sizes build its dominator tree).

use super::rule::Subject;
use clrprof::model::Model;
use clrprof::query::dumps::{retained_by, DumpIndex, RetainedBySite, SiteBy};
use clrprof::query::{by_function, by_type, canonical_type_name, summary, survivors, Filter, HistogramKind, SortBy, Summary};
use std::cell::OnceCell;
use std::collections::HashMap;

/// Objects and bytes, and for a trace the sampled objects behind them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pair {
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub bytes: u64,
    /// The sampled objects the figures rest on (a trace's estimates).
    pub samples: u64,
}

impl Pair {
    fn add(&mut self, objects: u64, bytes: u64, samples: u64) {
        self.objects += objects;
        self.bytes = self.bytes.saturating_add(bytes);
        self.samples += samples;
    }
}

/// A type's figures in a dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpType {
    /// Its objects and their bytes.
    pub own: Pair,
    /// The bytes its instances retain.
    pub retained: u64,
}

/// A function's figures: inclusive and exclusive, allocated and surviving.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionFigures {
    /// Allocated with the function on the stack.
    pub allocated: Pair,
    /// Allocated by the function itself.
    pub exclusive_allocated: Pair,
    /// Of the inclusive ones, alive at the end.
    pub surviving: Pair,
    /// Of the exclusive ones, alive at the end.
    pub exclusive_surviving: Pair,
}

/// Why a figure has no value in a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The log cannot tell it (a Summary figure CLRProfiler calls
    /// "Unknown", or allocation figures of a log without allocation
    /// events).
    Unknown(String),
    /// The log has no heap dump (or not the one asked for).
    NoDump(String),
    /// The log has no such type or function where the figure looks (the
    /// other log has): the rule is undecided, never a comparison with 0.
    Absent(String),
}

impl Missing {
    /// The reason, for the report.
    pub fn reason(&self) -> &str {
        match self {
            Missing::Unknown(s) | Missing::NoDump(s) | Missing::Absent(s) => s,
        }
    }
}

/// Which heap dump of each log dump figures come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpChoice {
    /// The last one.
    Last,
    /// This one (from 0, as `clrprof dumps` numbers them).
    Index(u32),
}

/// Whether a type figure comes from the heap dump.
fn is_dump_metric(metric: &str) -> bool {
    matches!(metric, "dump_objects" | "dump_bytes" | "retained_bytes")
}

/// One log's figures, computed on demand.
pub struct Figures<'m> {
    model: &'m Model,
    dump: DumpChoice,
    summary: OnceCell<Summary>,
    allocated: OnceCell<HashMap<String, Pair>>,
    surviving: OnceCell<HashMap<String, Pair>>,
    functions: OnceCell<HashMap<String, FunctionFigures>>,
    retained: OnceCell<Option<RetainedBySite>>,
    dump_types: OnceCell<HashMap<String, DumpType>>,
}

impl<'m> Figures<'m> {
    /// Figures of `model`, dump figures from `dump`.
    pub fn new(model: &'m Model, dump: DumpChoice) -> Figures<'m> {
        Figures {
            model,
            dump,
            summary: OnceCell::new(),
            allocated: OnceCell::new(),
            surviving: OnceCell::new(),
            functions: OnceCell::new(),
            retained: OnceCell::new(),
            dump_types: OnceCell::new(),
        }
    }

    fn summary(&self) -> &Summary {
        self.summary.get_or_init(|| summary(self.model))
    }

    fn histogram(&self, kind: HistogramKind) -> HashMap<String, Pair> {
        let mut m: HashMap<String, Pair> = HashMap::new();
        for row in by_type(self.model, kind) {
            m.entry(canonical_type_name(&row.name).into_owned()).or_default().add(row.count, row.bytes.max(0) as u64, row.samples);
        }
        m
    }

    fn allocated(&self) -> &HashMap<String, Pair> {
        self.allocated.get_or_init(|| self.histogram(HistogramKind::Allocated))
    }

    fn surviving(&self) -> &HashMap<String, Pair> {
        self.surviving.get_or_init(|| self.histogram(HistogramKind::FinalHeap))
    }

    fn functions(&self) -> &HashMap<String, FunctionFigures> {
        self.functions.get_or_init(|| {
            let mut m: HashMap<String, FunctionFigures> = HashMap::new();
            for row in by_function(self.model, &Filter::all(), SortBy::Inclusive) {
                let f = m.entry(row.name).or_default();
                let g = row.figures;
                let samples = |u: &Option<clrprof::query::Uncertainty>| u.as_ref().map_or(0, |u| u.samples);
                f.allocated.add(g.inclusive_count, g.inclusive_bytes, samples(&row.inclusive_range));
                f.exclusive_allocated.add(g.exclusive_count, g.exclusive_bytes, samples(&row.exclusive_range));
            }
            // Alive at the end, per allocation stack: inclusive once per
            // stack that names the function, exclusive for its innermost
            // frame.
            let s = survivors(self.model, &Filter::all(), None, usize::MAX);
            for stack in &s.by_stack {
                let (objects, bytes) = (stack.surviving.objects, stack.surviving.bytes);
                let samples = stack.uncertainty.as_ref().map_or(0, |u| u.samples);
                let mut seen: Vec<&str> = Vec::new();
                for (k, frame) in stack.frames.iter().enumerate() {
                    if seen.contains(&frame.as_str()) {
                        continue;
                    }
                    seen.push(frame);
                    let f = m.entry(frame.clone()).or_default();
                    f.surviving.add(objects, bytes, samples);
                    if k == 0 {
                        f.exclusive_surviving.add(objects, bytes, samples);
                    }
                }
            }
            m
        })
    }

    /// The dump the figures come from, if the log has it.
    fn dump_index(&self) -> Result<DumpIndex, Missing> {
        let n = self.model.heap_dumps().dumps().len() as u32;
        match self.dump {
            DumpChoice::Last if n > 0 => Ok(DumpIndex(n - 1)),
            DumpChoice::Last => Err(Missing::NoDump("no heap dump".into())),
            DumpChoice::Index(i) if i < n => Ok(DumpIndex(i)),
            DumpChoice::Index(i) => Err(Missing::NoDump(format!("no heap dump {i} ({})", crate::common::count(n as u64, "dump", "dumps")))),
        }
    }

    fn retained(&self) -> Result<&RetainedBySite, Missing> {
        let index = self.dump_index()?;
        self.retained
            .get_or_init(|| retained_by(self.model, index, SiteBy::Type))
            .as_ref()
            .ok_or_else(|| Missing::NoDump(format!("no heap dump {index}")))
    }

    fn dump_types(&self) -> Result<&HashMap<String, DumpType>, Missing> {
        let r = self.retained()?;
        Ok(self.dump_types.get_or_init(|| {
            let mut m: HashMap<String, DumpType> = HashMap::new();
            for site in &r.sites {
                let t = m.entry(canonical_type_name(&site.site.name).into_owned()).or_default();
                t.own.add(site.objects, site.bytes, 0);
                t.retained = t.retained.saturating_add(site.retained);
            }
            m
        }))
    }

    /// The dump the figures come from, for the report (`None`: no dump).
    pub fn dump_used(&self) -> Option<u32> {
        self.dump_index().ok().map(|d| d.0)
    }

    /// Whether the log knows the subject's name where `metric` looks: a
    /// type it allocated (or, for dump figures, one in its dump), a
    /// function on an allocation stack.
    pub fn knows(&self, subject: &Subject, metric: &str) -> bool {
        match subject {
            Subject::Summary | Subject::Dump => true,
            Subject::Type(n) if is_dump_metric(metric) => self.dump_types().is_ok_and(|t| t.contains_key(&*canonical_type_name(n))),
            Subject::Type(n) => self.allocated().contains_key(&*canonical_type_name(n)),
            Subject::Function(n) => self.functions().contains_key(n),
        }
    }

    /// Why a figure of a type or function the log does not have (see
    /// [`Figures::knows`]) is missing: never 0 in its place.
    fn absent(&self, subject: &Subject, metric: &str) -> Missing {
        let where_ = match subject {
            Subject::Type(_) if is_dump_metric(metric) => "in the heap dump",
            Subject::Type(_) => "allocated",
            _ => "on an allocation stack",
        };
        Missing::Absent(format!("{} `{}` is not {where_} in this log", subject.kind(), subject.name().unwrap_or_default()))
    }

    /// Names of the subject's kind in this log where `metric` looks (for
    /// "did you mean").
    pub fn names(&self, subject: &Subject, metric: &str) -> Vec<String> {
        match subject {
            Subject::Summary | Subject::Dump => Vec::new(),
            Subject::Type(_) if is_dump_metric(metric) => self.dump_types().map(|t| t.keys().cloned().collect()).unwrap_or_default(),
            Subject::Type(_) => self.allocated().keys().cloned().collect(),
            Subject::Function(_) => self.functions().keys().cloned().collect(),
        }
    }

    /// A figure: `metric` of `subject` (a metric [`super::rule::metrics_of`]
    /// the subject lists; any other is `Unknown`).
    pub fn value(&self, subject: &Subject, metric: &str) -> Result<i64, Missing> {
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let unknown = || Missing::Unknown(format!("`{metric}` is not a figure of {} rules", subject.kind()));
        match subject {
            Subject::Summary => self.summary_value(metric),
            Subject::Dump => {
                let r = self.retained()?;
                let v = match metric {
                    "objects" => r.objects,
                    "bytes" => r.bytes,
                    "reachable_objects" => r.reachable_objects,
                    "reachable_bytes" => r.reachable_bytes,
                    "unreachable_objects" => r.unreachable_objects,
                    "unreachable_bytes" => r.unreachable_bytes,
                    _ => return Err(unknown()),
                };
                Ok(clamp(v))
            }
            Subject::Type(name) => {
                let known = self.summary().allocations_known;
                let name = &*canonical_type_name(name);
                let log_figure = |m: &HashMap<String, Pair>| m.get(name).copied().unwrap_or_default();
                let no_allocations = || Missing::Unknown("recorded without allocation events: allocation figures unknown".into());
                let v = match metric {
                    "allocated_bytes" | "allocated_objects" | "surviving_bytes" | "surviving_objects" if !known => {
                        return Err(no_allocations())
                    }
                    "allocated_bytes" | "allocated_objects" | "surviving_bytes" | "surviving_objects" | "dump_objects" | "dump_bytes"
                    | "retained_bytes"
                        if !self.knows(subject, metric) && (!is_dump_metric(metric) || self.dump_types().is_ok()) =>
                    {
                        return Err(self.absent(subject, metric))
                    }
                    "allocated_bytes" => log_figure(self.allocated()).bytes,
                    "allocated_objects" => log_figure(self.allocated()).objects,
                    "surviving_bytes" => log_figure(self.surviving()).bytes,
                    "surviving_objects" => log_figure(self.surviving()).objects,
                    "dump_objects" | "dump_bytes" | "retained_bytes" => {
                        let t = self.dump_types()?.get(name).copied().unwrap_or_default();
                        match metric {
                            "dump_objects" => t.own.objects,
                            "dump_bytes" => t.own.bytes,
                            _ => t.retained,
                        }
                    }
                    _ => return Err(unknown()),
                };
                Ok(clamp(v))
            }
            Subject::Function(name) => {
                if !self.summary().allocations_known {
                    return Err(Missing::Unknown("recorded without allocation events: allocation figures unknown".into()));
                }
                if !self.knows(subject, metric) {
                    return Err(self.absent(subject, metric));
                }
                let f = self.functions().get(name).copied().unwrap_or_default();
                let v = match metric {
                    "allocated_bytes" => f.allocated.bytes,
                    "allocated_objects" => f.allocated.objects,
                    "surviving_bytes" => f.surviving.bytes,
                    "surviving_objects" => f.surviving.objects,
                    "exclusive_allocated_bytes" => f.exclusive_allocated.bytes,
                    "exclusive_allocated_objects" => f.exclusive_allocated.objects,
                    "exclusive_surviving_bytes" => f.exclusive_surviving.bytes,
                    "exclusive_surviving_objects" => f.exclusive_surviving.objects,
                    _ => return Err(unknown()),
                };
                Ok(clamp(v))
            }
        }
    }

    /// The 95% range of a figure that is an estimate (a trace's
    /// allocation and survival figures, from the samples they rest on);
    /// `None` for an exact figure (a log's, a GC count, a heap dump's).
    pub fn range(&self, subject: &Subject, metric: &str) -> Option<[i64; 2]> {
        self.model.sampling()?;
        let value = self.value(subject, metric).ok()?;
        let pick = |p: Pair| p.samples;
        let samples = match subject {
            Subject::Dump => return None,
            Subject::Summary => match metric {
                "allocated_bytes" => self.allocated().values().map(|p| p.samples).sum(),
                "final_heap_bytes" => self.surviving().values().map(|p| p.samples).sum(),
                _ => return None,
            },
            Subject::Type(name) => {
                let name = &*canonical_type_name(name);
                match metric {
                    "allocated_bytes" | "allocated_objects" => pick(self.allocated().get(name).copied()?),
                    "surviving_bytes" | "surviving_objects" => pick(self.surviving().get(name).copied().unwrap_or_default()),
                    _ => return None,
                }
            }
            Subject::Function(name) => {
                let f = self.functions().get(name).copied()?;
                match metric {
                    "allocated_bytes" | "allocated_objects" => f.allocated.samples,
                    "surviving_bytes" | "surviving_objects" => f.surviving.samples,
                    "exclusive_allocated_bytes" | "exclusive_allocated_objects" => f.exclusive_allocated.samples,
                    "exclusive_surviving_bytes" | "exclusive_surviving_objects" => f.exclusive_surviving.samples,
                    _ => return None,
                }
            }
        };
        let [lo, hi] = clrprof::query::Range95::of(samples)?.apply(value as f64);
        Some([lo as i64, hi.min(i64::MAX as f64) as i64])
    }

    fn summary_value(&self, metric: &str) -> Result<i64, Missing> {
        let s = self.summary();
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let alloc = |v: u64| {
            if s.allocations_known {
                Ok(clamp(v))
            } else {
                Err(Missing::Unknown("recorded without allocation events: Unknown in the Summary".into()))
            }
        };
        let opt = |v: Option<u64>| v.map(clamp).ok_or_else(|| Missing::Unknown("Unknown in the Summary".into()));
        match metric {
            "allocated_bytes" => alloc(s.allocated_bytes),
            "relocated_bytes" => alloc(s.relocated_bytes),
            "final_heap_bytes" => alloc(s.final_heap_bytes),
            "gen0_collections" => Ok(s.gen0_collections),
            "gen1_collections" => Ok(s.gen1_collections),
            "gen2_collections" => Ok(s.gen2_collections),
            "induced_collections" => opt(s.induced_collections),
            "gen0_heap_bytes" => opt(s.gen0_heap_bytes),
            "gen1_heap_bytes" => opt(s.gen1_heap_bytes),
            "gen2_heap_bytes" => opt(s.gen2_heap_bytes),
            "loh_bytes" => opt(s.loh_bytes),
            "objects_finalized" => opt(s.objects_finalized),
            "critical_objects_finalized" => opt(s.critical_objects_finalized),
            "handles_created" => opt(s.handles_created),
            "handles_destroyed" => opt(s.handles_destroyed),
            "handles_surviving" => opt(s.handles_surviving),
            "heap_dumps" => Ok(clamp(s.heap_dumps)),
            "comments" => Ok(clamp(s.comments)),
            _ => Err(Missing::Unknown(format!("`{metric}` is not a Summary figure"))),
        }
    }
}
