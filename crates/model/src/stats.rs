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
    count: u64,
    min: u64,
    max: u64,
    sum: f64,
    sum_sq: f64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        let mut hist = Histogram::new(3).expect("3 significant digits is valid");
        hist.auto(true);
        LatencyHistogram { hist, count: 0, min: u64::MAX, max: 0, sum: 0.0, sum_sq: 0.0 }
    }

    /// Record one sample (ns).
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Record `n` samples of the same value.
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.hist.record_n(ns, n).expect("auto-resizing histogram accepts every u64 value");
        self.count += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        let v = ns as f64;
        self.sum += v * n as f64;
        self.sum_sq += v * v * n as f64;
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.count == 0 {
            return;
        }
        self.hist.add(&other.hist).expect("auto-resizing histograms merge");
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }
    /// Population standard deviation.
    pub fn sd(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let m = self.mean();
        (self.sum_sq / self.count as f64 - m * m).max(0.0).sqrt()
    }

    /// Value at quantile q in [0, 1] (upper bound of the bucket, clamped to the exact max).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).min(self.max).max(self.min)
    }

    /// (bucket low value, count) for every non-empty bucket, ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.hist.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    pub fn summary(&self) -> Summary {
        Summary::from_histogram(self)
    }
}

/// The statistics every latency/response-time result reports (nanoseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    pub fn from_histogram(h: &LatencyHistogram) -> Summary {
        let q = |p| h.quantile(p);
        let low_confidence = PERCENTILES
            .iter()
            .filter(|(_, p)| (h.count() as f64) * (1.0 - p) < 10.0)
            .map(|(k, _)| k.to_string())
            .collect();
        Summary {
            count: h.count(),
            min: h.min().unwrap_or(0),
            mean: h.mean(),
            sd: h.sd(),
            p50: q(0.5),
            p75: q(0.75),
            p25: (h.count() > 0).then(|| q(0.25)),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: h.max().unwrap_or(0),
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
        fn quantiles_within_precision(mut v in proptest::collection::vec(0u64..1_000_000_000, 1..300), q in 0.0f64..1.0) {
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
