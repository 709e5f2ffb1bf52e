//! Late wake-ups and their causes (`measure timer --explain`): a stacked bar per explained wake-up
//! (the worst of each result), one layer per cause kind, and the ranked causes of each result.

use crate::doc::{Cell, Figure, Section, Table};
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::units::fmt_ns;
use rtvirt_model::results::{CauseKind, ExplainSection};

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
    let mut sec = Section::new("Late wake-ups: causes from the kernel trace");
    if all.iter().any(|(_, e)| !e.samples.is_empty()) {
        sec.figure(causes_figure(&all));
    }
    sec.table(summary_table(&all));
    for (name, e) in &all {
        for l in &e.limitations {
            sec.note(format!("{name}: not explained: {l}"));
        }
    }
    Some(sec)
}

fn causes_figure(all: &[(&str, &ExplainSection)]) -> Figure {
    let samples: Vec<(&str, &rtvirt_model::results::ExplainedSample)> =
        all.iter().flat_map(|(n, e)| e.samples.iter().take(WORST_DRAWN).map(move |s| (*n, s))).collect();
    let mut kinds: Vec<CauseKind> = samples.iter().flat_map(|(_, s)| s.causes.iter().map(|c| c.kind)).collect();
    kinds.sort();
    kinds.dedup();
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
        let cause = |kind, name: &str, ns| Cause {
            kind,
            name: name.into(),
            pid: None,
            cpu: 1,
            start_ns: 0,
            duration_ns: ns,
            policy: None,
            kernel_prio: None,
        };
        let sample = ExplainedSample {
            cpu: 1,
            latency_ns: 1_100,
            expected_ns: 5,
            tid: 9,
            causes: vec![cause(CauseKind::Thread, "hog", 1_000), cause(CauseKind::Wakeup, "w", 100)],
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
        assert!(text.contains("causes") && text.contains("hog") && text.contains("no preemptirq"), "{text}");
        assert!(section(&[]).is_none());
    }
}
