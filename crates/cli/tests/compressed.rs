//! Compressed logs read transparently, and files that are not logs refused
//! with a one-line message saying what they look like.

mod common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};

fn work() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compressed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

fn run_ok(args: &[&str]) -> String {
    let out = clrprof(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
#[cfg_attr(no_reference_corpus, ignore = "needs ../shared/corpus/reference, missing when built (touch crates/cli/build.rs after installing)")]
fn gz_and_zst_give_the_plain_files_answers() {
    let Some(reference) = reference_dir() else { return };
    let plain = reference.join("gen-small.log");
    let data = std::fs::read(&plain).expect("read gen-small");
    let dir = work();
    let gz = dir.join("gen-small.log.gz");
    std::fs::write(&gz, gzip(&data)).expect("write gz");
    let zst = dir.join("gen-small.log.zst");
    std::fs::write(&zst, zstd::encode_all(&data[..], 3).expect("zstd")).expect("write zst");
    // The name does not matter: the first bytes do.
    let renamed = dir.join("gen-small-gz.log");
    std::fs::copy(&gz, &renamed).expect("copy");
    for cmd in ["summary", "stats"] {
        let quiet = |args: &mut Vec<&str>| if cmd == "summary" { args.push("--quiet") };
        let mut args = vec![cmd, "--json"];
        quiet(&mut args);
        let want = run_ok(&[&args[..], &[plain.to_str().expect("path")]].concat());
        let want = want.replace(plain.to_str().expect("path"), "LOG");
        for f in [&gz, &zst, &renamed] {
            let got = run_ok(&[&args[..], &[f.to_str().expect("path")]].concat());
            // `stats` reports the file's size: the decompressed text's.
            assert_eq!(got.replace(f.to_str().expect("path"), "LOG"), want, "{cmd} {}", f.display());
        }
    }
}

#[test]
fn a_truncated_gz_names_the_last_complete_line() {
    let log: String = (0..50_000).map(|i| format!("! 1 0x{:x} 1\n", 0x10000 + 24 * i)).collect();
    let log = format!("t 1 0 System.String\nn 1 1 1 24\n{log}");
    let packed = gzip(log.as_bytes());
    let path = work().join("cut.log.gz");
    std::fs::write(&path, &packed[..packed.len() * 2 / 3]).expect("write");
    for cmd in ["summary", "stats"] {
        let out = clrprof(&[cmd, path.to_str().expect("path")]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("cut.log.gz") && err.contains("gzip stream is damaged or cut short"), "{err}");
        // The line named is a complete line of the log: count what was
        // decompressed the same way the message does.
        let n: u64 = err.split("the last complete line is line ").nth(1).and_then(|t| {
            t.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
        }).unwrap_or_else(|| panic!("no line number in: {err}"));
        assert!(n > 2 && n < 50_002, "{n}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn files_that_are_not_logs_say_what_they_look_like() {
    let dir = work();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("empty.log", Vec::new(), "empty: it has no records"),
        ("random.bin", (0..3000u32).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect(), "binary data, not a CLRProfiler log"),
        ("log.bz2", b"BZh91AY&SY\x01\x02\x03".to_vec(), "a bzip2-compressed file (decompress it first)"),
        ("log.xz", b"\xfd7zXZ\x00\x00\x04".to_vec(), "a xz-compressed file (decompress it first)"),
    ];
    for (name, bytes, says) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        for cmd in ["summary", "stats", "types"] {
            let out = clrprof(&[cmd, path.to_str().expect("path")]);
            assert_eq!(out.status.code(), Some(1), "{cmd} {name}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(says) && err.contains(name), "{cmd} {name}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
    }
}
