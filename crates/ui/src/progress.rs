//! The load progress on the terminal: one bar per log on standard error,
//! only on a terminal and never when quiet (the page shows the same
//! progress from `/api/logs`).

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Bars for a set of logs.
pub struct TerminalProgress {
    bars: Vec<ProgressBar>,
}

impl TerminalProgress {
    /// One bar per log name, drawn on standard error if it is a terminal
    /// and `quiet` is off.
    pub fn new(names: &[String], quiet: bool) -> TerminalProgress {
        let target = if !quiet && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let bars = names
            .iter()
            .map(|n| {
                let bar = multi.add(ProgressBar::new(0));
                if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:30}] {bytes}/{total_bytes} {msg}") {
                    bar.set_style(style.progress_chars("=> "));
                }
                bar.set_prefix(format!("loading {n}"));
                bar
            })
            .collect();
        TerminalProgress { bars }
    }

    /// Log `k` has read `done` of `total` bytes.
    pub fn update(&self, k: usize, done: u64, total: u64) {
        if let Some(b) = self.bars.get(k) {
            b.set_length(total);
            b.set_position(done);
            if done >= total {
                b.finish_with_message("loaded");
            }
        }
    }
}
