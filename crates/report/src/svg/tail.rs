//! The labelled points of a latency tail, drawn on the exceedance and histogram charts.

use crate::units::fmt_ns;
use rtvirt_model::stats::Summary;

/// The labelled points of a result's tail: p99.99 (when it reads differently from the maximum;
/// "*" when too few samples lie beyond it, as in the tables) at height `p9999_height`, and the
/// maximum at one sample.
pub fn tail_marks(summary: &Summary, p9999_height: f64) -> Vec<(f64, f64, String)> {
    let mut marks = Vec::new();
    let count = summary.count.max(1) as f64;
    if fmt_ns(summary.p9999 as f64) != fmt_ns(summary.max as f64) {
        let few = if summary.low_confidence.iter().any(|k| k == "p9999") { "*" } else { "" };
        marks.push((summary.p9999 as f64, p9999_height, format!("p99.99 {}{few}", fmt_ns(summary.p9999 as f64))));
    }
    marks.push((summary.max as f64, 1.0 / count, format!("max {}", fmt_ns(summary.max as f64))));
    marks
}
