//! A managed thread of the simulated process: its call stack (program
//! functions and their ids) and whether it has started. (The profiler
//! stage keeps the matching stack-trie nodes, see `profiler.rs`.)

use clrprof::format::{FunctionId, ThreadId};

/// One frame: a program function and its id.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// Function index in the program.
    pub func: u32,
    /// Its id.
    pub id: FunctionId,
}

/// One thread.
pub struct ThreadState {
    /// The operating-system thread id.
    pub os: ThreadId,
    /// The call stack, outermost first.
    pub frames: Vec<Frame>,
    /// Frames of the thread's root chain, never returned from.
    pub base: usize,
    /// The root chain has been entered.
    pub started: bool,
}

impl ThreadState {
    /// A thread that has not run yet.
    pub fn new(os: ThreadId, base: usize) -> ThreadState {
        ThreadState { os, frames: Vec::new(), base, started: false }
    }

    /// Frames above the root chain.
    #[inline]
    pub fn depth_above_base(&self) -> usize {
        self.frames.len().saturating_sub(self.base)
    }

    /// The function on top of the stack.
    #[inline]
    pub fn top(&self) -> Option<u32> {
        self.frames.last().map(|f| f.func)
    }

    /// Enters a function.
    #[inline]
    pub fn push(&mut self, func: u32, id: FunctionId) {
        self.frames.push(Frame { func, id });
    }

    /// Returns from the top function; false (and nothing done) at the root
    /// chain.
    #[inline]
    pub fn pop(&mut self) -> bool {
        if self.frames.len() > self.base {
            self.frames.pop();
            true
        } else {
            false
        }
    }
}
