//! Assembling a report from loaded inputs: an overview of the inputs, then one section per kind
//! of content found (latency families, tasks, plans, network segments, time series,
//! environment). Sections with nothing to show are left out.

pub mod compare;
mod environment;
mod latency;
pub mod limits;
mod network;
mod plan;
mod tasks;
mod timeline;

pub use tasks::dsr_versus_rho_section;

use crate::doc::{Cell, Report, Section, Table};
use crate::input::{Document, Input};
use crate::units::fmt_ns;

/// The whole report for these inputs (the first result of each comparison is its baseline).
pub fn build_report(title: &str, inputs: &[Input]) -> Report {
    let mut sections = vec![overview(inputs)];
    sections.extend(plan::sections(inputs));
    sections.extend(tasks::section(inputs));
    sections.extend(latency::sections(inputs));
    sections.extend(network::section(inputs));
    sections.extend(timeline::section(inputs));
    sections.extend(environment::section(inputs));
    Report { title: title.to_string(), sections }
}

fn overview(inputs: &[Input]) -> Section {
    let mut sec = Section::new("Inputs");
    let mut t = Table::new("", &["name", "file", "kind", "duration", "seed", "where"]);
    for i in inputs {
        let row = match &i.doc {
            Document::Results(r) => vec![
                kind_cell(r),
                Cell::plain(fmt_ns(r.duration_ns as f64)),
                Cell::plain(r.seed.map_or("-".into(), |s| s.to_string())),
                Cell::plain(
                    r.environment
                        .as_ref()
                        .and_then(|e| e.r#in.clone())
                        .unwrap_or_else(|| default_where(&r.kind).into()),
                ),
            ],
            Document::Plan(_) => vec![Cell::plain("plan"), Cell::plain("-"), Cell::plain("-"), Cell::plain("-")],
        };
        let mut cells = vec![Cell::plain(i.name.clone()), Cell::plain(i.path.display().to_string())];
        cells.extend(row);
        t.row(cells);
    }
    sec.table(t);
    sec.note(
        "Comparisons take the first input of each table as the baseline: differences beyond 10% (latency, response \
         time) or 1 percentage point (DSR) are highlighted, red when worse, green when better.",
    );
    sec
}

/// The result's kind; a run stopped early by Ctrl-C (`"interrupted": true`) is marked, and so is
/// a cell of a multi-cell command that could not run (`"error"`), with its error.
fn kind_cell(r: &rtvirt_model::results::Results) -> Cell {
    if let Some(error) = &r.error {
        Cell::marked(format!("{} (failed: {error})", r.kind), crate::doc::Mark::Worse)
    } else if r.interrupted {
        Cell::marked(format!("{} (interrupted: shorter than planned)", r.kind), crate::doc::Mark::Worse)
    } else {
        Cell::plain(r.kind.clone())
    }
}

fn default_where(kind: &str) -> &'static str {
    if kind == "simulation" || kind == "netsim" {
        "simulation"
    } else {
        "-"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Mark;
    use rtvirt_model::results::Results;

    fn input(r: Results) -> Input {
        Input { name: "t".into(), path: "t.json".into(), doc: Document::Results(Box::new(r)), intervals: None }
    }

    #[test]
    fn interrupted_runs_are_marked_in_the_overview() {
        let mut r = Results::new("timer", 1);
        let plain = overview(&[input(r.clone())]);
        r.interrupted = true;
        let marked = overview(&[input(r)]);
        let kind = |s: &Section| match &s.blocks[0] {
            crate::doc::Block::Table(t) => t.rows[0][2].clone(),
            _ => panic!("overview starts with its table"),
        };
        assert_eq!(kind(&plain), Cell::plain("timer"));
        assert_eq!(kind(&marked).mark, Mark::Worse);
        assert!(kind(&marked).text.contains("interrupted"));
        let mut failed = Results::new("timer", 0);
        failed.error = Some("guest kernel 'rt' not found".into());
        let failed = overview(&[input(failed)]);
        assert_eq!(kind(&failed).mark, Mark::Worse);
        assert!(kind(&failed).text.contains("failed: guest kernel 'rt' not found"), "{:?}", kind(&failed));
    }
}
