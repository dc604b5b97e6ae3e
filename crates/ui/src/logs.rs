//! The logs a server shows: each loads in the background while the server
//! already answers, and is then kept, with the answers worth keeping, for
//! the server's life.

use crate::answer_cache::AnswerCache;
use crate::dominator_tree::DominatorCache;
use crate::flame_tree::{FlameIndex, FlameTree};
use crate::growing_session::GrowingSession;
use clrprof::format::LogSource;
use clrprof::model::{self, LoadOptions, Model};
use clrprof::query::{ages, lifetime, Ages, Filter, Lifetime};
use clrprof_cache::child::ChildLoader;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// Whether the model was read from the model cache (`clrprof-cache`)
    /// rather than loaded from the log.
    pub from_cache: bool,
    lifetime_all: OnceLock<Lifetime>,
    ages_all: OnceLock<Ages>,
    flame_index: OnceLock<FlameIndex>,
    flame_all: OnceLock<FlameTree>,
    /// The flame trees of the last windows asked for, newest last (zooming
    /// and searching within a window ask for the same tree again).
    flame_windows: Mutex<Vec<(Filter, Arc<FlameTree>)>>,
    /// Dominator trees of the heap dumps, built when first asked for.
    pub dominators: DominatorCache,
    /// The encoded answers of the last requests.
    pub answers: AnswerCache,
}

impl LoadedLog {
    /// A loaded model.
    pub fn new(model: Model, seconds: f64) -> LoadedLog {
        let dumps = model.heap_dumps().dumps().len();
        LoadedLog {
            model,
            seconds,
            from_cache: false,
            lifetime_all: OnceLock::new(),
            ages_all: OnceLock::new(),
            flame_index: OnceLock::new(),
            flame_all: OnceLock::new(),
            flame_windows: Mutex::new(Vec::new()),
            dominators: DominatorCache::new(dumps),
            answers: AnswerCache::default(),
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

    /// The flame graph's shape (computed once).
    pub fn flame_index(&self) -> &FlameIndex {
        self.flame_index.get_or_init(|| FlameIndex::build(&self.model))
    }

    /// The flame graph's tree over the whole log (computed once).
    pub fn flame_all(&self) -> &FlameTree {
        self.flame_all.get_or_init(|| FlameTree::build(&self.model, self.flame_index(), &Filter::all()))
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
        let tree = Arc::new(FlameTree::build(&self.model, self.flame_index(), filter));
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
    /// The collector's session this log is (its file grows while it runs).
    session: Option<String>,
    done: AtomicU64,
    total: AtomicU64,
    state: RwLock<State>,
    /// For a session: whether its record says it is still live.
    live: AtomicBool,
    /// For a session: how many times its log was (re)loaded.
    generation: AtomicU64,
    /// For a session: bytes of the log loaded (up to its last whole line).
    loaded_bytes: AtomicU64,
    /// For a session: when the server last looked at the log and had all
    /// of it loaded (ms since the Unix epoch).
    refreshed_ms: AtomicU64,
    /// For a session: its record's state, as the collector wrote it.
    record_state: Mutex<Option<String>>,
    /// For a live session: its log as read so far (each refresh reads only
    /// what was added).
    growing: Mutex<Option<GrowingSession>>,
    /// For a session: bytes read from its file by the last refresh that
    /// found new lines.
    read_bytes: AtomicU64,
}

impl LogSlot {
    fn new(name: String, path: Option<PathBuf>, session: Option<String>, state: State) -> LogSlot {
        LogSlot {
            name,
            path,
            session,
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            state: RwLock::new(state),
            live: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            loaded_bytes: AtomicU64::new(0),
            refreshed_ms: AtomicU64::new(0),
            record_state: Mutex::new(None),
            growing: Mutex::new(None),
            read_bytes: AtomicU64::new(0),
        }
    }

    fn set_state(&self, s: State) {
        if let Ok(mut state) = self.state.write() {
            *state = s;
        }
    }

    fn is_ready(&self) -> bool {
        self.state.read().is_ok_and(|s| matches!(&*s, State::Ready(_)))
    }
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
    /// Whether the model was read from the model cache, once ready.
    pub from_cache: bool,
    /// Why it failed.
    pub error: Option<String>,
    /// Heap dumps in the log, once ready.
    pub dumps: Option<usize>,
    /// For a sampled trace (`.nettrace`), once ready: which figures are
    /// estimates and how they were made (every view says so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimates: Option<clrprof::query::Estimates>,
    /// For a trace whose runtime dropped events, once ready: how many, and
    /// what that means (every view says so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<clrprof::query::Incomplete>,
    /// Why the file's allocations are unknown (a `.gcdump`, a trace without
    /// allocation events, a log recorded without them), once ready: every
    /// view says so, and allocation figures are "unknown", never 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocations_unknown: Option<String>,
    /// The file's format when it is not a CLRProfiler log ("NetTrace
    /// (Trace object version 4)", "gcdump ..."), once ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The collector's session this log is, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionStatus>,
}

/// What the page is told about a session's log: whether it is still
/// growing and when it was last brought up to date.
#[derive(Clone, Debug, Serialize)]
pub struct SessionStatus {
    /// The session's name.
    pub name: String,
    /// Whether the session is live (the collector still receives it).
    pub live: bool,
    /// The record's state (`live`, `ended`, `cut`).
    pub record_state: Option<String>,
    /// How many times the log was loaded (1 once opened; each refresh
    /// that found new lines adds one).
    pub generation: u64,
    /// Bytes of the log loaded (whole lines).
    pub loaded_bytes: u64,
    /// When the server last had the whole log loaded (ms since the Unix
    /// epoch; 0: not yet).
    pub refreshed_ms: u64,
    /// Bytes the last refresh that found new lines read from the file:
    /// while the session is live, only what the collector had added since
    /// the refresh before (the whole log the first time, or when the file
    /// no longer held what was read).
    pub read_bytes: u64,
}

/// The logs of a server, by [`LogId`]: those given at start, then the
/// collector's sessions in the order they were opened.
pub struct LogSet {
    slots: RwLock<Vec<Arc<LogSlot>>>,
    /// Held while sessions are refreshed (one refresh at a time).
    refreshing: Mutex<()>,
    /// Loads each file in a child process under its memory budget (the
    /// memory rule), when set: a file that needs more fails alone.
    loader: Option<ChildLoader>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl LogSet {
    /// A set of logs still to be loaded from these files.
    pub fn from_paths(paths: &[PathBuf]) -> LogSet {
        let slots = paths.iter().map(|p| Arc::new(LogSlot::new(file_name(p), Some(p.clone()), None, State::Loading))).collect();
        LogSet { slots: RwLock::new(slots), refreshing: Mutex::new(()), loader: None }
    }

    /// A set of models already loaded (benchmarks and tests), with the
    /// names to show.
    pub fn from_models(models: Vec<(String, Model)>) -> LogSet {
        let slots = models
            .into_iter()
            .map(|(name, model)| {
                let bytes = model.file_bytes();
                let slot = LogSlot::new(name, None, None, State::Ready(Arc::new(LoadedLog::new(model, 0.0))));
                slot.done.store(bytes, Ordering::Relaxed);
                slot.total.store(bytes, Ordering::Relaxed);
                Arc::new(slot)
            })
            .collect();
        LogSet { slots: RwLock::new(slots), refreshing: Mutex::new(()), loader: None }
    }

    /// Loads each file in a child process under its memory budget
    /// ([`clrprof_cache::child`]); `None`: in this process.
    pub fn with_child_loader(mut self, loader: Option<ChildLoader>) -> LogSet {
        self.loader = loader;
        self
    }

    fn all(&self) -> Vec<Arc<LogSlot>> {
        self.slots.read().map(|s| s.clone()).unwrap_or_default()
    }

    fn slot(&self, id: LogId) -> Option<Arc<LogSlot>> {
        self.slots.read().ok()?.get(id.0 as usize).cloned()
    }

    /// How many logs.
    pub fn len(&self) -> usize {
        self.slots.read().map_or(0, |s| s.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The loaded log with this id, or why there is none.
    pub fn ready(&self, id: LogId) -> Result<Arc<LoadedLog>, crate::ApiError> {
        let slot = self
            .slot(id)
            .ok_or_else(|| crate::ApiError::not_found(format!("no log {} (the server shows {})", id.0, self.len())))?;
        let state = slot.state.read().map_err(|_| crate::ApiError::internal("log state lock poisoned"))?;
        match &*state {
            State::Ready(l) => Ok(l.clone()),
            State::Loading => Err(crate::ApiError::unavailable(format!("{} is still loading", slot.name))),
            State::Failed(e) => Err(crate::ApiError::unavailable(format!("{} failed to load: {e}", slot.name))),
        }
    }

    /// The id of the log of session `name`, if it was opened.
    pub fn session_log(&self, name: &str) -> Option<LogId> {
        self.all().iter().position(|s| s.session.as_deref() == Some(name)).map(|k| LogId(k as u32))
    }

    /// Adds the log of the collector's session `name` (its file is
    /// `path`), to be loaded by [`LogSet::refresh_sessions`]; a session
    /// added before keeps its id. Gives the id and whether it is new.
    pub fn add_session(&self, name: &str, path: PathBuf) -> Result<(LogId, bool), crate::ApiError> {
        let mut slots = self.slots.write().map_err(|_| crate::ApiError::internal("log list lock poisoned"))?;
        if let Some(k) = slots.iter().position(|s| s.session.as_deref() == Some(name)) {
            return Ok((LogId(k as u32), false));
        }
        // The stored file's name: `<session>.log`, or `<session>.nettrace`
        // for a sampled session.
        let shown = path.file_name().map_or_else(|| format!("{name}.log"), |f| f.to_string_lossy().into_owned());
        slots.push(Arc::new(LogSlot::new(shown, Some(path), Some(name.to_string()), State::Loading)));
        Ok((LogId(slots.len() as u32 - 1), true))
    }

    /// What the page is told about every log.
    pub fn statuses(&self) -> Vec<LogStatus> {
        self.all()
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
                    from_cache: false,
                    error: None,
                    dumps: None,
                    estimates: None,
                    incomplete: None,
                    allocations_unknown: None,
                    format: None,
                    session: s.session.as_ref().map(|name| SessionStatus {
                        name: name.clone(),
                        live: s.live.load(Ordering::Relaxed),
                        record_state: s.record_state.lock().ok().and_then(|r| r.clone()),
                        generation: s.generation.load(Ordering::Relaxed),
                        loaded_bytes: s.loaded_bytes.load(Ordering::Relaxed),
                        refreshed_ms: s.refreshed_ms.load(Ordering::Relaxed),
                        read_bytes: s.read_bytes.load(Ordering::Relaxed),
                    }),
                };
                if let Ok(state) = s.state.read() {
                    match &*state {
                        State::Loading => {}
                        State::Ready(l) => {
                            st.state = "ready";
                            st.seconds = Some(l.seconds);
                            st.from_cache = l.from_cache;
                            st.dumps = Some(l.model.heap_dumps().dumps().len());
                            st.estimates = clrprof::query::estimates(&l.model);
                            st.incomplete = clrprof::query::incomplete(&l.model);
                            st.allocations_unknown = clrprof::query::allocations_unknown(&l.model);
                            st.format = l.model.imported().map(|f| f.format.clone());
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

    /// Loads every log given at start not loaded yet, one after the other
    /// (each load uses every core), calling `progress` with (log, bytes
    /// done, total) as it goes; then computes each log's slow whole-log
    /// answers. Sessions' logs are loaded by [`LogSet::refresh_sessions`].
    pub fn load_all(&self, options: &LoadOptions, mut progress: impl FnMut(LogId, u64, u64)) {
        for (k, slot) in self.all().iter().enumerate() {
            let id = LogId(k as u32);
            if slot.session.is_some() {
                continue;
            }
            let Some(path) = &slot.path else { continue };
            if !matches!(slot.state.read().as_deref(), Ok(State::Loading)) {
                continue;
            }
            let outcome = load_one(slot, path, options, self.loader.as_ref(), |d, t| progress(id, d, t));
            slot.set_state(match outcome {
                Ok(l) => State::Ready(l),
                Err(e) => State::Failed(e),
            });
        }
        self.warm();
    }

    /// Computes every loaded log's slow whole-log answers (the server does
    /// it once the logs are loaded), but those of sessions still live
    /// (their model is replaced at each refresh).
    pub fn warm(&self) {
        for slot in self.all() {
            if slot.live.load(Ordering::Relaxed) {
                continue;
            }
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

    /// Brings every opened session's log up to date: a session not loaded
    /// yet is loaded; a live session whose log has grown by whole lines
    /// reads the lines added (up to its last whole line: the collector
    /// writes whole lines only; see `growing_session.rs`), and its new model
    /// replaces the previous one when done (requests are answered from
    /// the previous one meanwhile). A session that has ended reads the
    /// rest of its log and is saved in the model cache.
    /// `state_of` gives a session's record state (`live`, `ended`, `cut`).
    /// Gives the ids of the logs (re)loaded.
    pub fn refresh_sessions(&self, options: &LoadOptions, state_of: impl Fn(&str) -> Option<String>) -> Vec<LogId> {
        let _one = self.refreshing.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = Vec::new();
        for (k, slot) in self.all().iter().enumerate() {
            let (Some(name), Some(path)) = (&slot.session, &slot.path) else { continue };
            let record = state_of(name);
            let live = record.as_deref() == Some("live");
            // A trace is read whole each time (its reader stops at the
            // last complete block); a log up to its last whole line.
            let trace = path.extension().is_some_and(|e| e == "nettrace");
            let whole = match if trace { std::fs::metadata(path).map(|m| m.len()) } else { clrprof_collect::record::whole_lines_len(path) } {
                Ok(n) => n,
                Err(e) => {
                    if !slot.is_ready() {
                        slot.set_state(State::Failed(format!("cannot read {}: {e}", path.display())));
                    }
                    continue;
                }
            };
            let loaded = slot.loaded_bytes.load(Ordering::Relaxed);
            if slot.is_ready() && whole == loaded {
                slot.live.store(live, Ordering::Relaxed);
                if let Ok(mut r) = slot.record_state.lock() {
                    *r = record;
                }
                slot.refreshed_ms.store(now_ms(), Ordering::Relaxed);
                continue;
            }
            // A session that no longer grows (ended or cut, its file all
            // whole lines) is a finished log: loaded through the model
            // cache, so that it opens at once the next time (and for the
            // commands). A live one is read up to its last whole line.
            let finished = !live && std::fs::metadata(path).is_ok_and(|m| m.len() == whole);
            let loaded = if finished {
                finish_session(slot, path, whole, options, self.loader.as_ref())
            } else if trace {
                read_growing_trace(slot, path, whole, options, self.loader.as_ref())
            } else {
                read_growing(slot, path, whole, options)
            };
            match loaded {
                Ok(l) => {
                    slot.set_state(State::Ready(l));
                    slot.loaded_bytes.store(whole, Ordering::Relaxed);
                    slot.generation.fetch_add(1, Ordering::Relaxed);
                    slot.live.store(live, Ordering::Relaxed);
                    if let Ok(mut r) = slot.record_state.lock() {
                        *r = record;
                    }
                    slot.refreshed_ms.store(now_ms(), Ordering::Relaxed);
                    changed.push(LogId(k as u32));
                }
                Err(e) if !slot.is_ready() => slot.set_state(State::Failed(e)),
                // A refresh that failed keeps the last model; the next
                // one tries again.
                Err(_) => {}
            }
        }
        changed
    }
}

fn load_one(
    slot: &LogSlot,
    path: &Path,
    options: &LoadOptions,
    loader: Option<&ChildLoader>,
    mut progress: impl FnMut(u64, u64),
) -> Result<Arc<LoadedLog>, String> {
    let loaded = through_cache(slot, path, || {
        if let Some(loader) = loader {
            let total = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?.len();
            slot.total.store(total, Ordering::Relaxed);
            return loader.load(path, None);
        }
        let source = LogSource::open(path).map_err(|e| e.to_string())?;
        let data = source.bytes();
        let total = data.len() as u64;
        slot.total.store(total, Ordering::Relaxed);
        // A trace or a .gcdump is imported first (its progress is the
        // made log's, shown once at the end).
        if let Some(loaded) = model::load_foreign(data, options, |_| {}) {
            return loaded.map_err(|e| e.to_string());
        }
        model::load_with_progress(data, options, |done| {
            slot.done.store(done, Ordering::Relaxed);
            progress(done, total);
        })
        .map_err(|e| e.to_string())
    })?;
    let total = slot.total.load(Ordering::Relaxed);
    progress(total, total);
    Ok(loaded)
}

/// A log's model from the model cache, or from `load` (then saved in the
/// cache), as for the commands (`clrprof-cache`): a log whose model a
/// command saved opens at once.
fn through_cache(slot: &LogSlot, path: &Path, load: impl FnOnce() -> Result<Model, String>) -> Result<Arc<LoadedLog>, String> {
    let start = std::time::Instant::now();
    let got = clrprof_cache::load_through(Some(path), load, |m| m)?;
    let (model, from_cache) = match got {
        clrprof_cache::Got::Cached(m) => (*m, true),
        clrprof_cache::Got::Loaded(m) => (m, false),
    };
    let total = if from_cache { model.file_bytes() } else { slot.total.load(Ordering::Relaxed) };
    slot.total.store(total, Ordering::Relaxed);
    slot.done.store(total, Ordering::Relaxed);
    let mut l = LoadedLog::new(model, start.elapsed().as_secs_f64());
    l.from_cache = from_cache;
    Ok(Arc::new(l))
}

/// A live session's log, brought up to its first `upto` bytes (whole
/// lines) by reading what was added since the last refresh.
fn read_growing(slot: &LogSlot, path: &Path, upto: u64, options: &LoadOptions) -> Result<Arc<LoadedLog>, String> {
    let start = std::time::Instant::now();
    let mut growing = slot.growing.lock().map_err(|_| "a refresh of this session failed midway".to_string())?;
    let g = growing.get_or_insert_with(GrowingSession::new);
    slot.total.store(upto, Ordering::Relaxed);
    let read = g.catch_up(path, upto, options, |done| slot.done.store(done, Ordering::Relaxed))?;
    let model = g.model()?;
    slot.read_bytes.store(read, Ordering::Relaxed);
    Ok(Arc::new(LoadedLog::new(model, start.elapsed().as_secs_f64())))
}

/// A live session's trace (`.nettrace`, streamed by `clrprof record
/// --sampled`), read again whole up to its first `upto` bytes: the import
/// needs every method event before the allocations it names, and a
/// sampled trace is small (its events are samples). The reader stops at
/// the last complete block.
fn read_growing_trace(
    slot: &LogSlot,
    path: &Path,
    upto: u64,
    options: &LoadOptions,
    loader: Option<&ChildLoader>,
) -> Result<Arc<LoadedLog>, String> {
    let start = std::time::Instant::now();
    if let Some(loader) = loader {
        slot.total.store(upto, Ordering::Relaxed);
        let model = loader.load(path, Some(upto))?;
        slot.done.store(upto, Ordering::Relaxed);
        slot.read_bytes.store(upto, Ordering::Relaxed);
        return Ok(Arc::new(LoadedLog::new(model, start.elapsed().as_secs_f64())));
    }
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let data = &data[..(upto as usize).min(data.len())];
    slot.total.store(data.len() as u64, Ordering::Relaxed);
    let model = match model::load_foreign(data, options, |_| {}) {
        Some(m) => m.map_err(|e| e.to_string())?,
        None => return Err(format!("{} is not a NetTrace trace", path.display())),
    };
    slot.done.store(data.len() as u64, Ordering::Relaxed);
    slot.read_bytes.store(data.len() as u64, Ordering::Relaxed);
    Ok(Arc::new(LoadedLog::new(model, start.elapsed().as_secs_f64())))
}

/// A session that has ended (its file all whole lines, `len` bytes): the
/// rest of the log read after what was read while it ran (or the whole
/// log loaded, when it was never opened live), saved in the model cache.
fn finish_session(
    slot: &LogSlot,
    path: &Path,
    len: u64,
    options: &LoadOptions,
    loader: Option<&ChildLoader>,
) -> Result<Arc<LoadedLog>, String> {
    let growing = slot.growing.lock().ok().and_then(|mut g| g.take());
    let Some(mut g) = growing else {
        let loaded = load_one(slot, path, options, loader, |_, _| {})?;
        slot.read_bytes.store(len, Ordering::Relaxed);
        return Ok(loaded);
    };
    slot.total.store(len, Ordering::Relaxed);
    let read = std::cell::Cell::new(0);
    let loaded = through_cache(slot, path, || {
        read.set(g.catch_up(path, len, options, |done| slot.done.store(done, Ordering::Relaxed))?);
        g.model_at_end()
    })?;
    slot.read_bytes.store(read.get(), Ordering::Relaxed);
    Ok(loaded)
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}
