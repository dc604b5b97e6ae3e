//! V6 label lists: the labels (activity ids, trace context, key-value
//! pairs, overrides of the metadata's opcode, keywords, level, version)
//! that events refer to by id.
//!
//! ```text
//! <FirstIndex:u32> <Count:u32> { label ... last label } * Count
//! label: <Kind:u8, high bit set on the last label of a list> <value>
//!   1 ActivityId:16  2 RelatedActivityId:16  3 TraceId:16  4 SpanId:u64
//!   5 Key:string Value:string  6 Key:string Value:varint64
//!   7 OpCode:u8  8 Keywords:u64  9 Level:u8  10 Version:u8
//! ```
//! Ids run on from FirstIndex; 0 is the empty list. Like stacks, a list
//! may be referred to only until the next sequence point.

use super::cursor::{utf8_to_string, Cursor};
use super::error::Error;
use std::collections::HashMap;

/// The value of a key-value label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelValue {
    /// A string.
    Str(String),
    /// A signed integer.
    Int(i64),
}

/// The labels of an event (V6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelList {
    /// The activity id (also in [`EventHeader::activity_id`](super::EventHeader::activity_id)).
    pub activity_id: Option<[u8; 16]>,
    /// The related activity id (also in the header).
    pub related_activity_id: Option<[u8; 16]>,
    /// A W3C trace id.
    pub trace_id: Option<[u8; 16]>,
    /// A W3C span id.
    pub span_id: Option<u64>,
    /// Overrides the metadata's opcode for this event.
    pub opcode: Option<u8>,
    /// Overrides the metadata's keywords.
    pub keywords: Option<u64>,
    /// Overrides the metadata's level.
    pub level: Option<u8>,
    /// Overrides the metadata's version (the runtime's events are decoded
    /// with the schema of this version).
    pub version: Option<u8>,
    /// Key-value labels, in file order.
    pub values: Vec<(String, LabelValue)>,
}

fn parse_list(c: &mut Cursor<'_>) -> Result<LabelList, Error> {
    let mut l = LabelList::default();
    loop {
        let at = c.offset();
        let kind = c.u8("a label kind")?;
        match kind & 0x7f {
            1 => l.activity_id = Some(c.guid("an activity id")?),
            2 => l.related_activity_id = Some(c.guid("a related activity id")?),
            3 => l.trace_id = Some(c.guid("a trace id")?),
            4 => l.span_id = Some(c.u64("a span id")?),
            5 => {
                let k = utf8_to_string(c.utf8("a label key")?);
                let v = utf8_to_string(c.utf8("a label value")?);
                l.values.push((k, LabelValue::Str(v)));
            }
            6 => {
                let k = utf8_to_string(c.utf8("a label key")?);
                let v = c.vari64("a label value")?;
                l.values.push((k, LabelValue::Int(v)));
            }
            7 => l.opcode = Some(c.u8("an opcode")?),
            8 => l.keywords = Some(c.u64("keywords")?),
            9 => l.level = Some(c.u8("a level")?),
            10 => l.version = Some(c.u8("a version")?),
            k => return Err(Error::invalid(at, "a label kind (1-10)", u64::from(k))),
        }
        if kind & 0x80 != 0 {
            return Ok(l);
        }
    }
}

/// The label lists of the current sequence-point region.
#[derive(Debug, Default)]
pub(crate) struct LabelCache {
    lists: HashMap<u32, LabelList>,
}

impl LabelCache {
    /// Adds the lists of a LabelListBlock body at trace offset `offset`.
    pub(crate) fn add_block(&mut self, body: &[u8], offset: u64) -> Result<(), Error> {
        let mut c = Cursor::new(body, offset);
        let first = c.u32("a label list block's first index")?;
        let at = c.offset();
        let count = c.u32("a label list block's count")?;
        if count as usize > c.remaining() {
            return Err(Error::invalid(at, "a label list count that fits the block", u64::from(count)));
        }
        for i in 0..count {
            let l = parse_list(&mut c)?;
            self.lists.insert(first.wrapping_add(i), l);
        }
        Ok(())
    }
    /// Forgets every list (at a sequence point).
    pub(crate) fn clear(&mut self) {
        self.lists.clear();
    }
    /// The list with this id (`None` for 0 or an id not defined in this region).
    pub(crate) fn get(&self, id: u32) -> Option<&LabelList> {
        self.lists.get(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_end_at_the_high_bit() {
        let mut b = 3u32.to_le_bytes().to_vec();
        b.extend(2u32.to_le_bytes());
        b.push(1);
        b.extend([0x11; 16]);
        b.push(0x80 | 6);
        b.extend([1, b'n', 0x03]); // -2
        b.push(0x80 | 10);
        b.push(4);
        let mut cache = LabelCache::default();
        cache.add_block(&b, 0).unwrap();
        let l = cache.get(3).unwrap();
        assert_eq!(l.activity_id, Some([0x11; 16]));
        assert_eq!(l.values, vec![("n".to_string(), LabelValue::Int(-2))]);
        assert_eq!(cache.get(4).unwrap().version, Some(4));
        assert!(cache.get(0).is_none() && cache.get(5).is_none());
        let mut bad = b.clone();
        bad[8] = 11;
        assert_eq!(LabelCache::default().add_block(&bad, 100).unwrap_err().offset, 108);
        for n in 0..b.len() {
            let _ = LabelCache::default().add_block(&b[..n], 0);
        }
        cache.clear();
        assert!(cache.get(3).is_none());
    }
}
