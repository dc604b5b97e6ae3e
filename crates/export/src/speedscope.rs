//! speedscope: its JSON file format
//! (`https://www.speedscope.app/file-format-schema.json`), as
//! speedscope.app and the `speedscope` command open it.
//!
//! What the file holds:
//!
//! - One sampled profile of all the objects the filter keeps, then one per
//!   thread (in order of first appearance in the log; `a` records, which
//!   name no thread, make a profile "no thread"). Weights are bytes
//!   (unit `bytes`), so the flame graph's widths are allocated bytes and
//!   each profile's weights add up to the bytes its objects allocated.
//! - A shared frame table: one frame per function (its name, and its
//!   module's file name as the frame's file) and one per type. A sample is
//!   the stack's frames outermost first with the allocated type as the
//!   leaf, one sample per distinct (frames, type) in the profile, as the
//!   folded stacks of `clrprof flame` are. Frames are CLRProfiler's (see
//!   [`allocation_frames`](clrprof::query::alloc_stacks::allocation_frames));
//!   rows whose stack has no type allocate no bytes and are left out.

use crate::frames::FunctionIndex;
use crate::{ExportOptions, Result};
use clrprof::format::{FunctionId, TypeId};
use clrprof::model::{Model, ObjectId, StackRef, ThreadRef};
use clrprof::query::alloc_stacks::{row_bytes, CanonicalPaths, StackWeights};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// The `$schema` of speedscope files.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// A speedscope file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct File {
    /// Always [`SCHEMA`].
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    /// The frame table the profiles index.
    pub shared: Shared,
    /// The profiles: all threads, then one per thread.
    pub profiles: Vec<SampledProfile>,
    /// The file's name as speedscope shows it.
    pub name: String,
    /// The profile shown first (0: all threads).
    #[serde(rename = "activeProfileIndex")]
    pub active_profile_index: usize,
    /// The program that wrote the file.
    pub exporter: String,
}

/// The shared part of a file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Shared {
    /// Every frame.
    pub frames: Vec<Frame>,
}

/// One frame.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frame {
    /// A function's or a type's name.
    pub name: String,
    /// The function's module file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A sampled profile weighted by bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SampledProfile {
    /// Always `sampled`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "all threads" or "thread N".
    pub name: String,
    /// Always `bytes`.
    pub unit: &'static str,
    /// 0.
    #[serde(rename = "startValue")]
    pub start_value: u64,
    /// The sum of the weights.
    #[serde(rename = "endValue")]
    pub end_value: u64,
    /// Stacks as frame indices, outermost first, the type last.
    pub samples: Vec<Vec<u32>>,
    /// Bytes of each sample.
    pub weights: Vec<u64>,
}

/// Objects per chunk when counting per thread.
const CHUNK: u32 = 1 << 20;

/// Dense counts per (thread, stack row) up to this many cells; a hash map
/// beyond (logs with very many threads and stacks).
const DENSE_CELLS: usize = 1 << 24;

/// Objects the filter keeps per (thread, stack row).
fn per_thread(model: &Model, options: &ExportOptions) -> Vec<((u32, u32), u64)> {
    let filter = &options.filter;
    let range = filter.object_range(model);
    let (start, end) = (range.start.0, range.end.0);
    let chunks = (end - start).div_ceil(CHUNK);
    let rows = model.stacks().len().max(1);
    let cells = model.threads().len().saturating_mul(rows);
    let each = |k: u32, f: &mut dyn FnMut(u32, u32)| {
        let a = start + k * CHUNK;
        let b = end.min(a.saturating_add(CHUNK));
        for r in model.allocations().rows_in(ObjectId(a)..ObjectId(b)) {
            if filter.has_thread(r.thread) {
                f(r.thread.0, r.stack.0);
            }
        }
    };
    if cells <= DENSE_CELLS {
        let counts = (0..chunks)
            .into_par_iter()
            .fold(
                || vec![0u64; cells],
                |mut acc, k| {
                    each(k, &mut |t, r| {
                        if let Some(c) = acc.get_mut(t as usize * rows + r as usize) {
                            *c += 1;
                        }
                    });
                    acc
                },
            )
            .reduce(
                || vec![0u64; cells],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        return counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (((k / rows) as u32, (k % rows) as u32), n))
            .collect();
    }
    let map = (0..chunks)
        .into_par_iter()
        .fold(HashMap::new, |mut acc: HashMap<(u32, u32), u64>, k| {
            each(k, &mut |t, r| *acc.entry((t, r)).or_insert(0) += 1);
            acc
        })
        .reduce(HashMap::new, |mut a, b| {
            for (k, n) in b {
                *a.entry(k).or_insert(0) += n;
            }
            a
        });
    map.into_iter().collect()
}

/// Builds frames and samples.
struct Builder<'m> {
    model: &'m Model,
    paths: CanonicalPaths,
    functions: FunctionIndex,
    /// Frame of each function number.
    function_frame: Vec<u32>,
    type_frame: HashMap<i32, u32>,
    frames: Vec<Frame>,
    scratch: Vec<clrprof::model::FrameNode>,
    path_functions: Vec<FunctionId>,
}

impl<'m> Builder<'m> {
    fn new(model: &'m Model) -> Builder<'m> {
        Builder {
            model,
            paths: CanonicalPaths::new(model),
            functions: FunctionIndex::default(),
            function_frame: Vec::new(),
            type_frame: HashMap::new(),
            frames: Vec::new(),
            scratch: Vec::new(),
            path_functions: Vec::new(),
        }
    }

    /// The frame of a function.
    fn function(&mut self, f: FunctionId) -> u32 {
        let k = self.functions.of(Some(f)) as usize;
        if k == self.function_frame.len() {
            let n = crate::frames::function_name(self.model, f);
            self.function_frame.push(self.frames.len() as u32);
            self.frames.push(Frame { name: n.name, file: n.module });
        }
        self.function_frame[k]
    }

    /// The frame of a type.
    fn type_frame(&mut self, ty: TypeId) -> u32 {
        let next = self.frames.len() as u32;
        let k = *self.type_frame.entry(ty.0).or_insert(next);
        if k == next {
            self.frames.push(Frame { name: self.model.type_name(ty).into_owned(), file: None });
        }
        k
    }

    /// One profile from `(row, objects)` pairs.
    fn profile(&mut self, name: String, rows: impl Iterator<Item = (StackRef, u64)>) -> SampledProfile {
        let mut per_sample: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        let mut path_frames: HashMap<(u32, i32), Vec<u32>> = HashMap::new();
        for (row, count) in rows {
            let Some((ty, bytes)) = row_bytes(self.model, row, count) else { continue };
            if bytes == 0 {
                continue;
            }
            let p = self.paths.of_row(self.model, row, &mut self.scratch);
            let stack = match path_frames.get(&(p, ty.0)) {
                Some(s) => s.clone(),
                None => {
                    let mut fs = std::mem::take(&mut self.path_functions);
                    self.paths.functions(p, &mut fs);
                    let mut s: Vec<u32> = fs.iter().map(|&f| self.function(f)).collect();
                    self.path_functions = fs;
                    s.push(self.type_frame(ty));
                    path_frames.insert((p, ty.0), s.clone());
                    s
                }
            };
            let w = per_sample.entry(stack).or_insert(0);
            *w = w.saturating_add(bytes);
        }
        let total = per_sample.values().fold(0u64, |a, &b| a.saturating_add(b));
        let (samples, weights) = per_sample.into_iter().unzip();
        SampledProfile { kind: "sampled", name, unit: "bytes", start_value: 0, end_value: total, samples, weights }
    }
}

/// Builds the file (see the module documentation); `name` is the name
/// speedscope shows (the log's file name, say).
pub fn file(model: &Model, options: &ExportOptions, name: &str) -> File {
    let mut b = Builder::new(model);
    let all = StackWeights::new(model, &options.filter);
    let mut profiles = vec![b.profile("all threads".to_string(), all.iter())];
    let mut by_thread: BTreeMap<u32, Vec<(StackRef, u64)>> = BTreeMap::new();
    for ((t, r), n) in per_thread(model, options) {
        // A sampled trace: each sample counts as what it stands for, as in
        // "all threads".
        by_thread.entry(t).or_default().push((StackRef(r), model.estimate_count(StackRef(r), n)));
    }
    for (t, mut rows) in by_thread {
        rows.sort_unstable();
        let label = match model.threads().id(ThreadRef(t)) {
            Some(id) => format!("thread {id}"),
            None => "no thread".to_string(),
        };
        profiles.push(b.profile(label, rows.into_iter()));
    }
    File {
        schema: SCHEMA,
        shared: Shared { frames: b.frames },
        profiles,
        name: name.to_string(),
        active_profile_index: 0,
        exporter: format!("clrprof-export {}", env!("CARGO_PKG_VERSION")),
    }
}

/// Writes the file as JSON.
pub fn write(model: &Model, options: &ExportOptions, name: &str, out: impl Write) -> Result<()> {
    let f = file(model, options, name);
    let mut out = std::io::BufWriter::new(out);
    serde_json::to_writer(&mut out, &f)?;
    out.flush()?;
    Ok(())
}
