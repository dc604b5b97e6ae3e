//! V6 thread tables: ThreadBlocks name the threads that events refer to
//! by index, RemoveThreadBlocks retire indexes.
//!
//! ```text
//! ThreadBlock:       { <RowSize:u16> <Index:var64> { <Kind:u8> <value> } to RowSize } *
//!                    kinds: 1 Name:string, 2 OSProcessId:var64, 3 OSThreadId:var64,
//!                           4 KeyValue:string string
//! RemoveThreadBlock: { <Index:var64> <SequenceNumber:var32> } *
//! ```
//! An index is valid from the ThreadBlock that defines it to the
//! RemoveThreadBlock that removes it, or to a sequence point that flushes
//! the thread table.

use super::cursor::{utf8_to_string, Cursor};
use super::error::Error;
use super::ids::ThreadId;
use std::collections::HashMap;

/// A thread of a V6 trace (a row of a ThreadBlock).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadInfo {
    /// The index events use for it.
    pub index: u64,
    /// The operating system's thread id, if given.
    pub os_thread_id: Option<u64>,
    /// The operating system's process id, if given.
    pub os_process_id: Option<u64>,
    /// Its name, if given.
    pub name: Option<String>,
    /// Other key-value pairs.
    pub attributes: Vec<(String, String)>,
}

impl ThreadInfo {
    /// The id to report for the thread: the OS thread id, else the index.
    pub fn thread_id(&self) -> ThreadId {
        ThreadId(self.os_thread_id.unwrap_or(self.index))
    }
}

/// Reads the rows of a ThreadBlock body at trace offset `offset`.
pub(crate) fn parse_thread_block(body: &[u8], offset: u64) -> Result<Vec<ThreadInfo>, Error> {
    let mut c = Cursor::new(body, offset);
    let mut rows = Vec::new();
    while !c.is_empty() {
        let at = c.offset();
        let size = c.u16("a thread row's size")? as usize;
        if size > c.remaining() {
            return Err(Error::invalid(at, "a thread row that fits the block", size as u64));
        }
        let mut r = Cursor::new(c.bytes(size, "a thread row")?, at + 2);
        let mut t = ThreadInfo { index: r.varu64("a thread index")?, ..ThreadInfo::default() };
        while !r.is_empty() {
            let at = r.offset();
            match r.u8("a thread information kind")? {
                1 => t.name = Some(utf8_to_string(r.utf8("a thread name")?)),
                2 => t.os_process_id = Some(r.varu64("a process id")?),
                3 => t.os_thread_id = Some(r.varu64("a thread id")?),
                4 => {
                    let k = utf8_to_string(r.utf8("a key")?);
                    let v = utf8_to_string(r.utf8("a value")?);
                    t.attributes.push((k, v));
                }
                k => return Err(Error::invalid(at, "a thread information kind (1-4)", u64::from(k))),
            }
        }
        rows.push(t);
    }
    Ok(rows)
}

/// Reads a RemoveThreadBlock body: (thread index, its last sequence number).
pub(crate) fn parse_remove_thread_block(body: &[u8], offset: u64) -> Result<Vec<(u64, u32)>, Error> {
    let mut c = Cursor::new(body, offset);
    let mut v = Vec::new();
    while !c.is_empty() {
        let index = c.varu64("a thread index")?;
        let seq = c.varu32("a sequence number")?;
        v.push((index, seq));
    }
    Ok(v)
}

/// The threads defined so far, by index.
#[derive(Debug, Default)]
pub(crate) struct ThreadTable {
    threads: HashMap<u64, ThreadInfo>,
}

impl ThreadTable {
    pub(crate) fn insert(&mut self, t: ThreadInfo) {
        self.threads.insert(t.index, t);
    }
    pub(crate) fn remove(&mut self, index: u64) {
        self.threads.remove(&index);
    }
    pub(crate) fn clear(&mut self) {
        self.threads.clear();
    }
    pub(crate) fn get(&self, index: u64) -> Option<&ThreadInfo> {
        self.threads.get(&index)
    }
    /// The id to report for an index: the OS thread id when known.
    pub(crate) fn thread_id(&self, index: u64) -> ThreadId {
        self.get(index).map_or(ThreadId(index), ThreadInfo::thread_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_removals() {
        let mut b = Vec::new();
        let row = [&[7u8, 2, 0x90, 0x03, 3, 42, 1, 2][..], b"ab"].concat();
        b.extend((row.len() as u16).to_le_bytes());
        b.extend(&row);
        b.extend(1u16.to_le_bytes());
        b.push(9);
        let rows = parse_thread_block(&b, 0).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].index, rows[0].os_process_id, rows[0].os_thread_id), (7, Some(400), Some(42)));
        assert_eq!(rows[0].name.as_deref(), Some("ab"));
        assert_eq!((rows[1].index, rows[1].thread_id()), (9, ThreadId(9)));
        for n in 0..b.len() {
            let _ = parse_thread_block(&b[..n], 0);
        }
        assert_eq!(parse_remove_thread_block(&[7, 5, 0x80, 0x01, 2], 0).unwrap(), vec![(7, 5), (128, 2)]);
        assert_eq!(parse_remove_thread_block(&[7], 10).unwrap_err().offset, 11);
    }
}
