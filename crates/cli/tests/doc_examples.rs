//! The command examples of the README and the guide, run: every ` ```console `
//! block of the files in [`DOCS`] is a [trycmd] script (`$ clrprof ...`, then
//! what the command prints, `...` for lines left out and `[..]` for what
//! varies within a line: times, paths, memory) run against the `clrprof`
//! built with this test. Output that differs, a non-zero exit (unless the
//! block says `? 1`) or a missing file fails the test, so the examples
//! cannot drift from the tool.
//!
//! Each file runs in a scratch folder of its own holding the bundled logs
//! (`corpus/*.log`), its blocks in order: a block may read what an earlier
//! one wrote (the quick start's `clrprof gen --preset small -o small.log`,
//! which is deterministic). Commands that need a .NET runtime, a browser or
//! a long-running server (`record`, `heap-dump PID`, `ui`, `collect`) are in
//! `sh` blocks, which are not run (trycmd would read a block without a
//! language as a script: the copies given to it call those `text`).
//!
//! An output shown whole ends with an empty line before the next `$` or
//! the closing fence: trycmd drops the block's last line end.
//!
//! Where the output changed on purpose: `TRYCMD=overwrite cargo test -p
//! clrprof-cli --test doc_examples` writes the new output into the scratch
//! copies only; copy the lines from the failure's diff into the Markdown.
//!
//! [trycmd]: https://docs.rs/trycmd

use std::fs;
use std::path::{Path, PathBuf};

/// The Markdown files whose `console` blocks are run, from the repository
/// root, and which must have some; every other chapter of the guide with a
/// `console` block is run too.
const DOCS: &[&str] = &[
    "README.md",
    "docs/src/getting-started.md",
    "docs/src/task-memory.md",
    "docs/src/task-allocations.md",
    "docs/src/task-old-log.md",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Markdown with every fence that opens a block without a language
/// given one (`text`), so that trycmd, which would run such a block, skips
/// it; lines keep their numbers.
fn plain_blocks_as_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 64);
    let mut open: Option<String> = None;
    for line in markdown.split_inclusive('\n') {
        let ticks = line.len() - line.trim_start_matches('`').len();
        match &open {
            Some(fence) if line.starts_with(fence.as_str()) && line[fence.len()..].trim().is_empty() => open = None,
            Some(_) => {}
            None if ticks >= 3 => {
                let fence = "`".repeat(ticks);
                if line[ticks..].trim().is_empty() {
                    out.push_str(&fence);
                    out.push_str("text");
                    out.push_str(&line[ticks..]);
                    open = Some(fence);
                    continue;
                }
                open = Some(fence);
            }
            None => {}
        }
        out.push_str(line);
    }
    out
}

/// A file's `console` blocks and the commands (`$ ` lines) in them.
fn console_blocks(markdown: &str) -> (usize, usize) {
    let (mut blocks, mut commands, mut inside) = (0, 0, false);
    for line in markdown.lines() {
        if inside {
            if line.starts_with("```") {
                inside = false;
            } else if line.starts_with("$ ") {
                commands += 1;
            }
        } else if line.trim_end() == "```console" {
            inside = true;
            blocks += 1;
        }
    }
    (blocks, commands)
}

#[test]
fn plain_blocks_are_not_run() {
    let md = "a\n```\nclrprof x\n```\n\n```console\n$ clrprof y\n```\n````\n```\n````\n";
    let text = plain_blocks_as_text(md);
    assert_eq!(text, "a\n```text\nclrprof x\n```\n\n```console\n$ clrprof y\n```\n````text\n```\n````\n");
    assert_eq!(console_blocks(&text), (1, 1));
}

#[test]
fn readme_and_guide_examples_run_as_shown() {
    let root = repo_root();
    let scratch = tempfile::tempdir().unwrap();
    let exe = Path::new(env!("CARGO_BIN_EXE_clrprof"));
    let cases = trycmd::TestCases::new();
    // `clrprof` where the text assumes it is on PATH, and the path the
    // README's quick start runs it by after `cargo build --release`.
    cases.register_bin("clrprof", exe).register_bin("target/release/clrprof", exe);
    // No model cache: a cached load may not depend on the user's folders,
    // and the figures are the same either way.
    cases.env("CLRPROF_CACHE", "off");
    cases.env("NO_COLOR", "1");

    let corpus: Vec<PathBuf> = fs::read_dir(root.join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert!(corpus.len() >= 3, "the bundled logs in corpus/ are missing: {corpus:?}");

    // The files that must have examples, and every other chapter of the
    // guide that has a `console` block.
    let mut docs: Vec<String> = DOCS.iter().map(|d| d.to_string()).collect();
    let mut chapters: Vec<String> = fs::read_dir(root.join("docs/src"))
        .unwrap()
        .map(|e| format!("docs/src/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|d| d.ends_with(".md") && !docs.contains(d))
        .filter(|d| console_blocks(&fs::read_to_string(root.join(d)).unwrap()).0 > 0)
        .collect();
    chapters.sort();
    docs.extend(chapters);
    for doc in &docs {
        let text = fs::read_to_string(root.join(doc)).unwrap();
        let (blocks, commands) = console_blocks(&text);
        // A file whose examples all turned into `sh` blocks would pass
        // without running anything.
        assert!(blocks > 0 && commands > 0, "{doc}: no `console` block with a `$ ` command");
        let copy = scratch.path().join(Path::new(doc).file_name().unwrap());
        fs::write(&copy, plain_blocks_as_text(&text)).unwrap();
        // `NAME.in/` is copied into a fresh folder where the commands run;
        // `NAME.out/` (empty: no file is compared) asks trycmd for that.
        let input = copy.with_extension("in");
        fs::create_dir_all(input.join("corpus")).unwrap();
        for log in &corpus {
            fs::copy(log, input.join("corpus").join(log.file_name().unwrap())).unwrap();
        }
        fs::create_dir(copy.with_extension("out")).unwrap();
        eprintln!("{doc}: {blocks} console blocks, {commands} commands (run as {})", copy.display());
        cases.case(&copy);
    }
    cases.run();
}
