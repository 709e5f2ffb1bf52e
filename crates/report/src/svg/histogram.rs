//! Latency histograms on a log x axis and a log count axis: each series' samples per log-spaced
//! bin (10 bins per decade), drawn as step outlines so that several results overlay readably. The
//! count axis is logarithmic so that the single samples of the tail show beside the thousands of
//! the body; empty bins sit on the axis ("0"). p99.99 and the maximum are marked on the outline.

use super::line::{LineChart, Series};
use super::tail::tail_marks;
use crate::distribution::{log_edges, Distribution};
use crate::units::{fmt_count, fmt_ns};
use rtvirt_model::stats::Summary;

/// One histogram series: its name, distribution and summary (sample count, p99.99, max).
pub struct HistSeries<'a> {
    pub name: String,
    pub dist: &'a Distribution,
    pub summary: &'a Summary,
}

const BINS_PER_DECADE: u32 = 10;

/// Height of empty bins on the log count axis (one decade below a single sample).
const EMPTY: f64 = 0.1;

/// Render the histogram of every series on one chart.
pub fn render(title: &str, x_label: &str, series: &[HistSeries]) -> String {
    let (lo, hi) = value_range(series);
    let edges = log_edges(lo, hi, BINS_PER_DECADE);
    let lines: Vec<Series> = series.iter().map(|s| histogram_series(s, &edges)).collect();
    let tallest = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(1.0, f64::max);
    let exact = series.iter().all(|s| s.dist.is_exact());
    LineChart {
        kind: "histogram",
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: if exact { "samples per bin (log)" } else { "samples per bin (log; estimated where no buckets)" }
            .into(),
        x_log: true,
        y_log: true,
        x_fmt: fmt_ns,
        y_fmt: fmt_count,
        y_range: Some((EMPTY, tallest)),
        series: lines,
    }
    .render()
}

/// The outline of one series in samples per bin, with its p99.99 and maximum on the outline.
fn histogram_series(s: &HistSeries, edges: &[f64]) -> Series {
    let total = match s.dist {
        Distribution::Buckets(b) => b.iter().map(|&(_, c)| c).sum::<u64>() as f64,
        Distribution::Quantiles(_) => s.summary.count as f64,
    };
    let counts: Vec<f64> = s.dist.shares(edges).iter().map(|share| share * total).collect();
    let height_at = |v: f64| {
        let i = edges[1..edges.len() - 1].iter().take_while(|&&e| e <= v).count();
        counts[i].max(EMPTY)
    };
    let labelled = tail_marks(s.summary, height_at(s.summary.p9999 as f64))
        .into_iter()
        .map(|(v, _, label)| (v, height_at(v), label))
        .collect();
    let points = outline(edges, &counts).into_iter().map(|(x, c)| (x, c.max(EMPTY))).collect();
    Series { name: s.name.clone(), points, step: true, labelled, ..Series::default() }
}

/// Whole decades covering every series' values.
fn value_range(series: &[HistSeries]) -> (f64, f64) {
    let vals = series.iter().flat_map(|s| s.dist.cdf()).map(|p| p.0.max(1.0));
    let (lo, hi) = super::line::min_max(vals);
    (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()).max(10f64.powf(lo.log10().floor() + 1.0)))
}

/// Step points (left edge, count) per bin, trimmed to the non-empty range plus one empty bin
/// on each side so the outline starts and ends on the axis.
fn outline(edges: &[f64], counts: &[f64]) -> Vec<(f64, f64)> {
    let first = counts.iter().position(|&s| s > 0.0).unwrap_or(0).saturating_sub(1);
    let last = (counts.iter().rposition(|&s| s > 0.0).unwrap_or(0) + 1).min(counts.len() - 1);
    let mut pts: Vec<(f64, f64)> = (first..=last).map(|i| (edges[i], counts[i])).collect();
    pts.push((edges[last + 1], 0.0));
    pts
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::stats::LatencyHistogram;

    #[test]
    fn a_single_tail_sample_stands_above_the_axis_and_is_labelled() {
        let mut h = LatencyHistogram::new();
        (0..20_000).for_each(|i| h.record(20_000 + i % 1000));
        h.record(4_330_000);
        let s = h.summary();
        let d = Distribution::of(&s, Some(h.buckets()));
        let edges = log_edges(1e4, 1e7, BINS_PER_DECADE);
        let series = histogram_series(&HistSeries { name: "idle".into(), dist: &d, summary: &s }, &edges);
        let max = series.labelled.last().unwrap();
        assert_eq!((max.0, max.1), (s.max as f64, 1.0), "the maximum's bin holds one sample");
        assert!(max.2.starts_with("max 4.33ms"), "{}", max.2);
        let svg = render("t", "x", &[HistSeries { name: "idle".into(), dist: &d, summary: &s }]);
        assert!(svg.contains(">max 4.33ms</text>"), "the maximum is labelled on the chart");
    }
}
