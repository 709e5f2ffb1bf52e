//! Time series of per-interval maxima (from `--interval-report` style `intervals`), one chart per
//! result, one line per CPU; stalled intervals are listed, never hidden.

use super::limits::{worst_indices, MAX_POINTS_PER_LINE, MAX_SERIES, MAX_STALLS_LISTED};
use crate::doc::{Figure, Section};
use crate::input::Input;
use crate::interval::IntervalPoint;
use crate::svg::line::{LineChart, Series};
use crate::units::{fmt_ns, fmt_seconds};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

pub fn section(inputs: &[Input]) -> Option<Section> {
    let mut sec = Section::new("Per-interval maxima over time");
    for input in inputs {
        let pts = input.interval_points();
        if pts.is_empty() {
            continue;
        }
        sec.figure(figure(&input.name, &pts));
        if let Some(note) = stalls_note(&input.name, &pts) {
            sec.note(note);
        }
    }
    (!sec.blocks.is_empty()).then_some(sec)
}

/// The stalled intervals by time (the first [`MAX_STALLS_LISTED`]; the rest counted).
fn stalls_note(name: &str, pts: &[IntervalPoint]) -> Option<String> {
    let stalls: Vec<f64> = pts.iter().filter(|p| p.stall).map(|p| p.t_ns).collect();
    if stalls.is_empty() {
        return None;
    }
    let listed: Vec<String> = stalls.iter().take(MAX_STALLS_LISTED).map(|&t| fmt_seconds(t)).collect();
    let more = stalls.len() - listed.len();
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    Some(format!("{name}: {} stalled interval(s) (no samples) at {}{more}.", stalls.len(), listed.join(", ")))
}

/// (time, maximum) of one interval on one CPU.
type Point = (f64, f64);

fn figure(name: &str, pts: &[IntervalPoint]) -> Figure {
    let mut lines: BTreeMap<Option<u32>, Vec<Point>> = BTreeMap::new();
    for p in pts.iter().filter(|p| !p.stall) {
        lines.entry(p.cpu).or_default().push((p.t_ns, p.max_ns.max(1.0)));
    }
    let all: Vec<(Option<u32>, Vec<Point>)> = lines.into_iter().collect();
    let peaks: Vec<f64> = all.iter().map(|(_, p)| p.iter().map(|q| q.1).fold(0.0, f64::max)).collect();
    let shown = worst_indices(&peaks, MAX_SERIES);
    let span = pts.first().map_or(0.0, |p| p.t_ns)..=pts.last().map_or(0.0, |p| p.t_ns);
    let mut thinned = false;
    let series = shown
        .iter()
        .map(|&i| {
            let (cpu, points) = &all[i];
            thinned |= points.len() > MAX_POINTS_PER_LINE;
            let points = bucket_maxima(points, &span, MAX_POINTS_PER_LINE);
            Series {
                name: cpu.map_or("all CPUs".into(), |c| format!("cpu {c}")),
                markers: points.len() <= MAX_POINTS_PER_LINE / 5,
                points,
                step: false,
                ..Series::default()
            }
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
    let mut caption = "Spikes show when the worst cases happened.".to_string();
    if shown.len() < all.len() {
        caption.push_str(&format!(" The {} CPUs with the highest maxima of {} are drawn.", shown.len(), all.len()));
    }
    if thinned {
        caption.push_str(&format!(
            " Each point is the highest maximum in its 1/{MAX_POINTS_PER_LINE} of the run, so no spike is lost."
        ));
    }
    Figure { kind: "timeseries", title: chart.title.clone(), caption, svg: chart.render() }
}

/// At most `buckets` points: the run's time span cut into equal buckets, in each the point with
/// the highest value (points are in time order). Fewer points are returned as they are.
fn bucket_maxima(points: &[(f64, f64)], span: &RangeInclusive<f64>, buckets: usize) -> Vec<(f64, f64)> {
    if points.len() <= buckets {
        return points.to_vec();
    }
    let width = (span.end() - span.start()).max(f64::MIN_POSITIVE) / buckets as f64;
    let bucket = |t: f64| (((t - span.start()) / width) as usize).min(buckets - 1);
    let mut out: Vec<(usize, (f64, f64))> = Vec::with_capacity(buckets);
    for &p in points {
        match out.last_mut() {
            Some((b, best)) if *b == bucket(p.0) => {
                if p.1 > best.1 {
                    *best = p;
                }
            }
            _ => out.push((bucket(p.0), p)),
        }
    }
    out.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_maxima_keep_every_spike_within_the_resolution() {
        let points: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, if i == 7_777 { 1e6 } else { 10.0 })).collect();
        let thinned = bucket_maxima(&points, &(0.0..=9_999.0), 100);
        assert!(thinned.len() <= 100);
        assert!(thinned.contains(&(7_777.0, 1e6)));
        assert!(thinned.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(bucket_maxima(&points[..50], &(0.0..=49.0), 100).len(), 50);
    }

    #[test]
    fn many_stalls_are_counted_not_all_listed() {
        let pts: Vec<IntervalPoint> =
            (0..100).map(|i| IntervalPoint { t_ns: i as f64 * 1e9, max_ns: 0.0, cpu: None, stall: true }).collect();
        let note = stalls_note("r", &pts).unwrap();
        assert!(note.contains("100 stalled") && note.contains("and 80 more"), "{note}");
    }
}
