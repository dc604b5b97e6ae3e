//! An event's decoded fields, looked up by name.

use crate::eventpipe::{AllocationTick, Event, Field, Value};

/// The fields of one event.
pub(super) struct Fields<'a> {
    fields: Vec<Field<'a>>,
}

impl<'a> Fields<'a> {
    /// The event's fields, `None` when they cannot be decoded (an unknown
    /// layout, or a payload too short for it: the event is then skipped
    /// and counted by the caller).
    pub fn of(e: &Event<'a>) -> Option<Fields<'a>> {
        match e.fields() {
            Ok(Some(fields)) => Some(Fields { fields }),
            _ => None,
        }
    }

    /// No fields (what a payload read otherwise answers to a name).
    pub fn empty() -> Fields<'a> {
        Fields { fields: Vec::new() }
    }

    /// A field's value.
    pub fn get(&self, name: &str) -> Option<&Value<'a>> {
        self.fields.iter().find(|f| f.name == name).map(|f| &f.value)
    }

    /// An integer field.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    /// A string field ("" when missing).
    pub fn string(&self, name: &str) -> String {
        match self.get(name) {
            Some(Value::Str(s)) => s.to_string(),
            _ => String::new(),
        }
    }

    /// The elements of an array-of-structs field (`Values` of the bulk
    /// events), each as its fields.
    pub fn structs(&self, name: &str) -> &[Value<'a>] {
        match self.get(name) {
            Some(Value::Array(items)) => items,
            _ => &[],
        }
    }
}

/// An integer member of a struct value.
pub(super) fn member_u64(v: &Value<'_>, name: &str) -> Option<u64> {
    match v {
        Value::Struct(fields) => fields.iter().find(|f| f.name == name).and_then(|f| f.value.as_u64()),
        _ => None,
    }
}

/// A string member of a struct value ("" when missing).
pub(super) fn member_string(v: &Value<'_>, name: &str) -> String {
    match v {
        Value::Struct(fields) => match fields.iter().find(|f| f.name == name).map(|f| &f.value) {
            Some(Value::Str(s)) => s.to_string(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// `GC/AllocationTick`'s fields from the general decoder's (a layout the
/// typed read does not take: an EventSource's own description of it).
pub(super) fn allocation_tick<'a>(f: &Fields<'a>) -> AllocationTick<'a> {
    AllocationTick {
        allocation_amount: f.u64("AllocationAmount"),
        allocation_kind: f.u64("AllocationKind"),
        clr_instance_id: f.u64("ClrInstanceID"),
        allocation_amount64: f.u64("AllocationAmount64"),
        type_id: f.u64("TypeID"),
        type_name: match f.get("TypeName") {
            Some(Value::Str(s)) => Some(*s),
            _ => None,
        },
        heap_index: f.u64("HeapIndex"),
        address: f.u64("Address"),
        object_size: f.u64("ObjectSize"),
    }
}
