//! Answers kept per log: the encoded JSON of the last requests for a log,
//! by route and parameters (the window among them), so that asking again
//! for the same view of the same window (going back to a tab, the Time
//! Line's "who allocated" panel and the Lifetime tab over the same window,
//! a page drawn again) costs no query and no encoding. A session's log
//! that is loaded again starts with an empty cache (its answers change).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Answers kept at most per log.
const MAX_ENTRIES: usize = 256;
/// Bytes of answers kept at most per log.
const MAX_BYTES: usize = 64 << 20;
/// An answer larger than this is not kept.
pub const MAX_ANSWER: usize = 8 << 20;

/// The kept answers of one log, least recently used first.
#[derive(Default)]
pub struct AnswerCache {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    entries: VecDeque<(String, Arc<[u8]>)>,
    bytes: usize,
}

impl AnswerCache {
    /// The answer kept for `key`, if any (it becomes the most recent).
    pub fn get(&self, key: &str) -> Option<Arc<[u8]>> {
        let mut k = self.kept.lock().ok()?;
        let at = k.entries.iter().position(|(e, _)| e == key)?;
        let entry = k.entries.remove(at)?;
        let body = entry.1.clone();
        k.entries.push_back(entry);
        Some(body)
    }

    /// Keeps `body` as the answer for `key`, forgetting the least recently
    /// used answers beyond the bounds.
    pub fn put(&self, key: String, body: Arc<[u8]>) {
        if body.len() > MAX_ANSWER {
            return;
        }
        let Ok(mut k) = self.kept.lock() else { return };
        if let Some(at) = k.entries.iter().position(|(e, _)| *e == key) {
            if let Some((_, old)) = k.entries.remove(at) {
                k.bytes -= old.len();
            }
        }
        k.bytes += body.len();
        k.entries.push_back((key, body));
        while k.entries.len() > MAX_ENTRIES || k.bytes > MAX_BYTES {
            match k.entries.pop_front() {
                Some((_, old)) => k.bytes -= old.len(),
                None => break,
            }
        }
    }
}

/// The key of a request: its path and its parameters sorted, without the
/// token.
pub fn key(path: &str, query: Option<&str>) -> String {
    let mut pairs: Vec<&str> = query.unwrap_or("").split('&').filter(|kv| !kv.is_empty() && !kv.starts_with("token=")).collect();
    pairs.sort_unstable();
    format!("{path}?{}", pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_the_token_and_the_order() {
        assert_eq!(key("/api/log/0/lifetime", Some("to=2&token=abc&from=1")), key("/api/log/0/lifetime", Some("from=1&to=2")));
        assert_ne!(key("/api/log/0/lifetime", Some("from=1&to=2")), key("/api/log/0/lifetime", Some("from=1&to=3")));
    }

    #[test]
    fn least_recently_used_answers_go_first() {
        let c = AnswerCache::default();
        for k in 0..MAX_ENTRIES + 1 {
            c.put(format!("k{k}"), Arc::from(vec![1u8; 10]));
            if k == 0 {
                assert!(c.get("k0").is_some());
            }
        }
        assert!(c.get("k0").is_none(), "the oldest went");
        assert!(c.get(&format!("k{MAX_ENTRIES}")).is_some());
        c.put("big".into(), Arc::from(vec![0u8; MAX_ANSWER + 1]));
        assert!(c.get("big").is_none(), "too large to keep");
    }
}
