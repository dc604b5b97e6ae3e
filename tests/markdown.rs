//! The repository's Markdown renders as written: every fenced code block
//! is closed by a fence of its own. A fence left open turns what follows
//! into code; in README.md one was left open after the handles example, and
//! from there on every fence closed the block the previous one had opened,
//! so prose and headings rendered as code and examples as prose, up to a
//! fence with an info string (which cannot close a block) where the pairs
//! fell back into step.
//!
//! The Markdown is parsed with `pulldown-cmark`, a CommonMark parser; a
//! fenced block is reported when it runs to the end of its container
//! without a closing fence, or when it swallowed what cannot be code here:
//! a heading of level 2 or more (`## `), or a fence with an info string
//! (an opening fence taken as a line of code).

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};
use std::path::{Path, PathBuf};

mod common;

/// Every `.md` file of the repository (not under `target/` or `.git/`).
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() {
            if name != "target" && name != ".git" && name != "node_modules" {
                markdown_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// The fence a line opens or closes with (its character and length), once
/// indentation and block quote markers are taken off.
fn fence(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches([' ', '>', '\t']);
    let c = t.chars().next().filter(|&c| c == '`' || c == '~')?;
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// Whether a line of a code block is Markdown that only an unclosed fence
/// would have put there.
fn swallowed(line: &str) -> bool {
    let t = line.trim_start();
    let hashes = t.chars().take_while(|&c| c == '#').count();
    let heading = (2..=6).contains(&hashes) && t[hashes..].starts_with(' ');
    let opener = fence(line).is_some_and(|(c, n)| {
        let rest = t.trim_start_matches(c).trim();
        n >= 3 && !rest.is_empty() && !rest.contains(c)
    });
    heading || opener
}

/// The 1-based lines where a fenced code block opens and is never closed
/// (see the module documentation).
fn unclosed_fences(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (event, range) in Parser::new(text).into_offset_iter() {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = event {
            let block = &text[range.clone()];
            let mut lines = block.lines();
            let Some((c, n)) = lines.next().and_then(fence) else { continue };
            let closed = block.lines().skip(1).filter(|l| !l.trim().is_empty()).last().is_some_and(|last| {
                let t = last.trim_start_matches([' ', '>', '\t']).trim_end();
                t.chars().all(|x| x == c) && t.chars().count() >= n
            });
            let inner: Vec<&str> = block.lines().skip(1).collect();
            if !closed || inner.iter().any(|l| swallowed(l)) {
                out.push(text[..range.start].matches('\n').count() + 1);
            }
        }
    }
    out
}

#[test]
fn an_unclosed_fence_is_found() {
    let good = "# A\n\n```\ncode\n```\n\ntext\n\n~~~~\nmore\n~~~~\n";
    assert_eq!(unclosed_fences(good), Vec::<usize>::new());
    let bad = "# A\n\n```\ncode\n```\n\ntext\n\n```\nexample\n\n## B\n\ntext\n";
    assert_eq!(unclosed_fences(bad), vec![9]);
    // In a list item the fence ends with the item: still unclosed.
    let in_list = "- item\n\n  ```\n  code\n- next\n";
    assert_eq!(unclosed_fences(in_list), vec![3]);
    // The README's case: a fence left open, later fences pair up shifted
    // by one until a fence with an info string.
    let shifted = "```\n$ a\nout\n\n### Next\n\ntext\n\n```\n$ b\n```\n\nmore\n\n```sh\nc\n```\n";
    assert_eq!(unclosed_fences(shifted), vec![1, 11]);
    // Shell comments and closing fences are code.
    let shell = "```sh\n# a comment\nx ```\n```\n";
    assert_eq!(unclosed_fences(shell), Vec::<usize>::new());
}

#[test]
fn every_fence_of_the_repository_is_closed() {
    let root = common::repo_root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.iter().any(|f| f.ends_with("README.md")), "README.md is found");
    let mut problems = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for line in unclosed_fences(&text) {
            problems.push(format!("{}:{line}: a code fence opens here and is not closed where it should be (unclosed, or it swallows a heading or an opening fence)", f.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
