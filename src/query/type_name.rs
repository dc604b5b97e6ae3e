//! One spelling of a type's name, for comparing files of different
//! formats.
//!
//! CLRProfiler's logs (and clrprof's agent, which writes them) spell an
//! array with a space before its brackets (`System.Byte []`) and generic
//! arguments as the agent formats them; the runtime's events and
//! `.gcdump` files spell them as the runtime does (`System.Byte[]`). The
//! views keep each file's own spelling (a log's figures stay CLRProfiler's,
//! names included); comparisons across files (`check`, `diff`) match names
//! by [`canonical_type_name`].

use std::borrow::Cow;

/// One spelling of a type name whatever the format that wrote it: no
/// blank before an array's brackets (`System.Byte []` -> `System.Byte[]`,
/// `T [,]` -> `T[,]`) and none after the commas between generic arguments
/// (`Dictionary<System.String, System.Int32>` ->
/// `Dictionary<System.String,System.Int32>`); generic arguments in angle
/// brackets without the arity (the runtime's events spell
/// ``System.Collections.Generic.List`1[Quokka]`` what a log and a
/// `.gcdump` spell `System.Collections.Generic.List<Quokka>`); nested
/// types joined with `.` (the runtime's and PerfView's `Outer+Inner`, a
/// log's `Outer.Inner`). The rest of the name is kept as it is.
pub fn canonical_type_name(name: &str) -> Cow<'_, str> {
    let b = name.as_bytes();
    let blanks = b.windows(2).any(|w| (w[0] == b' ' && w[1] == b'[') || (w[0] == b',' && w[1] == b' '));
    let runtime = b.iter().any(|&c| c == b'`' || c == b'+') || has_generic_brackets(name);
    if !blanks && !runtime {
        return Cow::Borrowed(name);
    }
    let unblanked = if blanks { Cow::Owned(without_blanks(name)) } else { Cow::Borrowed(name) };
    if !runtime {
        return unblanked;
    }
    Cow::Owned(angle_generics(&unblanked))
}

/// Whether a `[` right after a name's character opens generic arguments
/// rather than an array's rank (`Entry[System.String,System.Object]`).
fn has_generic_brackets(name: &str) -> bool {
    name.char_indices().any(|(i, c)| c == '[' && i > 0 && !is_rank(&name[i..]) && name[..i].ends_with(is_name_char))
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '>'
}

/// `List`1[Quokka]` -> `List<Quokka>`, `Outer+Inner` -> `Outer.Inner`:
/// arities dropped, generic argument brackets made angle brackets, array
/// ranks kept.
fn angle_generics(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    // For each open `[`: whether it opened generic arguments.
    let mut open: Vec<bool> = Vec::new();
    let mut chars = name.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '`' if chars.peek().is_some_and(|&(_, d)| d.is_ascii_digit()) => {
                while chars.peek().is_some_and(|&(_, d)| d.is_ascii_digit()) {
                    chars.next();
                }
            }
            '+' => out.push('.'),
            '[' => {
                let generic = !is_rank(&name[i..]) && out.ends_with(is_name_char);
                open.push(generic);
                out.push(if generic { '<' } else { '[' });
            }
            ']' => out.push(if open.pop().unwrap_or(false) { '>' } else { ']' }),
            c => out.push(c),
        }
    }
    out
}

/// The name without blanks before array ranks and after the commas between
/// generic arguments.
fn without_blanks(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0u32;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            ' ' if is_rank(&name[i..]) => continue,
            ' ' if depth > 0 && out.ends_with(',') => continue,
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Whether `rest` is blanks then an array rank specifier (`[]`, `[,]`,
/// `[*]`).
fn is_rank(rest: &str) -> bool {
    let t = rest.trim_start_matches(' ');
    let Some(inner) = t.strip_prefix('[') else { return false };
    let Some(end) = inner.find(']') else { return false };
    inner[..end].chars().all(|c| c == ',' || c == '*')
}

#[cfg(test)]
mod tests {
    use super::canonical_type_name as c;

    #[test]
    fn one_spelling_for_arrays_and_generic_arguments() {
        assert_eq!(c("System.Byte []"), "System.Byte[]");
        assert_eq!(c("System.Byte[]"), "System.Byte[]");
        assert_eq!(c("System.Int32 [,]"), "System.Int32[,]");
        assert_eq!(c("System.String [] []"), "System.String[][]");
        assert_eq!(
            c("System.Collections.Generic.Dictionary+Entry<System.String, System.Object> []"),
            "System.Collections.Generic.Dictionary.Entry<System.String,System.Object>[]"
        );
        assert_eq!(c("Outer+Inner"), "Outer.Inner");
        // A blank that is part of the name elsewhere stays.
        assert_eq!(c("Weird Name [x]"), "Weird Name [x]");
        assert_eq!(c("a, b"), "a, b");
    }

    #[test]
    fn one_spelling_for_the_runtimes_generic_and_nested_types() {
        // The runtime's events, a log (the agent's), a .gcdump (PerfView's).
        for name in ["System.Collections.Generic.List`1[Quokka]", "System.Collections.Generic.List<Quokka>"] {
            assert_eq!(c(name), "System.Collections.Generic.List<Quokka>", "{name}");
        }
        for name in ["Cage`1[Den+Mole]", "Cage<Den.Mole>", "Cage<Den+Mole>"] {
            assert_eq!(c(name), "Cage<Den.Mole>", "{name}");
        }
        for name in ["Dictionary`2[System.String,List`1[System.Int32]][]", "Dictionary<System.String, List<System.Int32>> []"] {
            assert_eq!(c(name), "Dictionary<System.String,List<System.Int32>>[]", "{name}");
        }
        assert_eq!(c("Entry[System.String,System.Object][]"), "Entry<System.String,System.Object>[]");
        assert_eq!(c("System.Int32[,][]"), "System.Int32[,][]");
        assert_eq!(c("Den.Mole"), "Den.Mole");
    }
}
