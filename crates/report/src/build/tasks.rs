//! Periodic-task sections (simulation and `measure tasks` results): DSR versus rho across
//! results, DSR per task side by side (simulated vs measured), per-task statistics against the
//! baseline, and per-guest / per-core utilisation.

use super::compare::{compared, Better, DSR_DIFF, LATENCY_DIFF};
use super::limits::{worst_indices, MAX_CATEGORIES};
use crate::doc::{Cell, Figure, Section, Table};
use crate::extract::rho;
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::svg::line::{LineChart, Series};
use crate::units::{fmt_ns, fmt_plain, fmt_ratio};
use rtvirt_model::results::{Results, TaskResult};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Inputs that carry task results, with their names.
fn task_inputs(inputs: &[Input]) -> Vec<(&str, &Results)> {
    inputs.iter().filter_map(|i| i.results().filter(|r| !r.tasks.is_empty()).map(|r| (i.name.as_str(), r))).collect()
}

pub fn section(inputs: &[Input]) -> Option<Section> {
    let results = task_inputs(inputs);
    if results.is_empty() {
        return None;
    }
    let mut sec = Section::new("Periodic tasks: deadline satisfaction and response times");
    if let Some(lines) = dsr_rho_lines(&results) {
        sec.figure(dsr_rho_figure(&lines));
        sec.table(dsr_rho_table(&lines));
    }
    sec.figure(dsr_per_task_figure(&results));
    sec.table(task_table(&results));
    sec.table(utilisation_table(&results));
    sec.note(
        "DSR = (jobs - deadline misses) / jobs. Differences are against the first result that has the same task; \
         highlighted beyond 1 percentage point (DSR) or 10% (response time).",
    );
    Some(sec)
}

/// A section with only the DSR-versus-rho chart of `inputs` (e.g. a simulated rho sweep plus a
/// measured point), for reports that keep a sweep out of the per-task tables. None: fewer than
/// two rho values.
pub fn dsr_versus_rho_section(title: &str, inputs: &[Input]) -> Option<Section> {
    let lines = dsr_rho_lines(&task_inputs(inputs))?;
    let mut sec = Section::new(title);
    sec.figure(dsr_rho_figure(&lines));
    sec.table(dsr_rho_table(&lines));
    Some(sec)
}

/// A task's identity across results: (guest, task name).
type TaskKey<'a> = (&'a str, &'a str);

fn key_of(t: &TaskResult) -> TaskKey<'_> {
    (t.guest.as_str(), t.name.as_str())
}

/// Every (guest, task) in first-seen order.
fn task_keys<'a>(results: &[(&str, &'a Results)]) -> Vec<TaskKey<'a>> {
    let mut seen = HashSet::new();
    results.iter().flat_map(|(_, r)| &r.tasks).map(key_of).filter(|k| seen.insert(*k)).collect()
}

/// Per result, its tasks by key (the first of duplicates, as a linear search would find).
fn task_index<'a>(results: &[(&str, &'a Results)]) -> Vec<HashMap<TaskKey<'a>, &'a TaskResult>> {
    results
        .iter()
        .map(|(_, r)| {
            let mut index = HashMap::with_capacity(r.tasks.len());
            for t in &r.tasks {
                index.entry(key_of(t)).or_insert(t);
            }
            index
        })
        .collect()
}

/// Per rho (in millionths): pooled (jobs, misses).
type RhoPoints = BTreeMap<u64, (u64, u64)>;
/// Per line ("simulated vm1", "measured vm3", ...): its points.
type RhoLines = BTreeMap<String, RhoPoints>;

/// DSR of each guest (pooled over its tasks' jobs) against rho, one line per (kind, guest);
/// results with the same kind, guest and rho (e.g. several seeds) are pooled. None: < 2 rhos.
fn dsr_rho_lines(results: &[(&str, &Results)]) -> Option<RhoLines> {
    let mut lines = RhoLines::new();
    for (_, r) in results {
        let Some(rho) = rho(r) else { continue };
        for t in &r.tasks {
            let e = lines
                .entry(format!("{} {}", source(&r.kind), t.guest))
                .or_default()
                .entry((rho * 1e6).round() as u64)
                .or_default();
            e.0 += t.jobs;
            e.1 += t.misses;
        }
    }
    let distinct: std::collections::BTreeSet<u64> = lines.values().flat_map(|m| m.keys().copied()).collect();
    (distinct.len() >= 2).then_some(lines)
}

/// "simulated" for simulations, "measured" for real task runs.
fn source(kind: &str) -> &str {
    match kind {
        "simulation" => "simulated",
        "tasks" => "measured",
        other => other,
    }
}

fn dsr_rho_figure(lines: &RhoLines) -> Figure {
    let mut ordered: Vec<(&String, &RhoPoints)> = lines.iter().collect();
    ordered.sort_by_key(|(name, _)| (!name.starts_with("simulated"), name.to_string()));
    let series: Vec<Series> = ordered
        .into_iter()
        .map(|(name, pts)| Series {
            name: name.clone(),
            points: pts.iter().map(|(&k, &(j, m))| (k as f64 / 1e6, TaskResult::dsr_of(j, m))).collect(),
            step: false,
            markers: true,
        })
        .collect();
    let lowest = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(1.0, f64::min);
    let chart = LineChart {
        kind: "dsr-rho",
        title: "Deadline satisfaction ratio versus rho".into(),
        x_label: "rho (probability the execution bound holds)".into(),
        y_label: "DSR".into(),
        x_log: false,
        y_log: false,
        x_fmt: fmt_plain,
        y_fmt: fmt_ratio,
        y_range: Some((dsr_floor(lowest), 1.0)),
        series,
    };
    Figure {
        kind: "dsr-rho",
        title: chart.title.clone(),
        caption:
            "Each point pools the jobs of one guest's tasks over the results with that rho (Burns 2014: DSR rises with \
             rho)."
                .into(),
        svg: chart.render(),
    }
}

/// The same numbers as the chart: one row per line, one column per rho.
fn dsr_rho_table(lines: &RhoLines) -> Table {
    let rhos: std::collections::BTreeSet<u64> = lines.values().flat_map(|m| m.keys().copied()).collect();
    let mut header = vec!["DSR".to_string()];
    header.extend(rhos.iter().map(|&k| format!("rho {}", fmt_plain(k as f64 / 1e6))));
    let mut t =
        Table { caption: "Deadline satisfaction ratio versus rho (pooled per guest)".into(), header, rows: Vec::new() };
    for (name, pts) in lines {
        let mut row = vec![Cell::plain(name.clone())];
        row.extend(
            rhos.iter()
                .map(|k| Cell::plain(pts.get(k).map_or("-".into(), |&(j, m)| fmt_ratio(TaskResult::dsr_of(j, m))))),
        );
        t.row(row);
    }
    t
}

/// DSR per task and result; with more than [`MAX_CATEGORIES`] tasks, the tasks with the lowest
/// DSR in any result (the caption says how many are left out).
fn dsr_per_task_figure(results: &[(&str, &Results)]) -> Figure {
    let keys = task_keys(results);
    let index = task_index(results);
    let values: Vec<Vec<Option<f64>>> =
        keys.iter().map(|k| index.iter().map(|tasks| tasks.get(k).map(|t| t.dsr)).collect()).collect();
    let lowest_of = |row: &Vec<Option<f64>>| row.iter().flatten().copied().fold(1.0, f64::min);
    let shown = worst_indices(&values.iter().map(|row| 1.0 - lowest_of(row)).collect::<Vec<_>>(), MAX_CATEGORIES);
    let floor = dsr_floor(shown.iter().map(|&i| lowest_of(&values[i])).fold(1.0, f64::min));
    let chart = BarChart {
        kind: "dsr-tasks",
        title: "Deadline satisfaction ratio per task".into(),
        y_label: "DSR".into(),
        y_fmt: fmt_ratio,
        mode: BarMode::Grouped,
        categories: shown.iter().map(|&i| format!("{}/{}", keys[i].0, keys[i].1)).collect(),
        series: results.iter().map(|(n, _)| n.to_string()).collect(),
        values: shown.iter().map(|&i| values[i].clone()).collect(),
        reference: None,
        y_range: Some((floor, 1.0)),
    };
    let mut caption = if floor > 0.0 {
        format!(
            "One bar per result; the axis starts at {} to show small differences.",
            crate::units::tidy(&fmt_ratio(floor))
        )
    } else {
        "One bar per result.".into()
    };
    if shown.len() < keys.len() {
        caption.push_str(&format!(
            " The {} tasks with the lowest DSR of {} are shown; every task is in the table.",
            shown.len(),
            keys.len()
        ));
    }
    Figure { kind: "dsr-tasks", title: chart.title.clone(), caption, svg: chart.render() }
}

/// Lower end of a DSR axis: 90% or 50% when every value is above it, so differences show.
fn dsr_floor(lowest: f64) -> f64 {
    [0.9, 0.5].into_iter().find(|&f| lowest >= f).unwrap_or(0.0)
}

fn task_table(results: &[(&str, &Results)]) -> Table {
    let mut t = Table::new(
        "Tasks: jobs, misses, DSR and response times",
        &["guest/task", "result", "jobs", "misses", "DSR", "mean response", "p99 response", "max response"],
    );
    let index = task_index(results);
    for key in task_keys(results) {
        let mut base: Option<&TaskResult> = None;
        for ((name, _), tasks) in results.iter().zip(&index) {
            let Some(task) = tasks.get(&key) else { continue };
            t.row(task_row(key, name, task, base));
            base = base.or(Some(task));
        }
    }
    t
}

fn task_row(key: TaskKey, name: &str, t: &TaskResult, base: Option<&TaskResult>) -> Vec<Cell> {
    let resp = |t: &TaskResult| [t.response_ns.mean, t.response_ns.p99 as f64, t.response_ns.max as f64];
    let mut row = vec![
        Cell::plain(format!("{}/{}", key.0, key.1)),
        Cell::plain(name),
        Cell::plain(t.jobs.to_string()),
        Cell::plain(t.misses.to_string()),
        compared(fmt_ratio(t.dsr), t.dsr, base.map(|b| b.dsr), DSR_DIFF, Better::Higher),
    ];
    for (k, v) in resp(t).into_iter().enumerate() {
        row.push(compared(fmt_ns(v), v, base.map(|b| resp(b)[k]), LATENCY_DIFF, Better::Lower));
    }
    row
}

fn utilisation_table(results: &[(&str, &Results)]) -> Table {
    let mut t =
        Table::new("Utilisation per guest and core", &["result", "what", "CPU time", "utilisation", "DSR (pooled)"]);
    for (name, r) in results {
        let mut pooled: HashMap<&str, (u64, u64)> = HashMap::new();
        for t in &r.tasks {
            let e = pooled.entry(t.guest.as_str()).or_default();
            *e = (e.0 + t.jobs, e.1 + t.misses);
        }
        for g in &r.guests {
            let dsr = pooled
                .get(g.name.as_str())
                .filter(|(jobs, _)| *jobs > 0)
                .map_or("-".into(), |&(jobs, misses)| fmt_ratio(TaskResult::dsr_of(jobs, misses)));
            t.row(vec![
                Cell::plain(*name),
                Cell::plain(format!("guest {}", g.name)),
                Cell::plain(fmt_ns(g.cpu_time_ns as f64)),
                Cell::plain(fmt_ratio(g.utilisation)),
                Cell::plain(dsr),
            ]);
        }
        for c in &r.cores {
            let time = c.cpu_time_ns.map_or("-".into(), |v| fmt_ns(v as f64));
            t.row(vec![
                Cell::plain(*name),
                Cell::plain(format!("core {}", c.id)),
                Cell::plain(time),
                Cell::plain(fmt_ratio(c.utilisation)),
                Cell::plain(""),
            ]);
        }
    }
    t
}
