//! `rtvirt tail` and `rtvirt gate`: read the samples, hand them to rtvirt-tail, print.

use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::table::{micros, Table};
use clap::Args;
use rtvirt_model::tail::{GateReport, TailReport, Verdict};
use rtvirt_model::{InputError, Nanos};
use rtvirt_report::input::Document;
use rtvirt_tail::samples::{self, Timing};
use rtvirt_tail::{span, Options, Series};
use std::path::{Path, PathBuf};

const SAMPLES_HELP: &str = "SAMPLES: a CSV of samples in time order (a header naming latency_ns, and optionally t_ns, \
the time of each; or one number per line), or results with a latency histogram (`rtvirt measure timer --format json`, \
best with --interval-report 1s: its per-interval maxima give the time order the independence and stationarity tests \
need; simulate results with a histogram; other tools' outputs as `rtvirt import` reads them). The time the samples \
cover: the results' duration, else --duration, else the span of t_ns, else the count at --rate.";

/// Where the samples come from and what time they cover.
#[derive(Args)]
pub struct SamplesArgs {
    /// The samples (see below).
    #[arg(value_name = "SAMPLES")]
    pub file: PathBuf,
    /// The wall time a CSV's samples cover (default: from t_ns, else from --rate).
    #[arg(long, value_parser = parse_nanos, value_name = "D")]
    pub duration: Option<Nanos>,
    /// Samples per second of a CSV without t_ns and --duration (default: 1000, cyclictest's 1 ms).
    #[arg(long, default_value_t = 1000.0, value_name = "HZ")]
    pub rate: f64,
    /// Confidence level of the return levels' two-sided intervals.
    #[arg(long, default_value_t = 0.95, value_parser = parse_confidence)]
    pub confidence: f64,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args)]
#[command(after_help = format!("{SAMPLES_HELP}\n\nThe fit: peaks over a threshold with a generalised Pareto \
distribution (maximum likelihood), the threshold the lowest of the top 10%..0.1% whose fit passes Anderson-Darling; \
the return level of a horizon is the value exceeded once on average over that much running at the samples' rate, \
with a profile-likelihood interval. When a test of the model (goodness of fit, independence, stationarity) fails, \
the report says why and gives no return level.\n\nExamples:\n  rtvirt measure timer --cpus 1 --duration 60s \
--interval-report 1s --format json > run.json\n  rtvirt tail run.json --horizon 1h --horizon 12h\n  rtvirt tail \
samples.csv --rate 1000 --format json"))]
pub struct TailArgs {
    #[command(flatten)]
    pub samples: SamplesArgs,
    /// A horizon to give the return level of (repeatable; default 1h and 12h).
    #[arg(long = "horizon", value_parser = parse_nanos, value_name = "D")]
    pub horizons: Vec<Nanos>,
}

#[derive(Args)]
#[command(after_help = format!("Exit codes: 0 pass: the upper confidence limit of the horizon's return level is \
below --max; 1 fail: its lower limit is above --max, or a sample already is; 3 the data cannot decide, or the \
model does not apply (with the measurement length that would likely decide, when one would); 2 bad input.\n\n\
{SAMPLES_HELP}\n\nExample:\n  rtvirt gate run.json --max 40us --horizon 12h"))]
pub struct GateArgs {
    #[command(flatten)]
    pub samples: SamplesArgs,
    /// The limit no sample may exceed over the horizon.
    #[arg(long, value_parser = parse_nanos, value_name = "LAT")]
    pub max: Nanos,
    /// How long the limit must hold.
    #[arg(long, value_parser = parse_nanos, value_name = "D")]
    pub horizon: Nanos,
}

fn parse_nanos(text: &str) -> Result<Nanos, String> {
    Nanos::parse(text)
}

pub(crate) fn parse_confidence(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(c) if c > 0.0 && c < 1.0 => Ok(c),
        _ => Err(format!("{text:?}: expected a level between 0 and 1, e.g. 0.95")),
    }
}

/// The series of a SAMPLES file: a CSV's samples, or each results document's histogram with
/// its per-interval maxima (read by the report's loader: interval report lines included).
fn load(args: &SamplesArgs) -> Result<Vec<Series>, InputError> {
    let path = args.file.as_path();
    if !args.rate.is_finite() || args.rate <= 0.0 {
        return Err(InputError::field("--rate", format!("{}: expected samples per second above 0", args.rate)));
    }
    let text = rtvirt_model::input::read_text(path, rtvirt_model::input::InputKind::Results)?;
    if samples::is_csv(path, &text) {
        let timing = Timing { duration: args.duration, rate_hz: args.rate };
        return Ok(vec![samples::from_csv_text(path, &text, timing)?]);
    }
    let inputs = rtvirt_report::input::load_labelled(&[path.to_path_buf()], &[])?;
    inputs
        .iter()
        .map(|input| match &input.doc {
            Document::Results(results) => {
                let maxima = rtvirt_report::interval::interval_maxima(&input.interval_points());
                samples::from_results(&name(path, &input.name, inputs.len()), results, maxima)
                    .map_err(|e| e.in_file(path))
            }
            _ => {
                Err(InputError::new("a plan or log, not samples: expected results or a CSV of latency_ns")
                    .in_file(path))
            }
        })
        .collect()
}

fn name(path: &Path, input: &str, inputs: usize) -> String {
    if inputs > 1 {
        format!("{} [{input}]", path.display())
    } else {
        path.display().to_string()
    }
}

pub fn run_tail(args: TailArgs) -> CmdResult {
    let series = load(&args.samples)?;
    let horizons = if args.horizons.is_empty() { Options::default().horizons } else { args.horizons };
    let options = Options { horizons, confidence: args.samples.confidence };
    let reports: Vec<TailReport> = series.iter().map(|s| rtvirt_tail::analyse(s, &options)).collect();
    match (args.samples.format, &reports[..]) {
        (Format::Json, [one]) => print_json(one)?,
        (Format::Json, _) => print_json(&reports)?,
        (Format::Table, _) => reports.iter().for_each(print_report),
    }
    Ok(Outcome::Ok)
}

pub fn run_gate(args: GateArgs) -> CmdResult {
    let series = load(&args.samples)?;
    let [one] = &series[..] else {
        return Err(InputError::new(format!(
            "{} series: gate checks one (give one results document or CSV)",
            series.len()
        ))
        .in_file(&args.samples.file)
        .into());
    };
    let report = rtvirt_tail::gate(one, args.max, args.horizon, args.samples.confidence);
    match args.samples.format {
        Format::Json => print_json(&report)?,
        Format::Table => print_gate(&report),
    }
    Ok(match report.verdict {
        Verdict::Pass => Outcome::Ok,
        Verdict::Fail => Outcome::Failed,
        Verdict::Inconclusive => Outcome::Inconclusive,
    })
}

fn print_report(r: &TailReport) {
    let rate = r.samples as f64 / (r.duration_ns as f64 / 1e9).max(1e-9);
    println!(
        "{}: {} samples over {} ({rate:.0}/s, {}), max {} us",
        r.source,
        r.samples,
        span(r.duration_ns),
        r.input,
        micros(r.max_ns as f64)
    );
    if let Some(f) = &r.fit {
        println!(
            "fit: generalised Pareto above {} us ({} exceedances): scale {} us, shape {:.3}",
            micros(f.threshold_ns as f64),
            f.exceedances,
            micros(f.scale_ns),
            f.shape
        );
    }
    let mut tests = Table::new(&["test", "result", "detail"], 3);
    for t in &r.tests {
        let result = match t.passed {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "not run",
        };
        tests.row([t.name.as_str(), result, t.detail.as_str()]);
    }
    if !r.tests.is_empty() {
        tests.print();
    }
    if r.applicable {
        let mut levels = Table::new(&["horizon", "return level us", "low us", "high us", "confidence"], 1);
        for l in &r.return_levels {
            let high = l.ci_high_ns.map_or_else(|| "unbounded".to_string(), |h| micros(h as f64));
            levels.row([
                span(l.horizon_ns),
                micros(l.estimate_ns as f64),
                micros(l.ci_low_ns as f64),
                high,
                format!("{}%", l.confidence * 100.0),
            ]);
        }
        levels.print();
    } else {
        println!("the model does not apply, so no return level:");
        for reason in &r.reasons {
            println!("  - {reason}");
        }
    }
}

fn print_gate(g: &GateReport) {
    let verdict = match g.verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::Inconclusive => "INCONCLUSIVE",
    };
    println!("{verdict}: max {} over {}: {}", Nanos(g.max_ns), span(g.horizon_ns), g.reason);
    if let Some(d) = g.needed_duration_ns {
        println!("a measurement of about {} (this one: {}) would likely decide", span(d), span(g.tail.duration_ns));
    }
}
