//! What a model's figures are made of: every allocation (a CLRProfiler
//! log), or samples (a trace) whose figures are estimates.

use crate::model::Model;
use serde::Serialize;

/// How the figures of a model of sampled allocations were made, for every
/// view to say so beside its figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimates {
    /// The sampling event (`GC/AllocationTick`).
    pub method: &'static str,
    /// Sampled allocations read.
    pub samples: u64,
    /// Objects they stand for, in all.
    pub estimated_objects: u64,
    /// The trace did not give the sampled objects' sizes: object counts
    /// are counts of samples, bytes are estimated.
    pub sizes_unknown: bool,
    /// Whether the GCs reported their survivors, so that lifetimes,
    /// survivors and the heap at the end are estimated from the samples
    /// followed through them; without, those figures are unknown.
    pub survival_known: bool,
    /// Sampled objects whose fate the GCs' reports leave unknown (counted
    /// as unknown in survivors, lifetime and ages; never as dead or
    /// alive).
    pub survival_unknown_samples: u64,
    /// Which figures are estimates, and how they were made, in a sentence.
    pub note: String,
}

/// The estimates of a model of a trace; `None` for a log of every
/// allocation (its figures are exact).
pub fn estimates(model: &Model) -> Option<Estimates> {
    let s = model.sampling()?;
    let facts = model.imported();
    let survival_known = facts.is_some_and(|f| f.survival_known);
    let unknown = facts.map_or(0, |f| f.survival_unknown_samples);
    let samples = s.weights.len() as u64;
    let estimated_objects = s.estimated_objects().round() as u64;
    let how = match s.method {
        crate::import::SamplingMethod::AllocationTick => "each stands for the bytes allocated since the previous one",
        crate::import::SamplingMethod::AllocationSampled => "each stands for the inverse of its chance of being sampled",
    };
    let mut note = format!("allocated objects and bytes are estimates from {samples} {} samples ({how})", s.method.event());
    if s.sizes_unknown {
        note.push_str("; the runtime did not report object sizes, so object counts are counts of samples");
    }
    if survival_known {
        note.push_str("; survivors and the heap at the end are estimated from the sampled objects followed through the GCs");
    } else if unknown > 0 && unknown < samples {
        note.push_str(&format!(
            "; survivors and the heap at the end are estimated from the sampled objects followed through the GCs, but {unknown} sample(s) lay in memory a GC condemned without reporting its survivors: their fate is unknown (counted apart, never as dead or alive)"
        ));
    } else {
        note.push_str("; the GCs did not report survivors (keyword GCHeapSurvivalAndMovement, 0x400000), so what survived is unknown");
    }
    Some(Estimates {
        method: s.method.event(),
        samples,
        estimated_objects,
        sizes_unknown: s.sizes_unknown,
        survival_known,
        survival_unknown_samples: unknown,
        note,
    })
}
