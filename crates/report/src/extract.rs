//! What a report reads out of `rtvirt.results/v1` documents (the typed sections of
//! `rtvirt_model::results`), by kind:
//! - latency: `latency_ns` (timer), `rtt_ns` (net), `flows[].latency_ns` (netsim), with their
//!   exact `histogram_ns` buckets when the result has them;
//! - `intervals`: see [`crate::interval`];
//! - `rho`: the rho a simulation or task run was planned with (else read from the label, "rho=0.5").

use crate::input::Input;
use rtvirt_model::results::{HistogramBucket, Results};
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
    /// The input whose `histogram_ns` the buckets are (its samples, its intervals), for a tail
    /// fit; None for a flow's own histogram.
    pub samples_of: Option<&'a Input>,
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
                samples_of: Some(input),
            });
        }
        if let Some(s) = &r.rtt_ns {
            out.push(LatencySeries {
                family: NET_FAMILY.into(),
                name: input.name.clone(),
                summary: s,
                buckets,
                result: r,
                samples_of: Some(input),
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
                    samples_of: None,
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
    fn segments_in_path_order() {
        let names = ["guest".to_string(), "wire".to_string(), "host_send".to_string(), "host_receive".to_string()];
        assert_eq!(segment_order(names.iter()), vec!["host_receive", "guest", "host_send", "wire"]);
    }
}
