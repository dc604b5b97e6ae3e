//! Marks the tests whose prerequisites are missing as ignored, so that
//! cargo's summary counts them as ignored rather than passed (see
//! `tests/common/prereqs.rs`): `no_dotnet` (the .NET runtimes
//! `scripts/setup-dotnet.sh` installs), `no_browser` (node, Chromium and
//! `crates/ui/browser/node_modules`, from `scripts/setup-ui-tests.sh`),
//! `no_reference_corpus` and `no_eventpipe_corpus` (the corpora in
//! `../shared/corpus`). The tests carry `#[cfg_attr(no_dotnet, ignore =
//! ...)]` and the like.
//!
//! Under `CI=true` no cfg is set: the tests run and fail there when
//! something is missing. `cargo test -- --ignored` runs them anyway (they
//! then say SKIPPED and why).
//!
//! Cargo reruns this script when `CI` or `CLRPROF_DOTNET_VENV` changes or
//! a prerequisite found changes or goes; a first install, where nothing
//! existed to watch, is noticed after `touch crates/cli/build.rs`.

#[path = "../../tests/common/prereqs.rs"]
mod prereqs;

fn main() {
    prereqs::watch_basics();
    prereqs::mark("no_dotnet", prereqs::dotnet_runtimes());
    prereqs::mark("no_browser", prereqs::browser());
    prereqs::mark("no_reference_corpus", prereqs::reference_corpus());
    prereqs::mark("no_eventpipe_corpus", prereqs::eventpipe_corpus());
}
