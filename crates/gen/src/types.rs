//! The types the synthetic program allocates, and their sizes.
//!
//! Sizes follow the CLR's object layout for the process's pointer size
//! `p`: an object has a two-pointer header (sync block and method table)
//! and is at least three pointers long; arrays add a length word, strings a
//! length and a terminating character. Every size is a multiple of `p`
//! (so at least 12 bytes on 32-bit and 24 on 64-bit), which is what
//! CLRProfiler's reader needs to track every object.

use super::names::{self, AREAS};
use super::rng::{Chance, Rng};
use std::collections::HashMap;

/// Objects of this many bytes or more live on the large object heap.
pub const LARGE_OBJECT_BYTES: u64 = 85_000;

/// The largest object the generator makes (2^27 bytes).
pub const MAX_OBJECT_BYTES: u64 = 1 << 27;

/// How an object of a type is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A class (or boxed value) of fixed size: `ptr_fields` references and
    /// `extra` bytes of other fields.
    Fixed {
        /// Reference fields.
        ptr_fields: u32,
        /// Bytes of non-reference fields.
        extra: u32,
    },
    /// `System.String`: two bytes per character plus a terminator.
    String,
    /// An array of `elem`-byte elements; 0 means references.
    Array {
        /// Element size in bytes (0: pointer-sized references).
        elem: u32,
    },
}

/// Whether and how a type is finalized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finalizer {
    /// No finalizer.
    None,
    /// An ordinary finalizer (`l 0`).
    Normal,
    /// A critical finalizer, as `SafeHandle`s have (`l 1`).
    Critical,
}

/// How long objects of a type tend to live (see `lifetime.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Longevity {
    /// Temporaries: strings, builders, iterators, buffers.
    Temporary = 0,
    /// Domain data: entities, collections.
    Data = 1,
    /// OS resources: streams, handles.
    Resource = 2,
    /// Allocated at startup and kept forever.
    Permanent = 3,
}

/// One type.
#[derive(Clone, Debug)]
pub struct TypeSpec {
    /// The name as CLRProfiler writes it (`System.Byte []`).
    pub name: String,
    /// Layout.
    pub shape: Shape,
    /// Finalization.
    pub finalizer: Finalizer,
    /// Lifetime tendency.
    pub longevity: Longevity,
    /// Mean element count of strings and arrays (before the size scale).
    pub len_mean: f64,
    /// May be allocated as a large object.
    pub large_ok: bool,
}

impl TypeSpec {
    /// Whether objects of this type hold references (for heap dumps).
    pub fn holds_refs(&self) -> bool {
        match self.shape {
            Shape::Fixed { ptr_fields, .. } => ptr_fields > 0,
            Shape::String => false,
            Shape::Array { elem } => elem == 0,
        }
    }
}

/// How to size an object of a type without divisions (precomputed).
#[derive(Clone, Copy, Debug)]
struct SizeRule {
    /// The size of a fixed type, 0 for strings and arrays.
    fixed: u32,
    /// Bytes before the elements.
    header: u32,
    /// Bytes per element.
    elem: u32,
    /// Longest length that stays a small object.
    max_len: u32,
    /// Mean length (before the site's scale).
    len_mean: f64,
    /// Lifetime tendency.
    longevity: Longevity,
    /// Finalization.
    finalizer: Finalizer,
}

/// The catalog of types with size sampling.
pub struct TypeCatalog {
    specs: Vec<TypeSpec>,
    rules: Vec<SizeRule>,
    by_name: HashMap<String, usize>,
    ptr: u64,
    typical: Chance,
    /// Types allowed as large objects.
    large: Vec<usize>,
    /// Application types of each area.
    app_by_area: Vec<Vec<usize>>,
}

fn fixed(name: &str, ptr_fields: u32, extra: u32, longevity: Longevity) -> TypeSpec {
    TypeSpec {
        name: name.to_string(),
        shape: Shape::Fixed { ptr_fields, extra },
        finalizer: Finalizer::None,
        longevity,
        len_mean: 0.0,
        large_ok: false,
    }
}

fn array(name: &str, elem: u32, len_mean: f64, longevity: Longevity, large_ok: bool) -> TypeSpec {
    TypeSpec {
        name: name.to_string(),
        shape: Shape::Array { elem },
        finalizer: Finalizer::None,
        longevity,
        len_mean,
        large_ok,
    }
}

fn finalizable(mut t: TypeSpec, f: Finalizer) -> TypeSpec {
    t.finalizer = f;
    t
}

/// The framework types every run may use, in a fixed order. The first four
/// are the exceptions the runtime allocates at startup.
fn framework_types() -> Vec<TypeSpec> {
    use Longevity::*;
    vec![
        fixed("System.OutOfMemoryException", 14, 8, Permanent),
        fixed("System.StackOverflowException", 14, 8, Permanent),
        fixed("System.ExecutionEngineException", 14, 8, Permanent),
        fixed("System.Threading.ThreadAbortException", 14, 8, Permanent),
        TypeSpec {
            name: "System.String".into(),
            shape: Shape::String,
            finalizer: Finalizer::None,
            longevity: Temporary,
            len_mean: 22.0,
            large_ok: false,
        },
        fixed("System.Object", 0, 0, Temporary),
        array("System.Char []", 2, 48.0, Temporary, true),
        array("System.Byte []", 1, 160.0, Temporary, true),
        array("System.Int32 []", 4, 24.0, Data, true),
        array("System.Double []", 8, 16.0, Data, true),
        array("System.Object []", 0, 12.0, Data, true),
        array("System.String []", 0, 8.0, Temporary, true),
        array("System.Collections.Generic.Dictionary<T,U>.Entry []", 24, 12.0, Data, true),
        fixed("System.Text.StringBuilder", 2, 16, Temporary),
        fixed("System.Collections.Generic.List<T>", 2, 8, Data),
        fixed("System.Collections.Generic.Dictionary<T,U>", 6, 16, Data),
        fixed("System.Collections.Generic.List<T>.Enumerator", 2, 8, Temporary),
        fixed("System.Int32", 0, 4, Temporary),
        fixed("System.Decimal", 0, 16, Temporary),
        fixed("System.Guid", 0, 16, Temporary),
        fixed("System.Func<T,TResult>", 4, 8, Temporary),
        fixed("System.EventHandler", 4, 8, Data),
        fixed("System.Threading.Tasks.Task<TResult>", 5, 16, Temporary),
        fixed("System.Linq.Enumerable.WhereSelectListIterator<TSource,TResult>", 5, 16, Temporary),
        fixed("System.Text.RegularExpressions.Match", 8, 24, Temporary),
        fixed("System.IO.MemoryStream", 2, 24, Temporary),
        fixed("System.Xml.XmlElement", 6, 8, Data),
        finalizable(fixed("System.IO.FileStream", 5, 40, Resource), Finalizer::Normal),
        finalizable(fixed("System.Net.Sockets.Socket", 6, 32, Resource), Finalizer::Normal),
        finalizable(fixed("System.Threading.ReaderWriterLock", 1, 40, Resource), Finalizer::Normal),
        finalizable(fixed("Microsoft.Win32.SafeHandles.SafeFileHandle", 0, 16, Resource), Finalizer::Critical),
        finalizable(fixed("Microsoft.Win32.SafeHandles.SafeWaitHandle", 0, 16, Resource), Finalizer::Critical),
        finalizable(fixed("System.Threading.ManualResetEvent", 2, 8, Resource), Finalizer::None),
    ]
}

impl TypeCatalog {
    /// The framework types plus `app_types` application types spread over
    /// `areas` areas, for a process with `ptr`-byte pointers.
    pub fn new(rng: &mut Rng, ptr: u64, app_types: u32, areas: usize, finalizers: bool) -> TypeCatalog {
        let mut specs = framework_types();
        let mut unique = names::Unique::default();
        for t in &specs {
            unique.make(t.name.clone());
        }
        let areas = areas.clamp(1, AREAS.len());
        let mut app_by_area = vec![Vec::new(); areas];
        for k in 0..app_types as usize {
            let area = k % areas;
            let area_name = AREAS[area];
            let roll = rng.below(100);
            let spec = if roll < 8 {
                let base = unique.make(names::entity_name(rng, area_name));
                array(&format!("{base} []"), 0, 6.0, Longevity::Data, false)
            } else if roll < 10 {
                let name = unique.make(format!("{}.{area_name}.Native{}Handle", names::COMPANY, k));
                finalizable(fixed(&name, 0, 16, Longevity::Resource), Finalizer::Critical)
            } else if roll < 13 {
                let name = unique.make(format!("{}.{area_name}.Pooled{}Channel", names::COMPANY, k));
                finalizable(fixed(&name, 3, 24, Longevity::Resource), Finalizer::Normal)
            } else {
                let name = unique.make(names::entity_name(rng, area_name));
                let ptr_fields = 1 + rng.below(7) as u32;
                let extra = 4 * rng.below(9) as u32;
                let longevity = if rng.chance(0.3) { Longevity::Temporary } else { Longevity::Data };
                fixed(&name, ptr_fields, extra, longevity)
            };
            app_by_area[area].push(specs.len());
            specs.push(spec);
        }
        if !finalizers {
            for s in &mut specs {
                s.finalizer = Finalizer::None;
            }
        }
        let by_name = specs.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect();
        let large = specs.iter().enumerate().filter(|(_, s)| s.large_ok).map(|(i, _)| i).collect();
        let mut c = TypeCatalog { specs, rules: Vec::new(), by_name, ptr, large, app_by_area, typical: Chance::new(TYPICAL_SHARE) };
        c.rules = (0..c.specs.len()).map(|t| c.rule(t)).collect();
        c
    }

    fn rule(&self, ty: usize) -> SizeRule {
        let spec = &self.specs[ty];
        match spec.shape {
            Shape::Fixed { .. } => SizeRule {
                fixed: self.size_of(ty, 0) as u32,
                header: 0,
                elem: 0,
                max_len: 0,
                len_mean: 0.0,
                longevity: spec.longevity,
                finalizer: spec.finalizer,
            },
            shape => {
                let (header, elem) = self.element_layout(shape);
                let max_len = (LARGE_OBJECT_BYTES - 1 - header - self.ptr) / elem;
                SizeRule {
                    fixed: 0,
                    header: header as u32,
                    elem: elem as u32,
                    max_len: max_len as u32,
                    len_mean: spec.len_mean,
                    longevity: spec.longevity,
                    finalizer: spec.finalizer,
                }
            }
        }
    }

    /// Number of types.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// One type.
    #[inline]
    pub fn spec(&self, ty: usize) -> &TypeSpec {
        &self.specs[ty]
    }

    /// Lifetime tendency and finalization of a type (packed beside its
    /// size rule, for the allocation path).
    #[inline]
    pub fn fate(&self, ty: usize) -> (Longevity, Finalizer) {
        let r = &self.rules[ty];
        (r.longevity, r.finalizer)
    }

    /// A type by name.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Application types of an area (may be empty).
    pub fn app_types(&self, area: usize) -> &[usize] {
        self.app_by_area.get(area).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Types allowed on the large object heap.
    pub fn large_types(&self) -> &[usize] {
        &self.large
    }

    fn align(&self, n: u64) -> u64 {
        n.div_ceil(self.ptr) * self.ptr
    }

    /// Header bytes before the elements of a string or array, and bytes per
    /// element.
    fn element_layout(&self, shape: Shape) -> (u64, u64) {
        let p = self.ptr;
        match shape {
            Shape::String => (2 * p + 4 + 2, 2),
            Shape::Array { elem: 0 } => (3 * p, p),
            Shape::Array { elem } => (3 * p, elem as u64),
            Shape::Fixed { .. } => (2 * p, 0),
        }
    }

    /// The size of an object of `ty` with `len` elements (ignored for fixed
    /// types).
    pub fn size_of(&self, ty: usize, len: u64) -> u64 {
        let p = self.ptr;
        let raw = match self.specs[ty].shape {
            Shape::Fixed { ptr_fields, extra } => 2 * p + ptr_fields as u64 * p + extra as u64,
            shape => {
                let (header, elem) = self.element_layout(shape);
                header + elem * len
            }
        };
        self.align(raw).max(3 * p)
    }

    /// The expected size of a small object of `ty` as `a + b * scale`:
    /// `(a, b)`. Exact for fixed types; for strings and arrays `a` is the
    /// header plus the mean rounding, `b` the bytes of the mean length.
    pub fn mean_parts(&self, ty: usize) -> (f64, f64) {
        let spec = &self.specs[ty];
        match spec.shape {
            Shape::Fixed { .. } => (self.size_of(ty, 0) as f64, 0.0),
            shape => {
                let (header, elem) = self.element_layout(shape);
                // Lengths are floored (-0.5 element) and sizes rounded up to
                // a pointer (+ about half a pointer).
                let a = header as f64 + (self.ptr as f64 - elem as f64) / 2.0;
                // Rounding lengths to four significant bits loses about 4%.
                (a, elem as f64 * spec.len_mean * 0.96)
            }
        }
    }

    /// Draws the size of a small object of `ty` at a site whose typical
    /// length is `len_scale` times the type's mean: two draws in three
    /// take the typical length, the others spread around it
    /// (exponentially). Lengths are capped below the large-object
    /// threshold.
    #[inline]
    pub fn small_size(&self, rng: &mut Rng, ty: usize, len_scale: f64) -> u64 {
        let r = self.rules[ty];
        if r.fixed != 0 {
            return r.fixed as u64;
        }
        let typical = r.len_mean * len_scale;
        let len = if rng.hit(self.typical) { typical } else { rng.exponential(typical) };
        let len = quantize(len as u64).min(r.max_len as u64);
        let p = self.ptr;
        ((r.header as u64 + r.elem as u64 * len + p - 1) & !(p - 1)).max(3 * p)
    }

    /// Draws the size of a large object (85,000 bytes or more) of `ty`.
    pub fn large_size(&self, rng: &mut Rng, ty: usize) -> u64 {
        let spec = &self.specs[ty];
        let (header, elem) = self.element_layout(spec.shape);
        let target = LARGE_OBJECT_BYTES as f64 + rng.exponential(LARGE_EXCESS_MEAN);
        let target = (target as u64).min(MAX_OBJECT_BYTES);
        let len = (target.saturating_sub(header) + elem - 1) / elem.max(1);
        let mut size = self.size_of(ty, len);
        while size < LARGE_OBJECT_BYTES {
            size += self.ptr;
        }
        size.min(MAX_OBJECT_BYTES)
    }
}

/// Rounds a length down to four significant bits above 32: programs size
/// buffers in round numbers (capacities double, pools hand out fixed
/// sizes), so lengths cluster, and so do the allocation stacks that carry
/// them.
#[inline]
fn quantize(len: u64) -> u64 {
    if len < 32 {
        return len;
    }
    let shift = 60 - len.leading_zeros();
    (len >> shift) << shift
}

/// Share of allocations at a site that take the site's typical length.
const TYPICAL_SHARE: f64 = 0.65;

/// Mean bytes of a large object beyond the 85,000-byte threshold.
pub const LARGE_EXCESS_MEAN: f64 = 65_000.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_clr_layout() {
        let mut r = Rng::new(1);
        let c64 = TypeCatalog::new(&mut r, 8, 20, 3, true);
        let c32 = TypeCatalog::new(&mut Rng::new(1), 4, 20, 3, true);
        let s = c64.find("System.String").unwrap();
        assert_eq!(c64.size_of(s, 0), 24);
        assert_eq!(c64.size_of(s, 5), 32);
        assert_eq!(c32.size_of(s, 0), 16);
        let ex = c64.find("System.OutOfMemoryException").unwrap();
        assert_eq!(c64.size_of(ex, 0), 136);
        assert_eq!(c32.size_of(ex, 0), 72);
        let obj = c64.find("System.Object").unwrap();
        assert_eq!(c64.size_of(obj, 0), 24);
        assert_eq!(c32.size_of(obj, 0), 12);
        for c in [&c64, &c32] {
            let p = c.ptr;
            for ty in 0..c.len() {
                for _ in 0..50 {
                    let n = c.small_size(&mut r, ty, 3.0);
                    assert!(n % p == 0 && n >= 3 * p && n < LARGE_OBJECT_BYTES, "{n}");
                }
            }
            for &ty in c.large_types() {
                let n = c.large_size(&mut r, ty);
                assert!(n % p == 0 && (LARGE_OBJECT_BYTES..=MAX_OBJECT_BYTES).contains(&n));
            }
        }
    }

    #[test]
    fn lengths_are_rounded_to_four_significant_bits() {
        assert_eq!(quantize(31), 31);
        assert_eq!(quantize(33), 32);
        assert_eq!(quantize(63), 60);
        assert_eq!(quantize(100), 96);
        assert_eq!(quantize(1000), 960);
    }

    #[test]
    fn finalizers_can_be_switched_off() {
        let c = TypeCatalog::new(&mut Rng::new(2), 8, 50, 4, false);
        assert!((0..c.len()).all(|t| c.spec(t).finalizer == Finalizer::None));
        let c = TypeCatalog::new(&mut Rng::new(2), 8, 50, 4, true);
        assert!((0..c.len()).any(|t| c.spec(t).finalizer == Finalizer::Critical));
        assert!(!c.spec(c.find("System.String").unwrap()).holds_refs());
        assert!(c.spec(c.find("System.Object []").unwrap()).holds_refs());
    }
}
