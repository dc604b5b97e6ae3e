//! The logs a server shows: each loads in the background while the server
//! already answers, and is then kept, with the answers worth keeping, for
//! the server's life.

use crate::dominator_tree::DominatorCache;
use crate::flame_tree::FlameTree;
use clrprof::format::LogSource;
use clrprof::model::{self, LoadOptions, Model};
use clrprof::query::{ages, lifetime, Ages, Filter, Lifetime};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// A log of the server: its position among the logs given (from 0). Routes
/// name logs by this id only, never by a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct LogId(pub u32);

/// A loaded log and the whole-log answers computed once for it.
pub struct LoadedLog {
    /// The model.
    pub model: Model,
    /// Seconds the load took.
    pub seconds: f64,
    lifetime_all: OnceLock<Lifetime>,
    ages_all: OnceLock<Ages>,
    flame_all: OnceLock<FlameTree>,
    /// The flame trees of the last windows asked for, newest last (zooming
    /// and searching within a window ask for the same tree again).
    flame_windows: Mutex<Vec<(Filter, Arc<FlameTree>)>>,
    /// Dominator trees of the heap dumps, built when first asked for.
    pub dominators: DominatorCache,
}

impl LoadedLog {
    /// A loaded model.
    pub fn new(model: Model, seconds: f64) -> LoadedLog {
        let dumps = model.heap_dumps().dumps().len();
        LoadedLog {
            model,
            seconds,
            lifetime_all: OnceLock::new(),
            ages_all: OnceLock::new(),
            flame_all: OnceLock::new(),
            flame_windows: Mutex::new(Vec::new()),
            dominators: DominatorCache::new(dumps),
        }
    }

    /// `clrprof lifetime` over the whole log (computed once).
    pub fn lifetime_all(&self) -> &Lifetime {
        self.lifetime_all.get_or_init(|| lifetime(&self.model, &Filter::all()))
    }

    /// `clrprof ages` over the whole log (computed once).
    pub fn ages_all(&self) -> &Ages {
        self.ages_all.get_or_init(|| ages(&self.model, &Filter::all()))
    }

    /// The flame graph's tree over the whole log (computed once).
    pub fn flame_all(&self) -> &FlameTree {
        self.flame_all.get_or_init(|| FlameTree::build(&self.model, &Filter::all()))
    }

    /// The flame graph's tree of the objects a filter keeps: built once per
    /// filter among the last few asked for.
    pub fn flame_of(&self, filter: &Filter) -> Arc<FlameTree> {
        const KEPT: usize = 4;
        if let Ok(kept) = self.flame_windows.lock() {
            if let Some((_, t)) = kept.iter().find(|(f, _)| f == filter) {
                return t.clone();
            }
        }
        let tree = Arc::new(FlameTree::build(&self.model, filter));
        if let Ok(mut kept) = self.flame_windows.lock() {
            if kept.len() >= KEPT {
                kept.remove(0);
            }
            kept.push((filter.clone(), tree.clone()));
        }
        tree
    }

    /// Computes the whole-log answers that take longest, so that the first
    /// request for them is answered at once.
    pub fn warm(&self) {
        self.lifetime_all();
        self.ages_all();
        self.flame_all();
        for k in 0..self.model.heap_dumps().dumps().len() {
            let _ = self.dominators.get(&self.model, k as u32);
        }
    }
}

/// Where a log's load is.
enum State {
    Loading,
    Ready(Arc<LoadedLog>),
    Failed(String),
}

/// One log of the set.
pub struct LogSlot {
    name: String,
    path: Option<PathBuf>,
    done: AtomicU64,
    total: AtomicU64,
    state: RwLock<State>,
}

/// What the page is told about a log.
#[derive(Clone, Debug, Serialize)]
pub struct LogStatus {
    /// Its id.
    pub id: LogId,
    /// Its file name (not its path).
    pub name: String,
    /// "loading", "ready" or "failed".
    pub state: &'static str,
    /// Bytes read so far.
    pub done: u64,
    /// Bytes in the file.
    pub total: u64,
    /// Seconds the load took, once ready.
    pub seconds: Option<f64>,
    /// Why it failed.
    pub error: Option<String>,
    /// Heap dumps in the log, once ready.
    pub dumps: Option<usize>,
}

/// The logs of a server, by [`LogId`].
pub struct LogSet {
    slots: Vec<LogSlot>,
}

impl LogSet {
    /// A set of logs still to be loaded from these files.
    pub fn from_paths(paths: &[PathBuf]) -> LogSet {
        let slots = paths
            .iter()
            .map(|p| LogSlot {
                name: file_name(p),
                path: Some(p.clone()),
                done: AtomicU64::new(0),
                total: AtomicU64::new(0),
                state: RwLock::new(State::Loading),
            })
            .collect();
        LogSet { slots }
    }

    /// A set of models already loaded (benchmarks and tests), with the
    /// names to show.
    pub fn from_models(models: Vec<(String, Model)>) -> LogSet {
        let slots = models
            .into_iter()
            .map(|(name, model)| {
                let bytes = model.file_bytes();
                LogSlot {
                    name,
                    path: None,
                    done: AtomicU64::new(bytes),
                    total: AtomicU64::new(bytes),
                    state: RwLock::new(State::Ready(Arc::new(LoadedLog::new(model, 0.0)))),
                }
            })
            .collect();
        LogSet { slots }
    }

    /// How many logs.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The loaded log with this id, or why there is none.
    pub fn ready(&self, id: LogId) -> Result<Arc<LoadedLog>, crate::ApiError> {
        let slot = self
            .slots
            .get(id.0 as usize)
            .ok_or_else(|| crate::ApiError::not_found(format!("no log {} (the server shows {})", id.0, self.slots.len())))?;
        let state = slot.state.read().map_err(|_| crate::ApiError::internal("log state lock poisoned"))?;
        match &*state {
            State::Ready(l) => Ok(l.clone()),
            State::Loading => Err(crate::ApiError::unavailable(format!("{} is still loading", slot.name))),
            State::Failed(e) => Err(crate::ApiError::unavailable(format!("{} failed to load: {e}", slot.name))),
        }
    }

    /// What the page is told about every log.
    pub fn statuses(&self) -> Vec<LogStatus> {
        self.slots
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let mut st = LogStatus {
                    id: LogId(k as u32),
                    name: s.name.clone(),
                    state: "loading",
                    done: s.done.load(Ordering::Relaxed),
                    total: s.total.load(Ordering::Relaxed),
                    seconds: None,
                    error: None,
                    dumps: None,
                };
                if let Ok(state) = s.state.read() {
                    match &*state {
                        State::Loading => {}
                        State::Ready(l) => {
                            st.state = "ready";
                            st.seconds = Some(l.seconds);
                            st.dumps = Some(l.model.heap_dumps().dumps().len());
                        }
                        State::Failed(e) => {
                            st.state = "failed";
                            st.error = Some(e.clone());
                        }
                    }
                }
                st
            })
            .collect()
    }

    /// Loads every log not loaded yet, one after the other (each load uses
    /// every core), calling `progress` with (log, bytes done, total) as it
    /// goes; then computes each log's slow whole-log answers.
    pub fn load_all(&self, options: &LoadOptions, mut progress: impl FnMut(LogId, u64, u64)) {
        for (k, slot) in self.slots.iter().enumerate() {
            let id = LogId(k as u32);
            let Some(path) = &slot.path else { continue };
            let outcome = load_one(slot, path, options, |d, t| progress(id, d, t));
            if let Ok(mut state) = slot.state.write() {
                *state = match outcome {
                    Ok(l) => State::Ready(l),
                    Err(e) => State::Failed(e),
                };
            }
        }
        self.warm();
    }

    /// Computes every loaded log's slow whole-log answers (the server does
    /// it once the logs are loaded).
    pub fn warm(&self) {
        for slot in &self.slots {
            let ready = match slot.state.read() {
                Ok(s) => match &*s {
                    State::Ready(l) => Some(l.clone()),
                    _ => None,
                },
                Err(_) => None,
            };
            if let Some(l) = ready {
                l.warm();
            }
        }
    }
}

fn load_one(
    slot: &LogSlot,
    path: &Path,
    options: &LoadOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<Arc<LoadedLog>, String> {
    let source = LogSource::open(path).map_err(|e| e.to_string())?;
    let data = source.bytes();
    let total = data.len() as u64;
    slot.total.store(total, Ordering::Relaxed);
    let start = std::time::Instant::now();
    let model = model::load_with_progress(data, options, |done| {
        slot.done.store(done, Ordering::Relaxed);
        progress(done, total);
    })
    .map_err(|e| e.to_string())?;
    slot.done.store(total, Ordering::Relaxed);
    progress(total, total);
    Ok(Arc::new(LoadedLog::new(model, start.elapsed().as_secs_f64())))
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}
