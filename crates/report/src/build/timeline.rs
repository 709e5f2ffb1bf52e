//! Time series of per-interval maxima (from `--interval-report` style `intervals`), one chart per
//! result, one line per CPU; stalled intervals are listed, never hidden.

use crate::doc::{Figure, Section};
use crate::extract::{intervals, IntervalPoint};
use crate::input::Input;
use crate::svg::line::{LineChart, Series};
use crate::units::{fmt_ns, fmt_seconds};
use std::collections::BTreeMap;

pub fn section(inputs: &[Input]) -> Option<Section> {
    let mut sec = Section::new("Per-interval maxima over time");
    for input in inputs {
        let Some(r) = input.results() else { continue };
        let pts = intervals(r);
        if pts.is_empty() {
            continue;
        }
        sec.figure(figure(&input.name, &pts));
        let stalls: Vec<String> = pts.iter().filter(|p| p.stall).map(|p| fmt_seconds(p.t_ns)).collect();
        if !stalls.is_empty() {
            sec.note(format!(
                "{}: {} stalled interval(s) (no samples) at {}.",
                input.name,
                stalls.len(),
                stalls.join(", ")
            ));
        }
    }
    (!sec.blocks.is_empty()).then_some(sec)
}

fn figure(name: &str, pts: &[IntervalPoint]) -> Figure {
    let mut lines: BTreeMap<Option<u64>, Vec<(f64, f64)>> = BTreeMap::new();
    for p in pts.iter().filter(|p| !p.stall) {
        lines.entry(p.cpu).or_default().push((p.t_ns, p.max_ns.max(1.0)));
    }
    let series = lines
        .into_iter()
        .map(|(cpu, points)| Series {
            name: cpu.map_or("all CPUs".into(), |c| format!("cpu {c}")),
            points,
            step: false,
            markers: true,
        })
        .collect();
    let chart = LineChart {
        kind: "timeseries",
        title: format!("Maximum latency per interval: {name}"),
        x_label: "time since start".into(),
        y_label: "max latency in interval (log)".into(),
        x_log: false,
        y_log: true,
        x_fmt: fmt_seconds,
        y_fmt: fmt_ns,
        y_range: None,
        series,
    };
    Figure {
        kind: "timeseries",
        title: chart.title.clone(),
        caption: "Spikes show when the worst cases happened.".into(),
        svg: chart.render(),
    }
}
