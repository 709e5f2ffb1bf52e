//! Late wake-ups and their causes (`measure timer --explain`): a stacked bar per explained wake-up
//! (the worst of each result), one layer per cause kind; the same wake-ups as small timelines
//! (each from its programmed expiry, its causes where they happened, one chart per result); and
//! the ranked causes of each result. A cause kind has one colour in every chart of the section.

use crate::doc::{Cell, Figure, Section, Table};
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::svg::spans::{Span, SpanChart, SpanRow};
use crate::units::fmt_ns;
use rtvirt_model::results::{CauseKind, ExplainSection, ExplainedSample};

/// Wake-ups drawn per result.
const WORST_DRAWN: usize = 8;
/// Causes listed per result.
const CAUSES_LISTED: usize = 10;

/// Explained wake-ups (a `measure net` explain section has segments instead: the network section
/// draws them).
fn explained(inputs: &[Input]) -> Vec<(&str, &ExplainSection)> {
    let sections =
        inputs.iter().filter_map(|i| i.results().and_then(|r| r.explain.as_ref()).map(|e| (i.name.as_str(), e)));
    sections.filter(|(_, e)| e.segments.is_empty()).collect()
}

pub fn section(inputs: &[Input]) -> Option<Section> {
    let all = explained(inputs);
    if all.is_empty() {
        return None;
    }
    let mut sec = Section::new("Late wake-ups and long jobs: causes from the kernel trace");
    if all.iter().any(|(_, e)| !e.samples.is_empty()) {
        let kinds = kinds_drawn(&all);
        sec.figure(causes_figure(&all, &kinds));
        for (name, e) in all.iter().filter(|(_, e)| !e.samples.is_empty()) {
            sec.figure(timelines_figure(name, e, &kinds));
        }
    }
    sec.table(summary_table(&all));
    for (name, e) in &all {
        for l in &e.limitations {
            sec.note(format!("{name}: not explained: {l}"));
        }
    }
    Some(sec)
}

/// The cause kinds of the wake-ups drawn, in legend (and colour) order.
fn kinds_drawn(all: &[(&str, &ExplainSection)]) -> Vec<CauseKind> {
    let mut kinds: Vec<CauseKind> = all
        .iter()
        .flat_map(|(_, e)| e.samples.iter().take(WORST_DRAWN))
        .flat_map(|s| s.causes.iter().map(|c| c.kind))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

fn causes_figure(all: &[(&str, &ExplainSection)], kinds: &[CauseKind]) -> Figure {
    let samples: Vec<(&str, &ExplainedSample)> =
        all.iter().flat_map(|(n, e)| e.samples.iter().take(WORST_DRAWN).map(move |s| (*n, s))).collect();
    let chart = BarChart {
        kind: "causes",
        title: "Worst wake-ups split into causes".into(),
        y_label: "latency".into(),
        y_fmt: fmt_ns,
        mode: BarMode::Stacked,
        categories: samples
            .iter()
            .map(|(n, s)| format!("{n} cpu {} @{:.3}s", s.cpu, s.expected_ns as f64 / 1e9))
            .collect(),
        series: kinds.iter().map(|k| k.as_str().to_string()).collect(),
        values: samples
            .iter()
            .map(|(_, s)| {
                kinds
                    .iter()
                    .map(|k| {
                        let ns: u64 = s.causes.iter().filter(|c| c.kind == *k).map(|c| c.duration_ns).sum();
                        (ns > 0).then_some(ns as f64)
                    })
                    .collect()
            })
            .collect(),
        reference: None,
        y_range: None,
    };
    Figure {
        kind: "causes",
        title: chart.title.clone(),
        caption: "Each bar is one late wake-up from its programmed expiry to its return, split into the timer \
                  interrupt's delay (timer_irq), interrupt and softirq handlers, threads that ran first, the wake-up \
                  itself and what the trace does not explain."
            .into(),
        svg: chart.render(),
    }
}

/// The worst wake-ups of one result, each a timeline from its programmed expiry.
fn timelines_figure(name: &str, e: &ExplainSection, kinds: &[CauseKind]) -> Figure {
    let rows = e.samples.iter().take(WORST_DRAWN).map(|s| timeline_row(s, kinds)).collect();
    let chart = SpanChart {
        kind: "timelines",
        title: format!("{name}: worst wake-ups on a time axis"),
        x_label: "time since the programmed expiry".into(),
        x_fmt: fmt_ns,
        series: kinds.iter().map(|k| k.as_str().to_string()).collect(),
        rows,
    };
    Figure {
        kind: "timelines",
        title: chart.title.clone(),
        caption: "Each row is one late wake-up (the bars' wake-ups), from its programmed expiry (0) to its return: \
                  every cause drawn where it happened, so a thread that ran first, an interrupt inside it and the \
                  wake-up after it show in order; hover for name, pid and duration."
            .into(),
        svg: chart.render(),
    }
}

fn timeline_row(s: &ExplainedSample, kinds: &[CauseKind]) -> SpanRow {
    let spans = s
        .causes
        .iter()
        .map(|c| {
            let from = c.start_ns.saturating_sub(s.expected_ns) as f64;
            let pid = c.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
            let tip =
                format!("{} {}{pid}: {} at +{}", c.kind.as_str(), c.name, fmt_ns(c.duration_ns as f64), fmt_ns(from));
            Span {
                from,
                to: from + c.duration_ns as f64,
                series: kinds.iter().position(|k| *k == c.kind).unwrap_or(0),
                tip,
            }
        })
        .collect();
    SpanRow {
        label: format!("cpu {} @{:.3}s: {}", s.cpu, s.expected_ns as f64 / 1e9, fmt_ns(s.latency_ns as f64)),
        spans,
    }
}

fn summary_table(all: &[(&str, &ExplainSection)]) -> Table {
    let mut t = Table::new(
        "Causes ranked by total time",
        &["result", "cause", "kind", "wake-ups", "total", "max", "threshold", "events lost"],
    );
    for (name, e) in all {
        for c in e.summary.iter().take(CAUSES_LISTED) {
            t.row(vec![
                Cell::plain(*name),
                Cell::plain(c.name.clone()),
                Cell::plain(c.kind.as_str()),
                Cell::plain(c.samples.to_string()),
                Cell::plain(fmt_ns(c.total_ns as f64)),
                Cell::plain(fmt_ns(c.max_ns as f64)),
                Cell::plain(fmt_ns(e.threshold_ns as f64)),
                Cell::plain(e.events_lost.to_string()),
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::{Cause, ExplainedSample, Results};

    #[test]
    fn explained_results_get_a_stacked_bar_per_wake_up_and_ranked_causes() {
        let cause = |kind, name: &str, start_ns, ns| Cause {
            kind,
            name: name.into(),
            pid: (kind == CauseKind::Thread).then_some(12),
            cpu: 1,
            start_ns,
            duration_ns: ns,
            policy: None,
            kernel_prio: None,
        };
        let sample = ExplainedSample {
            cpu: 1,
            latency_ns: 1_100,
            expected_ns: 5,
            tid: 9,
            causes: vec![cause(CauseKind::Thread, "hog", 5, 1_000), cause(CauseKind::Wakeup, "w", 1_005, 100)],
            ..Default::default()
        };
        let mut r = Results::new("timer", 10);
        r.explain = Some(ExplainSection {
            summary: ExplainSection::summarize(std::slice::from_ref(&sample)),
            samples: vec![sample],
            limitations: vec!["no preemptirq events".into()],
            ..Default::default()
        });
        let input = Input {
            name: "m".into(),
            path: "m.json".into(),
            doc: crate::input::Document::Results(Box::new(r)),
            intervals: None,
        };
        let sec = section(&[input]).expect("a section");
        let text = format!("{sec:?}");
        assert!(text.contains("timelines") && text.contains("hog (pid"), "{text}");
        assert!(text.contains("causes") && text.contains("hog") && text.contains("no preemptirq"), "{text}");
        assert!(section(&[]).is_none());
    }
}
