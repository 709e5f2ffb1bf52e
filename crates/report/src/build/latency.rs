//! Latency sections: per family of comparable latencies (timer, round trip, each flow) an
//! exceedance chart (share of samples at or above a latency, log x and log y, so that the tail
//! shows down to one sample in a million), a histogram with a log count axis, box plots per
//! result and a statistics table against the baseline. The maximum and p99.99 of each result are
//! marked and labelled on the exceedance chart and the histogram.

use super::compare::{compared, Better, LATENCY_DIFF};
use super::limits::{worst_indices, MAX_CPU_ROWS, MAX_SERIES};
use super::tail_fit;
use crate::distribution::Distribution;
use crate::doc::{Cell, Figure, Section, Table};
use crate::extract::{by_family, latency_series, LatencySeries, TIMER_FAMILY};
use crate::input::Input;
use crate::svg::boxplot::{BoxChart, BoxStats};
use crate::svg::histogram::{self, HistSeries};
use crate::svg::line::{LineChart, Series};
use crate::svg::tail::tail_marks;
use crate::units::{fmt_ns, fmt_probability};
use rtvirt_model::stats::Summary;

/// One section per latency family found in the inputs.
pub fn sections(inputs: &[Input]) -> Vec<Section> {
    let series = latency_series(inputs);
    by_family(&series).into_iter().map(|(family, members)| family_section(&family, &members)).collect()
}

fn family_section(family: &str, members: &[&LatencySeries]) -> Section {
    let charted = charted(members);
    let dists: Vec<Distribution> = charted.iter().map(|s| Distribution::of(s.summary, s.buckets.clone())).collect();
    let mut sec = Section::new(family);
    let named: Vec<(String, &Summary)> = charted.iter().map(|m| (m.name.clone(), m.summary)).collect();
    let fits: Vec<tail_fit::Fitted> = charted.iter().filter_map(|m| tail_fit::fit(m)).collect();
    let curves = tail_fit::exceedance_curves(&fits);
    sec.figure(exceedance_figure(&format!("{family}: exceedance"), &named, &dists, curves));
    if let Some(f) = tail_fit::return_level_figure(family, &fits) {
        sec.figure(f);
    }
    sec.figure(histogram_figure(family, &charted, &dists));
    sec.figure(box_figure(family, &charted, &dists));
    if charted.len() < members.len() {
        sec.note(format!(
            "The charts show {} of {} results: the first (baseline) and those with the highest p99; every result is in \
             the table.",
            charted.len(),
            members.len()
        ));
    }
    for n in tail_fit::notes(&fits) {
        sec.note(n);
    }
    sec.table(stats_table(family, members));
    if let Some(t) = per_cpu_table(members) {
        sec.table(t);
    }
    if dists.iter().any(|d| !d.is_exact()) {
        sec.note(
            "Where a result carries no histogram, its exceedance curve is drawn through its percentiles \
            (marked points) and its histogram spreads each percentile band's exact share of samples evenly \
            over the band (log scale).",
        );
    }
    sec
}

/// The members drawn in the charts: all, or the baseline and the worst p99s up to [`MAX_SERIES`].
fn charted<'a, 'b>(members: &[&'b LatencySeries<'a>]) -> Vec<&'b LatencySeries<'a>> {
    let Some((first, rest)) = members.split_first() else { return Vec::new() };
    let p99: Vec<f64> = rest.iter().map(|m| m.summary.p99 as f64).collect();
    std::iter::once(*first).chain(worst_indices(&p99, MAX_SERIES - 1).into_iter().map(|i| rest[i])).collect()
}

/// The exceedance chart of named distributions: per series the share of samples at or above
/// each latency (log y down to 1e-6, or one sample when there are more), max and p99.99 marked;
/// `fitted`: tail models' curves drawn beside them ([`tail_fit`]).
pub fn exceedance_figure(
    title: &str,
    members: &[(String, &Summary)],
    dists: &[Distribution],
    fitted: Vec<Series>,
) -> Figure {
    let mut series: Vec<Series> = members
        .iter()
        .zip(dists)
        .map(|((name, summary), d)| Series {
            name: name.clone(),
            points: d.exceedance(summary.count).into_iter().map(|(v, p)| (v.max(1.0), p)).collect(),
            step: d.is_exact(),
            markers: !d.is_exact(),
            labelled: tail_marks(summary, d.exceedance_at(summary.p9999 as f64)),
            ..Series::default()
        })
        .collect();
    series.extend(fitted);
    let fewest = members.iter().map(|(_, s)| s.count.max(1)).max().unwrap_or(1);
    let chart = LineChart {
        kind: "exceedance",
        title: title.to_string(),
        x_label: "latency (log scale)".into(),
        y_label: "share of samples at or above (log)".into(),
        x_log: true,
        y_log: true,
        x_fmt: fmt_ns,
        y_fmt: fmt_probability,
        y_range: Some(((1.0 / fewest as f64).min(1e-6), 1.0)),
        series,
    };
    Figure {
        kind: "exceedance",
        title: chart.title.clone(),
        caption: "Share of samples at or above each latency (1 - CDF), both axes logarithmic: the tail reads \
            down to one sample in a million. 0.01 = one sample in a hundred is this slow or slower; each \
            curve ends at its maximum (one sample). Squares: p99.99 and max."
            .into(),
        svg: chart.render(),
    }
}

fn histogram_figure(family: &str, members: &[&LatencySeries], dists: &[Distribution]) -> Figure {
    let hs: Vec<HistSeries> = members
        .iter()
        .zip(dists)
        .map(|(m, d)| HistSeries { name: m.name.clone(), dist: d, summary: m.summary })
        .collect();
    let title = format!("{family}: histogram");
    let svg = histogram::render(&title, "latency (log scale, 10 bins per decade)", &hs);
    let caption = "Samples per logarithmic bin on a log count axis, so that single samples in the tail show; \
        squares: p99.99 and max.";
    Figure { kind: "histogram", title, caption: caption.into(), svg }
}

fn box_figure(family: &str, members: &[&LatencySeries], dists: &[Distribution]) -> Figure {
    let boxes =
        members.iter().zip(dists).map(|(m, d)| BoxStats::from_summary(&m.name, &with_quartile(m.summary, d))).collect();
    let chart = BoxChart { title: format!("{family}: box plots"), y_label: "latency".into(), y_fmt: fmt_ns, boxes };
    Figure {
        kind: "boxplot",
        title: chart.title.clone(),
        caption: "Box: quartiles p25..p75, white line: median. Whiskers: the furthest known percentile (p90 ... max) \
                  within 1.5 x IQR of the box; labelled points: known percentiles beyond the whiskers."
            .into(),
        svg: chart.render(),
    }
}

/// The summary with p25 filled from exact buckets when the producer did not record it.
fn with_quartile(summary: &Summary, distribution: &Distribution) -> Summary {
    let mut summary = summary.clone();
    if summary.p25.is_none() && distribution.is_exact() {
        summary.p25 = Some(distribution.quantile(0.25) as u64);
    }
    summary
}

const STAT_COLUMNS: [&str; 10] = ["samples", "min", "mean", "SD", "p50", "p90", "p99", "p99.9", "p99.99", "max"];

fn stats_table(family: &str, members: &[&LatencySeries]) -> Table {
    let mut header = vec!["result", "kind"];
    header.extend(STAT_COLUMNS);
    header.push("notes");
    let mut t = Table::new(format!("{family}: statistics (differences against the first row)"), &header);
    let base = members.first().map(|m| m.summary);
    for (i, m) in members.iter().enumerate() {
        let mut row = vec![Cell::plain(m.name.clone()), Cell::plain(m.result.kind.clone())];
        row.extend(stat_cells(m.summary, if i == 0 { None } else { base }));
        row.push(Cell::plain(notes(m)));
        t.row(row);
    }
    t
}

/// (value, percentile key for the low-confidence flag) of each column after "samples".
fn stat_values(summary: &Summary) -> [(f64, Option<&'static str>); 9] {
    [
        (summary.min as f64, None),
        (summary.mean, None),
        (summary.sd, None),
        (summary.p50 as f64, Some("p50")),
        (summary.p90 as f64, Some("p90")),
        (summary.p99 as f64, Some("p99")),
        (summary.p999 as f64, Some("p999")),
        (summary.p9999 as f64, Some("p9999")),
        (summary.max as f64, None),
    ]
}

/// count, min, mean, SD, p50 ... max, each compared with the baseline summary; percentiles
/// with too few samples behind them get a "*".
pub fn stat_cells(summary: &Summary, base: Option<&Summary>) -> Vec<Cell> {
    let mut cells = vec![Cell::plain(summary.count.to_string())];
    let vb = base.map(stat_values);
    for (k, (v, key)) in stat_values(summary).into_iter().enumerate() {
        let low = key.is_some_and(|key| summary.low_confidence.iter().any(|l| l == key));
        let text = if low { format!("{}*", fmt_ns(v)) } else { fmt_ns(v) };
        cells.push(compared(text, v, vb.map(|b| b[k].0), LATENCY_DIFF, Better::Lower));
    }
    cells
}

/// Kind-specific counts worth seeing next to the statistics (missed periods, losses, drops).
fn notes(series: &LatencySeries) -> String {
    let mut parts = Vec::new();
    let r = series.result;
    let net = r.net.as_ref();
    let counts = [
        ("missed periods", r.timer.as_ref().and_then(|t| t.missed_periods)),
        ("lost", net.and_then(|n| n.lost)),
        ("timeouts", net.and_then(|n| n.timeouts)),
        ("stalls", r.timer.as_ref().and_then(|t| t.stalls.as_ref()).map(|s| s.len() as u64).filter(|&n| n > 0)),
    ];
    for (name, count) in counts {
        if let Some(count) = count {
            parts.push(format!("{name}: {count}"));
        }
    }
    if !series.summary.low_confidence.is_empty() {
        parts.push("* too few samples for this percentile".into());
    }
    parts.join("; ")
}

/// Per-CPU timer latency of every result that has it: per result its [`MAX_CPU_ROWS`] CPUs with
/// the highest maximum (in CPU order), then one row counting the others and their worst maximum.
fn per_cpu_table(members: &[&LatencySeries]) -> Option<Table> {
    let mut header = vec!["result", "cpu"];
    header.extend(STAT_COLUMNS);
    let mut t = Table::new("Per CPU", &header);
    for m in members.iter().filter(|m| m.family == TIMER_FAMILY) {
        let cpus = &m.result.cpus;
        let shown = worst_indices(&cpus.iter().map(|c| c.latency_ns.max as f64).collect::<Vec<_>>(), MAX_CPU_ROWS);
        for &i in &shown {
            let mut row = vec![Cell::plain(m.name.clone()), Cell::plain(cpus[i].cpu.to_string())];
            row.extend(stat_cells(&cpus[i].latency_ns, None));
            t.row(row);
        }
        if shown.len() < cpus.len() {
            t.row(rest_row(m, cpus, &shown));
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// One row for the CPUs left out of the per-CPU table: how many, and their highest maximum.
fn rest_row(series: &LatencySeries, cpus: &[rtvirt_model::results::CpuLatency], shown: &[usize]) -> Vec<Cell> {
    let mut in_table = vec![false; cpus.len()];
    shown.iter().for_each(|&i| in_table[i] = true);
    let rest = cpus.iter().zip(&in_table).filter(|(_, &shown)| !shown).map(|(c, _)| c);
    let (count, max) = rest.fold((0usize, 0u64), |(n, max), c| (n + 1, max.max(c.latency_ns.max)));
    let mut row = vec![Cell::plain(series.name.clone()), Cell::plain(format!("{count} other CPUs"))];
    row.extend((0..STAT_COLUMNS.len() - 1).map(|_| Cell::plain("-")));
    row.push(Cell::plain(format!("at most {}", fmt_ns(max as f64))));
    row
}
