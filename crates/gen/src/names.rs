//! Plausible .NET names for the synthetic program: modules, classes,
//! methods, signatures and application types of an imaginary service,
//! "Fabrikam", running on the .NET Framework.

use super::rng::Rng;
use std::collections::HashSet;

/// The imaginary company whose service is being profiled.
pub const COMPANY: &str = "Fabrikam";

/// Functional areas: one application module (assembly) each.
pub const AREAS: &[&str] = &[
    "Orders",
    "Billing",
    "Inventory",
    "Shipping",
    "Catalog",
    "Identity",
    "Reporting",
    "Messaging",
    "Storage",
    "Pricing",
    "Search",
    "Scheduling",
];

const NOUNS: &[&str] = &[
    "Order", "Customer", "Invoice", "Product", "Shipment", "Account", "Payment", "Report", "Session", "Catalog",
    "Price", "Address", "Ledger", "Token", "Route", "Warehouse", "Basket", "Coupon", "Tenant", "Carrier",
    "Parcel", "Quote", "Receipt", "Schedule", "Document", "Profile", "Channel", "Segment", "Batch", "Rule",
];

const ROLES: &[&str] = &[
    "Service", "Repository", "Controller", "Builder", "Parser", "Cache", "Validator", "Serializer", "Handler",
    "Processor", "Factory", "Formatter", "Provider", "Mapper", "Reader", "Writer", "Client", "Dispatcher",
];

const VERBS: &[&str] = &[
    "Get", "Load", "Save", "Build", "Parse", "Validate", "Format", "Compute", "Resolve", "Dispatch", "Apply",
    "Create", "Find", "Update", "Merge", "Render", "Encode", "Decode", "Process", "Handle", "Enumerate", "Map",
];

const METHOD_SUFFIXES: &[&str] = &["", "", "", "Async", "Core", "Internal", "Batch", "ById", "All", "Lines"];

const PARAM_TYPES: &[&str] = &[
    "int32",
    "int64",
    "bool",
    "float64",
    "String",
    "Object",
    "String[]",
    "unsigned int8[]",
    "class System.IO.Stream",
    "value class System.Decimal",
    "value class System.DateTime",
    "value class System.Guid",
    "class System.Threading.CancellationToken",
    "class System.Collections.Generic.IEnumerable`1<String>",
];

const RETURN_TYPES: &[&str] =
    &["void", "void", "void", "bool", "int32", "int64", "String", "Object", "float64", "class System.Threading.Tasks.Task"];

const ENTITY_SUFFIXES: &[&str] =
    &["", "", "", "", "Line", "Entry", "Item", "Snapshot", "Key", "Info", "Options", "Result", "Event", "State"];

/// Picks one word.
pub fn pick<'a>(rng: &mut Rng, words: &[&'a str]) -> &'a str {
    words[rng.index(words.len())]
}

/// A class name in an area, such as `Fabrikam.Orders.InvoiceParser`.
pub fn class_name(rng: &mut Rng, area: &str) -> String {
    format!("{COMPANY}.{area}.{}{}", pick(rng, NOUNS), pick(rng, ROLES))
}

/// A method name, such as `LoadByIdAsync`.
pub fn method_name(rng: &mut Rng) -> String {
    let verb = pick(rng, VERBS);
    let noun = if rng.chance(0.5) { pick(rng, NOUNS) } else { "" };
    format!("{verb}{noun}{}", pick(rng, METHOD_SUFFIXES))
}

/// A signature as CLRProfiler writes it: `[static ]return (params)`.
pub fn signature(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.chance(0.35) {
        s.push_str("static ");
    }
    s.push_str(pick(rng, RETURN_TYPES));
    s.push_str(" (");
    let n = rng.below(4) as usize;
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(pick(rng, PARAM_TYPES));
    }
    s.push(')');
    s
}

/// An application type name, such as `Fabrikam.Billing.InvoiceLine`,
/// occasionally a compiler-generated closure or iterator class.
pub fn entity_name(rng: &mut Rng, area: &str) -> String {
    let noun = pick(rng, NOUNS);
    match rng.below(12) {
        0 => format!("{COMPANY}.{area}.{noun}{}+<>c__DisplayClass{}", pick(rng, ROLES), 1 + rng.below(30)),
        1 => format!("{COMPANY}.{area}.{noun}{}+<Get{noun}s>d__{}", pick(rng, ROLES), 1 + rng.below(20)),
        _ => format!("{COMPANY}.{area}.{noun}{}", pick(rng, ENTITY_SUFFIXES)),
    }
}

/// Makes names unique by appending a counter to repeats (`Name2`, `Name3`).
#[derive(Default)]
pub struct Unique {
    seen: HashSet<String>,
}

impl Unique {
    /// `name`, or `name` plus the first number that makes it new.
    pub fn make(&mut self, name: String) -> String {
        if self.seen.insert(name.clone()) {
            return name;
        }
        let mut k = 2;
        loop {
            let candidate = format!("{name}{k}");
            if self.seen.insert(candidate.clone()) {
                return candidate;
            }
            k += 1;
        }
    }

    /// A unique function name `Class::Method` (the counter goes on the
    /// method so the class stays recognizable).
    pub fn make_function(&mut self, class: &str, method: &str) -> String {
        let name = format!("{class}::{method}");
        if self.seen.insert(name.clone()) {
            return name;
        }
        let mut k = 2;
        loop {
            let candidate = format!("{class}::{method}{k}");
            if self.seen.insert(candidate.clone()) {
                return candidate;
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_well_formed() {
        let mut r = Rng::new(5);
        let mut u = Unique::default();
        for _ in 0..200 {
            let c = class_name(&mut r, "Orders");
            assert!(c.starts_with("Fabrikam.Orders."));
            let f = u.make_function(&c, &method_name(&mut r));
            assert!(!f.contains(' '));
            let s = signature(&mut r);
            assert!(s.ends_with(')') && s.matches(')').count() == 1);
            assert!(!entity_name(&mut r, "Billing").contains(' '));
        }
        assert_eq!(u.make("X".into()), "X");
        assert_eq!(u.make("X".into()), "X2");
    }
}
