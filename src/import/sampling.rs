//! Sampled allocations: what each one stands for.

/// How a trace sampled allocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub enum SamplingMethod {
    /// `GC/AllocationTick`: one event each time about 100 KB were
    /// allocated on a heap, naming the object that crossed the line; the
    /// event stands for all the bytes allocated since the previous one.
    AllocationTick,
    /// `AllocationSampled` (.NET 10): each allocated byte is sampled with
    /// the same probability; an object of `s` bytes seen with probability
    /// `p = 1 - exp(-s / mean)` stands for `1 / p` objects.
    AllocationSampled,
}

impl SamplingMethod {
    /// The event's name, for messages.
    pub fn event(self) -> &'static str {
        match self {
            SamplingMethod::AllocationTick => "GC/AllocationTick",
            SamplingMethod::AllocationSampled => "AllocationSampled",
        }
    }
}

/// The sampled allocations of a trace and what each stands for.
///
/// The log made from a trace has one `!` record per sampled allocation,
/// in order, so the model's object ids index [`Sampling::weights`]: the
/// number of objects of that row's type and size the sample stands for.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub struct Sampling {
    /// How the trace sampled.
    pub method: SamplingMethod,
    /// Objects each sampled allocation stands for, in log order.
    pub weights: Vec<f32>,
    /// The runtime did not report the sampled object's size (events of
    /// version 3 and older): each sample is one row whose size is the bytes
    /// it stands for, so bytes are estimated and object counts are counts
    /// of samples.
    pub sizes_unknown: bool,
    /// What became of each sampled object, in log order, as the trace's
    /// moved and surviving ranges say (see the guide's EventPipe chapter,
    /// "Survival"); empty when the importer did not follow them. The
    /// model takes them over its heap simulation's.
    #[cfg_attr(feature = "model", serde(skip))]
    pub fates: Vec<SampledFate>,
}

/// What became of a sampled object, as a trace's GC reports say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub enum SampledFate {
    /// Still alive at the trace's end.
    Alive,
    /// Reclaimed by GC number `gc` (0-based, in the trace's order) while
    /// in `generation` (3: the large or pinned object heap).
    Died {
        /// The GC.
        gc: u32,
        /// Its generation then.
        generation: u8,
    },
    /// Alive until GC number `gc` began; after it nothing the runtime
    /// reported tells whether it lived: neither dead nor alive.
    Unknown {
        /// The first GC that left it unknown.
        gc: u32,
    },
}

impl Sampling {
    /// The estimated objects the samples stand for, in all.
    pub fn estimated_objects(&self) -> f64 {
        self.weights.iter().map(|&w| f64::from(w)).sum()
    }
}

impl TraceFacts {
    /// The name of the static field a heap-walk root stands for, by the
    /// root's id.
    pub fn static_field(&self, root_id: u64) -> Option<&str> {
        let k = self.static_fields.binary_search_by_key(&root_id, |(id, _)| *id).ok()?;
        self.static_fields.get(k).map(|(_, name)| name.as_str())
    }
}

/// What a trace said about itself, and what it could not say.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "model", derive(serde::Serialize, serde::Deserialize))]
pub struct TraceFacts {
    /// The file's format ("NetTrace V5").
    pub format: String,
    /// The traced process, when the trace names it.
    pub process_id: Option<u32>,
    /// Events read.
    pub events: u64,
    /// Sampled allocation events turned into `!` records.
    pub sampled_allocations: u64,
    /// GCs (`GC/Start`..`GC/Stop` pairs, or ends without a start).
    pub gcs: u64,
    /// Heap snapshots (`GC/BulkNode` walks) turned into heap dumps.
    pub heap_snapshots: u64,
    /// Whether GCs reported which objects survived and moved
    /// (`GC/BulkSurvivingObjectRanges`, `GC/BulkMovedObjectRanges`): only
    /// then are the sampled objects followed through GCs (lifetimes,
    /// survivors, the heap at the end); without, they stay "alive".
    /// Since survival is followed per object: true only when every
    /// sampled object's fate is known (none is "unknown").
    pub survival_known: bool,
    /// Sampled objects whose fate is unknown: they lay in memory a GC
    /// condemned without reporting its survivors, or in memory no
    /// generation range covered (see [`SampledFate::Unknown`]).
    #[cfg_attr(feature = "model", serde(default))]
    pub survival_unknown_samples: u64,
    /// Events the runtime dropped (sequence-number gaps).
    pub lost_events: u64,
    /// Objects of heap walks that are not in the dumps: their
    /// `GC/BulkNode` batches are missing (their numbers skip).
    #[cfg_attr(feature = "model", serde(default))]
    pub heap_walk_missing_objects: u64,
    /// References of heap walks that are not in the dumps: lost
    /// `GC/BulkEdge` batches, or edges that could not be placed on their
    /// objects after a lost node batch (left out, never put on another
    /// object).
    #[cfg_attr(feature = "model", serde(default))]
    pub heap_walk_missing_references: u64,
    /// Roots of heap walks in lost `GC/BulkRootEdge` batches.
    #[cfg_attr(feature = "model", serde(default))]
    pub heap_walk_missing_roots: u64,
    /// Stack frames no method event of the trace covers.
    pub unresolved_frames: u64,
    /// The static fields that are roots of the heap walks
    /// (`GC/BulkRootStaticVar`): (root id, the field's name), in root-id
    /// order. The runtime names the field, not the class declaring it.
    #[cfg_attr(feature = "model", serde(default))]
    pub static_fields: Vec<(u64, String)>,
    /// Warnings, one line each: a trace cut short, lost events, events
    /// that could not be decoded.
    pub warnings: Vec<String>,
}
