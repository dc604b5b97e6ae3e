//! Tests: a small deterministic pseudo-random source (xorshift64), shared
//! by the tests that build random logs and operation mixes.

/// A generator of pseudo-random `u64`s from `state` (which must not be 0).
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
