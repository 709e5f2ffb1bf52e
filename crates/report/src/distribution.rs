//! A latency distribution as a report can know it: exactly, from histogram buckets carried in a
//! result (`histogram_ns`), or only at the percentiles of its [`Summary`].
//!
//! With percentiles only, the CDF is known at (min, 0), (p25, 0.25) when present, (p50, 0.5) ...
//! (p99.99, 0.9999), (max, 1); charts draw straight segments between those points and mark them.
//! Histogram shares spread the mass between two known percentiles uniformly over the
//! logarithm of the interval (e.g. 25% of the samples lie between p50 and p75, spread over
//! log10(p50)..log10(p75)): the mass per band is exact, its shape inside the band is assumed.

use rtvirt_model::stats::Summary;

#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// (value_ns, count) per non-empty histogram bucket, ascending.
    Buckets(Vec<(u64, u64)>),
    /// (value_ns, cumulative probability) at the known percentiles, ascending.
    Quantiles(Vec<(f64, f64)>),
}

impl Distribution {
    /// Exact buckets when the result carries them, else the summary's percentiles.
    pub fn of(summary: &Summary, buckets: Option<Vec<(u64, u64)>>) -> Distribution {
        match buckets {
            Some(mut b) if b.iter().any(|&(_, c)| c > 0) => {
                b.retain(|&(_, c)| c > 0);
                b.sort_unstable();
                Distribution::Buckets(b)
            }
            _ => Distribution::Quantiles(quantile_points(summary)),
        }
    }

    pub fn is_exact(&self) -> bool {
        matches!(self, Distribution::Buckets(_))
    }

    /// (value, F(value)) points of the CDF, ascending.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        match self {
            Distribution::Quantiles(q) => q.clone(),
            Distribution::Buckets(b) => {
                let total: u64 = b.iter().map(|&(_, c)| c).sum();
                let mut cum = 0u64;
                let mut pts = vec![(b[0].0 as f64, 0.0)];
                for &(v, c) in b {
                    cum += c;
                    pts.push((v as f64, cum as f64 / total as f64));
                }
                pts
            }
        }
    }

    /// (value, share of samples at or above it) points, descending from 1: per bucket with exact
    /// buckets (the last is the maximum's share), else at the known percentiles whose share is
    /// at least one of `count` samples, ending at the maximum with one sample.
    pub fn exceedance(&self, count: u64) -> Vec<(f64, f64)> {
        match self {
            Distribution::Buckets(b) => {
                let total: u64 = b.iter().map(|&(_, c)| c).sum();
                let mut above = total;
                b.iter()
                    .map(|&(v, c)| {
                        let share = above as f64 / total as f64;
                        above -= c;
                        (v as f64, share)
                    })
                    .collect()
            }
            Distribution::Quantiles(q) => {
                let one = 1.0 / count.max(1) as f64;
                let (max, _) = *q.last().expect("quantile points end at the maximum");
                let mut pts: Vec<(f64, f64)> =
                    q.iter().map(|&(v, f)| (v, 1.0 - f)).filter(|&(v, p)| p >= one && v < max).collect();
                pts.push((max, one));
                pts
            }
        }
    }

    /// Share of the samples at or above `value` (exact with buckets, else at the first known
    /// percentile at or above `value`).
    pub fn exceedance_at(&self, value: f64) -> f64 {
        match self {
            Distribution::Buckets(b) => {
                let total: u64 = b.iter().map(|&(_, c)| c).sum();
                let above: u64 = b.iter().filter(|&&(x, _)| x as f64 >= value).map(|&(_, c)| c).sum();
                above as f64 / total.max(1) as f64
            }
            Distribution::Quantiles(q) => q.iter().find(|&&(x, _)| x >= value).map_or(0.0, |&(_, f)| 1.0 - f),
        }
    }

    /// Value at quantile `q` (the first value whose cumulative share reaches q).
    pub fn quantile(&self, q: f64) -> f64 {
        let cdf = self.cdf();
        cdf.iter().find(|&&(_, f)| f >= q - 1e-12).or(cdf.last()).map_or(0.0, |p| p.0)
    }

    /// Share of the samples in each log-spaced bin `[edges[i], edges[i+1])`; values outside the
    /// edges go to the first/last bin so that the shares always sum to 1.
    pub fn shares(&self, edges: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; edges.len().saturating_sub(1)];
        if out.is_empty() {
            return out;
        }
        match self {
            Distribution::Buckets(b) => {
                let total: u64 = b.iter().map(|&(_, c)| c).sum();
                for &(v, c) in b {
                    out[bin_of(edges, v as f64)] += c as f64 / total as f64;
                }
            }
            Distribution::Quantiles(q) => {
                for w in q.windows(2) {
                    spread_log_uniform(&mut out, edges, w[0].0, w[1].0, w[1].1 - w[0].1);
                }
            }
        }
        out
    }
}

/// The summary's known (value, quantile) points, ascending in both.
fn quantile_points(summary: &Summary) -> Vec<(f64, f64)> {
    let mut pts = vec![(summary.min as f64, 0.0)];
    if let Some(p25) = summary.p25 {
        pts.push((p25 as f64, 0.25));
    }
    for (v, q) in [
        (summary.p50, 0.5),
        (summary.p75, 0.75),
        (summary.p90, 0.9),
        (summary.p95, 0.95),
        (summary.p99, 0.99),
        (summary.p999, 0.999),
        (summary.p9999, 0.9999),
        (summary.max, 1.0),
    ] {
        let prev = pts.last().map_or(0.0, |p| p.0);
        pts.push(((v as f64).max(prev), q));
    }
    pts
}

/// Index of the bin holding `value` (clamped to the first/last bin).
fn bin_of(edges: &[f64], value: f64) -> usize {
    let n = edges.len() - 1;
    edges[1..n].iter().take_while(|&&e| e <= value).count()
}

/// Add `mass`, spread uniformly over log10 of [a, b], to the bins.
fn spread_log_uniform(out: &mut [f64], edges: &[f64], a: f64, b: f64, mass: f64) {
    if mass <= 0.0 {
        return;
    }
    let (la, lb) = (a.max(1.0).log10(), b.max(1.0).log10());
    if lb - la < 1e-12 {
        out[bin_of(edges, a.max(1.0))] += mass;
        return;
    }
    let n = out.len();
    for (i, slot) in out.iter_mut().enumerate() {
        let lo = if i == 0 { f64::NEG_INFINITY } else { edges[i].log10() };
        let hi = if i == n - 1 { f64::INFINITY } else { edges[i + 1].log10() };
        let overlap = (hi.min(lb) - lo.max(la)).max(0.0);
        *slot += mass * overlap / (lb - la);
    }
}

/// Log-spaced bin edges, `per_decade` bins per decade, from `lo` to `hi` (both powers of ten).
pub fn log_edges(lo: f64, hi: f64, per_decade: u32) -> Vec<f64> {
    let decades = (hi / lo).log10().round().max(1.0) as u32;
    (0..=decades * per_decade).map(|i| lo * 10f64.powf(i as f64 / per_decade as f64)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rtvirt_model::stats::LatencyHistogram;

    fn hist(values: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        values.iter().for_each(|&v| h.record(v));
        h
    }

    #[test]
    fn bucket_cdf_ends_at_one_and_quantiles_match() {
        let h = hist(&(1..=1000).map(|v| v * 1000).collect::<Vec<_>>());
        let d = Distribution::of(&h.summary(), Some(h.buckets()));
        assert!(d.is_exact());
        let cdf = d.cdf();
        assert_eq!(cdf.last().unwrap().1, 1.0);
        let p25 = d.quantile(0.25);
        assert!((p25 - 250_000.0).abs() / 250_000.0 < 0.002, "{p25}");
    }

    #[test]
    fn exceedance_falls_from_one_to_the_maximum_sample() {
        let h = hist(&(1..=10_000).map(|v| v * 100).collect::<Vec<_>>());
        let s = h.summary();
        for d in [Distribution::of(&s, Some(h.buckets())), Distribution::of(&s, None)] {
            let e = d.exceedance(s.count);
            assert_eq!(e[0].1, 1.0, "every sample is at or above the minimum");
            let last = *e.last().unwrap();
            assert!((last.0 / s.max as f64 - 1.0).abs() < 0.01, "ends at the maximum's bucket: {last:?}");
            assert!(last.1 > 0.0 && last.1 <= 2.0 / s.count as f64, "{last:?}");
            assert!(e.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1), "{e:?}");
            let at = d.exceedance_at(s.p9999 as f64);
            assert!((5e-5..=1e-3).contains(&at), "{at}");
        }
    }

    proptest! {
        #[test]
        fn shares_sum_to_one_either_way(
            values in proptest::collection::vec(1u64..50_000_000, 1..300), exact in any::<bool>()
        ) {
            let h = hist(&values);
            let d = Distribution::of(&h.summary(), exact.then(|| h.buckets()));
            let edges = log_edges(1.0, 1e9, 10);
            let total: f64 = d.shares(&edges).iter().sum();
            prop_assert!((total - 1.0).abs() < 1e-9, "{}", total);
            let cdf = d.cdf();
            prop_assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        }

        /// The percentile-band histogram puts exactly the known mass between known percentiles.
        #[test]
        fn quantile_shares_match_band_masses(values in proptest::collection::vec(1u64..50_000_000, 20..300)) {
            let s = hist(&values).summary();
            let d = Distribution::of(&s, None);
            let edges = log_edges(1.0, 1e9, 10);
            let shares = d.shares(&edges);
            // Mass at or below the bin holding p50 is at least 0.5 minus the mass of that one bin.
            let k = bin_of(&edges, s.p50 as f64);
            let below: f64 = shares[..k].iter().sum();
            prop_assert!(below <= 0.5 + 1e-9);
            prop_assert!(below + shares[k] >= 0.5 - 1e-9);
        }
    }
}
