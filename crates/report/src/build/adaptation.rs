//! Adapted reservations (`simulate --adapt`, `host adapt`): per result or decision log
//! (`rtvirt report --adapt-log`), each adapted guest's reserved bandwidth over time as a step line
//! against the demand the controller observed at each change, and a table of what adapting cost
//! and kept (planned, mean and final bandwidth, the changes by reason, the guest's DSR - a
//! decision log's from the first measured result with that guest's tasks).

use super::limits::MAX_SERIES;
use crate::doc::{Cell, Figure, Section, Table};
use crate::input::Input;
use crate::svg::line::{LineChart, Series};
use crate::svg::Style;
use crate::units::fmt_seconds;
use rtvirt_model::results::{GuestResult, ReservationChange, TaskResult};

/// One adapted guest as drawn: its reservation series, its mean bandwidth and its tasks' counts.
struct Adapted<'a> {
    guest: String,
    changes: std::borrow::Cow<'a, [ReservationChange]>,
    bandwidth_mean: Option<f64>,
    /// (jobs, misses) of its tasks, when a result has them.
    jobs: Option<(u64, u64)>,
}

/// The adapted guests of one input, and when its run ended.
struct Source<'a> {
    name: &'a str,
    end_ns: u64,
    guests: Vec<Adapted<'a>>,
}

pub fn section(inputs: &[Input]) -> Option<Section> {
    let sources: Vec<Source> =
        inputs.iter().filter_map(|i| source(i, inputs)).filter(|s| !s.guests.is_empty()).collect();
    if sources.is_empty() {
        return None;
    }
    let mut sec = Section::new("Adapted reservations: reserved bandwidth against observed demand");
    let mut table = Table::new(
        "Per adapted guest: the planned reservation, the time-averaged and the final one, the changes by reason, \
         and the guest's deadline satisfaction.",
        &["result / guest", "planned", "mean reserved", "final", "grow / shrink / degraded", "DSR"],
    );
    for s in &sources {
        sec.figure(figure(s));
        for g in &s.guests {
            table.row(row(s.name, g));
        }
    }
    sec.table(table);
    sec.note(
        "Demand = the sum over the guest's tasks of mean execution time / period in the controller's window when \
         it changed the reservation; the reservation follows it with the controller's margin, hysteresis and rate \
         limit (docs/adapt.md). A `host adapt` decision log's time is since the adaptation's start; its DSR is that \
         of the first measured result with the guest's tasks.",
    );
    Some(sec)
}

/// The adapted guests of a result (its `reservations`) or of a decision log.
fn source<'a>(input: &'a Input, inputs: &'a [Input]) -> Option<Source<'a>> {
    if let Some(r) = input.results() {
        let guests = r.guests.iter().filter(|g| g.reservations.is_some()).map(|g| of_result(g, &r.tasks)).collect();
        return Some(Source { name: &input.name, end_ns: r.duration_ns, guests });
    }
    let series = input.adapt_log()?.guests();
    let end_ns = series.iter().map(|g| g.end_ns).max().unwrap_or(0);
    let guests = series
        .into_iter()
        .map(|g| Adapted {
            bandwidth_mean: g.bandwidth_mean(),
            jobs: measured_jobs(&g.guest, inputs),
            guest: g.guest,
            changes: std::borrow::Cow::Owned(g.changes),
        })
        .collect();
    Some(Source { name: &input.name, end_ns, guests })
}

fn of_result<'a>(g: &'a GuestResult, tasks: &[TaskResult]) -> Adapted<'a> {
    Adapted {
        guest: g.name.clone(),
        changes: std::borrow::Cow::Borrowed(g.reservations.as_deref().unwrap_or_default()),
        bandwidth_mean: g.bandwidth_mean,
        jobs: Some(jobs_of(&g.name, tasks)),
    }
}

/// (jobs, misses) of `guest`'s tasks.
fn jobs_of(guest: &str, tasks: &[TaskResult]) -> (u64, u64) {
    tasks.iter().filter(|t| t.guest == guest).fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses))
}

/// (jobs, misses) of `guest`'s tasks in the first measured (`tasks`) result that has them.
fn measured_jobs(guest: &str, inputs: &[Input]) -> Option<(u64, u64)> {
    inputs
        .iter()
        .filter_map(Input::results)
        .filter(|r| r.kind == "tasks")
        .map(|r| jobs_of(guest, &r.tasks))
        .find(|&(jobs, _)| jobs > 0)
}

/// The bandwidth in force from each change on, held to the run's end.
fn reserved_points(changes: &[ReservationChange], end_ns: u64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = changes.iter().map(|c| (c.at_ns as f64, c.bandwidth)).collect();
    if let Some(&(t, bw)) = points.last() {
        points.push((t.max(end_ns as f64), bw));
    }
    points
}

/// The demand observed at each change (the plan's start has none).
fn demand_points(changes: &[ReservationChange]) -> Vec<(f64, f64)> {
    changes.iter().filter_map(|c| c.demand.map(|d| (c.at_ns as f64, d))).collect()
}

fn figure(source: &Source) -> Figure {
    let shown = source.guests.len().min(MAX_SERIES / 2);
    let mut series = Vec::new();
    for (i, g) in source.guests.iter().take(shown).enumerate() {
        let solid = Style::nth(i);
        series.push(Series {
            name: format!("{} reserved", g.guest),
            points: reserved_points(&g.changes, source.end_ns),
            step: true,
            style: Some(solid),
            ..Series::default()
        });
        let demand = demand_points(&g.changes);
        if !demand.is_empty() {
            series.push(Series {
                name: format!("{} demand", g.guest),
                points: demand,
                markers: true,
                style: Some(Style { dashed: true, ..solid }),
                ..Series::default()
            });
        }
    }
    let chart = LineChart {
        kind: "adaptation",
        title: format!("Reserved bandwidth over time: {}", source.name),
        x_label: "time since start".into(),
        y_label: "bandwidth (runtime / period)".into(),
        x_log: false,
        y_log: false,
        x_fmt: fmt_seconds,
        y_fmt: fmt_bandwidth,
        y_range: Some((0.0, 1.0)),
        series,
    };
    let mut caption = "Steps: the reservation in force; dashed with dots: the demand observed when it changed. \
                       A reservation below its demand misses deadlines until the controller grows it."
        .to_string();
    if shown < source.guests.len() {
        caption.push_str(&format!(" {shown} of {} adapted guests are drawn; the table has all.", source.guests.len()));
    }
    Figure { kind: "adaptation", title: chart.title.clone(), caption, svg: chart.render() }
}

fn fmt_bandwidth(v: f64) -> String {
    format!("{v:.2}")
}

fn row(name: &str, g: &Adapted) -> Vec<Cell> {
    let changes = &g.changes;
    let planned = changes.first().map_or("-".into(), |c| format!("{:.3}", c.bandwidth));
    let last = changes.last().map_or("-".into(), |c| format!("{:.3}", c.bandwidth));
    let count = |reason: &str| changes.iter().filter(|c| c.reason == reason).count();
    let dsr = match g.jobs {
        Some((jobs, misses)) if jobs > 0 => format!("{:.4}", TaskResult::dsr_of(jobs, misses)),
        _ => "-".into(),
    };
    vec![
        Cell::plain(format!("{name} {}", g.guest)),
        Cell::plain(planned),
        Cell::plain(g.bandwidth_mean.map_or("-".into(), |b| format!("{b:.3}"))),
        Cell::plain(last),
        Cell::plain(format!("{} / {} / {}", count("grow"), count("shrink"), count("degraded"))),
        Cell::plain(dsr),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::{Reservation, Results};

    fn change(at_ns: u64, bandwidth: f64, demand: Option<f64>, reason: &str) -> ReservationChange {
        let period_ns = 10_000_000;
        let runtime_ns = (bandwidth * period_ns as f64) as u64;
        ReservationChange {
            at_ns,
            reservation: Reservation { deadline_ns: period_ns, period_ns, runtime_ns },
            bandwidth,
            demand,
            reason: reason.into(),
            detail: None,
        }
    }

    fn input(name: &str, r: Results) -> Input {
        let doc = crate::input::Document::Results(Box::new(r));
        Input { name: name.into(), path: format!("{name}.json").into(), doc, intervals: None }
    }

    fn adapted_guest() -> GuestResult {
        GuestResult {
            name: "vm1".into(),
            bandwidth_mean: Some(0.35),
            reservations: Some(vec![
                change(0, 0.2, None, "plan"),
                change(2_000_000_000, 0.5, Some(0.42), "grow"),
                change(6_000_000_000, 0.3, Some(0.25), "shrink"),
            ]),
            ..GuestResult::default()
        }
    }

    #[test]
    fn the_reservation_is_held_to_the_runs_end_and_demand_starts_at_the_first_change() {
        let g = adapted_guest();
        let changes = g.reservations.as_deref().unwrap();
        assert_eq!(reserved_points(changes, 10_000_000_000), vec![(0.0, 0.2), (2e9, 0.5), (6e9, 0.3), (1e10, 0.3)]);
        assert_eq!(demand_points(changes), vec![(2e9, 0.42), (6e9, 0.25)]);
    }

    #[test]
    fn only_results_with_adapted_guests_get_the_section_and_the_table_counts_changes_and_misses() {
        let task =
            |misses| TaskResult { guest: "vm1".into(), name: "t".into(), jobs: 100, misses, ..TaskResult::default() };
        let results = Results {
            duration_ns: 10_000_000_000,
            guests: vec![adapted_guest(), GuestResult { name: "static".into(), ..GuestResult::default() }],
            tasks: vec![task(1), task(3)],
            ..Results::default()
        };
        let row = row("r", &of_result(&results.guests[0], &results.tasks));
        let text: Vec<String> = row.iter().map(|c| c.text.clone()).collect();
        assert_eq!(text, vec!["r vm1", "0.200", "0.350", "0.300", "1 / 1 / 0", "0.9800"]);
        let inputs = [input("r", results.clone())];
        let svg = figure(&source(&inputs[0], &inputs).unwrap()).svg;
        assert!(svg.contains("vm1 reserved") && svg.contains("vm1 demand") && !svg.contains("static"), "{svg}");
        let plain = Results { duration_ns: 1, guests: vec![GuestResult::default()], ..Results::default() };
        assert!(section(&[input("plain", plain)]).is_none());
        assert!(section(&[input("r", results)]).is_some());
    }

    #[test]
    fn a_decision_log_is_drawn_with_the_dsr_of_the_measured_result_of_its_guest() {
        let line = |t: u64, event: &str, runtime: u64, demand: &str| {
            format!(
                r#"{{"time_ns":{t},"guest":"vm1","event":"{event}","new":{{"runtime_ns":{runtime},"deadline_ns":10,"period_ns":10}},{demand}"reason":"r"}}"#
            )
        };
        let text = [line(0, "start", 2, ""), line(5, "change", 5, r#""demand":0.4,"change":"grow","#)].join("\n");
        let log = rtvirt_model::adapt_log::AdaptLog::from_text(&text).unwrap();
        let log = Input {
            name: "adapt".into(),
            path: "adapt.jsonl".into(),
            doc: crate::input::Document::AdaptLog(Box::new(log)),
            intervals: None,
        };
        let task = TaskResult { guest: "vm1".into(), name: "t".into(), jobs: 50, misses: 1, ..TaskResult::default() };
        let measured = Results { kind: "tasks".into(), tasks: vec![task], ..Results::default() };
        let inputs = [input("measured", measured), log];
        let s = source(&inputs[1], &inputs).unwrap();
        let text: Vec<String> = row(s.name, &s.guests[0]).iter().map(|c| c.text.clone()).collect();
        assert_eq!(
            text,
            vec!["adapt vm1", "0.200", "0.200", "0.500", "1 / 0 / 0", "0.9800"],
            "held to its last record"
        );
        assert!(figure(&s).svg.contains("vm1 demand"));
        assert!(section(&inputs).is_some());
    }
}
