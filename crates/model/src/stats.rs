//! Latency statistics: a lossless, mergeable histogram (HDR, auto-resizing, so no sample is ever
//! dropped into an overflow bucket) with exact count/min/max/mean/SD kept alongside, and the
//! [`Summary`] every result reports.
//!
//! Percentiles come from the HDR histogram with 3 significant digits: exact to the nanosecond
//! below 2048 ns and within 0.1% above. min, max, mean and SD are exact.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Streaming latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    moments: Moments,
}

/// Exact count, min, max, sum and sum of squares of the samples (the sums in recording order).
#[derive(Clone, Debug)]
struct Moments {
    count: u64,
    min: u64,
    max: u64,
    sum: f64,
    sum_sq: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments { count: 0, min: u64::MAX, max: 0, sum: 0.0, sum_sq: 0.0 }
    }
}

impl Moments {
    /// `count` samples of `ns` (n > 0).
    fn add(&mut self, ns: u64, count: u64) {
        self.count += count;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        let v = ns as f64;
        self.sum += v * count as f64;
        self.sum_sq += v * v * count as f64;
    }

    fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Population standard deviation.
    fn sd(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let m = self.mean();
        (self.sum_sq / self.count as f64 - m * m).max(0.0).sqrt()
    }

    fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// An empty HDR histogram of the configuration every [`LatencyHistogram`] uses.
fn hdr() -> Histogram<u64> {
    let mut hist = Histogram::new(3).expect("3 significant digits is valid");
    hist.auto(true);
    hist
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram { hist: hdr(), moments: Moments::default() }
    }

    /// Record one sample (ns).
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Record `count` samples of the same value.
    pub fn record_n(&mut self, ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        self.hist.record_n(ns, count).expect("auto-resizing histogram accepts every u64 value");
        self.moments.add(ns, count);
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.moments.count == 0 {
            return;
        }
        self.hist.add(&other.hist).expect("auto-resizing histograms merge");
        self.moments.merge(&other.moments);
    }

    pub fn count(&self) -> u64 {
        self.moments.count
    }
    pub fn min(&self) -> Option<u64> {
        (self.moments.count > 0).then_some(self.moments.min)
    }
    pub fn max(&self) -> Option<u64> {
        (self.moments.count > 0).then_some(self.moments.max)
    }
    pub fn mean(&self) -> f64 {
        self.moments.mean()
    }
    /// Population standard deviation.
    pub fn sd(&self) -> f64 {
        self.moments.sd()
    }

    /// Value at quantile q in [0, 1] (upper bound of the bucket, clamped to the exact max).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.moments.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).min(self.moments.max).max(self.moments.min)
    }

    /// (bucket low value, count) for every non-empty bucket, ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.hist.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    pub fn summary(&self) -> Summary {
        Summary::from_histogram(self)
    }
}

/// The HDR layout every [`LatencyHistogram`] uses, for its bucket arithmetic (which does not
/// depend on the values recorded).
fn layout() -> &'static Histogram<u64> {
    static LAYOUT: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    LAYOUT.get_or_init(hdr)
}

/// The samples of a [`LatencyHistogram`] in a fraction of its memory, for many small streams (one
/// per simulated task): a dense HDR histogram holds tens of KiB even for one sample, this holds
/// only its non-empty buckets (16 bytes each) and the exact moments, accumulated in the same
/// order. [`CompactHistogram::expand`] gives the LatencyHistogram with identical statistics.
#[derive(Clone, Debug, Default)]
pub struct CompactHistogram {
    /// (lowest value of the HDR bucket, count), ascending.
    buckets: Vec<(u64, u64)>,
    moments: Moments,
}

impl CompactHistogram {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record `sorted` (ascending), each run of equal values as one `record_n`: the same
    /// histogram and moments as [`LatencyHistogram::record_n`] on those runs in that order.
    pub fn record_sorted(&mut self, sorted: &[u64]) {
        let layout = layout();
        let mut added: Vec<(u64, u64)> = Vec::new();
        for run in sorted.chunk_by(|a, b| a == b) {
            self.moments.add(run[0], run.len() as u64);
            let bucket = layout.lowest_equivalent(run[0]);
            match added.last_mut() {
                Some(last) if last.0 == bucket => last.1 += run.len() as u64,
                _ => added.push((bucket, run.len() as u64)),
            }
        }
        self.buckets = merge_sorted(&self.buckets, &added);
    }

    pub fn count(&self) -> u64 {
        self.moments.count
    }

    /// The histogram of `runs` of `(value, count)`, ascending by value: the buckets and moments
    /// of [`LatencyHistogram::record_n`] on them in that order, in memory that follows the runs
    /// (a dense histogram of one value near 2^64 holds ~400 KiB).
    pub fn from_sorted_runs(runs: &[(u64, u64)]) -> Self {
        let layout = layout();
        let mut h = CompactHistogram::new();
        for &(value, n) in runs.iter().filter(|r| r.1 > 0) {
            h.moments.add(value, n);
            let bucket = layout.lowest_equivalent(value);
            match h.buckets.last_mut() {
                Some(last) if last.0 == bucket => last.1 += n,
                _ => h.buckets.push((bucket, n)),
            }
        }
        h
    }

    /// The value at quantile `q` that [`LatencyHistogram::quantile`] gives for the same samples:
    /// HDR's rule (the first bucket whose cumulative count reaches `ceil(q * count)`, at least 1;
    /// its highest equivalent value, its lowest for q = 0), walking the non-empty buckets only.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.moments.count == 0 {
            return 0;
        }
        let q = q.min(1.0);
        let target = ((q * self.moments.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        let bucket = self.buckets.iter().find(|(_, n)| {
            seen = seen.saturating_add(*n);
            seen >= target
        });
        let value = match bucket {
            Some(&(b, _)) if q == 0.0 => layout().lowest_equivalent(b),
            Some(&(b, _)) => layout().highest_equivalent(b),
            None => 0, // as HDR: a target beyond the count (float rounding)
        };
        value.min(self.moments.max).max(self.moments.min)
    }

    /// The summary [`LatencyHistogram::summary`] gives for the same samples.
    pub fn summary(&self) -> Summary {
        let m = &self.moments;
        Summary::of(m.count, (m.count > 0).then_some((m.min, m.max)), m.mean(), m.sd(), |q| self.quantile(q))
    }

    /// Bytes held on the heap (the bucket list).
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(u64, u64)>()
    }

    /// The dense histogram of the same samples (for summaries and percentiles).
    pub fn expand(&self) -> LatencyHistogram {
        let mut hist = hdr();
        for &(value, n) in &self.buckets {
            hist.record_n(value, n).expect("auto-resizing histogram accepts every u64 value");
        }
        LatencyHistogram { hist, moments: self.moments.clone() }
    }
}

/// Two ascending (key, count) lists as one, counts of equal keys added.
fn merge_sorted(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (key_a, key_b) = (a[i].0, b[j].0);
        let count = if key_a <= key_b { a[i].1 } else { 0 } + if key_b <= key_a { b[j].1 } else { 0 };
        out.push((key_a.min(key_b), count));
        i += (key_a <= key_b) as usize;
        j += (key_b <= key_a) as usize;
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out.shrink_to_fit();
    out
}

/// The statistics every latency/response-time result reports (nanoseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub sd: f64,
    pub p50: u64,
    pub p75: u64,
    /// Lower quartile (box plots). Optional so that files written before it existed still read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p25: Option<u64>,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
    /// Percentiles with too few samples to mean anything (fewer than 10 samples beyond them),
    /// e.g. ["p999", "p9999"] for 1,000 samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub low_confidence: Vec<String>,
}

/// (key, quantile) of every percentile in a [`Summary`].
pub const PERCENTILES: &[(&str, f64)] =
    &[("p50", 0.50), ("p75", 0.75), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999)];

impl Summary {
    pub fn from_histogram(histogram: &LatencyHistogram) -> Summary {
        let range = histogram.min().zip(histogram.max());
        Summary::of(histogram.count(), range, histogram.mean(), histogram.sd(), |q| histogram.quantile(q))
    }

    /// The summary of `count` samples between `range` (min, max; None when there are none)
    /// whose quantiles `q` gives.
    fn of(count: u64, range: Option<(u64, u64)>, mean: f64, sd: f64, q: impl Fn(f64) -> u64) -> Summary {
        let low_confidence =
            PERCENTILES.iter().filter(|(_, p)| (count as f64) * (1.0 - p) < 10.0).map(|(k, _)| k.to_string()).collect();
        Summary {
            count,
            min: range.map_or(0, |r| r.0),
            mean,
            sd,
            p50: q(0.5),
            p75: q(0.75),
            p25: (count > 0).then(|| q(0.25)),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: range.map_or(0, |r| r.1),
            low_confidence,
        }
    }

    /// Value of a percentile key ("p50", ..., "p9999").
    pub fn percentile(&self, key: &str) -> Option<u64> {
        Some(match key {
            "p50" => self.p50,
            "p75" => self.p75,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "p999" => self.p999,
            "p9999" => self.p9999,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn summary_of_known_data() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!((s.count, s.min, s.max), (1000, 1, 1000));
        assert_eq!(s.p50, 500);
        assert_eq!(s.p99, 990);
        assert!((s.mean - 500.5).abs() < 1e-9);
        assert!((s.sd - 288.6749).abs() < 1e-3);
        assert_eq!(s.low_confidence, vec!["p999", "p9999"]);
    }

    #[test]
    fn huge_values_are_kept() {
        let mut h = LatencyHistogram::new();
        h.record(5);
        h.record(u64::MAX / 4);
        assert_eq!(h.count(), 2);
        assert_eq!(h.max(), Some(u64::MAX / 4));
    }

    proptest! {
        #[test]
        fn merge_equals_recording_everything(a in proptest::collection::vec(0u64..10_000_000, 0..200),
                                             b in proptest::collection::vec(0u64..10_000_000, 0..200)) {
            let (mut ha, mut hb, mut all) = (LatencyHistogram::new(), LatencyHistogram::new(), LatencyHistogram::new());
            a.iter().for_each(|&v| { ha.record(v); all.record(v); });
            b.iter().for_each(|&v| { hb.record(v); all.record(v); });
            ha.merge(&hb);
            let (mut m, mut e) = (ha.summary(), all.summary());
            prop_assert!((m.sd - e.sd).abs() <= 1e-6 * e.sd.max(1.0));
            prop_assert!((m.mean - e.mean).abs() <= 1e-9 * e.mean.max(1.0));
            (m.sd, m.mean, e.sd, e.mean) = (0.0, 0.0, 0.0, 0.0);
            prop_assert_eq!(m, e);
        }

        #[test]
        fn compact_histogram_expands_to_the_same_statistics(chunks in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![0u64..3000, 0u64..50_000_000, 0u64..u64::MAX / 4], 0..300), 0..6)) {
            let (mut dense, mut compact) = (LatencyHistogram::new(), CompactHistogram::new());
            for mut chunk in chunks {
                chunk.sort_unstable();
                for run in chunk.chunk_by(|a, b| a == b) {
                    dense.record_n(run[0], run.len() as u64);
                }
                compact.record_sorted(&chunk);
            }
            let expanded = compact.expand();
            prop_assert_eq!(compact.summary(), dense.summary());
            prop_assert_eq!(expanded.summary(), dense.summary());
            prop_assert_eq!(expanded.buckets(), dense.buckets());
            prop_assert_eq!(expanded.mean().to_bits(), dense.mean().to_bits());
            prop_assert_eq!(expanded.sd().to_bits(), dense.sd().to_bits());
        }

        /// The sparse summary of (value, count) runs is the dense one, to the bit.
        #[test]
        fn compact_runs_summarise_as_the_dense_histogram(mut runs in proptest::collection::vec(
            (prop_oneof![0u64..3000, 0u64..50_000_000, 0u64..=u64::MAX], 0u64..1_000_000), 0..40)) {
            runs.sort_unstable();
            let mut dense = LatencyHistogram::new();
            runs.iter().for_each(|&(v, n)| dense.record_n(v, n));
            let compact = CompactHistogram::from_sorted_runs(&runs);
            let (c, d) = (compact.summary(), dense.summary());
            prop_assert_eq!((c.mean.to_bits(), c.sd.to_bits()), (d.mean.to_bits(), d.sd.to_bits()));
            prop_assert_eq!(c, d);
            for q in [0.0, 0.001, 0.25, 0.5, 0.999_999, 1.0] {
                prop_assert_eq!(compact.quantile(q), dense.quantile(q), "q = {}", q);
            }
        }

        #[test]
        fn quantiles_within_precision(
            mut v in proptest::collection::vec(0u64..1_000_000_000, 1..300), q in 0.0f64..1.0
        ) {
            let mut h = LatencyHistogram::new();
            v.iter().for_each(|&x| h.record(x));
            v.sort_unstable();
            let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            let exact = v[rank] as f64;
            let got = h.quantile(q) as f64;
            prop_assert!((got - exact).abs() <= exact * 0.001 + 1.0, "q={} exact={} got={}", q, exact, got);
        }
    }
}
