//! `rtvirt.verify/v1`: a prediction checked against a measurement. The same scenario, plan and
//! seed are simulated (`rtvirt simulate --plan`) and run for real under the plan's reservations
//! (`rtvirt measure tasks`); [`Verification::compare`] pairs the two results task by task and
//! gives each task a verdict against a stated [`Tolerance`]:
//!
//! - **DSR**: |measured - predicted| at most `dsr_points` percentage points (default 3), per task
//!   and over all jobs;
//! - **p99 response time**: measured / predicted within [1 / `p99_ratio`, `p99_ratio`] (default
//!   2), or the two within `p99_slack_ns` of each other (default 1 ms: below that the difference
//!   is the timer and scheduling latency of a kernel that is not PREEMPT_RT, not the plan); only
//!   when both sides have at least `min_jobs` jobs (default 100), since a p99 of fewer jobs rests on
//!   less than one sample beyond it;
//! - p50 and max are reported beside them, not judged (a maximum is one sample).
//!
//! A task is "agree" when every judged figure is within tolerance, else "disagree" with the
//! reasons; the document agrees when every task and the overall DSR do.

use crate::error::InputError;
use crate::results::{Results, TaskResult};
use crate::stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const VERIFY_SCHEMA: &str = "rtvirt.verify/v1";

/// How far measurement may be from prediction and still agree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Largest DSR difference, in percentage points (3 = 0.03).
    pub dsr_points: f64,
    /// Largest factor between measured and predicted p99 response time, either way (>= 1).
    pub p99_ratio: f64,
    /// p99 differences up to this (ns) agree whatever their ratio.
    pub p99_slack_ns: u64,
    /// Fewest jobs on both sides for the p99 to be judged.
    pub min_jobs: u64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance { dsr_points: 3.0, p99_ratio: 2.0, p99_slack_ns: 1_000_000, min_jobs: 100 }
    }
}

impl Tolerance {
    /// Read `dsr=3,p99=2,slack=1ms,jobs=100` (any subset, the rest default); errors name the
    /// option `--tolerance` and the key.
    pub fn parse(text: &str) -> Result<Tolerance, InputError> {
        let mut t = Tolerance::default();
        let err = |key: &str, msg: String| InputError::field(format!("--tolerance {key}"), msg);
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(err(item, "expected KEY=VALUE with KEY one of dsr, p99, slack, jobs".into()));
            };
            let (key, value) = (key.trim(), value.trim());
            let number = || value.trim_end_matches("pp").trim_end_matches('x').parse::<f64>().ok();
            match key {
                "dsr" => match number() {
                    Some(v) if (0.0..=100.0).contains(&v) => t.dsr_points = v,
                    _ => return Err(err(key, format!("{value:?}: expected percentage points 0..100, e.g. dsr=3"))),
                },
                "p99" => match number() {
                    Some(v) if (1.0..=1e6).contains(&v) => t.p99_ratio = v,
                    _ => return Err(err(key, format!("{value:?}: expected a ratio >= 1, e.g. p99=2"))),
                },
                "slack" => t.p99_slack_ns = crate::Nanos::parse(value).map_err(|e| err(key, e))?.0,
                "jobs" => t.min_jobs = value.parse().map_err(|_| err(key, format!("{value:?}: expected a count")))?,
                other => return Err(err(other, "unknown key: expected dsr, p99, slack or jobs".into())),
            }
        }
        Ok(t)
    }

    /// One line for people: "DSR within 3 pp; p99 within x2 (or 1ms) when both sides have 100 jobs".
    pub fn describe(&self) -> String {
        format!(
            "DSR within {} pp; p99 response time within x{} (or {} apart) when both sides have {} jobs or more",
            self.dsr_points,
            self.p99_ratio,
            crate::Nanos(self.p99_slack_ns),
            self.min_jobs
        )
    }
}

/// A task's (or all tasks') figures on one side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Side {
    pub jobs: u64,
    pub misses: u64,
    pub dsr: f64,
    /// Response times (absent in the totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_ns: Option<Summary>,
}

impl Side {
    fn of(task: &TaskResult) -> Side {
        Side { jobs: task.jobs, misses: task.misses, dsr: task.dsr, response_ns: Some(task.response_ns.clone()) }
    }

    fn pooled(results: &Results) -> Side {
        let (jobs, misses) = results.tasks.iter().fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses));
        Side { jobs, misses, dsr: TaskResult::dsr_of(jobs, misses), response_ns: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Agree,
    Disagree,
}

/// One task: predicted beside measured, the differences and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskComparison {
    pub guest: String,
    pub name: String,
    pub predicted: Side,
    pub measured: Side,
    /// measured - predicted DSR, in percentage points.
    pub dsr_difference_points: f64,
    /// measured / predicted p99 response time (absent when the predicted p99 is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ratio: Option<f64>,
    /// Whether the p99 was judged (both sides have `min_jobs` jobs or more, and at least 10
    /// beyond their p99).
    pub p99_judged: bool,
    /// The tail percentile judged against the tolerance: "p99", else the highest of "p95" and
    /// "p90" with at least 10 jobs beyond it on both sides, else (a `jobs` tolerance below 100)
    /// "p99" (absent: none was judged, fewer than `jobs` jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_percentile: Option<String>,
    /// measured / predicted response time at `tail_percentile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_ratio: Option<f64>,
    pub verdict: Verdict,
    /// Why it disagrees (empty when it agrees).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// All tasks pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Totals {
    pub predicted: Side,
    pub measured: Side,
    pub dsr_difference_points: f64,
    pub verdict: Verdict,
}

/// `rtvirt.verify/v1`: the document `rtvirt verify --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "rtvirt.verify/v1")]
pub struct Verification {
    pub schema: String,
    /// The scenario's name.
    pub scenario: String,
    pub seed: u64,
    /// The simulated horizon = the measured run's planned length (ns).
    pub duration_ns: u64,
    /// How long the measured task sets really ran (shorter when interrupted).
    pub measured_duration_ns: u64,
    /// The host model the prediction used (its file), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_model: Option<String>,
    pub tolerance: Tolerance,
    /// "agree" when every task and the totals agree.
    pub verdict: Verdict,
    pub totals: Totals,
    pub tasks: Vec<TaskComparison>,
    /// The measurement was stopped early (Ctrl-C): job counts are not comparable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// Percentage points between two ratios, rounded to 1e-6 so that the JSON stays short.
fn points(measured: f64, predicted: f64) -> f64 {
    ((measured - predicted) * 100.0 * 1e6).round() / 1e6
}

impl Verification {
    /// Pair `predicted` (a simulation) and `measured` (a `measure tasks` run) task by task, by
    /// (guest, task name). A task missing on either side is an error (they come from different
    /// scenarios).
    pub fn compare(predicted: &Results, measured: &Results, tolerance: Tolerance) -> Result<Verification, String> {
        let mut tasks = Vec::with_capacity(predicted.tasks.len());
        for p in &predicted.tasks {
            let m = measured
                .tasks
                .iter()
                .find(|m| m.guest == p.guest && m.name == p.name)
                .ok_or_else(|| format!("task {}/{} was predicted but not measured", p.guest, p.name))?;
            tasks.push(compare_task(p, m, &tolerance));
        }
        if let Some(m) =
            measured.tasks.iter().find(|m| !predicted.tasks.iter().any(|p| p.guest == m.guest && p.name == m.name))
        {
            return Err(format!("task {}/{} was measured but not predicted", m.guest, m.name));
        }
        let (p, m) = (Side::pooled(predicted), Side::pooled(measured));
        let difference = points(m.dsr, p.dsr);
        let totals_agree = difference.abs() <= tolerance.dsr_points;
        let totals = Totals {
            predicted: p,
            measured: m,
            dsr_difference_points: difference,
            verdict: if totals_agree { Verdict::Agree } else { Verdict::Disagree },
        };
        let all_agree = totals_agree && tasks.iter().all(|t| t.verdict == Verdict::Agree);
        Ok(Verification {
            schema: VERIFY_SCHEMA.into(),
            scenario: predicted.label.clone().unwrap_or_default(),
            seed: predicted.seed.unwrap_or(0),
            duration_ns: predicted.duration_ns,
            measured_duration_ns: measured.duration_ns,
            host_model: None,
            tolerance,
            verdict: if all_agree { Verdict::Agree } else { Verdict::Disagree },
            totals,
            tasks,
            interrupted: measured.interrupted,
        })
    }

    /// The tasks that disagree.
    pub fn disagreeing(&self) -> impl Iterator<Item = &TaskComparison> {
        self.tasks.iter().filter(|t| t.verdict == Verdict::Disagree)
    }
}

/// The tail percentile judged: the p99, or where either side has too few jobs beyond it for the
/// p99 to mean anything (its summary's `low_confidence`: fewer than 10), the highest of p95 and
/// p90 that has enough on both sides (None: not even p90, fewer than 100 jobs). A p99 of 500 jobs
/// is their 5th largest, which compares noise; their p95 is the 25th.
fn tail_percentile(predicted: &Summary, measured: &Summary) -> Option<&'static str> {
    let confident = |s: &Summary, key: &str| !s.low_confidence.iter().any(|k| k == key);
    ["p99", "p95", "p90"].into_iter().find(|k| confident(predicted, k) && confident(measured, k))
}

/// measured / predicted, rounded to 1e-6 (None when the predicted value is 0).
fn ratio_of(predicted: u64, measured: u64) -> Option<f64> {
    (predicted > 0).then(|| ((measured as f64 / predicted as f64) * 1e6).round() / 1e6)
}

/// "5.66 ms": response times as people compare them.
fn milliseconds(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn compare_task(predicted: &TaskResult, measured: &TaskResult, tolerance: &Tolerance) -> TaskComparison {
    let mut reasons = Vec::new();
    let difference = points(measured.dsr, predicted.dsr);
    if difference.abs() > tolerance.dsr_points {
        reasons.push(format!(
            "DSR {:.4} measured against {:.4} predicted: {difference:+.2} pp, beyond {} pp",
            measured.dsr, predicted.dsr, tolerance.dsr_points
        ));
    }
    let (p, m) = (&predicted.response_ns, &measured.response_ns);
    let p99_ratio = ratio_of(p.p99, m.p99);
    let enough_jobs = predicted.jobs.min(measured.jobs) >= tolerance.min_jobs.max(1);
    // below 100 jobs no percentile has 10 beyond it: the p99, as a lowered `jobs` asks
    let tail = enough_jobs.then(|| tail_percentile(p, m).unwrap_or("p99"));
    let mut tail_ratio = None;
    if let Some(key) = tail {
        let (tp, tm) = (p.percentile(key).unwrap_or(0), m.percentile(key).unwrap_or(0));
        tail_ratio = ratio_of(tp, tm);
        let within_slack = tp.abs_diff(tm) <= tolerance.p99_slack_ns;
        let within_ratio = tail_ratio.is_some_and(|r| r <= tolerance.p99_ratio && r >= 1.0 / tolerance.p99_ratio);
        if !within_slack && !within_ratio {
            reasons.push(format!(
                "{key} response time {} measured against {} predicted: x{:.2}, beyond x{} and more than {} apart",
                milliseconds(tm),
                milliseconds(tp),
                tail_ratio.unwrap_or(f64::INFINITY),
                tolerance.p99_ratio,
                crate::Nanos(tolerance.p99_slack_ns)
            ));
        }
    }
    TaskComparison {
        guest: predicted.guest.clone(),
        name: predicted.name.clone(),
        predicted: Side::of(predicted),
        measured: Side::of(measured),
        dsr_difference_points: difference,
        p99_ratio,
        p99_judged: tail == Some("p99"),
        tail_percentile: tail.map(str::to_string),
        tail_ratio,
        verdict: if reasons.is_empty() { Verdict::Agree } else { Verdict::Disagree },
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencyHistogram;

    fn task(guest: &str, name: &str, jobs: u64, misses: u64, p99: u64) -> TaskResult {
        TaskResult {
            guest: guest.into(),
            name: name.into(),
            jobs,
            misses,
            dsr: TaskResult::dsr_of(jobs, misses),
            response_ns: Summary { count: jobs, p50: p99 / 2, p99, max: p99 * 2, ..Default::default() },
            ..Default::default()
        }
    }

    fn results(kind: &str, tasks: Vec<TaskResult>) -> Results {
        Results { tasks, label: Some("s".into()), seed: Some(7), ..Results::new(kind, 10_000_000_000) }
    }

    #[test]
    fn tasks_within_tolerance_agree_and_beyond_it_disagree_with_the_reason() {
        let predicted =
            results("simulation", vec![task("a", "t1", 1000, 0, 4_000_000), task("a", "t2", 1000, 0, 4_000_000)]);
        // t1: 2.9 pp and x1.9 -> agree; t2: 3.1 pp -> disagree
        let measured =
            results("tasks", vec![task("a", "t1", 1000, 29, 7_600_000), task("a", "t2", 1000, 31, 4_000_000)]);
        let v = Verification::compare(&predicted, &measured, Tolerance::default()).unwrap();
        assert_eq!(v.tasks[0].verdict, Verdict::Agree, "{:?}", v.tasks[0].reasons);
        assert_eq!(v.tasks[1].verdict, Verdict::Disagree);
        assert!(v.tasks[1].reasons[0].contains("-3.10 pp"), "{:?}", v.tasks[1].reasons);
        assert_eq!(v.verdict, Verdict::Disagree);
        assert_eq!(v.totals.dsr_difference_points, -3.0);
        assert_eq!(v.totals.verdict, Verdict::Agree);
        assert_eq!((v.seed, v.scenario.as_str()), (7, "s"));
    }

    #[test]
    fn p99_is_judged_by_ratio_beyond_the_slack_and_only_with_enough_jobs() {
        let t = Tolerance::default();
        let far = compare_task(&task("a", "t", 1000, 0, 2_000_000), &task("a", "t", 1000, 0, 5_000_000), &t);
        assert_eq!(far.verdict, Verdict::Disagree);
        assert_eq!(far.p99_ratio, Some(2.5));
        let near = compare_task(&task("a", "t", 1000, 0, 200_000), &task("a", "t", 1000, 0, 900_000), &t);
        assert_eq!(near.verdict, Verdict::Agree, "within the 1 ms slack: {:?}", near.reasons);
        let few = compare_task(&task("a", "t", 99, 0, 2_000_000), &task("a", "t", 99, 0, 9_000_000), &t);
        assert!(!few.p99_judged);
        assert_eq!(few.verdict, Verdict::Agree);
    }

    #[test]
    fn with_too_few_jobs_beyond_the_p99_the_highest_confident_percentile_is_judged() {
        // 500 jobs: 5 beyond the p99 (low confidence), 25 beyond the p95
        let side = |p95: u64, p99: u64| {
            let h: LatencyHistogram = {
                let mut h = LatencyHistogram::new();
                (0..470).for_each(|_| h.record(p95 / 2));
                (0..20).for_each(|_| h.record(p95));
                (0..10).for_each(|_| h.record(p99));
                h
            };
            TaskResult {
                guest: "a".into(),
                name: "t".into(),
                jobs: 500,
                dsr: 1.0,
                response_ns: h.summary(),
                ..Default::default()
            }
        };
        let t = Tolerance::default();
        assert_eq!(side(2_000_000, 9_000_000).response_ns.low_confidence[0], "p99");
        // p99 x3 apart, p95 equal: agree, judged at the p95
        let c = compare_task(&side(2_000_000, 3_000_000), &side(2_000_000, 9_000_000), &t);
        assert_eq!((c.verdict, c.tail_percentile.as_deref(), c.p99_judged), (Verdict::Agree, Some("p95"), false));
        assert_eq!(c.p99_ratio, Some(3.0), "the p99 is still shown");
        // the p95 x3 apart: disagree, naming the p95
        let c = compare_task(&side(2_000_000, 9_000_000), &side(6_000_000, 9_000_000), &t);
        assert_eq!(c.verdict, Verdict::Disagree);
        assert!(c.reasons[0].starts_with("p95 response time 6.00 ms measured against 2.00 ms"), "{:?}", c.reasons);
        // 1,000 jobs: 10 beyond the p99, which is judged again
        let mut h = LatencyHistogram::new();
        (0..1000).for_each(|i| h.record(1_000_000 + i));
        assert!(h.summary().low_confidence.iter().all(|k| k != "p99"));
    }

    #[test]
    fn a_task_on_one_side_only_is_an_error() {
        let predicted = results("simulation", vec![task("a", "t1", 10, 0, 1)]);
        let measured = results("tasks", vec![task("a", "t2", 10, 0, 1)]);
        let e = Verification::compare(&predicted, &measured, Tolerance::default()).unwrap_err();
        assert!(e.contains("a/t1"), "{e}");
    }

    #[test]
    fn tolerances_parse_and_bad_ones_name_the_key() {
        let t = Tolerance::parse("dsr=1.5pp, p99=3x,slack=500us,jobs=50").unwrap();
        assert_eq!(t, Tolerance { dsr_points: 1.5, p99_ratio: 3.0, p99_slack_ns: 500_000, min_jobs: 50 });
        assert_eq!(Tolerance::parse("").unwrap(), Tolerance::default());
        for (text, key) in
            [("dsr=200", "dsr"), ("p99=0.5", "p99"), ("slack=fast", "slack"), ("x=1", "x"), ("dsr", "dsr")]
        {
            let e = Tolerance::parse(text).unwrap_err();
            assert_eq!(e.at.field.as_deref(), Some(format!("--tolerance {key}").as_str()), "{text}: {e}");
        }
    }
}
