//! `rtvirt measure timer`: timer wake-up latency per CPU.

use super::args::TimerArgs;
use super::output::{output, progress};
use crate::cli_common::{CmdResult, Outcome};
use crate::placement::command_line::CommandLine;
use crate::placement::options::Common;
use crate::placement::{drive, Measurement};
use anyhow::Context as _;
use rtvirt_model::results::Results;
use rtvirt_model::stats::{LatencyHistogram, Summary};
use rtvirt_model::Nanos;
use rtvirt_probe::{cpus, timer};
use std::net::SocketAddr;

/// A checked timer measurement, and the histograms of its run.
struct Timer {
    args: TimerArgs,
    config: timer::TimerConfig,
    histograms: Vec<(u32, LatencyHistogram)>,
}

pub fn run(args: TimerArgs, line: CommandLine) -> CmdResult {
    let config = timer::TimerConfig {
        cpus: cpus::resolve("--cpus", args.cpus.as_deref())?,
        interval: args.interval,
        priority: args.priority,
        policy: args.policy,
        duration: args.duration,
        interval_report: args.interval_report,
        force: args.common.force,
    };
    config.validate()?;
    if let Some(path) = &args.histogram {
        crate::output_file::check("--histogram", path, &[])?;
    }
    drive(Timer { args, config, histograms: Vec::new() }, line)
}

impl Measurement for Timer {
    fn common(&self) -> &Common {
        &self.args.common
    }

    fn duration(&self) -> Nanos {
        self.args.duration
    }

    fn container_cpus(&self) -> Vec<u32> {
        self.config.cpus.clone()
    }

    fn measure(&mut self, _server: Option<SocketAddr>) -> anyhow::Result<Results> {
        let a = &self.args;
        progress(
            a.duration,
            &format!(
                "measuring timer latency on CPU(s) {} ({} every {})",
                cpus::format_list(&self.config.cpus),
                a.policy.as_str(),
                a.interval
            ),
        );
        let run = timer::run_with_reports(&self.config, &mut |rep| {
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string(rep).unwrap_or_default());
        })?;
        self.histograms = run.per_cpu;
        Ok(run.results)
    }

    fn report(&self, results: &Results) -> CmdResult {
        let mut rows: Vec<(String, &Summary)> =
            results.cpus.iter().map(|c| (format!("cpu {}", c.cpu), &c.latency_ns)).collect();
        if let Some(all) = &results.latency_ns {
            rows.push(("all".into(), all));
        }
        let missed = results.timer.as_ref().and_then(|t| t.missed_periods);
        let footer = format!("missed periods: {}", missed.map_or("null".into(), |m| m.to_string()));
        let lines = self.args.interval_report.is_some();
        output(results, self.args.common.format, lines, "timer latency", &rows, &footer)?;
        if let Some(path) = &self.args.histogram {
            self.write_histogram(path)?;
        }
        Ok(Outcome::Ok)
    }
}

impl Timer {
    /// Write the cyclictest histogram to `path` (after the results are out). If that fails (the
    /// disk is full, ...) the histogram goes to stdout after a table (the JSON results carry its
    /// buckets as `histogram_ns`): no measurement is lost; the exit code is 2.
    fn write_histogram(&self, path: &std::path::Path) -> anyhow::Result<()> {
        use std::io::Write;
        let written = std::fs::File::create(path).and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            timer::write_cyclictest_histogram(&mut out, &self.histograms)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()
        });
        if let Err(e) = written {
            if self.args.common.format != crate::cli_common::Format::Json {
                println!("histogram (cyclictest format; {} could not be written):", path.display());
                let mut stdout = std::io::stdout().lock();
                timer::write_cyclictest_histogram(&mut stdout, &self.histograms)?;
                stdout.flush()?;
            }
            return Err(e)
                .with_context(|| format!("cannot write histogram {} (the results are above)", path.display()));
        }
        Ok(())
    }
}
