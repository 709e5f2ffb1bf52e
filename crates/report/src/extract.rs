//! What a report reads out of `rtvirt.results/v1` documents, by kind, including the
//! kind-specific `extra` fields it understands:
//! - latency: `latency_ns` (timer), `rtt_ns` (net), `flows[].latency_ns` (netsim);
//! - `histogram_ns`: exact histogram buckets, `[[value_ns, count], ...]` or
//!   `[{"value_ns": .., "count": ..}, ...]` (e.g. `LatencyHistogram::buckets()`);
//! - `intervals`: per-interval reports of long runs, `[{"t_ns"|"end_ns"|"start_ns": .., "max_ns": ..,
//!   "cpu": optional, "stall": optional bool}, ...]`, or `measure timer --interval-report` lines
//!   (`{"type": "interval", "t_ns": .., "cpus": [{"cpu", "count", "max_ns"}, ...]}`), which
//!   [`crate::input`] also picks up from the JSON lines before the document;
//! - `rho`: the rho a simulation or task run was planned with (else read from the label, "rho=0.5");
//! - `flows[].segments_ns`: per segment a number (mean ns) or an object with `mean`, `p99`, ...

use crate::input::Input;
use rtvirt_model::results::Results;
use rtvirt_model::stats::Summary;
use serde_json::Value;

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
        let buckets = histogram_buckets(r.extra.get("histogram_ns"));
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
                let buckets = histogram_buckets(f.extra.get("histogram_ns"));
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

/// Histogram buckets from `[[v, c], ...]` or `[{"value_ns": v, "count": c}, ...]`.
pub fn histogram_buckets(v: Option<&Value>) -> Option<Vec<(u64, u64)>> {
    let items = v?.as_array()?;
    items
        .iter()
        .map(|it| match it {
            Value::Array(pair) if pair.len() == 2 => Some((pair[0].as_u64()?, pair[1].as_u64()?)),
            Value::Object(o) => Some((o.get("value_ns").or(o.get("low_ns"))?.as_u64()?, o.get("count")?.as_u64()?)),
            _ => None,
        })
        .collect()
}

/// One per-interval report point.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalPoint {
    pub t_ns: f64,
    pub max_ns: f64,
    pub cpu: Option<u64>,
    pub stall: bool,
}

/// The per-interval maxima of a result (`intervals`), in time order. An item is either one
/// point, or a `measure timer --interval-report` line whose `cpus` array gives one point per
/// CPU (a CPU without samples in the interval is a stall).
pub fn intervals(r: &Results) -> Vec<IntervalPoint> {
    let Some(items) = r.extra.get("intervals").and_then(Value::as_array) else { return Vec::new() };
    let mut pts: Vec<IntervalPoint> = items.iter().enumerate().flat_map(|(i, it)| interval_points(i, it)).collect();
    pts.sort_by(|a, b| a.t_ns.total_cmp(&b.t_ns));
    pts
}

fn interval_points(index: usize, it: &Value) -> Vec<IntervalPoint> {
    let Some(cpus) = it.get("cpus").and_then(Value::as_array) else {
        return interval_point(index, it).into_iter().collect();
    };
    let t = it.get("t_ns").cloned().unwrap_or(Value::from(index as u64));
    cpus.iter()
        .filter_map(|c| {
            let mut c = c.as_object()?.clone();
            c.insert("t_ns".into(), t.clone());
            if c.get("count").and_then(Value::as_u64) == Some(0) {
                c.insert("stall".into(), true.into());
            }
            interval_point(index, &Value::Object(c))
        })
        .collect()
}

fn interval_point(index: usize, it: &Value) -> Option<IntervalPoint> {
    let o = it.as_object()?;
    let num = |k: &str| o.get(k).and_then(Value::as_f64);
    let t = num("t_ns").or(num("end_ns")).or(num("start_ns")).unwrap_or(index as f64);
    let stall = o.get("stall").and_then(Value::as_bool).unwrap_or(false);
    let max = num("max_ns").or_else(|| o.get("latency_ns").and_then(|l| l.get("max")).and_then(Value::as_f64));
    Some(IntervalPoint {
        t_ns: t,
        max_ns: max.unwrap_or(0.0),
        cpu: o.get("cpu").and_then(Value::as_u64),
        stall: stall || max.is_none(),
    })
}

/// The rho a result was produced with: `extra.rho`, else "rho=0.5" / "rho 0.5" / "rho0.5" in the label.
pub fn rho(r: &Results) -> Option<f64> {
    if let Some(v) = r.extra.get("rho").and_then(Value::as_f64) {
        return Some(v);
    }
    let label = r.label.as_deref()?.to_ascii_lowercase();
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

/// A segment's statistic (`mean`, `p99`, ...): a plain number counts as the mean.
pub fn segment_stat(v: &Value, stat: &str) -> Option<f64> {
    match v {
        Value::Number(n) if stat == "mean" => n.as_f64(),
        Value::Object(o) => o.get(stat).and_then(Value::as_f64),
        _ => None,
    }
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
    fn rho_from_extra_or_label() {
        let mut r = Results::new("simulation", 1);
        r.label = Some("default rho=0.7".into());
        assert_eq!(rho(&r), Some(0.7));
        r.label = Some("RHO0.35-seed1".into());
        assert_eq!(rho(&r), Some(0.35));
        r.extra.insert("rho".into(), 0.9.into());
        assert_eq!(rho(&r), Some(0.9));
        r.extra.clear();
        r.label = Some("no rho here".into());
        assert_eq!(rho(&r), None);
    }

    #[test]
    fn buckets_in_both_shapes_and_bad_shapes_ignored() {
        let v: Value = serde_json::json!([[1000, 3], {"value_ns": 2000, "count": 1}]);
        assert_eq!(histogram_buckets(Some(&v)), Some(vec![(1000, 3), (2000, 1)]));
        assert_eq!(histogram_buckets(Some(&serde_json::json!([["x", 1]]))), None);
    }

    #[test]
    fn intervals_sorted_and_stalls_kept() {
        let mut r = Results::new("timer", 1);
        r.extra.insert("intervals".into(), serde_json::json!([{"t_ns": 2e9, "max_ns": 50000}, {"t_ns": 1e9, "max_ns": 40000}, {"t_ns": 3e9, "stall": true}]));
        let pts = intervals(&r);
        assert_eq!(pts.iter().map(|p| p.t_ns).collect::<Vec<_>>(), vec![1e9, 2e9, 3e9]);
        assert!(pts[2].stall && !pts[0].stall);
    }

    #[test]
    fn interval_report_lines_give_one_point_per_cpu() {
        let mut r = Results::new("timer", 1);
        r.extra.insert(
            "intervals".into(),
            serde_json::json!([{"type": "interval", "t_ns": 5e8, "max_ns": 9, "cpus": [
            {"cpu": 0, "count": 10, "max_ns": 9}, {"cpu": 1, "count": 0, "max_ns": 0}]}]),
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
