//! The functions that allocated the most bytes (inclusive) in a time
//! window: `top_functions LOG FROM_MS TO_MS [N]`.
//!
//! ```text
//! cargo run --release --example top_functions -- ../shared/corpus/reference/gen-small.log 100 300 5
//! ```
use clrprof::model::{load_path, LoadOptions};
use clrprof::query::{by_function, Filter, SortBy, TimeWindow};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, from, to, rest @ ..] = &args[..] else {
        return Err("usage: top_functions LOG FROM_MS TO_MS [N]".into());
    };
    let top: usize = rest.first().map(|n| n.parse()).transpose()?.unwrap_or(10);
    let model = load_path(path.as_ref(), &LoadOptions::default())?;
    let window = TimeWindow::Millis { from: Some(from.parse()?), to: Some(to.parse()?) };
    // A filter is resolved against the model once (ms -> ticks, comments,
    // thread ids); every query then takes it.
    let filter = Filter::resolve(&model, &window, &[])?;
    println!("{:>12} {:>12}  function", "inclusive", "exclusive");
    for row in by_function(&model, &filter, SortBy::Inclusive).iter().take(top) {
        println!("{:>12} {:>12}  {}", row.figures.inclusive_bytes, row.figures.exclusive_bytes, row.name);
    }
    Ok(())
}
