//! The packed sample table against a plain `Vec` of unpacked records:
//! whatever is pushed comes back, by id and in order, for every mix of
//! record forms (runs, small and large deltas, explicit ticks and types).

use clrprof::format::TypeId;
use clrprof::model::{PackedSamples, Sample, SampleId, TickIndex};
use proptest::prelude::*;

/// One step of a sample sequence, turned into a valid sample by `build`.
#[derive(Clone, Debug)]
enum Step {
    /// Repeats the previous sample `n` times over the following grains (as
    /// a removal or a large object does).
    Run(u16),
    /// A new sample.
    One { type_id: i32, dtick: u32, alloc: u8, prev: u8, back: u32 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u16..200).prop_map(Step::Run),
        (
            prop_oneof![0i32..20, 0i32..2000, any::<i32>()],
            prop_oneof![Just(0u32), 0u32..5, 0u32..100_000, any::<u32>()],
            0u8..4,
            0u8..4,
            prop_oneof![1u32..100, 1u32..100_000, any::<u32>()],
        )
            .prop_map(|(type_id, dtick, alloc, prev, back)| Step::One { type_id, dtick, alloc, prev, back }),
    ]
}

fn build(steps: &[Step]) -> Vec<Sample> {
    let mut out: Vec<Sample> = Vec::new();
    let mut tick: u32 = 0;
    for s in steps {
        match *s {
            Step::Run(n) => {
                let Some(&last) = out.last() else { continue };
                for k in 0..n as u32 {
                    out.push(Sample { prev: last.prev.map(|p| SampleId(p.0 + k + 1)), ..last });
                }
            }
            Step::One { type_id, dtick, alloc, prev, back } => {
                tick = tick.saturating_add(dtick);
                let i = out.len() as u32;
                let alloc = match alloc {
                    0 => TickIndex(tick),
                    1 => TickIndex(0),
                    2 => TickIndex(tick / 2),
                    _ => TickIndex(back),
                };
                let prev = match prev {
                    0 => None,
                    _ if i == 0 => None,
                    1 => Some(SampleId(i - 1)),
                    2 => Some(SampleId(i - 1 - (back % i))),
                    _ => out.last().and_then(|l| l.prev).map(|p| SampleId(p.0 + 1)).filter(|p| p.0 < i),
                };
                out.push(Sample { type_id: TypeId(type_id), change: TickIndex(tick), alloc, prev });
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn round_trip(steps in proptest::collection::vec(step(), 0..400)) {
        let want = build(&steps);
        let mut packed = PackedSamples::new();
        for (i, s) in want.iter().enumerate() {
            prop_assert_eq!(packed.push(*s).expect("push"), SampleId(i as u32));
        }
        packed.finish();
        prop_assert_eq!(packed.len(), want.len());
        for (i, s) in want.iter().enumerate() {
            prop_assert_eq!(packed.get(SampleId(i as u32)), Some(*s), "sample {}", i);
        }
        let all: Vec<Sample> = packed.iter().map(|(_, s)| s).collect();
        prop_assert_eq!(&all, &want);
        prop_assert_eq!(packed.get(SampleId(want.len() as u32)), None);
    }
}

/// Typical histories pack to well under 6 bytes per sample.
#[test]
fn typical_history_is_small() {
    let mut steps = Vec::new();
    for k in 0..2000u32 {
        // a large object over 40 grains, then small objects crossing grains
        steps.push(Step::One { type_id: 7, dtick: 1, alloc: 0, prev: 2, back: 1000 + k });
        steps.push(Step::Run(39));
        for j in 0..20u32 {
            steps.push(Step::One { type_id: (j % 30) as i32, dtick: 0, alloc: 0, prev: 3, back: 5 });
        }
        // a GC frees 100 grains
        steps.push(Step::One { type_id: 0, dtick: 1, alloc: 1, prev: 2, back: 60_000 });
        steps.push(Step::Run(99));
    }
    let want = build(&steps);
    let mut packed = PackedSamples::new();
    for s in &want {
        packed.push(*s).expect("push");
    }
    packed.finish();
    let per_sample = packed.heap_bytes() as f64 / want.len() as f64;
    assert!(per_sample < 6.0, "{per_sample} bytes per sample");
}
