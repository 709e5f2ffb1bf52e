//! Periodic-task sections (simulation and `measure tasks` results): DSR versus rho across
//! results, DSR per task side by side (simulated vs measured), per-task statistics against the
//! baseline, and per-guest / per-core utilisation.

use super::compare::{compared, Better, DSR_DIFF, LATENCY_DIFF};
use super::limits::{worst_indices, MAX_CATEGORIES, MAX_GROUPED_SERIES};
use crate::doc::{Cell, Figure, Section, Table};
use crate::extract::rho;
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::svg::boxplot::{BoxStats, GroupedBoxChart};
use crate::svg::line::{LineChart, Series};
use crate::svg::{Marker, Style};
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
    if let Some(curves) = dsr_rho_lines(&results) {
        add_dsr_rho(&mut sec, &curves);
    }
    let timing = task_timing(inputs);
    let charted = charted_results(&results);
    sec.figure(dsr_per_task_figure(&charted));
    sec.figure(response_figure(&charted, &timing));
    if charted.len() < results.len() {
        sec.note(format!(
            "The per-task charts show {} of {} results: the first (baseline) and those with the most deadline \
                misses; every result is in the tables.",
            charted.len(),
            results.len()
        ));
    }
    sec.table(task_table(&results, &timing));
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
    let curves = dsr_rho_lines(&task_inputs(inputs))?;
    let mut sec = Section::new(title);
    add_dsr_rho(&mut sec, &curves);
    Some(sec)
}

/// A task's identity across results: (guest, task name).
type TaskKey<'a> = (&'a str, &'a str);

fn key_of(task: &TaskResult) -> TaskKey<'_> {
    (task.guest.as_str(), task.name.as_str())
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

/// DSR versus rho: per (source, guest, task) its pooled jobs and misses at each rho, where
/// source is "simulated" or "measured".
#[derive(Debug, Default)]
struct RhoCurves {
    tasks: BTreeMap<(String, String, String), RhoPoints>,
}

/// A mean over every guest is named by this instead of a guest.
const ALL_GUESTS: &str = "all guests";

impl RhoCurves {
    /// Every rho (in millionths) of any curve.
    fn rhos(&self) -> std::collections::BTreeSet<u64> {
        self.tasks.values().flat_map(|m| m.keys().copied()).collect()
    }

    fn guests(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&String> = self.tasks.keys().map(|k| &k.1).collect();
        set.into_iter().cloned().collect()
    }

    /// One line per (source, guest) pooling its tasks, then per source the mean over all guests
    /// (every job of the source pooled); simulated lines first.
    fn lines(&self) -> Vec<((String, String), RhoPoints)> {
        let mut lines: BTreeMap<(bool, String, String), RhoPoints> = BTreeMap::new();
        for ((source, guest, _), pts) in &self.tasks {
            let measured = source != "simulated";
            for group in [guest.as_str(), ALL_GUESTS] {
                let line = lines.entry((measured, source.clone(), group.to_string())).or_default();
                for (&rho, &(j, m)) in pts {
                    let e = line.entry(rho).or_default();
                    *e = (e.0 + j, e.1 + m);
                }
            }
        }
        lines.into_iter().map(|((_, source, guest), pts)| ((source, guest), pts)).collect()
    }
}

/// DSR of each task against rho, pooled over results with the same source, task and rho (e.g.
/// several seeds). None: fewer than two rho values.
fn dsr_rho_lines(results: &[(&str, &Results)]) -> Option<RhoCurves> {
    let mut curves = RhoCurves::default();
    for (_, r) in results {
        let Some(rho) = rho(r) else { continue };
        for t in &r.tasks {
            let key = (source(&r.kind).to_string(), t.guest.clone(), t.name.clone());
            let e = curves.tasks.entry(key).or_default().entry((rho * 1e6).round() as u64).or_default();
            e.0 += t.jobs;
            e.1 += t.misses;
        }
    }
    (curves.rhos().len() >= 2).then_some(curves)
}

/// "simulated" for simulations, "measured" for real task runs.
fn source(kind: &str) -> &str {
    match kind {
        "simulation" => "simulated",
        "tasks" => "measured",
        other => other,
    }
}

/// Colour per guest (black for the mean over all guests); simulated curves solid with round
/// markers, measured ones dashed with hollow squares, so that a measured point on a simulated
/// one stays visible.
fn curve_style(source: &str, guest: &str, guests: &[String]) -> Style {
    let color = if guest == ALL_GUESTS {
        "#000000"
    } else {
        crate::svg::color(guests.iter().position(|g| g == guest).unwrap_or(0) % (crate::svg::PALETTE.len() - 1))
    };
    let simulated = source == "simulated";
    Style { color, dashed: !simulated, marker: if simulated { Marker::Circle } else { Marker::Square }, swatch: false }
}

fn dsr_rho_figure(curves: &RhoCurves) -> Figure {
    let guests = curves.guests();
    let series: Vec<Series> = curves
        .lines()
        .into_iter()
        .map(|((source, guest), pts)| Series {
            name: format!("{source} {guest}"),
            points: pts.iter().map(|(&k, &(j, m))| (k as f64 / 1e6, TaskResult::dsr_of(j, m))).collect(),
            markers: true,
            style: Some(curve_style(&source, &guest, &guests)),
            curve_label: (source == "simulated").then(|| guest.replace(ALL_GUESTS, "mean")),
            ..Series::default()
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
        y_range: Some(dsr_axis(lowest)),
        series,
    };
    Figure {
        kind: "dsr-rho",
        title: chart.title.clone(),
        caption: "Per guest, the DSR of its tasks' jobs pooled over the results with that rho; black: every \
            guest pooled (mean). Solid lines and dots: simulated; dashed lines and squares: measured. The \
            axis spans the values shown (Burns 2014: DSR rises with rho)."
            .into(),
        svg: chart.render(),
    }
}

/// The DSR axis from just below the lowest value to just above 100%, on nice ticks.
fn dsr_axis(lowest: f64) -> (f64, f64) {
    let lowest = lowest.clamp(0.0, 1.0);
    let span = (1.0 - lowest).max(0.005);
    let step = crate::svg::scale::nice_step(span * 1.15 / 5.0);
    let lo = (((1.0 - span * 1.15) / step).floor() * step).max(0.0);
    (lo, 1.0 + (1.0 - lo) * 0.03)
}

/// The same numbers as the chart: one row per line, one column per rho.
fn dsr_rho_table(curves: &RhoCurves) -> Table {
    let rhos = curves.rhos();
    let mut header = vec!["DSR".to_string()];
    header.extend(rhos.iter().map(|&k| format!("rho {}", fmt_plain(k as f64 / 1e6))));
    let mut t =
        Table { caption: "Deadline satisfaction ratio versus rho (pooled per guest)".into(), header, rows: Vec::new() };
    for ((source, guest), pts) in curves.lines() {
        let mut row = vec![Cell::plain(format!("{source} {guest}"))];
        row.extend(
            rhos.iter()
                .map(|k| Cell::plain(pts.get(k).map_or("-".into(), |&(j, m)| fmt_ratio(TaskResult::dsr_of(j, m))))),
        );
        t.row(row);
    }
    t
}

/// Deadline misses of each task that missed any, per rho ("misses / jobs"), so that the pooled
/// curves can be traced to the tasks behind them.
fn misses_per_task_table(curves: &RhoCurves) -> Option<Table> {
    let rhos = curves.rhos();
    let mut header = vec!["task".to_string()];
    header.extend(rhos.iter().map(|&k| format!("rho {}", fmt_plain(k as f64 / 1e6))));
    let mut t = Table {
        caption: "Deadline misses per task versus rho (misses / jobs; tasks that missed any)".into(),
        header,
        rows: Vec::new(),
    };
    for ((source, guest, task), pts) in &curves.tasks {
        if pts.values().all(|&(_, m)| m == 0) {
            continue;
        }
        let mut row = vec![Cell::plain(format!("{source} {guest}/{task}"))];
        row.extend(rhos.iter().map(|k| {
            pts.get(k).map_or(Cell::plain("-"), |&(j, m)| {
                let text = format!("{m} / {j}");
                if m > 0 {
                    Cell::marked(text, crate::doc::Mark::Worse)
                } else {
                    Cell::plain(text)
                }
            })
        }));
        t.row(row);
    }
    (!t.rows.is_empty()).then_some(t)
}

/// The chart, its table and the misses per task, in a section.
fn add_dsr_rho(sec: &mut Section, curves: &RhoCurves) {
    sec.figure(dsr_rho_figure(curves));
    sec.table(dsr_rho_table(curves));
    match misses_per_task_table(curves) {
        Some(t) => sec.table(t),
        None => sec.note("No task missed a deadline at any rho."),
    }
}

/// The results drawn in the per-task charts (a group of bars or boxes per task stays readable
/// with a few results): all, or the first (baseline) and the most misses up to
/// [`MAX_GROUPED_SERIES`].
fn charted_results<'a>(results: &[(&'a str, &'a Results)]) -> Vec<(&'a str, &'a Results)> {
    let Some((first, rest)) = results.split_first() else { return Vec::new() };
    let misses: Vec<f64> = rest.iter().map(|(_, r)| r.tasks.iter().map(|t| t.misses).sum::<u64>() as f64).collect();
    std::iter::once(*first).chain(worst_indices(&misses, MAX_GROUPED_SERIES - 1).into_iter().map(|i| rest[i])).collect()
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
    let (floor, top) = dsr_axis(shown.iter().map(|&i| lowest_of(&values[i])).fold(1.0, f64::min));
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
        y_range: Some((floor, top)),
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

/// Per (guest, task): (period, relative deadline) in ns, from the first plan among the inputs.
type Timing = HashMap<(String, String), (u64, u64)>;

fn task_timing(inputs: &[Input]) -> Timing {
    let Some(plan) = inputs.iter().find_map(|i| i.plan()) else { return Timing::new() };
    plan.guests
        .iter()
        .flat_map(|g| g.tasks.iter().map(move |t| ((g.name.clone(), t.name.clone()), (t.period_ns, t.deadline_ns))))
        .collect()
}

fn timing_of(timing: &Timing, key: TaskKey) -> Option<(u64, u64)> {
    timing.get(&(key.0.to_string(), key.1.to_string())).copied()
}

fn task_table(results: &[(&str, &Results)], timing: &Timing) -> Table {
    let mut header = vec!["guest/task"];
    if !timing.is_empty() {
        header.push("period / deadline");
    }
    header.extend(["result", "jobs", "misses", "DSR", "mean response", "p99 response", "max response"]);
    let mut t = Table::new("Tasks: jobs, misses, DSR and response times", &header);
    let index = task_index(results);
    for key in task_keys(results) {
        let mut base: Option<&TaskResult> = None;
        for ((name, _), tasks) in results.iter().zip(&index) {
            let Some(task) = tasks.get(&key) else { continue };
            let mut row = vec![Cell::plain(format!("{}/{}", key.0, key.1))];
            if !timing.is_empty() {
                let pd = timing_of(timing, key)
                    .map_or("-".into(), |(p, d)| format!("{} / {}", fmt_ns(p as f64), fmt_ns(d as f64)));
                row.push(Cell::plain(pd));
            }
            row.extend(task_row(name, task, base));
            t.row(row);
            base = base.or(Some(task));
        }
    }
    t
}

/// Response times of every task on one chart: per task a box per result (simulated and
/// measured side by side), the task's deadline marked when a plan gives it.
fn response_figure(results: &[(&str, &Results)], timing: &Timing) -> Figure {
    let keys = task_keys(results);
    let index = task_index(results);
    let p99_over_deadline = |k: &TaskKey| {
        let worst = index.iter().filter_map(|tasks| tasks.get(k)).map(|t| t.response_ns.p99 as f64).fold(0.0, f64::max);
        timing_of(timing, *k).map_or(worst, |(_, d)| worst / d.max(1) as f64)
    };
    let shown = worst_indices(&keys.iter().map(p99_over_deadline).collect::<Vec<_>>(), MAX_CATEGORIES);
    let chart = GroupedBoxChart {
        title: "Response time per task".into(),
        y_label: "response time".into(),
        y_fmt: fmt_ns,
        categories: shown.iter().map(|&i| format!("{}/{}", keys[i].0, keys[i].1)).collect(),
        series: results.iter().map(|(n, _)| n.to_string()).collect(),
        boxes: shown
            .iter()
            .map(|&i| {
                index
                    .iter()
                    .map(|tasks| {
                        tasks
                            .get(&keys[i])
                            .map(|t| BoxStats::from_summary(&format!("{}/{}", keys[i].0, keys[i].1), &t.response_ns))
                    })
                    .collect()
            })
            .collect(),
        references: shown.iter().map(|&i| timing_of(timing, keys[i]).map(|(_, d)| d as f64)).collect(),
    };
    let mut caption = "Per task, one box per result (p25..p75, white line: median; whiskers as in the latency \
        box plots; dots: known percentiles beyond them, up to the maximum)"
        .to_string();
    if !timing.is_empty() {
        caption.push_str("; red dash: the task's deadline from the plan");
    }
    caption.push('.');
    if shown.len() < keys.len() {
        caption.push_str(&format!(
            " The {} tasks with the highest p99 (relative to the deadline) of {} are shown.",
            shown.len(),
            keys.len()
        ));
    }
    Figure { kind: "response-times", title: chart.title.clone(), caption, svg: chart.render() }
}

fn task_row(name: &str, task: &TaskResult, base: Option<&TaskResult>) -> Vec<Cell> {
    let resp = |task: &TaskResult| [task.response_ns.mean, task.response_ns.p99 as f64, task.response_ns.max as f64];
    let mut row = vec![
        Cell::plain(name),
        Cell::plain(task.jobs.to_string()),
        Cell::plain(task.misses.to_string()),
        compared(fmt_ratio(task.dsr), task.dsr, base.map(|b| b.dsr), DSR_DIFF, Better::Higher),
    ];
    for (k, v) in resp(task).into_iter().enumerate() {
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
