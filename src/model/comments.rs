//! User comments (`z` records).

use super::ids::{NameId, TickIndex};

/// A comment CLRProfiler keeps (one per tick index; see section 6.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Comment {
    /// Its tick index.
    pub tick: TickIndex,
    /// Its text.
    pub text: NameId,
}

/// The kept comments, in log order.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CommentTable {
    kept: Vec<Comment>,
    dropped: u64,
}

impl CommentTable {
    pub(crate) fn add(&mut self, c: Comment) {
        if self.kept.last().is_some_and(|l| c.tick <= l.tick) {
            self.dropped += 1;
        } else {
            self.kept.push(c);
        }
    }

    /// The kept comments.
    pub fn kept(&self) -> &[Comment] {
        &self.kept
    }

    /// Comments not kept (their tick index was not later than the previous
    /// kept one's).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.kept.capacity() * std::mem::size_of::<Comment>()
    }
}
