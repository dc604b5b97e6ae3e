//! The memory that sessions hold for unfinished lines, under one cap for
//! the whole collector.
//!
//! A session stores whole lines only: the bytes after a log's last newline
//! wait in memory until their newline comes. One session's wait is capped
//! by [`Options::max_line`](crate::Options::max_line) (64 MB); all of them
//! together by [`Options::max_buffered`](crate::Options::max_buffered)
//! (256 MB by default). Each session's buffer counts by its allocated
//! capacity, so what is counted is what is held. When a session's buffer
//! would take the total over the cap, the session holding the most is cut
//! (its buffer is given back at once): the one that asks, if it holds the
//! most itself. So a token holder who opens many sessions and sends long
//! lines without a newline can hold at most the cap, and an ordinary
//! session, whose unfinished line is short, is never the one cut.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::Notify;

/// The default [`Options::max_buffered`](crate::Options::max_buffered):
/// 256 MB.
pub const MAX_BUFFERED: usize = 256 << 20;

/// The buffers of all sessions.
pub(crate) struct Buffers {
    max: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    total: usize,
    held: HashMap<u64, Holder>,
}

struct Holder {
    bytes: usize,
    cut: Arc<Notify>,
}

/// One session's share, given back when dropped.
pub(crate) struct Share {
    id: u64,
    buffers: Arc<Buffers>,
    /// Notified when the session is cut to make room for another's.
    pub cut: Arc<Notify>,
}

/// Why a share could not grow: the total would pass the cap and this
/// session holds the most.
#[derive(Debug)]
pub(crate) struct Full {
    /// The cap.
    pub max: usize,
}

impl Buffers {
    /// Buffers under the cap `max`.
    pub fn new(max: usize) -> Buffers {
        Buffers { max, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session's share, holding nothing.
    pub fn share(self: &Arc<Self>) -> Share {
        let mut s = self.lock();
        let id = s.next;
        s.next += 1;
        let cut = Arc::new(Notify::new());
        s.held.insert(id, Holder { bytes: 0, cut: Arc::clone(&cut) });
        Share { id, buffers: Arc::clone(self), cut }
    }

    /// The bytes held by all sessions.
    #[cfg(test)]
    pub fn total(&self) -> usize {
        self.lock().total
    }
}

impl Share {
    /// Sets what this session holds to `bytes`. Growing past the cap cuts
    /// the sessions holding more than `bytes`, largest first; if that is
    /// not enough, this one is refused ([`Full`]) and holds nothing more
    /// (it is to be cut).
    pub fn hold(&self, bytes: usize) -> Result<(), Full> {
        let b = &self.buffers;
        let mut s = b.lock();
        let Some(mine) = s.held.get(&self.id).map(|h| h.bytes) else {
            // Already cut for another.
            return Err(Full { max: b.max });
        };
        if bytes > mine {
            while s.total - mine + bytes > b.max {
                let largest =
                    s.held.iter().filter(|(id, h)| **id != self.id && h.bytes > bytes).max_by_key(|(_, h)| h.bytes).map(|(id, _)| *id);
                let Some(id) = largest else { return Err(Full { max: b.max }) };
                if let Some(h) = s.held.remove(&id) {
                    s.total -= h.bytes;
                    h.cut.notify_one();
                }
            }
        }
        s.total = s.total - mine + bytes;
        if let Some(h) = s.held.get_mut(&self.id) {
            h.bytes = bytes;
        }
        Ok(())
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut s = self.buffers.lock();
        if let Some(h) = s.held.remove(&self.id) {
            s.total -= h.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_holder_is_cut_to_make_room() {
        let b = Arc::new(Buffers::new(100));
        let big = b.share();
        let small = b.share();
        big.hold(70).unwrap();
        small.hold(20).unwrap();
        assert_eq!(b.total(), 90);
        // The small one grows past the cap: the big one goes.
        small.hold(40).unwrap();
        assert_eq!(b.total(), 40);
        assert!(big.hold(10).is_err(), "cut for good");
        // The largest asking itself is refused.
        let other = b.share();
        other.hold(30).unwrap();
        assert!(small.hold(80).is_err());
        assert_eq!(b.total(), 70, "a refusal changes nothing");
        // Shrinking always works; dropping gives back.
        small.hold(5).unwrap();
        drop(other);
        assert_eq!(b.total(), 5);
        drop(small);
        drop(big);
        assert_eq!(b.total(), 0);
    }
}
