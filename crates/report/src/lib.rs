//! rtvirt-report: readable reports from rtvirt's JSON documents.
//!
//! `rtvirt.results/v1` (simulated and measured) and `rtvirt.plan/v1` files go in; one
//! self-contained HTML page with hand-written SVG charts (latency exceedance curves and log-count
//! histograms with the tail marked, box plots, DSR versus rho, response times per task, per-core
//! bandwidth, per-segment latency, per-interval maxima) and tables, or
//! Markdown with the same tables, comes out. Several results are shown side by side, with
//! differences against the first (baseline) highlighted.
//!
//! - [`input`]: loading and naming the documents; [`check`]: numbers out of their range refused;
//! - [`extract`]: what is read from each kind of result; [`interval`]: per-interval points;
//! - [`distribution`]: CDFs, exceedance and histogram shares from buckets or percentiles;
//! - [`build`]: the report's sections; [`doc`]: the format-independent document;
//! - [`svg`]: the charts; [`render`](mod@render): HTML and Markdown;
//! - [`study`]: the report of a study index (`rtvirt.study/v1`): box plots across runs per cell,
//!   spread, each configuration against the baseline ([`mann_whitney`]).
//!
//! Entry points: [`report_from_files`] (what `rtvirt report` calls), or [`input`] +
//! [`build::build_report`] + [`render()`] for documents already loaded.
//!
//! Invariants: reads the typed documents of rtvirt-model (no JSON indexed by key here); never
//! touches the OS beyond reading its input files; the output is one self-contained file (no
//! script, no network); every text from a document is escaped ([`rtvirt_model::xml`] for HTML and
//! SVG, CommonMark escaping for Markdown) and no NaN or infinity reaches a chart. User guide:
//! docs/report.md.

pub mod build;
pub mod check;
pub mod distribution;
pub mod doc;
pub mod extract;
pub mod input;
pub mod interval;
pub mod mann_whitney;
pub mod render;
pub mod study;
pub mod svg;
pub mod units;

pub use build::build_report;
pub use doc::Report;
pub use input::{load_inputs, load_labelled, Input};

use rtvirt_model::InputError;
use std::path::PathBuf;

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFormat {
    #[default]
    Html,
    Markdown,
}

/// Load the files and render the report in one go.
pub fn report_from_files(title: &str, paths: &[PathBuf], format: ReportFormat) -> Result<String, InputError> {
    report_from_labelled_files(title, paths, &[], format)
}

/// [`report_from_files`] with one label per file (`rtvirt report --label`), or none.
pub fn report_from_labelled_files(
    title: &str,
    paths: &[PathBuf],
    labels: &[String],
    format: ReportFormat,
) -> Result<String, InputError> {
    let inputs = load_labelled(paths, labels)?;
    Ok(render(&build_report(title, &inputs), format))
}

/// The report of a study index (`rtvirt study`'s `index.json`) and the runs it lists.
pub fn report_from_study(title: &str, index: &std::path::Path, format: ReportFormat) -> Result<String, InputError> {
    Ok(render(&study::build(title, &study::load(index)?), format))
}

/// Render a built report.
pub fn render(report: &Report, format: ReportFormat) -> String {
    match format {
        ReportFormat::Html => render::html::render(report),
        ReportFormat::Markdown => render::markdown::render(report),
    }
}
