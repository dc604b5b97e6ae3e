//! The live sessions: how to reach each one's connection, and a lock per
//! session name that the connection's task holds while it writes the log.

use clrprof_wire::Command;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot, Notify};

/// Where a command's result goes: the agent's reply text, or why there is
/// none.
pub(crate) type ReplyTo = oneshot::Sender<Result<String, String>>;

/// A live session's handles.
pub(crate) struct Live {
    /// Commands for the agent.
    pub commands: mpsc::Sender<(Command, ReplyTo)>,
    /// Asks the session's task to stop (a resume supersedes it).
    pub cancel: Arc<Notify>,
}

/// Live sessions by name.
#[derive(Default)]
pub(crate) struct Registry {
    live: Mutex<HashMap<String, Live>>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// The lock guarding session `name`'s files.
    pub fn files_lock(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(lock(&self.locks).entry(name.to_string()).or_default())
    }

    /// Registers a live session.
    pub fn insert(&self, name: &str, live: Live) {
        lock(&self.live).insert(name.to_string(), live);
    }

    /// Forgets a live session.
    pub fn remove(&self, name: &str) {
        lock(&self.live).remove(name);
    }

    /// The command channel of a live session.
    pub fn commands(&self, name: &str) -> Option<mpsc::Sender<(Command, ReplyTo)>> {
        lock(&self.live).get(name).map(|l| l.commands.clone())
    }

    /// Asks a live session to stop; false when it is not live.
    pub fn cancel(&self, name: &str) -> bool {
        match lock(&self.live).get(name) {
            Some(l) => {
                l.cancel.notify_one();
                true
            }
            None => false,
        }
    }

    /// Names of the live sessions.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.live).keys().cloned().collect();
        v.sort();
        v
    }
}
