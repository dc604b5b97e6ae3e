//! The runtime's own words when it stops a program for a reason `record`
//! can explain.
//!
//! Some failures end a .NET program at start-up (the log then holds its
//! header alone) or at its first use of a missing part, and only the
//! runtime's message on standard error says why. `record` passes the program's standard error through
//! a pipe, byte for byte as it comes, and watches it for the messages it
//! can explain:
//!
//! - no ICU: "Couldn't find a valid ICU package installed on the system"
//!   (CoreCLR 3.1 and .NET 8 alike, at the first use of culture data, often
//!   at start-up; then the runtime aborts): the cure is
//!   `DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1`;
//! - no runtime for the app: the host's "It was not possible to find any
//!   compatible framework version" (3.1) or "You must install or update
//!   .NET to run this application" (.NET 5 and later), exit code 150: the
//!   app's `runtimeconfig.json` names a runtime this `dotnet` lacks.

use memchr::memmem::Finder;
use std::io::{Read, Write};
use std::process::ChildStderr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// The no-ICU fail-fast message (same words in CoreCLR 3.1 and .NET 8).
pub(super) const NO_ICU: &str = "Couldn't find a valid ICU package";
/// The host's messages when the app's framework is not installed.
const NO_FRAMEWORK: [&str; 2] =
    ["It was not possible to find any compatible framework version", "You must install or update .NET to run this application"];

/// What the program's standard error said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Seen {
    /// The runtime found no ICU library.
    pub no_icu: bool,
    /// The host found no runtime matching the app's configuration.
    pub no_framework: bool,
}

/// Copies the program's standard error to this process's, watching it.
pub(super) struct Relay {
    flags: Arc<[AtomicBool; 2]>,
    done: mpsc::Receiver<()>,
}

impl Relay {
    /// Starts copying `from` on a thread of its own.
    pub(super) fn start(mut from: ChildStderr) -> Relay {
        let flags = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let (tx, done) = mpsc::channel();
        let shared = Arc::clone(&flags);
        std::thread::spawn(move || {
            let mut watch = Watch::new();
            let mut buf = vec![0u8; 16 << 10];
            let mut out = Some(std::io::stderr());
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                // If this process's standard error is gone, keep draining
                // the pipe so that the program never blocks on it.
                if out.as_mut().is_some_and(|o| o.write_all(&buf[..n]).is_err()) {
                    out = None;
                }
                let seen = watch.feed(&buf[..n]);
                shared[0].fetch_or(seen.no_icu, Ordering::Relaxed);
                shared[1].fetch_or(seen.no_framework, Ordering::Relaxed);
            }
            let _ = tx.send(());
        });
        Relay { flags, done }
    }

    /// What was seen, once the pipe ends: the program has exited; a
    /// process it left behind may hold the pipe, so the wait is short.
    pub(super) fn finish(self) -> Seen {
        let _ = self.done.recv_timeout(Duration::from_secs(1));
        Seen { no_icu: self.flags[0].load(Ordering::Relaxed), no_framework: self.flags[1].load(Ordering::Relaxed) }
    }
}

/// Looks for the messages in a stream given in pieces, a message split
/// between two pieces included.
struct Watch {
    icu: Finder<'static>,
    framework: [Finder<'static>; 2],
    /// The end of the previous pieces, shorter than the longest message.
    tail: Vec<u8>,
    seen: Seen,
}

impl Watch {
    fn new() -> Watch {
        Watch {
            icu: Finder::new(NO_ICU.as_bytes()),
            framework: NO_FRAMEWORK.map(|m| Finder::new(m.as_bytes())),
            tail: Vec::new(),
            seen: Seen::default(),
        }
    }

    fn feed(&mut self, piece: &[u8]) -> Seen {
        let keep = NO_FRAMEWORK.iter().map(|m| m.len()).chain([NO_ICU.len()]).max().unwrap_or(0) - 1;
        self.tail.extend_from_slice(piece);
        let text = &self.tail[..];
        self.seen.no_icu |= self.icu.find(text).is_some();
        self.seen.no_framework |= self.framework.iter().any(|f| f.find(text).is_some());
        let cut = self.tail.len().saturating_sub(keep);
        self.tail.drain(..cut);
        self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages as CoreCLR 3.1.23 and the .NET 8.0.4 host print them,
    /// found whole and split at every byte.
    #[test]
    fn finds_messages_in_any_pieces() {
        let icu31 = "Process terminated. Couldn't find a valid ICU package installed on the system. Set the configuration flag \
                     System.Globalization.Invariant to true if you want to run with no globalization support.\n   at System.Environment.FailFast(System.String)\n";
        let fx8 = "You must install or update .NET to run this application.\n\nApp: /tmp/a.dll\n";
        let fx31 = "It was not possible to find any compatible framework version\nThe framework 'Microsoft.NETCore.App', version '8.0.0' was not found.\n";
        for (text, want) in [
            (icu31, Seen { no_icu: true, no_framework: false }),
            (fx8, Seen { no_icu: false, no_framework: true }),
            (fx31, Seen { no_icu: false, no_framework: true }),
            ("Unhandled exception. System.Exception: ICU package\n", Seen::default()),
        ] {
            for cut in 0..text.len() {
                let mut w = Watch::new();
                w.feed(&text.as_bytes()[..cut]);
                assert_eq!(w.feed(&text.as_bytes()[cut..]), want, "cut at {cut} of {text:?}");
            }
            let mut w = Watch::new();
            let mut last = Seen::default();
            for b in text.as_bytes() {
                last = w.feed(std::slice::from_ref(b));
            }
            assert_eq!(last, want, "byte by byte: {text:?}");
        }
    }
}
