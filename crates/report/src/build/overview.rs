//! The top of a report: the verdict (is the plan feasible, how many deadlines did the simulation
//! and the measurement miss) and the inputs with the settings each was produced with (timer
//! interval and policy, simulation seed, horizon and rho, planner model and heuristic), so that
//! a reader knows what was compared before reading any chart.

use crate::doc::{Block, Cell, Mark, Section, Table};
use crate::input::{Document, Input};
use crate::units::{fmt_ns, fmt_plain, fmt_rate, fmt_ratio};
use rtvirt_model::adapt_log::AdaptLog;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;

/// "Plan feasible -> N simulated misses -> M measured misses" from the first plan, the first
/// simulation with tasks and the first measured task run; None without a plan or a measured task
/// run (simulations alone, e.g. a sweep, have no one verdict).
pub fn verdict(inputs: &[Input]) -> Option<Section> {
    let plan = inputs.iter().find_map(|i| i.plan());
    let first_of = |kind: &str| {
        inputs.iter().find_map(|i| i.results().filter(|r| r.kind == kind && !r.tasks.is_empty()).map(|r| (i, r)))
    };
    let (simulated, measured) = (first_of("simulation"), first_of("tasks"));
    if plan.is_none() && measured.is_none() {
        return None;
    }
    let mut steps: Vec<String> = plan.map(plan_step).into_iter().collect();
    steps.extend(simulated.map(|(i, r)| misses_step("simulated", &i.name, r)));
    steps.extend(measured.map(|(i, r)| misses_step("measured", &i.name, r)));
    let mut sec = Section::new("Verdict");
    sec.blocks.push(Block::Lead(steps.join(" → ")));
    if let (Some((_, sim)), Some((_, real))) = (simulated, measured) {
        if misses(real).1 > misses(sim).1 {
            sec.note(more_misses_note(inputs));
        }
    }
    Some(sec)
}

fn plan_step(plan: &Plan) -> String {
    if plan.feasible {
        let rho = plan.max_rho.map_or(String::new(), |r| format!(", largest uniform rho {r:.3}"));
        format!("Plan feasible on {} core(s){rho}", plan.cores_used)
    } else {
        format!("Plan NOT feasible ({} guest(s) fit on no core)", plan.unplaced.len())
    }
}

/// (jobs, misses) over every task of a result.
fn misses(results: &Results) -> (u64, u64) {
    results.tasks.iter().fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses))
}

fn misses_step(source: &str, name: &str, results: &Results) -> String {
    let (jobs, missed) = misses(results);
    let dsr = rtvirt_model::results::TaskResult::dsr_of(jobs, missed);
    format!("{missed} {source} deadline misses in {jobs} jobs (DSR {}, {name})", fmt_ratio(dsr))
}

/// Why a measurement can miss more than its simulation: the host's own latency, when measured.
fn more_misses_note(inputs: &[Input]) -> String {
    let worst = inputs
        .iter()
        .filter_map(|i| i.results().filter(|r| r.kind == "timer").and_then(|r| r.latency_ns.as_ref()))
        .map(|s| s.max)
        .max();
    let host = worst.map_or(String::new(), |max| {
        format!(" Timer wake-ups on this host took up to {} (see Timer wake-up latency).", fmt_ns(max as f64))
    });
    format!(
        "The measurement missed more deadlines than the simulation predicted: the simulation models the \
        reservations, not this host's kernel latency, interrupts and other load.{host} A host without \
        PREEMPT_RT shows millisecond wake-up latencies even when idle."
    )
}

/// The inputs: name, file, kind, duration, seed, where, and the settings each was made with.
pub fn inputs(inputs: &[Input]) -> Section {
    let mut sec = Section::new("Inputs");
    let mut t = Table::new("", &["name", "file", "kind", "duration", "seed", "where", "settings"]);
    for i in inputs {
        let row = match &i.doc {
            Document::Results(r) => vec![
                kind_cell(r),
                Cell::plain(fmt_ns(r.duration_ns as f64)),
                Cell::plain(r.seed.map_or("-".into(), |s| s.to_string())),
                Cell::plain(
                    r.environment
                        .as_ref()
                        .and_then(|e| e.r#in.as_ref().map(|w| w.to_string()))
                        .unwrap_or_else(|| default_where(&r.kind).into()),
                ),
                Cell::plain(result_settings(r)),
            ],
            Document::Plan(p) => vec![
                Cell::plain("plan"),
                Cell::plain("-"),
                Cell::plain("-"),
                Cell::plain("-"),
                Cell::plain(plan_settings(p)),
            ],
            Document::AdaptLog(l) => adapt_log_row(l),
        };
        let mut cells = vec![Cell::plain(i.name.clone()), Cell::plain(i.path.display().to_string())];
        cells.extend(row);
        t.row(cells);
    }
    sec.table(t);
    sec.note(
        "Comparisons take the first input of each table as the baseline: differences beyond 10% \
        (latency, response time) or 1 percentage point (DSR) are highlighted, red when worse, green when \
        better.",
    );
    sec
}

/// A decision log: its guests and changes, and the run's length.
fn adapt_log_row(log: &AdaptLog) -> Vec<Cell> {
    let guests = log.guests();
    let changes = guests.iter().map(|g| g.changes.len().saturating_sub(1)).sum::<usize>();
    let end = guests.iter().map(|g| g.end_ns).max().unwrap_or(0);
    vec![
        Cell::plain("host adapt log"),
        Cell::plain(fmt_ns(end as f64)),
        Cell::plain("-"),
        Cell::plain("host"),
        Cell::plain(format!("{} guest(s), {changes} reservation change(s)", guests.len())),
    ]
}

/// The result's kind; a run stopped early by Ctrl-C (`"interrupted": true`) is marked, and so is
/// a cell of a multi-cell command that could not run (`"error"`), with its error.
fn kind_cell(results: &Results) -> Cell {
    if let Some(error) = &results.error {
        Cell::marked(format!("{} (failed: {error})", results.kind), Mark::Worse)
    } else if results.interrupted {
        Cell::marked(format!("{} (interrupted: shorter than planned)", results.kind), Mark::Worse)
    } else {
        Cell::plain(results.kind.clone())
    }
}

fn default_where(kind: &str) -> &'static str {
    if kind == "simulation" || kind == "netsim" {
        "simulation"
    } else {
        "-"
    }
}

/// What a result was produced with, in a line: timer interval, policy and CPUs; the
/// simulation's scenario, rho and miss policy; a task run's plan; a network run's protocol and
/// rate.
fn result_settings(results: &Results) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = results.scenario.as_deref() {
        parts.push(format!(
            "scenario {}",
            std::path::Path::new(s).file_stem().map_or(s.into(), |f| f.to_string_lossy())
        ));
    }
    if let Some(rho) = results.rho {
        parts.push(format!("rho {}", fmt_plain(rho)));
    }
    if let Some(t) = &results.timer {
        parts.extend(t.interval_ns.map(|i| format!("interval {}", fmt_ns(i as f64))));
        match (&t.policy, t.priority, &t.reservation) {
            (Some(p), _, Some(res)) => parts.push(format!(
                "{p} {} / {} / {}",
                fmt_ns(res.runtime_ns as f64),
                fmt_ns(res.deadline_ns as f64),
                fmt_ns(res.period_ns as f64)
            )),
            (Some(p), Some(prio), None) => parts.push(format!("{p} priority {prio}")),
            (Some(p), None, None) => parts.push(p.clone()),
            _ => {}
        }
    }
    if !results.cpus.is_empty() {
        let cpus: Vec<String> = results.cpus.iter().map(|c| c.cpu.to_string()).collect();
        parts.push(format!("CPUs {}", cpus.join(",")));
    }
    if let Some(sim) = &results.simulation {
        if let Some(policy) = results.guests.iter().find_map(|g| g.policy.clone()) {
            parts.push(format!("host policy {policy}"));
        }
        parts.extend(sim.miss_policy.as_ref().map(|m| format!("late jobs: {m}")));
    }
    if let Some(plan) = results.task_totals.as_ref().and_then(|t| t.plan.as_ref()) {
        let s = &plan.settings;
        let planner: Vec<String> =
            [s.model.clone(), s.heuristic.clone(), s.budget.clone()].into_iter().flatten().collect();
        if !planner.is_empty() {
            parts.push(format!("plan {}", planner.join(" / ")));
        }
    }
    if let Some(n) = &results.net {
        parts.extend(n.protocol.clone());
        parts.extend(n.size.map(|s| format!("{s} B requests")));
        match n.requested_rate {
            Some(Some(rate)) => parts.push(format!("rate {}", fmt_rate(rate))),
            Some(None) => parts.push("back-to-back".into()),
            None => {}
        }
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// The planner's settings in a line.
fn plan_settings(plan: &Plan) -> String {
    let s = &plan.settings;
    let mut parts: Vec<String> = Vec::new();
    parts.extend(s.model.as_ref().map(|m| format!("model {m}")));
    parts.extend(s.heuristic.as_ref().map(|h| format!("heuristic {h}")));
    parts.extend(s.budget.as_ref().map(|b| format!("budget {b}")));
    parts.extend(s.rho.flatten().map(|r| format!("rho {}", fmt_plain(r))));
    parts.extend(s.bandwidth_cap.map(|c| format!("cap {}", fmt_ratio(c))));
    parts.extend(s.cores.map(|c| format!("{c} host cores")));
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Mark;
    use rtvirt_model::results::Results;

    fn input(results: Results) -> Input {
        Input { name: "t".into(), path: "t.json".into(), doc: Document::Results(Box::new(results)), intervals: None }
    }

    #[test]
    fn interrupted_runs_are_marked_in_the_overview() {
        let mut r = Results::new("timer", 1);
        let plain = inputs(&[input(r.clone())]);
        r.interrupted = true;
        let marked = inputs(&[input(r)]);
        let kind = |s: &Section| match &s.blocks[0] {
            crate::doc::Block::Table(t) => t.rows[0][2].clone(),
            _ => panic!("overview starts with its table"),
        };
        assert_eq!(kind(&plain), Cell::plain("timer"));
        assert_eq!(kind(&marked).mark, Mark::Worse);
        assert!(kind(&marked).text.contains("interrupted"));
        let mut failed = Results::new("timer", 0);
        failed.error = Some("guest kernel 'rt' not found".into());
        let failed = inputs(&[input(failed)]);
        assert_eq!(kind(&failed).mark, Mark::Worse);
        assert!(kind(&failed).text.contains("failed: guest kernel 'rt' not found"), "{:?}", kind(&failed));
    }

    fn tasks(kind: &str, jobs: u64, misses: u64) -> Input {
        let mut r = Results::new(kind, 1);
        r.tasks.push(rtvirt_model::results::TaskResult {
            guest: "vm1".into(),
            name: "t1".into(),
            jobs,
            misses,
            dsr: rtvirt_model::results::TaskResult::dsr_of(jobs, misses),
            ..Default::default()
        });
        Input { name: kind.into(), path: "x.json".into(), doc: Document::Results(Box::new(r)), intervals: None }
    }

    #[test]
    fn the_verdict_goes_from_plan_to_simulated_to_measured_misses() {
        let plan: Plan = serde_json::from_value(serde_json::json!({"schema": "rtvirt.plan/v1", "feasible": true,
            "cores_used": 1, "max_rho": 0.97, "guests": [], "cores": []}))
        .unwrap();
        let plan = Input {
            name: "plan".into(),
            path: "plan.json".into(),
            doc: Document::Plan(Box::new(plan)),
            intervals: None,
        };
        let sec = verdict(&[plan, tasks("simulation", 100, 0), tasks("tasks", 100, 14)]).unwrap();
        let Block::Lead(text) = &sec.blocks[0] else { panic!("the verdict leads") };
        assert_eq!(
            text,
            "Plan feasible on 1 core(s), largest uniform rho 0.970 → 0 simulated deadline misses in 100 jobs \
                (DSR 100%, simulation) → 14 measured deadline misses in 100 jobs (DSR 86.00%, tasks)"
        );
        assert!(matches!(&sec.blocks[1], Block::Note(n) if n.contains("more deadlines than the simulation")));
        assert!(verdict(&[input(Results::new("timer", 1))]).is_none(), "a timer run alone has no verdict");
        assert!(verdict(&[tasks("simulation", 100, 3)]).is_none(), "nor simulations alone");
    }
}
