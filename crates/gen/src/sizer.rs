//! Keeps the mean object size on target.
//!
//! Which types get allocated depends on where the threads' random walks
//! take them, so the mix is only known as it happens. Each type's expected
//! size is `a + b * scale` (fixed types have `b = 0`; strings and arrays
//! scale their mean length), so after `n` allocations the scale that makes
//! the expected mean equal the target is `(target * n - sum a) / sum b`.
//! The sums do not depend on the scale, so the estimate converges without
//! oscillating. Rounding (lengths to four significant bits, sizes to
//! pointers, the large-object cap) makes real sizes differ a little from
//! the model; the ratio of the real variable part to the modelled one
//! corrects `sum b`. Refreshed every 256 allocations.

use super::types::TypeCatalog;

/// The current length scale and the sums behind it.
pub struct Sizer {
    parts: Vec<(f64, f64)>,
    target: f64,
    a_sum: f64,
    b_sum: f64,
    /// Sum of `size - a` over the allocations.
    real_var: f64,
    /// Sum of `b * scale` over the allocations.
    model_var: f64,
    n: u64,
    scale: f64,
}

impl Sizer {
    /// A sizer aiming small objects at `target` bytes on average.
    pub fn new(types: &TypeCatalog, target: f64) -> Sizer {
        let parts = (0..types.len()).map(|t| types.mean_parts(t)).collect();
        Sizer { parts, target, a_sum: 0.0, b_sum: 0.0, real_var: 0.0, model_var: 0.0, n: 0, scale: 1.0 }
    }

    /// The scale for the next string or array length.
    #[inline]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Notes a small object of type `ty` and `size` bytes, allocated at a
    /// site whose typical length is `factor` times the type's mean, with
    /// the current scale.
    #[inline]
    pub fn note(&mut self, ty: usize, factor: f64, size: u64) {
        let (a, b) = self.parts[ty];
        let b = b * factor;
        self.a_sum += a;
        self.b_sum += b;
        if b > 0.0 {
            self.real_var += size as f64 - a;
            self.model_var += b * self.scale;
        }
        self.n += 1;
        if self.n % 256 == 0 && self.b_sum > 0.0 {
            let bias = if self.model_var > 0.0 { (self.real_var / self.model_var).clamp(0.5, 2.0) } else { 1.0 };
            self.scale = ((self.target * self.n as f64 - self.a_sum) / (self.b_sum * bias)).clamp(0.02, 200.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn converges_on_the_target() {
        let mut r = Rng::new(1);
        let types = TypeCatalog::new(&mut r, 8, 10, 2, true);
        let s = types.find("System.String").unwrap();
        let o = types.find("System.Object").unwrap();
        let mut sizer = Sizer::new(&types, 120.0);
        let mut total = 0u64;
        let n = 200_000;
        for k in 0..n {
            let ty = if k % 2 == 0 { s } else { o };
            let size = types.small_size(&mut r, ty, sizer.scale());
            sizer.note(ty, 1.0, size);
            total += size;
        }
        let mean = total as f64 / n as f64;
        assert!((mean - 120.0).abs() < 4.0, "{mean}");
    }
}
