//! What a report reads out of `rtvirt.results/v1` documents (the typed sections of
//! `rtvirt_model::results`), by kind:
//! - latency: `latency_ns` (timer), `rtt_ns` (net), `flows[].latency_ns` (netsim), with their
//!   exact `histogram_ns` buckets when the result has them;
//! - `intervals`: per-interval reports of long runs, points or `measure timer --interval-report`
//!   lines with one entry per CPU (which [`crate::input`] also picks up from the JSON lines
//!   before the document);
//! - `rho`: the rho a simulation or task run was planned with (else read from the label, "rho=0.5").

use crate::input::Input;
use rtvirt_model::results::{HistogramBucket, Interval, Results};
use rtvirt_model::stats::Summary;

/// One latency distribution of one result, in a family of comparable latencies.
#[derive(Debug, Clone)]
pub struct LatencySeries<'a> {
    /// Comparable latencies share a family ("Timer wake-up latency", "Round-trip time", "Flow rt: latency").
    pub family: String,
    pub name: String,
    pub summary: &'a Summary,
    pub buckets: Option<Vec<(u64, u64)>>,
    pub result: &'a Results,
}

pub const TIMER_FAMILY: &str = "Timer wake-up latency";
pub const NET_FAMILY: &str = "Request/response round-trip time";

/// Every latency distribution of the inputs, in input order.
pub fn latency_series(inputs: &[Input]) -> Vec<LatencySeries<'_>> {
    let mut out = Vec::new();
    for input in inputs {
        let Some(r) = input.results() else { continue };
        let buckets = pairs(&r.histogram_ns);
        if let Some(s) = &r.latency_ns {
            out.push(LatencySeries {
                family: TIMER_FAMILY.into(),
                name: input.name.clone(),
                summary: s,
                buckets: buckets.clone(),
                result: r,
            });
        }
        if let Some(s) = &r.rtt_ns {
            out.push(LatencySeries {
                family: NET_FAMILY.into(),
                name: input.name.clone(),
                summary: s,
                buckets,
                result: r,
            });
        }
        for f in &r.flows {
            if let Some(s) = &f.latency_ns {
                let buckets = pairs(&f.histogram_ns);
                out.push(LatencySeries {
                    family: format!("Flow {}: end-to-end latency", f.name),
                    name: input.name.clone(),
                    summary: s,
                    buckets,
                    result: r,
                });
            }
        }
    }
    out
}

/// Families in first-seen order, each with its series.
pub fn by_family<'a, 'b>(series: &'b [LatencySeries<'a>]) -> Vec<(String, Vec<&'b LatencySeries<'a>>)> {
    let mut fams: Vec<(String, Vec<&LatencySeries>)> = Vec::new();
    for s in series {
        match fams.iter_mut().find(|(f, _)| *f == s.family) {
            Some((_, v)) => v.push(s),
            None => fams.push((s.family.clone(), vec![s])),
        }
    }
    fams
}

/// Histogram buckets as (value, count) pairs.
fn pairs(buckets: &Option<Vec<HistogramBucket>>) -> Option<Vec<(u64, u64)>> {
    buckets.as_ref().map(|b| b.iter().map(|&b| b.into()).collect())
}

/// One per-interval report point.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalPoint {
    pub t_ns: f64,
    pub max_ns: f64,
    pub cpu: Option<u32>,
    pub stall: bool,
}

/// The per-interval maxima of a result (`intervals`), in time order (the loader makes the same
/// points while reading a file: see [`crate::input::Input::interval_points`]). An item is either one
/// point, or a `measure timer --interval-report` line whose `cpus` array gives one point per
/// CPU (a CPU without samples in the interval is a stall).
pub fn intervals(results: &Results) -> Vec<IntervalPoint> {
    let Some(items) = &results.intervals else { return Vec::new() };
    let mut pts: Vec<IntervalPoint> = items.iter().enumerate().flat_map(|(i, it)| interval_points(i, it)).collect();
    pts.sort_by(|a, b| a.t_ns.total_cmp(&b.t_ns));
    pts
}

/// The points of report `index` (one, or one per CPU of an interval report line).
pub(crate) fn interval_points(index: usize, it: &Interval) -> Vec<IntervalPoint> {
    let Some(cpus) = &it.cpus else {
        return vec![interval_point(index, it)];
    };
    let t_ns = it.t_ns.unwrap_or(index as u64) as f64;
    cpus.iter()
        .map(|c| IntervalPoint {
            t_ns,
            max_ns: c.max_ns.unwrap_or(0) as f64,
            cpu: Some(c.cpu),
            stall: c.count == 0 || c.max_ns.is_none(),
        })
        .collect()
}

fn interval_point(index: usize, it: &Interval) -> IntervalPoint {
    let t = it.t_ns.or(it.end_ns).or(it.start_ns).unwrap_or(index as u64);
    let max = it.max_ns.or_else(|| it.latency_ns.as_ref().map(|l| l.max));
    IntervalPoint {
        t_ns: t as f64,
        max_ns: max.unwrap_or(0) as f64,
        cpu: it.cpu,
        stall: it.stall.unwrap_or(false) || max.is_none(),
    }
}

/// The rho a result was produced with: its `rho`, else "rho=0.5" / "rho 0.5" / "rho0.5" in the label.
pub fn rho(results: &Results) -> Option<f64> {
    if let Some(v) = results.rho {
        return Some(v);
    }
    let label = results.label.as_deref()?.to_ascii_lowercase();
    let rest = &label[label.find("rho")? + 3..];
    let rest = rest.trim_start_matches(['=', ':', ' ', '_']);
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    rest[..end].parse().ok().filter(|v: &f64| (0.0..=1.0).contains(v))
}

/// Deadline satisfaction ratio over a set of tasks: (jobs - misses) / jobs.
pub fn pooled_dsr<'a>(tasks: impl Iterator<Item = &'a rtvirt_model::results::TaskResult>) -> Option<f64> {
    let (jobs, misses) = tasks.fold((0u64, 0u64), |(j, m), t| (j + t.jobs, m + t.misses));
    (jobs > 0).then(|| rtvirt_model::results::TaskResult::dsr_of(jobs, misses))
}

/// Segment names in path order: host_receive, guest, host_send first, then others.
pub fn segment_order<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    const PATH: [&str; 3] = ["host_receive", "guest", "host_send"];
    let mut all: Vec<String> = names.cloned().collect();
    all.sort_by_key(|n| (PATH.iter().position(|p| p == n).unwrap_or(PATH.len()), n.clone()));
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rho_from_the_result_or_label() {
        let mut r = Results::new("simulation", 1);
        r.label = Some("default rho=0.7".into());
        assert_eq!(rho(&r), Some(0.7));
        r.label = Some("RHO0.35-seed1".into());
        assert_eq!(rho(&r), Some(0.35));
        r.rho = Some(0.9);
        assert_eq!(rho(&r), Some(0.9));
        r.rho = None;
        r.label = Some("no rho here".into());
        assert_eq!(rho(&r), None);
    }

    #[test]
    fn intervals_sorted_and_stalls_kept() {
        let mut r = Results::new("timer", 1);
        r.intervals = Some(
            serde_json::from_value(serde_json::json!([
                {"t_ns": 2_000_000_000u64, "max_ns": 50000},
                {"t_ns": 1_000_000_000u64, "max_ns": 40000},
                {"t_ns": 3_000_000_000u64, "stall": true}
            ]))
            .unwrap(),
        );
        let pts = intervals(&r);
        assert_eq!(pts.iter().map(|p| p.t_ns).collect::<Vec<_>>(), vec![1e9, 2e9, 3e9]);
        assert!(pts[2].stall && !pts[0].stall);
    }

    #[test]
    fn interval_report_lines_give_one_point_per_cpu() {
        let mut r = Results::new("timer", 1);
        r.intervals = Some(
            serde_json::from_value(
                serde_json::json!([{"type": "interval", "t_ns": 500_000_000u64, "max_ns": 9, "cpus": [
            {"cpu": 0, "count": 10, "max_ns": 9}, {"cpu": 1, "count": 0, "max_ns": 0}]}]),
            )
            .unwrap(),
        );
        let pts = intervals(&r);
        assert_eq!(pts.len(), 2);
        assert_eq!((pts[0].cpu, pts[0].max_ns, pts[0].stall, pts[0].t_ns), (Some(0), 9.0, false, 5e8));
        assert!(pts[1].stall);
    }

    #[test]
    fn segments_in_path_order() {
        let names = ["guest".to_string(), "wire".to_string(), "host_send".to_string(), "host_receive".to_string()];
        assert_eq!(segment_order(names.iter()), vec!["host_receive", "guest", "host_send", "wire"]);
    }
}
