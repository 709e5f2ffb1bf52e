//! Adapted reservations (`simulate --adapt`, `host adapt`): per result, each adapted guest's
//! reserved bandwidth over time as a step line against the demand the controller observed at
//! each change, and a table of what adapting cost and kept (planned, mean and final bandwidth,
//! the changes by reason, the guest's DSR).

use super::limits::MAX_SERIES;
use crate::doc::{Cell, Figure, Section, Table};
use crate::input::Input;
use crate::svg::line::{LineChart, Series};
use crate::svg::Style;
use crate::units::fmt_seconds;
use rtvirt_model::results::{GuestResult, Results, TaskResult};

pub fn section(inputs: &[Input]) -> Option<Section> {
    let adapted: Vec<(&str, &Results)> = inputs
        .iter()
        .filter_map(|i| i.results().map(|r| (i.name.as_str(), r)))
        .filter(|(_, r)| r.guests.iter().any(|g| g.reservations.is_some()))
        .collect();
    if adapted.is_empty() {
        return None;
    }
    let mut sec = Section::new("Adapted reservations: reserved bandwidth against observed demand");
    let mut table = Table::new(
        "Per adapted guest: the planned reservation, the time-averaged and the final one, the changes by reason, \
         and the guest's deadline satisfaction.",
        &["result / guest", "planned", "mean reserved", "final", "grow / shrink / degraded", "DSR"],
    );
    for (name, results) in &adapted {
        sec.figure(figure(name, results));
        for g in results.guests.iter().filter(|g| g.reservations.is_some()) {
            table.row(row(name, g, &results.tasks));
        }
    }
    sec.table(table);
    sec.note(
        "Demand = the sum over the guest's tasks of mean execution time / period in the controller's window when \
         it changed the reservation; the reservation follows it with the controller's margin, hysteresis and rate \
         limit (docs/adapt.md).",
    );
    Some(sec)
}

/// The bandwidth in force from each change on, held to the run's end.
fn reserved_points(g: &GuestResult, end_ns: u64) -> Vec<(f64, f64)> {
    let changes = g.reservations.as_deref().unwrap_or_default();
    let mut points: Vec<(f64, f64)> = changes.iter().map(|c| (c.at_ns as f64, c.bandwidth)).collect();
    if let Some(&(t, bw)) = points.last() {
        points.push((t.max(end_ns as f64), bw));
    }
    points
}

/// The demand observed at each change (the plan's start has none).
fn demand_points(g: &GuestResult) -> Vec<(f64, f64)> {
    let changes = g.reservations.as_deref().unwrap_or_default();
    changes.iter().filter_map(|c| c.demand.map(|d| (c.at_ns as f64, d))).collect()
}

fn figure(name: &str, results: &Results) -> Figure {
    let guests: Vec<&GuestResult> = results.guests.iter().filter(|g| g.reservations.is_some()).collect();
    let shown = guests.len().min(MAX_SERIES / 2);
    let mut series = Vec::new();
    for (i, g) in guests.iter().take(shown).enumerate() {
        let solid = Style::nth(i);
        series.push(Series {
            name: format!("{} reserved", g.name),
            points: reserved_points(g, results.duration_ns),
            step: true,
            style: Some(solid),
            ..Series::default()
        });
        let demand = demand_points(g);
        if !demand.is_empty() {
            series.push(Series {
                name: format!("{} demand", g.name),
                points: demand,
                markers: true,
                style: Some(Style { dashed: true, ..solid }),
                ..Series::default()
            });
        }
    }
    let chart = LineChart {
        kind: "adaptation",
        title: format!("Reserved bandwidth over time: {name}"),
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
    if shown < guests.len() {
        caption.push_str(&format!(" {shown} of {} adapted guests are drawn; the table has all.", guests.len()));
    }
    Figure { kind: "adaptation", title: chart.title.clone(), caption, svg: chart.render() }
}

fn fmt_bandwidth(v: f64) -> String {
    format!("{v:.2}")
}

fn row(name: &str, g: &GuestResult, tasks: &[TaskResult]) -> Vec<Cell> {
    let changes = g.reservations.as_deref().unwrap_or_default();
    let planned = changes.first().map_or("-".into(), |c| format!("{:.3}", c.bandwidth));
    let last = changes.last().map_or("-".into(), |c| format!("{:.3}", c.bandwidth));
    let count = |reason: &str| changes.iter().filter(|c| c.reason == reason).count();
    let (jobs, misses) =
        tasks.iter().filter(|t| t.guest == g.name).fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses));
    vec![
        Cell::plain(format!("{name} {}", g.name)),
        Cell::plain(planned),
        Cell::plain(g.bandwidth_mean.map_or("-".into(), |b| format!("{b:.3}"))),
        Cell::plain(last),
        Cell::plain(format!("{} / {} / {}", count("grow"), count("shrink"), count("degraded"))),
        Cell::plain(if jobs == 0 { "-".into() } else { format!("{:.4}", TaskResult::dsr_of(jobs, misses)) }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::{Reservation, ReservationChange};

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
        assert_eq!(reserved_points(&g, 10_000_000_000), vec![(0.0, 0.2), (2e9, 0.5), (6e9, 0.3), (1e10, 0.3)]);
        assert_eq!(demand_points(&g), vec![(2e9, 0.42), (6e9, 0.25)]);
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
        let row = row("r", &results.guests[0], &results.tasks);
        let text: Vec<String> = row.iter().map(|c| c.text.clone()).collect();
        assert_eq!(text, vec!["r vm1", "0.200", "0.350", "0.300", "1 / 1 / 0", "0.9800"]);
        let svg = figure("r", &results).svg;
        assert!(svg.contains("vm1 reserved") && svg.contains("vm1 demand") && !svg.contains("static"), "{svg}");
        let plain = Results { duration_ns: 1, guests: vec![GuestResult::default()], ..Results::default() };
        assert!(section(&[input("plain", plain)]).is_none());
        assert!(section(&[input("r", results)]).is_some());
    }
}
