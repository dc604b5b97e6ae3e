//! Load a log (plain, `.gz` or `.zst`; `-` for standard input) and print
//! CLRProfiler's Summary: the README's quick start, twenty lines over the
//! library. A binary of the core package rather than an example, so that
//! building it builds the library alone (an example builds the
//! dev-dependencies too: criterion, proptest and the generator).
//!
//! ```text
//! cargo run --release -p clrprof --bin clrprof-summary -- corpus/all-kinds.log
//! ```
use clrprof::model::{load_path, LoadOptions};
use clrprof::query::summary;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: clrprof-summary LOG")?;
    let model = load_path(path.as_ref(), &LoadOptions::default())?;
    let s = summary(&model);
    // `None` is what CLRProfiler shows as "Unknown".
    let shown = |v: Option<u64>| v.map_or("Unknown".to_string(), |v| v.to_string());
    println!("allocated bytes     {}", s.allocated_bytes);
    println!("relocated bytes     {}", s.relocated_bytes);
    println!("final heap bytes    {}", s.final_heap_bytes);
    println!("collections         gen0 {}  gen1 {}  gen2 {}", s.gen0_collections, s.gen1_collections, s.gen2_collections);
    println!("induced collections {}", shown(s.induced_collections));
    println!("gen0 heap bytes     {}", shown(s.gen0_heap_bytes));
    println!("large object heap   {}", shown(s.loh_bytes));
    println!("objects finalized   {}", shown(s.objects_finalized));
    println!("handles created     {}", shown(s.handles_created));
    println!("heap dumps          {}", s.heap_dumps);
    println!("comments            {}", s.comments);
    println!("warnings            {}", model.diagnostics().total());
    Ok(())
}
