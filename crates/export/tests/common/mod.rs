//! What the export tests share: the logs they export, and finding the
//! consumers' own software (Go's pprof, Node with the `speedscope` package
//! and Ajv, Python with DuckDB), which `scripts/setup-export-tests.sh`
//! installs. Under `CI=true` a missing consumer or corpus fails the test;
//! elsewhere the test is counted as ignored (`crates/export/build.rs` sets
//! `no_go`, `no_duckdb` and the like, which the tests' `cfg_attr(...,
//! ignore)` read), and run with `--ignored` it says SKIPPED and returns.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The crate's folder.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `Some(v)`, or, when `v` is `None`: a failure under `CI=true`, a visible
/// SKIPPED line otherwise.
pub fn required<T>(what: &str, v: Option<T>) -> Option<T> {
    if v.is_none() {
        let msg = format!("{what} is missing (scripts/setup-export-tests.sh installs it)");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true: {msg}");
        }
        eprintln!("SKIPPED: {msg}");
    }
    v
}

/// A log to export.
pub struct Log {
    /// Its name in messages.
    pub name: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// The reference corpus: `../shared/corpus/reference` beside the
/// repository (or `$CLRPROF_SHARED/corpus/reference`).
fn reference_dir() -> Option<PathBuf> {
    let mut candidates = vec![repo().join("../shared/corpus/reference")];
    if let Some(s) = std::env::var_os("CLRPROF_SHARED") {
        candidates.insert(0, PathBuf::from(s).join("corpus/reference"));
    }
    candidates.into_iter().find(|d| d.is_dir())
}

/// The logs every consumer test reads: `gen-small` and
/// `real-CLRProfilerTestBedMk1` from the reference corpus, and a
/// generated log with three heap dumps. `None` when the corpus is missing
/// outside CI.
pub fn logs() -> Option<Vec<Log>> {
    let dir = required("the reference corpus (../shared/corpus/reference)", reference_dir())?;
    let mut logs = Vec::new();
    for name in ["gen-small", "real-CLRProfilerTestBedMk1"] {
        let path = dir.join(format!("{name}.log"));
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        logs.push(Log { name: name.to_string(), data });
    }
    logs.push(Log { name: "gen small with 3 heap dumps".to_string(), data: dumps_log() });
    Some(logs)
}

/// The generator's small preset with three heap dumps.
pub fn dumps_log() -> Vec<u8> {
    let mut o = clrprof_gen::Preset::Small.options();
    o.heap_dumps = 3;
    let (data, _) = clrprof_gen::generate(&o, Vec::new()).expect("generate");
    data
}

/// Loads a log (or a trace: its sampled allocations, weighted).
pub fn load(log: &Log) -> clrprof::model::Model {
    if let Some(m) = clrprof::model::load_foreign(&log.data, &Default::default(), |_| {}) {
        return m.unwrap_or_else(|e| panic!("{}: {e}", log.name));
    }
    clrprof::model::load(&log.data, &Default::default()).unwrap_or_else(|e| panic!("{}: {e}", log.name))
}

/// A real .NET Core 3.0 EventPipe trace from the corpus
/// (`../shared/corpus/eventpipe`): the exports must carry its sampled
/// allocations. `None` when the corpus is missing outside CI.
pub fn trace_log() -> Option<Log> {
    let dir = reference_dir().map(|d| d.join("../eventpipe"));
    let path = required("the EventPipe corpus (../shared/corpus/eventpipe)", dir.filter(|d| d.is_dir()))?
        .join("eventpipe-dotnetcore3.0-win-x64-objver4.nettrace");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(Log { name: "a .NET Core 3.0 trace".to_string(), data })
}

/// Whether a command runs and exits 0.
fn runs(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd).args(args).output().is_ok_and(|o| o.status.success())
}

/// Go, for `go tool pprof`.
pub fn go() -> Option<()> {
    required("go (Debian golang-go)", runs("go", &["version"]).then_some(()))
}

/// The speedscope checker (`tests/speedscope/validate.js`), with Node
/// and its `node_modules` (npm ci) in place.
pub fn speedscope_validator() -> Option<PathBuf> {
    let dir = crate_dir().join("tests/speedscope");
    let ok = runs("node", &["--version"]) && dir.join("node_modules/speedscope/package.json").is_file()
        && dir.join("node_modules/ajv/package.json").is_file();
    required("node with tests/speedscope/node_modules (npm ci)", ok.then(|| dir.join("validate.js")))
}

/// A Python that imports duckdb: `$CLRPROF_EXPORT_VENV/bin/python`, or
/// `target/export-venv/bin/python` in the repository.
pub fn duckdb_python() -> Option<PathBuf> {
    let venv = std::env::var_os("CLRPROF_EXPORT_VENV").map(PathBuf::from).unwrap_or_else(|| repo().join("target/export-venv"));
    let python = venv.join("bin/python");
    let ok = runs(python.to_str().unwrap_or(""), &["-c", "import duckdb"]);
    required(&format!("python with duckdb ({})", python.display()), ok.then_some(python))
}

/// Runs a command, failing the test with its output when it fails;
/// returns standard output.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}\n{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
