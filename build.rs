//! Marks the tests that read the corpora beside the repository
//! (`../shared/corpus/reference`, `../shared/corpus/eventpipe`) as ignored
//! when a corpus is absent, outside CI: the `no_reference_corpus` and
//! `no_eventpipe_corpus` cfgs (see `tests/common/prereqs.rs`).

#[path = "tests/common/prereqs.rs"]
mod prereqs;

fn main() {
    prereqs::watch_basics();
    prereqs::mark("no_reference_corpus", prereqs::reference_corpus());
    prereqs::mark("no_eventpipe_corpus", prereqs::eventpipe_corpus());
}
