//! The simulation's shortcuts against its general rules, and the loader's
//! recorder thread against a builder fed by hand.
//!
//! Random logs with overlapping allocations, moves over garbage and over
//! each other, unaligned addresses and GCs are loaded three ways: by
//! [`crate::model::load`] (recorder on its own thread, all shortcuts), by a
//! [`Builder`] fed by hand (recorder inline), and by a builder whose heap
//! takes none of the shortcuts (`place_fast`, `place_over`,
//! `remove_alone`, a `u` record's objects moved in one step by `move_run`,
//! deaths stamped without the large-object lookup): every model figure
//! must agree. Compacting logs (plugs sliding over garbage or moving to
//! free space, with header damage and hostile ranges) make `move_run` take
//! both its sides.

use super::heap::Shortcuts;
use super::test_rng::xorshift;
use super::{load, Builder, Fate, LoadOptions, Model, ObjectId, SampleId};
use crate::format::{read_all, ChunkOptions};

fn random_log(seed: u64, records: usize) -> String {
    let mut next = xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
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

/// A log shaped like a compacting collector's: threads allocate
/// contiguously; at each GC some objects survive, and the runs of
/// contiguous survivors (plugs) move down within their region (sliding over
/// garbage or onto free space) or to another region (above or below);
/// some allocations overlap the previous one (header damage), some GCs
/// report their plugs out of address order, and some moves are hostile (a plug's range cut short or widened, shifted by a
/// word, unaligned, overlapping the previous destination).
fn compacting_log(seed: u64, gcs: usize) -> String {
    let mut next = xorshift(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let mut s = String::new();
    for t in 1..=3 {
        s += &format!("t {t} 0 T{t}\n");
    }
    let sizes = [12u64, 16, 24, 24, 32, 40, 64, 100, 8, 1000, 3000];
    for (k, size) in sizes.iter().enumerate() {
        s += &format!("n {} 1 {} {}\n", k + 1, k % 4 + 1, size);
    }
    // Three allocation regions, two older-generation regions (one below,
    // one above), each region 64 KB.
    let region = |r: u64| 0x40000u64 + r * 0x10000;
    let mut older = [region(3), region(4)];
    let mut tick = 0u64;
    for _ in 0..gcs {
        let mut objects: Vec<(u64, u64)> = Vec::new();
        let mut cursors = [region(0), region(1), region(2)];
        let count = 20 + next() % 200;
        for _ in 0..count {
            let r = next();
            let th = (r % 3) as usize;
            let st = ((r >> 8) % sizes.len() as u64) as usize;
            if cursors[th] + sizes[st] >= region(th as u64 + 1) {
                continue;
            }
            if r % 23 == 0 {
                // A header written one or two words after another one's.
                if let Some(&(a, _)) = objects.last() {
                    let a = a + 4 * (1 + (r >> 5) % 2);
                    s += &format!("! {} 0x{:x} {}\n", th + 1, a, st + 1);
                    objects.push((a, sizes[st]));
                    continue;
                }
            }
            s += &format!("! {} 0x{:x} {}\n", th + 1, cursors[th], st + 1);
            objects.push((cursors[th], sizes[st]));
            cursors[th] += (sizes[st] + 3) & !3;
            if r % 17 == 0 {
                tick += 1;
                s += &format!("i {tick}\n");
            }
        }
        objects.sort();
        tick += 1;
        let g = next() % 3;
        s += &format!("i {tick}\nb 1 0 {g} 0x{:x} {} {} 0\n", region(0), 0x50000, 0x50000);
        // Plugs: runs of contiguous survivors.
        let mut plugs: Vec<(u64, u64)> = Vec::new();
        for &(a, size) in &objects {
            if next() % 3 == 0 {
                continue;
            }
            let len = (size + 3) & !3;
            match plugs.last_mut() {
                Some(p) if p.0 + p.1 == a && next() % 4 != 0 => p.1 += len,
                _ => plugs.push((a, len)),
            }
        }
        if next() % 3 == 0 {
            // Out of address order.
            plugs.reverse();
        }
        let mut slide = [region(0), region(1), region(2)];
        for &(a, len) in &plugs {
            let r = next();
            let home = ((a - region(0)) / 0x10000) as usize;
            let new = match r % 8 {
                0..=2 => {
                    // Slide down within the region.
                    let n = slide[home].min(a);
                    slide[home] = n + len;
                    n
                }
                3 | 4 => {
                    let o = (r >> 8) as usize % 2;
                    let n = older[o];
                    older[o] += len + 4 * ((r >> 12) % 3);
                    n
                }
                5 => a.saturating_sub(4 * ((r >> 8) % 8)), // a short slide
                6 => a + 4 * ((r >> 8) % 8),               // a short move up
                _ => region((r >> 8) % 5) + ((r >> 12) % 0x1000) * 4, // anywhere
            };
            let (old, new, len) = match (r >> 20) % 16 {
                0 => (a + 4, new, len),     // cut at the front
                1 => (a, new, len - 4),     // cut at the end
                2 => (a, new, len + 16),    // widened
                3 => (a, new + 2, len),     // unaligned
                _ => (a, new, len),
            };
            s += &format!("u 0x{old:x} 0x{new:x} {len}\n");
        }
        tick += 1;
        s += &format!(
            "i {tick}\nb 0 0 {g} 0x{:x} {} {} 0 0x{:x} {} {} 1\n",
            region(0),
            0x30000,
            0x30000,
            region(3),
            0x20000,
            0x20000
        );
        if older[0] > region(4) - 0x2000 || older[1] > region(5) - 0x2000 {
            older = [region(3), region(4)];
        }
    }
    s
}

fn by_hand(log: &[u8], general_only: bool) -> Result<Model, String> {
    by_hand_counting(log, general_only).0
}

/// Also says how often the shortcuts were taken.
fn by_hand_counting(log: &[u8], general_only: bool) -> (Result<Model, String>, Shortcuts) {
    let (records, _) = read_all(log);
    let mut b = Builder::new(log);
    if general_only {
        b.general_rules_only();
    }
    for r in &records {
        if let Err(e) = b.push(r) {
            return (Err(e.to_string()), b.shortcuts_taken());
        }
    }
    let taken = b.shortcuts_taken();
    (b.finish().map_err(|e| e.to_string()), taken)
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
    let mut taken = Shortcuts::default();
    for seed in 1..=90u64 {
        let log = if seed <= 60 { random_log(seed, 2500) } else { compacting_log(seed, 40) };
        let log = log.as_bytes();
        let general = by_hand(log, true);
        let (fast, t) = by_hand_counting(log, false);
        taken.moved_in_runs += t.moved_in_runs;
        taken.moves_general += t.moves_general;
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
    // Both sides of every shortcut are taken.
    assert!(taken.moved_in_runs > 5000, "{taken:?}");
    assert!(taken.moves_general > 5000, "{taken:?}");
}
