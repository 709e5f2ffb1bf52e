//! `rtvirt measure timer`: timer wake-up latency per CPU.

use super::actions::Action;
use super::args::{HistogramOption, TimerArgs};
use super::output::{output, progress};
use crate::cli_common::{CmdResult, Format, Outcome};
use crate::explain;
use crate::placement::command_line::CommandLine;
use crate::placement::guests::BringBack;
use crate::placement::options::{Common, Where};
use crate::placement::{drive, Measurement};
use anyhow::Context as _;
use rtvirt_model::results::Results;
use rtvirt_model::stats::{LatencyHistogram, Summary};
use rtvirt_model::Nanos;
use rtvirt_probe::{cpus, timer};
use rtvirt_tail::sequential::{Check, Sequential, Stop};
use std::net::SocketAddr;
use std::ops::ControlFlow;

/// A checked timer measurement, and the histograms of its run.
struct Timer {
    args: TimerArgs,
    config: timer::TimerConfig,
    histograms: Vec<(u32, LatencyHistogram)>,
    /// When the measurement started, as `--json` writes it.
    start_time: String,
    /// `--until-confident`: the last check of the gate.
    last_check: Option<Check>,
}

/// How often `--until-confident` gets the samples when `--interval-report` does not say.
const UNTIL_CONFIDENT_REPORT: Nanos = Nanos::from_secs(1);

pub fn run(args: TimerArgs, line: CommandLine) -> CmdResult {
    cyclictest_flags(&args)?;
    actions(&args)?;
    let config = timer::TimerConfig {
        cpus: measured_cpus(&args)?,
        interval: args.interval,
        priority: args.priority,
        policy: args.policy,
        duration: args.duration,
        interval_report: args.interval_report.or(args.until_confident.then_some(UNTIL_CONFIDENT_REPORT)),
        force: args.common.force,
        explain: args.explains().then(|| rtvirt_probe::explain::ExplainConfig {
            above: args.explain_above,
            break_at: args.break_at,
            break_trace: args.break_at.map(|_| break_trace_file(&args)),
            clock_sync: args.clock_sync.clone(),
            syscalls: args.explain_syscalls,
            ..rtvirt_probe::explain::ExplainConfig::new(rtvirt_host::journal::default_state_dir())
        }),
        state_dir: Some(rtvirt_host::journal::default_state_dir()),
    };
    config.validate()?;
    if args.until_confident && args.common.r#in == Where::Vm {
        let message = "not with --in vm: the guests measure for --duration (use it on the host or --in container)";
        return Err(rtvirt_model::InputError::field("--until-confident", message).into());
    }
    if let Some(path) = histogram_file(&args) {
        crate::output_file::check("--histogram-file", path, &[])?;
    }
    if let Some(path) = &args.json_file {
        crate::output_file::check("--json", path, &[])?;
    }
    if let Some(path) = config.explain.as_ref().and_then(|e| e.break_trace.as_ref()) {
        crate::output_file::check("--break-trace", path, &[])?;
    }
    drive(Timer { args, config, histograms: Vec::new(), start_time: String::new(), last_check: None }, line)
}

/// `--on-threshold` and `--on-end` actions, parsed (checked before measuring).
fn actions(args: &TimerArgs) -> Result<(Vec<Action>, Vec<Action>), rtvirt_model::InputError> {
    let threshold =
        args.on_threshold.iter().map(|a| super::actions::parse("--on-threshold", a)).collect::<Result<_, _>>()?;
    let end: Vec<Action> =
        args.on_end.iter().map(|a| super::actions::parse("--on-end", a)).collect::<Result<_, _>>()?;
    if end.contains(&Action::Trace) {
        return Err(rtvirt_model::InputError::field(
            "--on-end",
            "trace: the trace is kept at --break (--on-threshold trace)",
        ));
    }
    Ok((threshold, end))
}

/// Run the rtla actions after the run: `--on-threshold` if `--break` stopped it, then `--on-end`.
fn run_actions(args: &TimerArgs, results: &Results) -> anyhow::Result<()> {
    let (threshold, end) = actions(args)?;
    if results.explain.as_ref().is_some_and(|e| e.stopped_by_break_ns.is_some()) {
        super::actions::run("--on-threshold", &threshold)?;
    }
    super::actions::run("--on-end", &end)
}

/// cyclictest's flags rtvirt has no option for: `-n` and `-S` are what rtvirt does anyway (a note
/// on stderr), `-l LOOPS` is refused with the `-D` that gives as many wake-ups.
fn cyclictest_flags(args: &TimerArgs) -> anyhow::Result<()> {
    if let Some(loops) = &args.loops {
        let n: u64 = loops.trim().parse().map_err(|_| {
            rtvirt_model::InputError::field("-l", format!("{loops:?}: expected a number of loops (cyclictest's -l)"))
        })?;
        let duration = Nanos(args.interval.0.saturating_mul(n.max(1)));
        return Err(rtvirt_model::InputError::field(
            "-l",
            format!(
                "{n} loops: rtvirt measures for a duration, not a count of wake-ups: give -D {duration} ({n} wake-ups \
                 of -i {})",
                args.interval
            ),
        )
        .into());
    }
    let notes = [
        (args.nanosleep, "-n: rtvirt always sleeps with clock_nanosleep (absolute time)"),
        (args.smp, "-S: one thread per CPU at one priority is rtvirt's default (-a and -t narrow it)"),
    ];
    for (_, note) in notes.iter().filter(|(given, _)| *given && !args.quiet) {
        eprintln!("rtvirt: cyclictest's {note}");
    }
    Ok(())
}

/// Where a guest's `--break` keeps the whole trace before it comes back to this host.
const GUEST_BREAK_TRACE: &str = "/tmp/rtvirt-break.trace";

/// Where `--break` keeps the whole trace: `--break-trace`, else `rtvirt-break-PID.trace` here.
fn break_trace_file(args: &TimerArgs) -> std::path::PathBuf {
    args.break_trace.clone().unwrap_or_else(|| format!("rtvirt-break-{}.trace", std::process::id()).into())
}

/// `--cpus` (empty, as `-a` alone gives: every CPU), cut to the first `--threads` N.
fn measured_cpus(args: &TimerArgs) -> anyhow::Result<Vec<u32>> {
    let list = args.cpus.as_deref().filter(|c| !c.trim().is_empty());
    let mut cpus = cpus::resolve("--cpus", list)?;
    match args.threads {
        None | Some(0) => {}
        Some(n) if n <= cpus.len() => cpus.truncate(n),
        Some(n) => {
            let message = format!(
                "{n}: expected at most {} (one measuring thread per CPU of --cpus {}; cyclictest's several \
                 threads on one CPU are not measured)",
                cpus.len(),
                cpus::format_list(&cpus)
            );
            return Err(rtvirt_model::InputError::field("--threads", message).into());
        }
    }
    Ok(cpus)
}

/// The file the cyclictest histogram goes to: `--histogram-file`, or `--histogram FILE`.
fn histogram_file(args: &TimerArgs) -> Option<&std::path::PathBuf> {
    match &args.histogram {
        Some(HistogramOption::File(path)) => Some(path),
        _ => args.histogram_file.as_ref(),
    }
}

/// The rows of `-h N` (cyclictest's histogram size), if given.
fn histogram_rows(args: &TimerArgs) -> Option<u64> {
    match &args.histogram {
        Some(HistogramOption::Rows(n)) => Some(*n),
        _ => None,
    }
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

    /// With `--explain`, the guest explains and asks the host's time over its clock line; the
    /// Perfetto trace is written on the host (from the merged explanation). With `--break`, the
    /// guest keeps the whole trace in [`GUEST_BREAK_TRACE`], which comes back to `--break-trace`
    /// here.
    fn guest_job(&self, line: CommandLine) -> anyhow::Result<crate::placement::vm::GuestJob> {
        let explain = self.args.explains();
        let line = match explain {
            true => line.without(&["trace", "break_trace"]).with_flag("explain", "explain").with_option(
                "clock_sync",
                "clock-sync",
                crate::placement::explain_host::GUEST_CLOCK_DEVICE,
            ),
            false => line,
        };
        let bring_back = self
            .args
            .break_at
            .map(|_| BringBack { guest: GUEST_BREAK_TRACE.into(), host: break_trace_file(&self.args) });
        let line = match bring_back {
            Some(_) => line.with_option("break_trace", "break-trace", GUEST_BREAK_TRACE),
            None => line,
        };
        Ok(crate::placement::vm::GuestJob {
            line,
            files: Vec::new(),
            vcpus: 1,
            explain,
            trace: self.args.trace.clone(),
            bring_back,
        })
    }

    fn measure(&mut self, _server: Option<SocketAddr>) -> anyhow::Result<Results> {
        let a = &self.args;
        if !a.quiet {
            let until = match (a.until_confident, a.max, a.horizon) {
                (true, Some(max), Some(horizon)) => {
                    format!(", until the gate decides {max} over {} (at most)", rtvirt_tail::span(horizon.0))
                }
                _ => String::new(),
            };
            progress(
                a.duration,
                &format!(
                    "measuring timer latency on CPU(s) {} ({} every {}){until}",
                    cpus::format_list(&self.config.cpus),
                    a.policy.as_str(),
                    a.interval
                ),
            );
        }
        self.start_time = rtvirt_probe::cyclictest_json::now();
        let print_lines = a.interval_report.is_some();
        let print = |rep: &timer::IntervalReport| {
            use std::io::Write;
            if print_lines {
                let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string(rep).unwrap_or_default());
            }
        };
        let run = match (a.until_confident, a.max, a.horizon) {
            (true, Some(max), Some(horizon)) => {
                let every = self.config.interval_report.unwrap_or(UNTIL_CONFIDENT_REPORT);
                let mut seq = Sequential::new(max, horizon, a.confidence, a.duration, every);
                let mut intervals = Vec::new();
                let mut last = None;
                let run = timer::run_until(&self.config, &mut |rep, samples| {
                    print(rep);
                    intervals.push(rep.into());
                    let Some(check) = seq.add(rep.t_ns, samples) else { return ControlFlow::Continue(()) };
                    if !a.quiet {
                        eprintln!("{}", check_line(&check, &seq));
                    }
                    let stop = check.stop.is_some();
                    last = Some(check);
                    if stop {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
                self.last_check = last;
                let mut run = run?;
                if !print_lines {
                    run.results.intervals = Some(intervals);
                }
                run
            }
            _ => timer::run_with_reports(&self.config, &mut |rep| print(rep))?,
        };
        self.histograms = run.per_cpu;
        Ok(run.results)
    }

    fn report(&self, results: &Results) -> CmdResult {
        let rows = histogram_rows(&self.args);
        if rows.is_some() && self.args.common.format == crate::cli_common::Format::Table {
            // cyclictest -h N prints its histogram on stdout: so does this, for the same scripts
            timer::write_cyclictest_histogram(&mut std::io::stdout().lock(), &self.histograms, rows)?;
            if let Some(path) = histogram_file(&self.args) {
                self.write_histogram(path)?;
            }
            self.write_json()?;
            run_actions(&self.args, results)?;
            return Ok(self.until_confident_outcome());
        }
        let mut rows: Vec<(String, &Summary)> =
            results.cpus.iter().map(|c| (format!("cpu {}", c.cpu), &c.latency_ns)).collect();
        if let Some(all) = &results.latency_ns {
            rows.push(("all".into(), all));
        }
        let missed = results.timer.as_ref().and_then(|t| t.missed_periods);
        let footer = format!("missed periods: {}", missed.map_or("null".into(), |m| m.to_string()));
        let lines = self.args.interval_report.is_some();
        output(results, self.args.common.format, lines, "timer latency", &rows, &footer)?;
        if let Some(e) = &results.explain {
            if let Some(path) = &self.args.trace {
                explain::write_trace(e, &self.config.cpus, self.args.duration, path)?;
            }
            if self.args.common.format == Format::Table {
                explain::print_table(e);
            }
        }
        if let Some(path) = histogram_file(&self.args) {
            self.write_histogram(path)?;
        }
        self.write_json()?;
        run_actions(&self.args, results)?;
        Ok(self.until_confident_outcome())
    }
}

/// One check of `--until-confident`, as a progress line.
fn check_line(check: &Check, seq: &Sequential) -> String {
    let g = &check.gate;
    let level = match g.tail.return_levels.first() {
        Some(l) => format!(
            "{} return level {} [{}, {}]",
            rtvirt_tail::span(g.horizon_ns),
            Nanos(l.estimate_ns),
            Nanos(l.ci_low_ns),
            l.ci_high_ns.map_or("unbounded".into(), |h| Nanos(h).to_string())
        ),
        None => format!("max {}", Nanos(g.tail.max_ns)),
    };
    let what = match check.stop {
        Some(stop) => format!("stopped: {}", stop.as_str()),
        None => "undecided".into(),
    };
    format!(
        "rtvirt: {}: check {} of at most {} at {:.2}%: {level}: {what} ({})",
        rtvirt_tail::span(check.t_ns),
        seq.checks_made(),
        seq.planned_checks(),
        seq.per_check_confidence() * 100.0,
        g.reason
    )
}

impl Timer {
    /// `--until-confident`'s exit: 0 decided below the limit, 1 above, 3 undecided (cap reached
    /// or interrupted), said on stderr.
    fn until_confident_outcome(&self) -> Outcome {
        if !self.args.until_confident {
            return Outcome::Ok;
        }
        match self.last_check.as_ref().and_then(|c| c.stop.map(|s| (c, s))) {
            Some((_, Stop::DecidedBelow)) => Outcome::Ok,
            Some((_, Stop::DecidedAbove)) => Outcome::Failed,
            Some((c, Stop::CapReached)) => {
                if let Some(d) = c.gate.needed_duration_ns {
                    eprintln!("rtvirt: a measurement of about {} would likely decide", rtvirt_tail::span(d));
                }
                Outcome::Inconclusive
            }
            None => {
                eprintln!("rtvirt: stopped before a decision (interrupted)");
                Outcome::Inconclusive
            }
        }
    }
}

impl Timer {
    /// `--json FILE`: the run as `cyclictest --json` writes it.
    fn write_json(&self) -> anyhow::Result<()> {
        let Some(path) = &self.args.json_file else { return Ok(()) };
        use rtvirt_probe::cyclictest_json::{cyclictest_json, now, RunInfo};
        let cmdline = std::env::args().collect::<Vec<_>>().join(" ");
        let run = RunInfo { cmdline, start_time: self.start_time.clone(), end_time: now() };
        let doc = cyclictest_json(&self.histograms, histogram_rows(&self.args), run);
        let text = serde_json::to_string_pretty(&doc)? + "\n";
        std::fs::write(path, text).with_context(|| format!("cannot write --json {}", path.display()))
    }

    /// Write the cyclictest histogram to `path` (after the results are out). If that fails (the
    /// disk is full, ...) the histogram goes to stdout after a table (the JSON results carry its
    /// buckets as `histogram_ns`): no measurement is lost; the exit code is 2.
    fn write_histogram(&self, path: &std::path::Path) -> anyhow::Result<()> {
        use std::io::Write;
        let written = std::fs::File::create(path).and_then(|f| {
            let mut out = std::io::BufWriter::new(f);
            timer::write_cyclictest_histogram(&mut out, &self.histograms, histogram_rows(&self.args))?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()
        });
        if let Err(e) = written {
            if self.args.common.format != crate::cli_common::Format::Json {
                println!("histogram (cyclictest format; {} could not be written):", path.display());
                let mut stdout = std::io::stdout().lock();
                timer::write_cyclictest_histogram(&mut stdout, &self.histograms, histogram_rows(&self.args))?;
                stdout.flush()?;
            }
            return Err(e)
                .with_context(|| format!("cannot write histogram {} (the results are above)", path.display()));
        }
        Ok(())
    }
}
