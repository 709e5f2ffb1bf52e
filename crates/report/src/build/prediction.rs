//! Prediction versus measurement per task: the predicted (the first simulation with tasks) and the
//! measured (the first `measure tasks` result) response-time CDFs of each task they share,
//! overlaid on one chart per task, as `rtvirt verify --keep` and `rtvirt demo` write them.
//!
//! A result keeps its response times as percentiles, not as samples: each curve goes through
//! (min, 0), (p25, 0.25), (p50, 0.5) ... (p99.99, 0.9999), (max, 1) - the sample's empirical CDF
//! at those probabilities, joined by straight lines.

use crate::doc::{Figure, Section};
use crate::input::Input;
use crate::svg::line::{LineChart, Series};
use crate::svg::{Marker, Style};
use crate::units::{fmt_ns, fmt_plain};
use rtvirt_model::results::{Results, TaskResult};
use rtvirt_model::stats::Summary;

/// The most per-task charts (a report of more is unreadable; the tables have every task).
const MAX_CHARTS: usize = 30;

/// The first result of `kind` that has tasks.
fn first<'a>(inputs: &'a [Input], kind: &str) -> Option<(&'a str, &'a Results)> {
    inputs
        .iter()
        .find_map(|i| i.results().filter(|r| r.kind == kind && !r.tasks.is_empty()).map(|r| (i.name.as_str(), r)))
}

pub fn section(inputs: &[Input]) -> Option<Section> {
    let (predicted_name, predicted) = first(inputs, "simulation")?;
    let (measured_name, measured) = first(inputs, "tasks")?;
    let pairs: Vec<(&TaskResult, &TaskResult)> = predicted
        .tasks
        .iter()
        .filter(|p| p.response_ns.count > 0)
        .filter_map(|p| {
            let m = measured.tasks.iter().find(|m| m.guest == p.guest && m.name == p.name)?;
            (m.response_ns.count > 0).then_some((p, m))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let mut sec = Section::new("Prediction versus measurement: response-time CDF per task");
    for (p, m) in pairs.iter().take(MAX_CHARTS) {
        sec.figure(figure(p, m, predicted_name, measured_name));
    }
    if pairs.len() > MAX_CHARTS {
        sec.note(format!("The first {MAX_CHARTS} of {} tasks are drawn.", pairs.len()));
    }
    sec.note(format!(
        "Predicted: \"{predicted_name}\"; measured: \"{measured_name}\". Each curve goes through the response-time \
         percentiles the result records (min, p25, p50, p75, p90, p95, p99, p99.9, p99.99, max): the empirical CDF \
         at those probabilities. A measured curve to the right of the predicted one: jobs took longer than predicted."
    ));
    Some(sec)
}

/// (response time, cumulative probability) through a summary's percentiles.
fn cdf_points(s: &Summary) -> Vec<(f64, f64)> {
    let mut points = vec![(s.min as f64, 0.0)];
    points.extend(s.p25.map(|v| (v as f64, 0.25)));
    points.extend(
        [(s.p50, 0.5), (s.p75, 0.75), (s.p90, 0.9), (s.p95, 0.95), (s.p99, 0.99), (s.p999, 0.999), (s.p9999, 0.9999)]
            .map(|(v, q)| (v as f64, q)),
    );
    points.push((s.max as f64, 1.0));
    // HDR percentiles may round a hair past the exact max: keep the curve monotone
    let mut highest = 0.0f64;
    for p in &mut points {
        highest = highest.max(p.0);
        p.0 = highest;
    }
    points
}

fn figure(predicted: &TaskResult, measured: &TaskResult, predicted_name: &str, measured_name: &str) -> Figure {
    let task = format!("{}/{}", predicted.guest, predicted.name);
    let series = |name: String, t: &TaskResult, i: usize, dashed: bool, marker: Marker| Series {
        name,
        points: cdf_points(&t.response_ns),
        markers: true,
        style: Some(Style { dashed, marker, ..Style::nth(i) }),
        ..Series::default()
    };
    let chart = LineChart {
        kind: "response-cdf",
        title: format!("{task}: response time, predicted and measured"),
        x_label: "response time".into(),
        y_label: "fraction of jobs".into(),
        x_log: false,
        y_log: false,
        x_fmt: fmt_ns,
        y_fmt: fmt_plain,
        y_range: Some((0.0, 1.0)),
        series: vec![
            series(format!("predicted ({predicted_name})"), predicted, 0, false, Marker::Circle),
            series(format!("measured ({measured_name})"), measured, 1, true, Marker::Square),
        ],
    };
    let caption = format!(
        "{task}: {} predicted jobs ({} missed), {} measured ({} missed); p99 {} predicted, {} measured.",
        predicted.jobs,
        predicted.misses,
        measured.jobs,
        measured.misses,
        fmt_ns(predicted.response_ns.p99 as f64),
        fmt_ns(measured.response_ns.p99 as f64)
    );
    Figure { kind: "response-cdf", title: chart.title.clone(), caption, svg: chart.render() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Document;

    fn input(kind: &str, p50: u64) -> Input {
        let response_ns = Summary {
            count: 100,
            min: p50 / 2,
            p25: Some(p50 * 3 / 4),
            p50,
            p75: p50 + 1,
            p90: p50 + 2,
            p95: p50 + 3,
            p99: p50 + 4,
            p999: p50 + 5,
            p9999: p50 + 6,
            max: p50 + 5, // rounded below p99.99: the curve stays monotone
            ..Default::default()
        };
        let task = TaskResult { guest: "vm1".into(), name: "t1".into(), jobs: 100, response_ns, ..Default::default() };
        let r = Results { tasks: vec![task], ..Results::new(kind, 1) };
        Input { name: kind.into(), path: "x.json".into(), doc: Document::Results(Box::new(r)), intervals: None }
    }

    #[test]
    fn one_chart_per_shared_task_with_both_curves() {
        let sec = section(&[input("simulation", 1_000_000), input("tasks", 2_000_000)]).unwrap();
        let figures: Vec<&Figure> = sec
            .blocks
            .iter()
            .filter_map(|b| match b {
                crate::doc::Block::Figure(f) => Some(f),
                _ => None,
            })
            .collect();
        assert_eq!(figures.len(), 1);
        let svg = &figures[0].svg;
        let doc = roxmltree::Document::parse(svg).unwrap();
        let curves =
            doc.descendants().filter(|n| n.has_tag_name("path") && n.attribute("class") == Some("datum")).count();
        assert_eq!(curves, 2, "predicted and measured");
        assert!(svg.contains("predicted (simulation)") && svg.contains("measured (tasks)"));
        let points = cdf_points(&input("tasks", 2_000_000).results().unwrap().tasks[0].response_ns);
        assert!(points.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1), "{points:?}");
        assert_eq!(points.last(), Some(&(2_000_006.0, 1.0)));
        // only one side: no section
        assert!(section(&[input("simulation", 1)]).is_none());
        assert!(section(&[input("tasks", 1)]).is_none());
    }
}
