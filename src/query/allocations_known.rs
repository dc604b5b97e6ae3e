//! Whether a model has allocations to show, and why not when it has none.
//!
//! A trace recorded without allocation events (CPU samples only, GC events
//! only), a `.gcdump` (one heap snapshot) and a log recorded without
//! allocation events (an attached recording, a heap dump file) cannot say
//! what was allocated: their allocation figures are unknown, not 0, and
//! every view made of allocations refuses them with the reason.

use crate::model::Model;

/// Why the model's allocations are unknown; `None` when it has them (a
/// log of allocations, a trace with sampled allocations).
pub fn allocations_unknown(model: &Model) -> Option<String> {
    if let Some(facts) = model.imported() {
        if model.sampling().is_some() {
            return None;
        }
        if facts.format.starts_with("gcdump") {
            return Some("a .gcdump holds one heap snapshot and no allocation events".to_string());
        }
        return Some(
            "the trace has no allocation events (GC/AllocationTick or AllocationSampled: the runtime provider's GC keyword 0x1 at level 5)"
                .to_string(),
        );
    }
    if !model.had_alloc_info() && super::summary::recorded_without_allocations(model) {
        return Some("the log was recorded without allocation events (an attached recording or a heap dump file)".to_string());
    }
    None
}
