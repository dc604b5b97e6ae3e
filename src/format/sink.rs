//! [`RecordSink`]: where records go once they are made, whatever made them.
//!
//! The log parser, the trace importer and the `.gcdump` importer all give
//! the same typed [`Record`]s; a sink takes them in log order. The model's
//! builder is one sink (`clrprof::model::RecordFeed`), so a trace or a
//! snapshot goes into the model without being written as text and parsed
//! again; [`TextSink`] is another, for whoever wants the log text (a
//! conversion, a test comparing both ways). An embedder with events of its
//! own can feed the model through the same trait.
//!
//! Names in records are as a log writes them ([`super::escape_name`]d),
//! so that a record made in memory and the same record parsed from text
//! say the same thing.

use super::record::Record;
use super::text::Style;
use super::writer::write_record;

/// Takes records in log order.
///
/// ```
/// use clrprof::format::{records::Tick, Record, RecordSink, Style, TextSink};
/// let mut text = Vec::new();
/// TextSink::new(&mut text, Style::BITS64).record(&Record::Tick(Tick { ms: 5 }));
/// assert_eq!(text, b"i 5\n");
/// ```
pub trait RecordSink {
    /// Takes the next record.
    fn record(&mut self, record: &Record<'_>);
}

/// A sink that writes records as CLRProfiler log text
/// ([`write_record`]).
pub struct TextSink<'o> {
    out: &'o mut Vec<u8>,
    style: Style,
}

impl<'o> TextSink<'o> {
    /// Appends to `out`, with addresses in `style`.
    pub fn new(out: &'o mut Vec<u8>, style: Style) -> Self {
        TextSink { out, style }
    }
}

impl RecordSink for TextSink<'_> {
    fn record(&mut self, record: &Record<'_>) {
        write_record(self.out, record, self.style);
    }
}

impl<S: RecordSink + ?Sized> RecordSink for &mut S {
    fn record(&mut self, record: &Record<'_>) {
        (**self).record(record);
    }
}
