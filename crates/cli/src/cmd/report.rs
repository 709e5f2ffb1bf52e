//! `rtvirt report`: results and plan JSON files -> one self-contained HTML page (or Markdown).

use crate::cli_common::{CmdResult, Outcome};
use clap::{Args, ValueEnum};
use rtvirt_report::ReportFormat;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormatArg {
    /// One self-contained HTML page with SVG charts (no network access needed to view it).
    Html,
    /// Markdown tables (for issues and docs); charts are listed by title.
    Md,
}

#[derive(Args)]
#[command(after_help = "Inputs are files written by `rtvirt ... --format json`: results (rtvirt.results/v1: \
simulate, measure timer/net/tasks, network simulations) and plans (rtvirt.plan/v1); or other tools' \
outputs, recognised and read as `rtvirt import` reads them (cyclictest, cyclicdeadline, oslat, rtla, \
sockperf, netperf, iperf3); or one study index (rtvirt.study/v1, `rtvirt study`'s index.json): box plots \
across runs per cell, spread, each configuration against the first with a Mann-Whitney U test. The first result of each comparison is the baseline; differences beyond \
10% (latency) or 1 percentage point (DSR) are highlighted.\n\nExamples:\n  rtvirt plan --format json > \
plan.json\n  rtvirt simulate --plan plan.json --format json > sim.json\n  rtvirt measure tasks --plan \
plan.json --format json > measured.json   # as root\n  rtvirt report plan.json sim.json measured.json \
-o report.html\n  rtvirt report old.json new.json --label before --label after\n  rtvirt report \
old-cyclictest-histogram.txt new.json -o cmp.html")]
pub struct ReportArgs {
    /// Results and plan JSON files, or other tools' outputs (see below), baseline first.
    #[arg(required_unless_present = "adapt_logs", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to write the report ("-" for standard output). Default: report.html, or report.md
    /// with --format md.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormatArg::Html)]
    pub format: ReportFormatArg,
    /// Title at the top of the report.
    #[arg(long, default_value = "rtvirt report")]
    pub title: String,
    /// Name of an input in the report, one per file in the order of the files (default: the
    /// result's label, else the file name).
    #[arg(long, value_name = "NAME")]
    pub label: Vec<String>,
    /// A decision log of `rtvirt host adapt --log FILE.jsonl`: each guest's reservation over time
    /// against the demand observed, beside the results (a measured result with the guest's
    /// tasks gives its DSR); repeatable.
    #[arg(long = "adapt-log", value_name = "FILE.jsonl")]
    pub adapt_logs: Vec<PathBuf>,
}

pub fn run(args: ReportArgs) -> CmdResult {
    let format = match args.format {
        ReportFormatArg::Html => ReportFormat::Html,
        ReportFormatArg::Md => ReportFormat::Markdown,
    };
    let default = if format == ReportFormat::Html { "report.html" } else { "report.md" };
    let out = args.output.unwrap_or_else(|| PathBuf::from(default));
    let inputs: Vec<&Path> = args.files.iter().chain(&args.adapt_logs).map(|p| p.as_path()).collect();
    crate::output_file::check("--output", &out, &inputs)?;
    let text = match &args.files[..] {
        [index] if args.adapt_logs.is_empty() && rtvirt_model::study::index::is_study_index(index) => {
            rtvirt_report::report_from_study(&args.title, index, format)?
        }
        _ => {
            let mut inputs = if args.files.is_empty() {
                Vec::new()
            } else {
                rtvirt_report::load_labelled(&args.files, &args.label)?
            };
            for log in &args.adapt_logs {
                inputs.push(rtvirt_report::input::load_adapt_log(log)?);
            }
            rtvirt_report::input::make_names_unique(&mut inputs);
            rtvirt_report::render(&rtvirt_report::build_report(&args.title, &inputs), format)
        }
    };
    write_output(&out, &text)?;
    Ok(Outcome::Ok)
}

/// Write the report to a file (printing where) or to stdout for "-".
pub fn write_output(out: &Path, text: &str) -> anyhow::Result<()> {
    if out == Path::new("-") {
        print!("{text}");
        return Ok(());
    }
    std::fs::write(out, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    eprintln!("report written to {}", out.display());
    Ok(())
}
