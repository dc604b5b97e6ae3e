//! The log of refused connections: one line per refusal on standard
//! error, naming the peer and the reason (never a token or a MAC), at most
//! [`BURST`] lines per [`WINDOW`]; the rest are counted and reported in
//! one line when the next window opens.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines per window.
pub const BURST: u32 = 20;
/// The window.
pub const WINDOW: Duration = Duration::from_secs(10);

/// A rate-limited refusal logger.
#[derive(Debug)]
pub struct Refusals {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    window_start: Instant,
    in_window: u32,
    suppressed: u64,
    total: u64,
}

impl Default for Refusals {
    fn default() -> Self {
        Refusals { state: Mutex::new(State { window_start: Instant::now(), in_window: 0, suppressed: 0, total: 0 }) }
    }
}

impl Refusals {
    /// Notes a refusal; gives the lines to print now (none when over the
    /// rate).
    pub fn note(&self, peer: &str, reason: &str) -> Vec<String> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.total += 1;
        let mut lines = Vec::new();
        if s.window_start.elapsed() >= WINDOW {
            if s.suppressed > 0 {
                lines.push(format!("clrprof collect: {} more refused connections not shown", s.suppressed));
            }
            s.window_start = Instant::now();
            s.in_window = 0;
            s.suppressed = 0;
        }
        if s.in_window < BURST {
            s.in_window += 1;
            lines.push(format!("clrprof collect: refused {peer}: {reason}"));
        } else {
            s.suppressed += 1;
        }
        lines
    }

    /// Notes and prints.
    pub fn log(&self, peer: &str, reason: &str) {
        for l in self.note(peer, reason) {
            crate::say!("{l}");
        }
    }

    /// Refusals so far.
    pub fn total(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_the_rate() {
        let r = Refusals::default();
        let shown: usize = (0..100).map(|i| r.note(&format!("p{i}"), "bad token").len()).sum();
        assert_eq!(shown, BURST as usize);
        assert_eq!(r.total(), 100);
        assert_eq!(r.note("x", "y"), Vec::<String>::new());
    }
}
