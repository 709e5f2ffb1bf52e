//! Latency histograms on a log x axis: each series' share of samples per log-spaced bin (10 bins
//! per decade), drawn as step outlines so that several results overlay readably.

use super::line::{LineChart, Series};
use crate::distribution::{log_edges, Distribution};
use crate::units::{fmt_ns, fmt_ratio};

/// One histogram series: its name and distribution.
pub struct HistSeries<'a> {
    pub name: String,
    pub dist: &'a Distribution,
}

const BINS_PER_DECADE: u32 = 10;

/// Render the histogram of every series on one chart.
pub fn render(title: &str, x_label: &str, series: &[HistSeries]) -> String {
    let (lo, hi) = value_range(series);
    let edges = log_edges(lo, hi, BINS_PER_DECADE);
    let lines = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: outline(&edges, &s.dist.shares(&edges)),
            step: true,
            markers: false,
        })
        .collect();
    LineChart {
        kind: "histogram",
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: "share of samples per bin".into(),
        x_log: true,
        y_log: false,
        x_fmt: fmt_ns,
        y_fmt: fmt_ratio,
        y_range: None,
        series: lines,
    }
    .render()
}

/// Whole decades covering every series' values.
fn value_range(series: &[HistSeries]) -> (f64, f64) {
    let vals = series.iter().flat_map(|s| s.dist.cdf()).map(|p| p.0.max(1.0));
    let (lo, hi) = super::line::min_max(vals);
    (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()).max(10f64.powf(lo.log10().floor() + 1.0)))
}

/// Step points (left edge, share) per bin, trimmed to the non-empty range plus one empty bin
/// on each side so the outline starts and ends on the axis.
fn outline(edges: &[f64], shares: &[f64]) -> Vec<(f64, f64)> {
    let first = shares.iter().position(|&s| s > 0.0).unwrap_or(0).saturating_sub(1);
    let last = (shares.iter().rposition(|&s| s > 0.0).unwrap_or(0) + 1).min(shares.len() - 1);
    let mut pts: Vec<(f64, f64)> = (first..=last).map(|i| (edges[i], shares[i])).collect();
    pts.push((edges[last + 1], 0.0));
    pts
}
