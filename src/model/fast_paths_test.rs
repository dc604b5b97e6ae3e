//! The simulation's shortcuts against its general rules, and the loader's
//! recorder thread against a builder fed by hand.
//!
//! Random logs with overlapping allocations, moves over garbage and over
//! each other, unaligned addresses and GCs are loaded three ways: by
//! [`crate::model::load`] (recorder on its own thread, all shortcuts), by a
//! [`Builder`] fed by hand (recorder inline), and by a builder whose heap
//! takes none of the shortcuts (`place_fast`, `place_over`,
//! `remove_alone`): every model figure must agree.

use super::{load, Builder, Fate, LoadOptions, Model, ObjectId, SampleId};
use crate::format::{read_all, ChunkOptions};

fn random_log(seed: u64, records: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut s = String::new();
    for t in 1..=4 {
        s += &format!("t {t} 0 T{t}\n");
    }
    let sizes = [8u64, 12, 16, 20, 24, 40, 64, 100, 1500, 5000, 40_000];
    for (k, size) in sizes.iter().enumerate() {
        s += &format!("n {} 1 {} {}\n", k + 1, k % 4 + 1, size);
    }
    let base = 0x10000u64;
    let span = 0x30000u64;
    let mut cursors = [base, base + 0x8000, base + 0x18000];
    let mut tick = 0;
    for _ in 0..records {
        let r = next();
        let pick = |shift: u32, n: u64| (r >> shift) % n;
        match r % 100 {
            0..=59 => {
                let th = pick(8, 3) as usize;
                let st = pick(12, sizes.len() as u64) as usize;
                let size = sizes[st];
                let a = match pick(20, 12) {
                    0 => base + pick(24, span),             // anywhere, maybe unaligned
                    1 => (base + pick(24, span)) & !3,      // anywhere, aligned
                    _ => {
                        let a = cursors[th];
                        cursors[th] += (size + 7) & !7;
                        a
                    }
                };
                s += &format!("! {} 0x{:x} {}\n", 100 + th, a, st + 1);
            }
            60..=77 => {
                // Mostly just below where a thread allocates (its objects).
                let old = if pick(4, 4) == 0 {
                    (base + pick(8, span)) & !3
                } else {
                    cursors[pick(6, 3) as usize].saturating_sub(pick(8, 0x3000)) & !3
                };
                let new = if pick(30, 3) == 0 { (base + pick(34, span)) & !3 } else { old.saturating_sub(pick(34, 0x800) & !3) };
                s += &format!("u 0x{:x} 0x{:x} {}\n", old, new, pick(48, 900));
            }
            78 => s += &format!("v 0x{:x} {}\n", (base + pick(8, span)) & !3, pick(40, 2000)),
            79..=84 => {
                tick += 1 + pick(8, 5);
                s += &format!("i {tick}\n");
            }
            85..=90 => s += &format!("b 1 0 {} 0x{:x} {} {} 0\n", pick(8, 3), base, span, span),
            91..=96 => {
                let g = pick(8, 3);
                if pick(12, 4) == 0 {
                    s += &format!("b 0 0 {g}\n");
                } else {
                    s += &format!("b 0 0 {g} 0x{:x} {} {} 0 0x{:x} 4096 4096 3\n", base, span, span, base + span);
                }
                if pick(16, 2) == 0 {
                    cursors = [base, base + 0x8000, base + 0x18000];
                }
            }
            _ => s += "g 1 0 0\n",
        }
    }
    s
}

fn by_hand(log: &[u8], general_only: bool) -> Result<Model, String> {
    let (records, _) = read_all(log);
    let mut b = Builder::new(log);
    if general_only {
        b.general_rules_only();
    }
    for r in &records {
        b.push(r).map_err(|e| e.to_string())?;
    }
    b.finish().map_err(|e| e.to_string())
}

/// Everything the simulation decides, as text.
fn figures(m: &Model) -> String {
    let a = m.allocations();
    let fates: Vec<Fate> = (0..a.len() as u32).map(|i| a.fate(ObjectId(i))).collect();
    let samples: Vec<_> = (0..m.samples().len() as u32).map(|i| m.samples().get(SampleId(i))).collect();
    let h = m.histograms();
    let stacks: Vec<_> = (0..a.len() as u32).map(|i| a.stack(ObjectId(i))).collect();
    let addresses: Vec<u64> = a.addresses().collect();
    format!(
        "fates {fates:?}\nsamples {samples:?}\ngc ticks {:?}\nlast change {:?}\nallocated {:?}\nrelocated {:?}\nfinal {:?}\nlive {}\ncollections {:?}\nstacks {stacks:?}\naddresses {addresses:?}\ngcs {}",
        m.samples().gc_ticks(),
        m.samples().last_change(),
        h.allocated,
        h.relocated,
        h.final_heap,
        m.live_objects_at_end(),
        m.collections(),
        m.gcs().len(),
    )
}

fn outcome(r: &Result<Model, String>) -> String {
    match r {
        Ok(m) => figures(m),
        Err(e) => format!("error {e}"),
    }
}

#[test]
fn shortcuts_and_the_recorder_thread_change_nothing() {
    let mut loaded = 0;
    let mut moved = 0;
    let mut erased = 0;
    for seed in 1..=60u64 {
        let log = random_log(seed, 2500);
        let log = log.as_bytes();
        let general = by_hand(log, true);
        let fast = by_hand(log, false);
        let options = LoadOptions { chunks: ChunkOptions { chunk_bytes: 4096, threads: Some(2), in_flight: 0 } };
        let pipelined = load(log, &options).map_err(|e| e.to_string());
        let want = outcome(&general);
        assert_eq!(outcome(&fast), want, "seed {seed}: shortcuts");
        assert_eq!(outcome(&pipelined), want, "seed {seed}: recorder thread");
        if let Ok(m) = &general {
            loaded += 1;
            moved += m.histograms().relocated.total();
            erased += m.allocations().fates().filter(|f| matches!(f, Fate::Erased { .. })).count();
        }
    }
    // The logs exercise what they are meant to.
    assert!(loaded >= 30, "{loaded} logs loaded");
    assert!(moved > 1000, "{moved} objects moved");
    assert!(erased > 1000, "{erased} objects erased");
}
