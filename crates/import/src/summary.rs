//! Summaries of imported latencies: from a histogram the tool printed (exact buckets, with the
//! tool's own minimum, mean and maximum), or from the percentiles it printed.
//!
//! Memory and time follow the input, not the values: a column keeps only its non-empty buckets
//! (16 bytes each) and is summarised by `CompactHistogram` (the statistics of the model's HDR
//! histogram, from the non-empty buckets only), never by a dense histogram, which holds ~400 KiB
//! for one value near 2^64 ns.

use crate::text::{self, Source};
use rtvirt_model::stats::{CompactHistogram, Summary, PERCENTILES};
use rtvirt_model::InputError;

/// The tool's own statistics of all samples (nanoseconds), overriding what buckets give.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Exact {
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub max: Option<u64>,
}

/// Buckets `(low_ns, count)` and `overflow` samples at or above `overflow_from_ns`, of which
/// the largest is `exact.max`: the buckets as they are kept (overflows at their bound, the
/// maximum exact; empty buckets dropped). The caller has checked that the counts and the
/// overflows add up to at most 2^64 - 1 (see [`text::total`]).
pub(crate) fn histogram(buckets: &[(u64, u64)], overflow: u64, overflow_from_ns: u64, exact: Exact) -> Vec<(u64, u64)> {
    let mut kept: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for &(v, n) in buckets.iter().filter(|b| b.1 > 0) {
        *kept.entry(v).or_default() += n;
    }
    if overflow > 0 {
        match exact.max.filter(|&m| m >= overflow_from_ns) {
            Some(max) => {
                *kept.entry(overflow_from_ns).or_default() += overflow - 1;
                *kept.entry(max).or_default() += 1;
            }
            None => *kept.entry(overflow_from_ns).or_default() += overflow,
        }
    }
    kept.retain(|_, n| *n > 0);
    kept.into_iter().collect()
}

/// The summary of `buckets` (ascending) with the tool's exact statistics where it gave them.
pub(crate) fn of_buckets(buckets: &[(u64, u64)], exact: Exact) -> Summary {
    of_histogram(&CompactHistogram::from_sorted_runs(buckets), exact)
}

/// The summary of `h` with the tool's exact statistics where it gave them.
pub(crate) fn of_histogram(h: &CompactHistogram, exact: Exact) -> Summary {
    let mut s = h.summary();
    if h.count() == 0 {
        return s;
    }
    if let Some(min) = exact.min {
        s.min = min;
    }
    if let Some(max) = exact.max {
        s.max = max;
    }
    if let Some(mean) = exact.mean {
        s.mean = mean;
    }
    s
}

/// A summary from the percentiles a tool printed: `known` maps quantiles (0.5, 0.99, ...) to
/// nanoseconds. A percentile it did not print is set to the next higher one it did (or the
/// maximum), an upper bound, and listed in `low_confidence`, as are those with fewer than 10
/// samples beyond them (`count` 0: the tool did not say how many samples it took).
pub(crate) fn of_percentiles(count: u64, min: u64, mean: f64, sd: f64, max: u64, known: &[(f64, u64)]) -> Summary {
    let at = |q: f64| known.iter().find(|(k, _)| (k - q).abs() < 1e-9).map(|&(_, v)| v);
    let bound = |q: f64| {
        let mut above: Vec<&(f64, u64)> = known.iter().filter(|(k, _)| *k > q).collect();
        above.sort_by(|a, b| a.0.total_cmp(&b.0));
        above.first().map_or(max, |&&(_, v)| v)
    };
    let mut low_confidence = Vec::new();
    let mut value = |key: &str, q: f64| {
        at(q).unwrap_or_else(|| {
            low_confidence.push(key.to_string());
            bound(q)
        })
    };
    let values: Vec<u64> = PERCENTILES.iter().map(|&(key, q)| value(key, q)).collect();
    let [p50, p75, p90, p95, p99, p999, p9999] = values[..] else { unreachable!("seven percentiles") };
    let p25 = at(0.25);
    for (key, q) in PERCENTILES {
        if count > 0 && (count as f64) * (1.0 - q) < 10.0 && !low_confidence.iter().any(|k| k == key) {
            low_confidence.push(key.to_string());
        }
    }
    Summary { count, min, mean, sd, p50, p75, p25, p90, p95, p99, p999, p9999, max, low_confidence }
}

/// Several summaries as one (for results over all CPUs): count-weighted mean, smallest minimum,
/// largest maximum; percentiles from the merged buckets when every part has them. The caller
/// has checked that the counts add up to at most 2^64 - 1.
fn merged(parts: &[Pooled]) -> Option<Summary> {
    if parts.is_empty() {
        return None;
    }
    let count: u64 = parts.iter().map(|(s, _)| s.count).sum();
    let mean =
        if count == 0 { 0.0 } else { parts.iter().map(|(s, _)| s.mean * s.count as f64).sum::<f64>() / count as f64 };
    let exact = Exact {
        min: parts.iter().filter(|(s, _)| s.count > 0).map(|(s, _)| s.min).min(),
        mean: Some(mean),
        max: parts.iter().map(|(s, _)| s.max).max(),
    };
    if parts.iter().all(|(_, h)| h.is_some()) {
        let mut pooled: Vec<(u64, u64)> = parts.iter().flat_map(|(_, h)| h.expect("checked").iter().copied()).collect();
        pooled.sort_unstable_by_key(|b| b.0);
        return Some(of_buckets(&pooled, exact));
    }
    // percentiles only: the largest of each (an upper bound of the pooled one)
    let mut s = parts.iter().max_by_key(|(s, _)| s.max).map(|(s, _)| (*s).clone()).expect("not empty");
    s.count = count;
    s.mean = mean;
    s.min = exact.min.unwrap_or(0);
    for key in ["p50", "p75", "p90", "p95", "p99", "p999", "p9999"] {
        if !s.low_confidence.iter().any(|k| k == key) {
            s.low_confidence.push(key.into());
        }
    }
    Some(s)
}

/// A series' summary and buckets (when it has them), as [`merged`] pools them.
type Pooled<'a> = (&'a Summary, Option<&'a [(u64, u64)]>);

/// One CPU's (or thread's) latency as imported.
pub(crate) struct Series {
    pub cpu: u32,
    pub summary: Summary,
    /// Exact buckets `(low_ns, count)`, when the tool printed a histogram.
    pub histogram: Option<Vec<(u64, u64)>>,
}

/// A results document of `kind` with one entry per CPU in `cpus` and the pooled latency (and
/// pooled buckets when every CPU has them) in `latency_ns` / `histogram_ns`; an error (at the
/// last line) when the samples of all CPUs add up to more than 2^64 - 1.
pub(crate) fn per_cpu(
    src: &Source,
    kind: &str,
    duration_ns: u64,
    series: Vec<Series>,
) -> Result<rtvirt_model::results::Results, InputError> {
    use rtvirt_model::results::{CpuLatency, HistogramBucket, Results};
    text::total(src, src.lines.len(), series.iter().map(|s| s.summary.count), "the sample counts of all columns")?;
    let mut r = Results::new(kind, duration_ns);
    let parts: Vec<Pooled> = series.iter().map(|s| (&s.summary, s.histogram.as_deref())).collect();
    r.latency_ns = merged(&parts);
    if series.iter().all(|s| s.histogram.is_some()) && !series.is_empty() {
        let mut pooled: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
        for s in &series {
            for &(v, n) in s.histogram.as_ref().expect("checked") {
                *pooled.entry(v).or_default() += n;
            }
        }
        r.histogram_ns = Some(HistogramBucket::from_pairs(pooled.into_iter().collect()));
    }
    r.cpus = series
        .into_iter()
        .map(|s| CpuLatency {
            cpu: s.cpu,
            latency_ns: s.summary,
            histogram_ns: s.histogram.map(HistogramBucket::from_pairs),
            ..Default::default()
        })
        .collect();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflows_sit_at_their_bound_and_the_maximum_is_exact() {
        let exact = Exact { min: Some(1000), mean: Some(5000.0), max: Some(90_000) };
        let kept = histogram(&[(1000, 8), (2000, 1), (3000, 0)], 3, 40_000, exact);
        assert_eq!(kept, [(1000, 8), (2000, 1), (40_000, 2), (90_000, 1)]);
        let s = of_buckets(&kept, exact);
        assert_eq!((s.count, s.min, s.max, s.mean), (12, 1000, 90_000, 5000.0));
    }

    #[test]
    fn missing_percentiles_take_the_next_one_as_a_bound() {
        let s = of_percentiles(1000, 10, 20.0, 1.0, 500, &[(0.5, 20), (0.9, 30), (0.99, 40)]);
        assert_eq!((s.p50, s.p75, s.p90, s.p95, s.p99, s.p999, s.p9999), (20, 30, 30, 40, 40, 500, 500));
        assert_eq!(s.low_confidence, ["p75", "p95", "p999", "p9999"]);
    }
}
