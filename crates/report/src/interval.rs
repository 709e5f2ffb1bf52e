//! Per-interval points of long runs: a result's `intervals`, either points or `measure timer
//! --interval-report` lines with one entry per CPU (which [`crate::input`] also picks up from the
//! JSON lines before the document), as [`IntervalPoint`]s in time order for the timeline chart.

use rtvirt_model::results::{Interval, Results};

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
    if it.tasks.is_some() {
        return Vec::new(); // a `measure tasks` window: jobs and misses, no latency
    }
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

/// The largest value of each interval (points of one time, one per CPU), in time order.
pub fn interval_maxima(points: &[IntervalPoint]) -> Vec<u64> {
    let mut maxima: Vec<(f64, u64)> = Vec::new();
    for p in points {
        match maxima.last_mut() {
            Some((t, m)) if *t == p.t_ns => *m = (*m).max(p.max_ns as u64),
            _ => maxima.push((p.t_ns, p.max_ns as u64)),
        }
    }
    maxima.into_iter().map(|(_, m)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
