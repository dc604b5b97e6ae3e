//! A managed thread of the simulated process: its call stack (as program
//! functions, their ids and the matching trie nodes), the stack it used
//! last (for prefix compression), and whether it has started.

use super::stacks::{Latest, ROOT};
use crate::format::{FunctionId, ThreadId};

/// One thread.
pub struct ThreadState {
    /// The operating-system thread id written in `!`, `c`, `h`, `j`, `y`.
    pub os: ThreadId,
    /// Program functions on the stack, outermost first.
    pub funcs: Vec<u32>,
    /// Their function ids.
    pub function_ids: Vec<FunctionId>,
    /// Trie node of each prefix: `nodes[k]` is the path `funcs[..=k]`.
    pub nodes: Vec<u32>,
    /// Frames of the thread's root chain, never returned from.
    pub base: usize,
    /// The stack this thread used last.
    pub latest: Option<Latest>,
    /// The root chain has been entered.
    pub started: bool,
}

impl ThreadState {
    /// A thread that has not run yet.
    pub fn new(os: ThreadId, base: usize) -> ThreadState {
        ThreadState {
            os,
            funcs: Vec::new(),
            function_ids: Vec::new(),
            nodes: Vec::new(),
            base,
            latest: None,
            started: false,
        }
    }

    /// The trie node of the current stack.
    #[inline]
    pub fn node(&self) -> u32 {
        self.nodes.last().copied().unwrap_or(ROOT)
    }

    /// Frames above the root chain.
    #[inline]
    pub fn depth_above_base(&self) -> usize {
        self.funcs.len().saturating_sub(self.base)
    }

    /// The function on top of the stack.
    #[inline]
    pub fn top(&self) -> Option<u32> {
        self.funcs.last().copied()
    }

    /// Enters a function.
    #[inline]
    pub fn push(&mut self, f: u32, id: FunctionId, node: u32) {
        self.funcs.push(f);
        self.function_ids.push(id);
        self.nodes.push(node);
    }

    /// Returns from the top function (never below the root chain).
    #[inline]
    pub fn pop(&mut self) {
        if self.funcs.len() > self.base {
            self.funcs.pop();
            self.function_ids.pop();
            self.nodes.pop();
        }
    }
}
