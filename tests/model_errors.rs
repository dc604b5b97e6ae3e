//! Where CLRProfiler's reader throws (section 9.2 of
//! `docs/src/reference-reader.md`, numbered T1-T16 there), the model returns an
//! error naming the line, the byte offset, the record kind and the problem.
//! Nothing panics.

use clrprof::model::{self, Problem};

fn error_of(log: &str) -> model::Error {
    match model::load(log.as_bytes(), &Default::default()) {
        Err(e) => e,
        Ok(_) => panic!("expected an error for:\n{log}"),
    }
}

fn check(log: &str, line: u64, kind: char, want: impl Fn(&Problem) -> bool) {
    let e = error_of(log);
    assert_eq!(e.line, line, "{e}");
    assert_eq!(e.kind, Some(kind), "{e}");
    assert!(want(&e.problem), "unexpected problem: {e}");
    let offset = log.split_inclusive('\n').take(line as usize - 1).map(str::len).sum::<usize>() as u64;
    assert_eq!(e.offset, offset, "{e}");
    assert!(e.to_string().starts_with(&format!("line {line}, byte {offset}: `{kind}` record: ")), "{e}");
}

const HEAD: &str = "t 1 0 T\nn 1 1 1 16\n";

#[test]
fn t1_allocation_with_an_undefined_stack() {
    check(&format!("{HEAD}a 0x1000 7\n"), 3, 'a', |p| matches!(p, Problem::UndefinedStack { id: 7, index: 7 }));
    check(&format!("{HEAD}! 5 0x1000 7\n"), 3, '!', |p| matches!(p, Problem::UndefinedStack { .. }));
}

#[test]
fn t2_allocation_with_a_short_stack() {
    check(&format!("{HEAD}a 0x1000 0\n"), 3, 'a', |p| matches!(p, Problem::ShortStack { index: 0, len: 0 }));
    check(&format!("{HEAD}s 2 9\na 0x1000 2\n"), 4, 'a', |p| matches!(p, Problem::ShortStack { len: 1, .. }));
}

#[test]
fn t3_t4_stack_ids_outside_the_table() {
    check(&format!("{HEAD}a 0x1000 5000\n"), 3, 'a', |p| matches!(p, Problem::StackIdOutOfRange { id: 5000, limit: 1000 }));
    check(&format!("{HEAD}a 0x1000 -3\n"), 3, 'a', |p| matches!(p, Problem::StackIdOutOfRange { id: -3, .. }));
    // A duplicate allocation-only stack creates the renumbering table.
    let log = format!("{HEAD}n 2 1 1 16\na 0x1000 5000\n");
    check(&log, 4, 'a', |p| matches!(p, Problem::StackIdOutOfRange { id: 5000, limit: 1000 }));
    check(&format!("{HEAD}n 2 1 1 16\nc 1 5000\n"), 4, 'c', |p| matches!(p, Problem::StackIdOutOfRange { .. }));
}

#[test]
fn t5_reference_to_an_undefined_stack() {
    check("n 2 4 1 5\n", 1, 'n', |p| matches!(p, Problem::UndefinedReferenceStack { id: 1, index: 1 }));
}

#[test]
fn t6_prefix_copying_a_function_beyond_the_table() {
    check("n 1 0 5000\nn 2 4 1 6\n", 2, 'n', |p| matches!(p, Problem::CopiedFunctionOutOfRange { function: 5000, limit: 1000 }));
    // An `f` record for id 5000 grows the table first: no error.
    let ok = "f 5000 F () 0x0 0\nn 1 0 5000\nn 2 4 1 6\n";
    assert!(model::load(ok.as_bytes(), &Default::default()).is_ok());
}

#[test]
fn t7_negative_stack_definition() {
    check("n -1 0 5\n", 1, 'n', |p| matches!(p, Problem::StackIdOutOfRange { id: -1, .. }));
    check("s -4 5\n", 1, 's', |p| matches!(p, Problem::StackIdOutOfRange { id: -4, .. }));
}

#[test]
fn t8_generation_four() {
    check("b 0 0 0 0x1000 10 10 4\n", 1, 'b', |p| matches!(p, Problem::GenerationOutOfRange { generation: 4 }));
}

#[test]
fn t9_t10_condemned_generations_beyond_the_counters() {
    check("b 1 1 3\n", 1, 'b', |p| matches!(p, Problem::InducedGenerationOutOfRange { condemned: 3 }));
    check("b 1 0 0\nb 0 0 4\n", 2, 'b', |p| matches!(p, Problem::CondemnedGenerationOutOfRange { condemned: 4 }));
}

#[test]
fn t11_t12_negative_stack_ids_of_handles_and_calls() {
    check("h 1 0x10 0x0 -1\n", 1, 'h', |p| matches!(p, Problem::NegativeStackId { id: -1 }));
    check("j 1 0x10 -2\n", 1, 'j', |p| matches!(p, Problem::NegativeStackId { id: -2 }));
    check("c 1 -5\n", 1, 'c', |p| matches!(p, Problem::NegativeStackId { id: -5 }));
    // `c` with -1 is skipped.
    assert!(model::load(b"c 1 -1\n", &Default::default()).is_ok());
}

#[test]
fn t13_t14_heap_dump_objects() {
    check("e 0x10 1 0 7\no 0x1000 5000 16\n", 2, 'o', |p| matches!(p, Problem::TypeIdOutOfRange { type_id: 5000, .. }));
    check("e 0x10 1 0 7\no 0x1000 -5 16\n", 2, 'o', |p| matches!(p, Problem::TypeIdOutOfRange { type_id: -5, .. }));
    check(&format!("{HEAD}a 0x1000 1\no 0x1000 1 16\n"), 4, 'o', |p| matches!(p, Problem::ObjectOutsideHeapDump));
    // With a dump started, the same object is counted.
    let ok = format!("{HEAD}a 0x1000 1\ne 0x1000 1 0 7\no 0x1000 1 16\n");
    let m = model::load(ok.as_bytes(), &Default::default()).expect("load");
    assert_eq!(m.heap_dumps().dumps()[0].matched.total(), 1);
}

#[test]
fn t15_t16_definitions() {
    check("t -1 0 X\n", 1, 't', |p| matches!(p, Problem::NegativeId { id: -1 }));
    check("f -2 F () 0x0 0\n", 1, 'f', |p| matches!(p, Problem::NegativeId { id: -2 }));
    check("m -3 C:\\x.dll 0x1000 1\n", 1, 'm', |p| matches!(p, Problem::NegativeId { id: -3 }));
    check("m 1 C:\\x.dll 0x1000 a\\b\n", 1, 'm', |p| matches!(p, Problem::ModulePathAfterAddress));
}

/// Documented recoveries: a record cut by the end of the file is dropped
/// (CLRProfiler maps an allocation's stack id before dropping it, and can
/// throw there; the model does not), and an unknown last line without a
/// line end is skipped (CLRProfiler never returns).
#[test]
fn recoveries() {
    let m = model::load(format!("{HEAD}a 0x1000 1\na 0x2000 5000").as_bytes(), &Default::default()).expect("load");
    assert_eq!(m.allocations().len(), 1);
    assert!(m.diagnostics().total() > 0);
    let m = model::load(format!("{HEAD}a 0x1000 1\nx unknown").as_bytes(), &Default::default()).expect("load");
    assert_eq!(m.allocations().len(), 1);
}

/// Arbitrary bytes and arbitrary records never panic.
#[test]
fn no_panic_on_garbage() {
    let mut x = 0x243F6A8885A308D3u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let kinds = b"tfmynsa!cizbguvlhjerod?";
    for _ in 0..3000 {
        let mut log = String::new();
        for _ in 0..(next() % 40) {
            let k = kinds[(next() % kinds.len() as u64) as usize] as char;
            log.push(k);
            for _ in 0..(next() % 7) {
                let v = next();
                let field = match v % 6 {
                    0 => format!(" {}", v % 5),
                    1 => format!(" {}", (v >> 8) % 3000),
                    2 => format!(" 0x{:x}", (v >> 4) % 0x20000),
                    3 => format!(" -{}", v % 3),
                    4 => format!(" 0x{:x}", v),
                    _ => format!(" {}", (v >> 3) as i64),
                };
                log.push_str(&field);
            }
            log.push('\n');
        }
        let _ = model::load(log.as_bytes(), &Default::default());
    }
}

/// Mutations of a well-formed log (numbers replaced by extreme or nearby
/// values, lines duplicated or dropped) never panic.
#[test]
fn no_panic_on_mutated_logs() {
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/all-kinds.log")).expect("corpus");
    let lines: Vec<&str> = base.lines().collect();
    let mut x = 0x13198A2E03707344u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let extremes = ["0", "-1", "4", "11", "12", "2147483647", "-2147483648", "0xFFFFFFFFFFFFFFFF", "0x7FFFFFFF", "1048576"];
    for _ in 0..1500 {
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for _ in 0..(1 + next() % 4) {
            let i = (next() % out.len() as u64) as usize;
            match next() % 5 {
                0 => {
                    let l = out[i].clone();
                    out.insert(i, l);
                }
                1 => {
                    out.remove(i);
                }
                _ => {
                    let mut words: Vec<String> = out[i].split(' ').map(str::to_string).collect();
                    if words.len() > 1 {
                        let w = 1 + (next() % (words.len() as u64 - 1)) as usize;
                        words[w] = match next() % 3 {
                            0 => extremes[(next() % extremes.len() as u64) as usize].to_string(),
                            1 => format!("0x{:x}", 0x2000000 + (next() % 0x300000)),
                            _ => format!("{}", next() % 20),
                        };
                    }
                    out[i] = words.join(" ");
                }
            }
            if out.is_empty() {
                break;
            }
        }
        let log = out.join("\n");
        let _ = model::load(log.as_bytes(), &Default::default());
    }
}

/// The model-only examples of section 10.3 of `docs/src/reference-reader.md`
/// (rules no reference log exercises), with the figures given there.
#[test]
fn documented_rule_examples() {
    let cases = [
        // 3.4: an allocation inside the previous object erases it; one at an
        // interval's end does not; an 8-byte object is never written.
        ("t 1 0 T\nn 1 1 1 16\nn 2 1 1 8\na 0x1000 1\na 0x1008 1\na 0x1100 1\na 0x1100 2\n", 56, 0, 32),
        // 3.6: after a GC without ranges, an allocation inside an interval
        // that had relocations removes everything up to its end.
        (
            "t 1 0 T\nn 1 1 1 16\na 0x1000 1\na 0x1010 1\na 0x1020 1\na 0x1030 1\ni 1\nu 0x1020 0x1010 16\ng 1 0 0\na 0x1020 1\n",
            80,
            16,
            48,
        ),
        // 3.5: an upward overlapping move loses one object and counts the
        // other twice.
        ("t 1 0 T\nn 1 1 1 16\na 0x1000 1\na 0x1010 1\nu 0x1000 0x1010 32\n", 32, 32, 16),
    ];
    for (log, allocated, relocated, final_heap) in cases {
        let m = model::load(log.as_bytes(), &Default::default()).expect("load");
        let s = clrprof::query::summary(&m);
        assert_eq!((s.allocated_bytes, s.relocated_bytes, s.final_heap_bytes), (allocated, relocated, final_heap), "{log}");
    }
}
