//! A sliding window of observed execution times (the last `capacity` samples), as the
//! planner's [`Samples`] so that budgets come from the planner's own code.

use rtvirt_model::exec::Samples;
use std::collections::VecDeque;
use std::sync::Arc;

/// The last `capacity` samples (ns), oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    capacity: usize,
    values: VecDeque<u64>,
}

impl Window {
    pub fn new(capacity: usize) -> Window {
        Window { capacity: capacity.max(1), values: VecDeque::with_capacity(capacity.max(1)) }
    }
    /// Adds a sample, dropping the oldest when full.
    pub fn push(&mut self, ns: u64) {
        if self.values.len() == self.capacity {
            self.values.pop_front();
        }
        self.values.push_back(ns);
    }
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// The window as sorted samples (`path` names where they came from in messages).
    pub fn samples(&self, path: &str) -> Samples {
        let mut v: Vec<u64> = self.values.iter().copied().collect();
        v.sort_unstable();
        Samples { path: path.into(), sorted_ns: Arc::new(v) }
    }
    /// Mean of the window (0 when empty).
    pub fn mean(&self) -> f64 {
        self.values.iter().map(|&v| v as f64).sum::<f64>() / self.values.len().max(1) as f64
    }
    /// Fraction of samples at or above `ns`.
    pub fn fraction_at_least(&self, ns: u64) -> f64 {
        self.values.iter().filter(|&&v| v >= ns).count() as f64 / self.values.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_capacity_samples() {
        let mut w = Window::new(3);
        for v in [5, 1, 4, 2] {
            w.push(v);
        }
        assert_eq!(w.len(), 3);
        assert_eq!(*w.samples("x").sorted_ns, vec![1, 2, 4]);
        assert!((w.mean() - 7.0 / 3.0).abs() < 1e-12);
        assert!((w.fraction_at_least(2) - 2.0 / 3.0).abs() < 1e-12);
    }
}
