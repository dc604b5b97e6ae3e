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

/// The runtime's spelling of a type name: no blank before an array's
/// brackets (`System.Byte []` -> `System.Byte[]`, `T [,]` -> `T[,]`) and
/// none after the commas between generic arguments
/// (`Dictionary<System.String, System.Int32>` ->
/// `Dictionary<System.String,System.Int32>`). Nested types (`Outer+Inner`)
/// and the rest of the name are kept as they are.
pub fn canonical_type_name(name: &str) -> Cow<'_, str> {
    let b = name.as_bytes();
    let needs = b.windows(2).any(|w| (w[0] == b' ' && w[1] == b'[') || (w[0] == b',' && w[1] == b' '));
    if !needs {
        return Cow::Borrowed(name);
    }
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
    Cow::Owned(out)
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
            "System.Collections.Generic.Dictionary+Entry<System.String,System.Object>[]"
        );
        assert_eq!(c("Outer+Inner"), "Outer+Inner");
        // A blank that is part of the name elsewhere stays.
        assert_eq!(c("Weird Name [x]"), "Weird Name [x]");
        assert_eq!(c("a, b"), "a, b");
    }
}
