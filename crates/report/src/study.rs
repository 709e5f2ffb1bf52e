//! The report of a study (`rtvirt report OUT/index.json`, an `rtvirt.study/v1` index): per metric,
//! a box plot across runs per cell (median, quartiles, min and max of the runs' values, as Welch
//! 2015 shows netperf results), a table of the same numbers, the between-run spread next to the
//! within-run percentiles, and each configuration against the first one (the baseline) with the
//! Mann-Whitney U test (Mann & Whitney 1947) on the runs' values.

use crate::doc::{Block, Cell, Figure, Report, Section, Table};
use crate::mann_whitney;
use crate::svg::boxplot::{BoxChart, BoxStats};
use crate::units::{fmt_bps, fmt_ns, fmt_plain, fmt_probability};
use rtvirt_model::results::Results;
use rtvirt_model::study::index::{StudyCell, StudyIndex};
use rtvirt_model::InputError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A study index and the results of its completed runs.
pub struct StudyData {
    pub index: StudyIndex,
    /// Per cell (index order), the results of its successful runs, in repeat order; a file that
    /// several runs name is read once and shared.
    pub runs: Vec<Vec<Rc<Results>>>,
}

/// Read the index and every successful run it lists (paths relative to the index). Memory
/// follows the distinct files (each read once, without the fields this version does not know:
/// `Results::from_file_known`) plus a pointer per run, however often the index names a file.
pub fn load(index_path: &Path) -> Result<StudyData, InputError> {
    let index = StudyIndex::from_file(index_path)?;
    let base = index_path.parent().unwrap_or(Path::new(""));
    let mut read: HashMap<PathBuf, Rc<Results>> = HashMap::new();
    let mut runs = Vec::with_capacity(index.cells.len());
    for cell in &index.cells {
        let mut results = Vec::new();
        for run in cell.runs.iter().filter(|r| r.ok) {
            let path = base.join(&run.file);
            let key = path.canonicalize().unwrap_or_else(|_| path.clone());
            let r = match read.get(&key) {
                Some(r) => r.clone(),
                None => read.entry(key).or_insert(Rc::new(Results::from_file_known(&path)?)).clone(),
            };
            results.push(r);
        }
        runs.push(results);
    }
    Ok(StudyData { index, runs })
}

/// How a metric's values are shown.
#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Nanoseconds,
    BitsPerSecond,
    Ratio,
}

/// A number read from each run.
struct Metric {
    name: &'static str,
    unit: Unit,
    /// Whether larger is better (throughput, DSR) or worse (latency, loss).
    higher_is_better: bool,
    value: fn(&Results) -> Option<f64>,
}

const METRICS: &[Metric] = &[
    Metric {
        name: "timer latency p50",
        unit: Unit::Nanoseconds,
        higher_is_better: false,
        value: |r| r.latency_ns.as_ref().map(|s| s.p50 as f64),
    },
    Metric {
        name: "timer latency p99",
        unit: Unit::Nanoseconds,
        higher_is_better: false,
        value: |r| r.latency_ns.as_ref().map(|s| s.p99 as f64),
    },
    Metric {
        name: "timer latency max",
        unit: Unit::Nanoseconds,
        higher_is_better: false,
        value: |r| r.latency_ns.as_ref().map(|s| s.max as f64),
    },
    Metric {
        name: "round trip p50",
        unit: Unit::Nanoseconds,
        higher_is_better: false,
        value: |r| r.rtt_ns.as_ref().map(|s| s.p50 as f64),
    },
    Metric {
        name: "round trip p99",
        unit: Unit::Nanoseconds,
        higher_is_better: false,
        value: |r| r.rtt_ns.as_ref().map(|s| s.p99 as f64),
    },
    Metric {
        name: "round trip max",
        unit: Unit::Nanoseconds,
        higher_is_better: false,
        value: |r| r.rtt_ns.as_ref().map(|s| s.max as f64),
    },
    Metric {
        name: "throughput received",
        unit: Unit::BitsPerSecond,
        higher_is_better: true,
        value: |r| r.stream.as_ref().and_then(|s| s.received_bits_per_second),
    },
    Metric {
        name: "throughput sent",
        unit: Unit::BitsPerSecond,
        higher_is_better: true,
        value: |r| r.stream.as_ref().map(|s| s.sent_bits_per_second),
    },
    Metric {
        name: "UDP loss",
        unit: Unit::Ratio,
        higher_is_better: false,
        value: |r| r.stream.as_ref().and_then(|s| s.loss_ratio),
    },
    Metric {
        name: "deadline satisfaction ratio",
        unit: Unit::Ratio,
        higher_is_better: true,
        value: |r| r.task_totals.as_ref().and_then(|t| t.dsr),
    },
];

fn shown(unit: Unit, value: f64) -> String {
    match unit {
        Unit::Nanoseconds => fmt_ns(value),
        Unit::BitsPerSecond => fmt_bps(value),
        Unit::Ratio => fmt_plain(value),
    }
}

/// The five numbers of a box plot (linear interpolation between order statistics).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FiveNumbers {
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

/// The five numbers of `values` (None when empty).
pub fn five_numbers(values: &[f64]) -> Option<FiveNumbers> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let pos = q * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    Some(FiveNumbers { min: v[0], q1: at(0.25), median: at(0.5), q3: at(0.75), max: v[v.len() - 1] })
}

fn standard_deviation(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// The report of a study.
pub fn build(title: &str, data: &StudyData) -> Report {
    let mut report = Report { title: title.to_string(), sections: Vec::new() };
    report.sections.push(overview(data));
    for metric in METRICS {
        let values: Vec<(usize, Vec<f64>)> = (0..data.index.cells.len())
            .map(|c| (c, data.runs[c].iter().filter_map(|r| (metric.value)(r)).collect::<Vec<f64>>()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        if !values.is_empty() {
            report.sections.push(metric_section(data, metric, &values));
        }
    }
    if let Some(spread) = spread_section(data) {
        report.sections.push(spread);
    }
    report
}

fn overview(data: &StudyData) -> Section {
    let i = &data.index;
    let mut s = Section::new("Study");
    let runs: usize = data.runs.iter().map(Vec::len).sum();
    let lead = format!(
        "{}: {} cells x {} runs of {}; {} of {} runs completed{}.",
        i.name,
        i.cells.len(),
        i.repeats,
        fmt_ns(i.run_duration_ns as f64),
        runs,
        i.cells.len() * i.repeats as usize,
        if i.interrupted { " (interrupted: continue with rtvirt study --resume)" } else { "" }
    );
    s.blocks.push(Block::Lead(lead));
    if let Some(d) = &i.description {
        s.note(d.clone());
    }
    s.note(format!("Order: {}.", i.order));
    let mut t = Table::new("Cells", &["cell", "configuration", "host changes", "where", "load", "runs ok", "command"]);
    for (c, cell) in i.cells.iter().enumerate() {
        let place = match &cell.guest_kernel {
            Some(k) => format!("{} ({k} guest kernel)", cell.place),
            None => cell.place.clone(),
        };
        let errors: Vec<&str> = cell.runs.iter().filter_map(|r| r.error.as_deref()).collect();
        let ok = format!(
            "{}/{}{}",
            data.runs[c].len(),
            i.repeats,
            errors.first().map(|e| format!(" ({e})")).unwrap_or_default()
        );
        t.row(vec![
            Cell::plain(&cell.id),
            Cell::plain(match &cell.host_input {
                Some(input) => format!("{} ({input})", cell.configuration),
                None => cell.configuration.clone(),
            }),
            Cell::plain(cell.host_changes.map_or("-".into(), |c| c.to_string())),
            Cell::plain(place),
            Cell::plain(&cell.load),
            Cell::plain(ok),
            Cell::plain(format!("rtvirt {}", cell.command.join(" "))),
        ]);
    }
    s.table(t);
    s
}

fn metric_section(data: &StudyData, metric: &Metric, values: &[(usize, Vec<f64>)]) -> Section {
    let cells = &data.index.cells;
    let mut s = Section::new(format!("{} across runs", metric.name));
    let boxes = values
        .iter()
        .filter_map(|(c, v)| {
            let f = five_numbers(v)?;
            Some(BoxStats {
                name: cells[*c].id.clone(),
                q1: Some(f.q1),
                median: f.median,
                q3: f.q3,
                whisker_lo: f.min,
                whisker_hi: f.max,
                outliers: Vec::new(),
            })
        })
        .collect();
    let y_fmt: crate::svg::Fmt = match metric.unit {
        Unit::Nanoseconds => fmt_ns,
        Unit::BitsPerSecond => fmt_bps,
        Unit::Ratio => fmt_plain,
    };
    let chart = BoxChart { title: metric.name.to_string(), y_label: metric.name.to_string(), y_fmt, boxes };
    s.figure(Figure {
        kind: "boxplot",
        title: format!("{} per cell, one value per run", metric.name),
        caption: "Box: quartiles of the runs' values, line at their median; whiskers: min and max of the runs.".into(),
        svg: chart.render(),
    });
    let mut t = Table::new(
        format!("{}: runs per cell", metric.name),
        &["cell", "runs", "median", "q1", "q3", "min", "max", "SD between runs"],
    );
    for (c, v) in values {
        let Some(f) = five_numbers(v) else { continue };
        let n = |x: f64| Cell::plain(shown(metric.unit, x));
        t.row(vec![
            Cell::plain(&cells[*c].id),
            Cell::plain(v.len().to_string()),
            n(f.median),
            n(f.q1),
            n(f.q3),
            n(f.min),
            n(f.max),
            n(standard_deviation(v)),
        ]);
    }
    s.table(t);
    s.table(comparison(data, metric, values));
    s
}

/// The cell of the baseline configuration (the first cell's) with the same place, load and
/// measurement as `cell`.
fn baseline_of(cells: &[StudyCell], cell: &StudyCell) -> Option<usize> {
    let baseline = &cells.first()?.configuration;
    if &cell.configuration == baseline {
        return None;
    }
    cells.iter().position(|b| {
        &b.configuration == baseline
            && b.place == cell.place
            && b.guest_kernel == cell.guest_kernel
            && b.load == cell.load
            && b.measurement == cell.measurement
    })
}

fn comparison(data: &StudyData, metric: &Metric, values: &[(usize, Vec<f64>)]) -> Table {
    let cells = &data.index.cells;
    let mut t = Table::new(
        format!(
            "{}: each configuration against {} (Mann-Whitney U on the runs' values, two-sided)",
            metric.name,
            cells.first().map_or("-", |c| c.configuration.as_str())
        ),
        &["cell", "baseline median", "median", "difference", "U", "p", "verdict"],
    );
    let of = |c: usize| values.iter().find(|(i, _)| *i == c).map(|(_, v)| v);
    for (c, after) in values {
        let Some(b) = baseline_of(cells, &cells[*c]) else { continue };
        let (Some(before), Some(test)) = (of(b), of(b).and_then(|before| mann_whitney::test(before, after))) else {
            continue;
        };
        let (m0, m1) = (five_numbers(before).expect("values").median, five_numbers(after).expect("values").median);
        let change = if m0 != 0.0 { format!("{:+.1}%", (m1 - m0) / m0 * 100.0) } else { "-".into() };
        let better = (m1 > m0) == metric.higher_is_better;
        let smallest_p = mann_whitney::test(&vec![0.0; before.len()], &vec![1.0; after.len()]).map_or(1.0, |r| r.p);
        let verdict = if test.p <= 0.05 {
            format!("significant at 5%: {}", if better { "better" } else { "worse" })
        } else if smallest_p > 0.05 {
            format!("too few runs for 5% (smallest possible p {})", fmt_probability(smallest_p))
        } else {
            "not significant at 5%".into()
        };
        t.row(vec![
            Cell::plain(&cells[*c].id),
            Cell::plain(shown(metric.unit, m0)),
            Cell::plain(shown(metric.unit, m1)),
            Cell::plain(change),
            Cell::plain(fmt_plain(test.u)),
            Cell::plain(format!("{}{}", fmt_probability(test.p), if test.exact { "" } else { " (normal approx.)" })),
            Cell::plain(verdict),
        ]);
    }
    t
}

/// Latency cells: the spread of the run medians between runs next to the percentiles within
/// runs (each the median over the runs).
fn spread_section(data: &StudyData) -> Option<Section> {
    let mut t = Table::new(
        "Between-run spread of the median against within-run percentiles (median over the runs)",
        &["cell", "runs", "median: min..max between runs", "median: SD between runs", "p50", "p99", "p99.9", "max"],
    );
    for (c, runs) in data.runs.iter().enumerate() {
        let summaries: Vec<_> = runs.iter().filter_map(|r| r.latency_ns.as_ref().or(r.rtt_ns.as_ref())).collect();
        if summaries.is_empty() {
            continue;
        }
        let pick = |f: fn(&rtvirt_model::stats::Summary) -> u64| -> Vec<f64> {
            summaries.iter().map(|s| f(s) as f64).collect()
        };
        let medians = pick(|s| s.p50);
        let mid = |v: Vec<f64>| five_numbers(&v).map_or("-".into(), |f| fmt_ns(f.median));
        let f = five_numbers(&medians).expect("values");
        t.row(vec![
            Cell::plain(&data.index.cells[c].id),
            Cell::plain(summaries.len().to_string()),
            Cell::plain(format!("{}..{}", fmt_ns(f.min), fmt_ns(f.max))),
            Cell::plain(fmt_ns(standard_deviation(&medians))),
            Cell::plain(mid(medians.clone())),
            Cell::plain(mid(pick(|s| s.p99))),
            Cell::plain(mid(pick(|s| s.p999))),
            Cell::plain(mid(pick(|s| s.max))),
        ]);
    }
    if t.rows.is_empty() {
        return None;
    }
    let mut s = Section::new("Spread between runs and within runs");
    s.table(t);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_numbers_interpolate_between_order_statistics() {
        let f = five_numbers(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!((f.min, f.q1, f.median, f.q3, f.max), (1.0, 2.0, 3.0, 4.0, 5.0));
        let f = five_numbers(&[1.0, 2.0]).unwrap();
        assert_eq!((f.q1, f.median, f.q3), (1.25, 1.5, 1.75));
        assert!(five_numbers(&[]).is_none());
        assert_eq!(standard_deviation(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), (32.0f64 / 7.0).sqrt());
    }
}
