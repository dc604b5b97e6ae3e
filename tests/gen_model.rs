//! The project's model (CLRProfiler's reader, reproduced) must find in a
//! generated log exactly the Summary the generator's truth predicts.

use clrprof_gen::{generate, GenOptions, PointerBits, Preset};
use serde_json::Value;

fn check(opts: &GenOptions) {
    let (log, truth) = generate(opts, Vec::new()).expect("generate");
    let model = clrprof::model::load(&log, &Default::default()).expect("load the generated log");
    let found = serde_json::to_value(clrprof::query::summary::summary(&model)).expect("summary as JSON");
    let expected = serde_json::to_value(&truth.summary_as_clrprofiler).expect("truth as JSON");
    let (Value::Object(found), Value::Object(expected)) = (found, expected) else {
        panic!("both summaries are JSON objects")
    };
    assert_eq!(expected.len(), 18);
    for (key, want) in &expected {
        let got = found.get(key).unwrap_or(&Value::Null);
        assert_eq!(got, want, "{key} (preset {}, seed {})", opts.preset, opts.seed);
    }
}

#[test]
fn tiny_summary_equals_the_truth() {
    check(&Preset::Tiny.options());
}

#[test]
fn small_summary_equals_the_truth() {
    check(&Preset::Small.options());
}

#[test]
fn variants_equal_the_truth() {
    let base = GenOptions { objects: 40_000, ..Preset::Tiny.options() };
    check(&GenOptions { calls: true, seed: 3, ..base.clone() });
    check(&GenOptions { pointer_bits: PointerBits::Bits32, seed: 4, ..base.clone() });
    // Ticks that CLRProfiler reads as negative at first, then wrap.
    check(&GenOptions { tick_start: (1 << 32) - 25, seed: 5, ..base.clone() });
    check(&GenOptions { tick_start: (1 << 31) - 25, seed: 6, ..base.clone() });
    check(&GenOptions { gcs: 0, induced: 0, heap_dumps: 0, handles_per_million: 0.0, seed: 7, ..base });
}
