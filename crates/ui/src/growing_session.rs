//! A live session's log, read as the collector writes it: each refresh
//! reads only the bytes added since the last one and gives the model of
//! everything so far ([`clrprof::model::GrowingLog`]), instead of loading
//! the log again from its first byte.
//!
//! The collector only ever appends to a session's file, with one
//! exception: when an agent comes back after a break, the file is cut back
//! to where the agent's spool starts, and the same bytes are then sent
//! again from the spool. A refresh therefore checks that the file still
//! holds what was read (its length, and the last bytes read, compared
//! again); if not, it starts over from the file's first byte.

use clrprof::model::{GrowingLog, LoadOptions, Model};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The last bytes read, compared with the file at each refresh.
const TAIL: usize = 64;
/// Bytes read from the file at a time.
const PIECE: usize = 8 << 20;

/// A session's log read so far (see the module documentation).
pub(crate) struct GrowingSession {
    log: GrowingLog,
    /// The last (at most [`TAIL`]) bytes given to `log`.
    tail: Vec<u8>,
}

impl GrowingSession {
    pub(crate) fn new() -> Self {
        GrowingSession { log: GrowingLog::new(), tail: Vec::new() }
    }

    /// Whether the file at `path` (of `file_len` bytes) still begins with
    /// the bytes read so far.
    fn still_holds(&self, file: &File, file_len: u64) -> std::io::Result<bool> {
        let len = self.log.len();
        if file_len < len {
            return Ok(false);
        }
        let mut now = vec![0u8; self.tail.len()];
        file.read_exact_at(&mut now, len - self.tail.len() as u64)?;
        Ok(now == self.tail)
    }

    /// Reads the file at `path` up to byte `upto`, from where the last
    /// read stopped, or from its first byte when the file no longer holds
    /// what was read (then as a log loads, on every core:
    /// [`GrowingLog::load`]). `progress` gets the bytes read so far of the
    /// log. Gives the bytes read from the file by this call.
    pub(crate) fn catch_up(
        &mut self,
        path: &Path,
        upto: u64,
        options: &LoadOptions,
        mut progress: impl FnMut(u64),
    ) -> Result<u64, String> {
        let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let file_len = file.metadata().map_err(|e| format!("cannot read {}: {e}", path.display()))?.len();
        let holds = self.still_holds(&file, file_len.min(upto)).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if !holds {
            *self = GrowingSession::new();
        }
        if self.log.is_empty() && upto > 0 {
            let mut all = vec![0u8; upto as usize];
            file.read_exact_at(&mut all, 0).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            self.log = GrowingLog::load(&all, options, &mut progress);
            self.tail = all[all.len().saturating_sub(TAIL)..].to_vec();
            return match self.log.error() {
                Some(e) => Err(e.to_string()),
                None => Ok(upto),
            };
        }
        if let Some(e) = self.log.error() {
            return Err(e.to_string());
        }
        let mut read = 0u64;
        let mut buf = Vec::new();
        while self.log.len() < upto {
            let at = self.log.len();
            let n = (upto - at).min(PIECE as u64) as usize;
            buf.resize(n, 0);
            file.read_exact_at(&mut buf, at).map_err(|e| format!("cannot read {} at byte {at}: {e}", path.display()))?;
            self.log.extend(&buf).map_err(|e| e.to_string())?;
            let keep = self.tail.len().saturating_sub(TAIL.saturating_sub(n));
            self.tail.drain(..keep);
            self.tail.extend_from_slice(&buf[n.saturating_sub(TAIL)..]);
            read += n as u64;
            progress(self.log.len());
        }
        Ok(read)
    }

    /// The model of the whole lines read.
    pub(crate) fn model(&self) -> Result<Model, String> {
        self.log.model().map_err(|e| e.to_string())
    }

    /// The model of every byte read, as the log's end (a session that
    /// ended).
    pub(crate) fn model_at_end(&self) -> Result<Model, String> {
        self.log.model_at_end().map_err(|e| e.to_string())
    }
}
