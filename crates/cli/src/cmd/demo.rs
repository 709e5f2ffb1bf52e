//! `rtvirt demo`: the main job end to end on the embedded default scenario - plan it, simulate
//! it under the plan (and at several rho: the predicted DSR-versus-rho curve), measure this host
//! for real (timer latency idle and under a generated load; the task set under the plan's
//! reservations, checked against the simulation of the same run as `rtvirt verify` does), and write
//! one report comparing prediction and measurement. Each step prints
//! its progress; a step switched off (`--no-measure`) says so and is skipped (nothing is faked).
//! Ctrl-C stops the running measurement early (its guards restore every host setting), skips
//! the remaining measurements, writes the report of what was done and exits with code 130.
//!
//! A disagreement between prediction and measurement is a finding the demo shows (a summary line,
//! `verify.json`, the report's CDF overlay), not a failed step: the demo exits 0 on a noisy host.
//! `rtvirt verify` is the command whose exit code (1) gates on it.

use crate::cli_common::{load_scenario, CmdResult, Outcome};
use clap::Args;
use rtvirt_analysis::planner::PlanOptions;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::{HistogramBucket, Results};
use rtvirt_model::scenario::Scenario;
use rtvirt_model::verify::{Tolerance, Verdict, Verification};
use rtvirt_model::Nanos;
use rtvirt_probe::load::{self, LoadSpec};
use rtvirt_probe::tasks::TasksConfig;
use rtvirt_probe::timer::{self, TimerConfig};
use rtvirt_report::units::fmt_ns;
use rtvirt_sim::{simulate, simulate_with_host_model, Overrides, RunOptions, SimConfig};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(Args)]
#[command(after_help = "Steps: 1 plan (rtvirt plan), 2 simulate under the plan (rtvirt simulate --plan), \
3 predict DSR versus rho (plans at a uniform rho 0.1 .. 0.9, each simulated), 4 timer latency on this \
host, idle (rtvirt measure timer), 5 the same under a system-call load (--load syscalls), 6 the task \
set under the plan's SCHED_DEADLINE reservations (rtvirt measure tasks), compared task by task with its simulation \
(rtvirt verify: verify.json; a disagreement is shown, not a failure: the demo still exits 0), 7 the report (rtvirt \
report). Every file is \
kept in the output directory, so each step can be re-run \
by hand. Real-time threads are bounded by the measurement time; needs root for the real measurements \
(use --no-measure without it). Ctrl-C stops the running measurement early, restores every host \
setting it changed (cpusets, scheduling, cpu_dma_latency), skips the remaining measurements, writes the \
report of what was done and exits with code 130.\n\nExamples:\n  rtvirt demo\n  rtvirt demo --out /tmp/demo \
--measure-time 3s")]
pub struct DemoArgs {
    /// Scenario file (TOML). Without it, the embedded default scenario.
    pub scenario: Option<PathBuf>,
    /// Directory for the plan, the results and the report (created if missing).
    #[arg(short, long, default_value = "rtvirt-demo", value_name = "DIR")]
    pub out: PathBuf,
    /// Length of each real measurement (timer idle, timer under load, task set).
    #[arg(long, value_parser = parse_nanos, default_value = "10s")]
    pub measure_time: Nanos,
    /// Simulated horizon (default: the measurement time, so that job counts compare directly).
    #[arg(long, value_parser = parse_nanos)]
    pub sim_time: Option<Nanos>,
    /// Plan, simulate and report only: no calibration, no real measurement, no real-time
    /// threads (the plan is then for this host's limits and CPUs with the default costs).
    #[arg(long)]
    pub no_measure: bool,
    /// Calibrate this host in quick mode (1 s per experiment instead of 5 s): a shorter demo, a
    /// less certain host model (its p99 from about 1,000 wake-ups per CPU).
    #[arg(long)]
    pub quick: bool,
    /// The host to plan for. Default: this host, with its cached calibration or one made by the
    /// demo (as `rtvirt host calibrate`, whose cache it writes).
    #[command(flatten)]
    pub host: crate::plan_host::HostArgs,
}

fn parse_nanos(text: &str) -> Result<Nanos, String> {
    let n = Nanos::parse(text)?;
    if n.0 == 0 {
        Err("must be longer than 0".into())
    } else {
        Ok(n)
    }
}

/// How a step ended.
enum Step {
    /// Wrote these files.
    Done(Vec<PathBuf>),
    /// Switched off (the reason is shown).
    Skipped(String),
}

/// The demo's state: where files go, and what each step produced for the next.
struct Demo {
    args: DemoArgs,
    scenario: Scenario,
    plan: Option<Plan>,
    /// The host the plan is for (its model is simulated beside the plan).
    host: rtvirt_analysis::requests::PlanHost,
    /// Whether step 2 simulated the plan (the prediction the task run is checked against).
    simulated: bool,
    inputs: Vec<PathBuf>,
    /// Simulations at several rho (the prediction curve), kept out of the per-task tables.
    sweep: Vec<PathBuf>,
    /// One line per result for the closing summary.
    summary: Vec<String>,
    failed: Vec<String>,
}

const STEPS: usize = 8;

/// The rho values of the predicted DSR-versus-rho curve (Burns 2014 plots 0.1 .. 0.9).
const SWEEP_RHOS: [f64; 5] = [0.1, 0.3, 0.5, 0.7, 0.9];

pub fn run(args: DemoArgs) -> CmdResult {
    let scenario = load_scenario(args.scenario.as_deref())?;
    // Ctrl-C only raises a flag: the running measurement stops early and drops its guards
    // (cpusets, scheduling, cpu_dma_latency), the later steps are skipped, the report is written.
    rtvirt_os::signals::install();
    std::fs::create_dir_all(&args.out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.out.display()))?;
    let mut d = Demo {
        args,
        scenario,
        plan: None,
        host: rtvirt_analysis::requests::PlanHost::ideal(),
        simulated: false,
        inputs: Vec::new(),
        sweep: Vec::new(),
        summary: Vec::new(),
        failed: Vec::new(),
    };
    eprintln!(
        "rtvirt demo: {} guests on {} cores; files in {}",
        d.scenario.guests.len(),
        d.scenario.host.cores,
        d.args.out.display()
    );
    let calibration = if d.args.quick { "quick: 1s per experiment" } else { "5s per experiment; --quick: 1s" };
    d.step(1, &format!("calibrate this host ({calibration}; reused when cached)"), Demo::calibrate_step);
    d.step(2, "plan the reservations for the host", Demo::plan_step);
    d.step(3, "simulate the scenario under the plan, with the host's costs", Demo::simulate_step);
    d.step(4, "predict DSR versus rho on the ideal host (plan + simulation at rho 0.1 .. 0.9)", Demo::sweep_step);
    d.step(5, "measure timer latency on this host, idle", |d| d.timer_step(false));
    d.step(6, "measure timer latency under a system-call load", |d| d.timer_step(true));
    d.step(7, "run the task set under the plan's reservations and check the prediction", Demo::tasks_step);
    d.step(8, "write the report", Demo::report_step);
    d.finish()
}

impl Demo {
    /// Run one step with progress: its name first, then how it ended and how long it took.
    fn step(&mut self, count: usize, what: &str, f: impl FnOnce(&mut Demo) -> anyhow::Result<Step>) {
        eprint!("[{count}/{STEPS}] {what} ...");
        let _ = std::io::stderr().flush();
        let interrupted_before = interrupted();
        if interrupted_before && count < STEPS {
            eprintln!(" skipped: interrupted (Ctrl-C)");
            return;
        }
        let start = Instant::now();
        let took = |s: Instant| format!("{:.1}s", s.elapsed().as_secs_f64());
        let done = AtomicBool::new(false);
        let outcome = std::thread::scope(|sc| {
            sc.spawn(|| tick_while_running(&done));
            let r = f(self);
            done.store(true, Ordering::SeqCst);
            r
        });
        match outcome {
            Ok(Step::Done(files)) => {
                let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
                let ended = if interrupted() && !interrupted_before { "stopped by Ctrl-C after" } else { "done in" };
                eprintln!(" {ended} {} -> {}", took(start), names.join(", "));
            }
            Ok(Step::Skipped(why)) => eprintln!(" skipped: {why}"),
            // Ctrl-C while the step was still setting up ends it without a result: that is
            // the user's stop, not a failure
            Err(e) if interrupted() && !interrupted_before => {
                eprintln!(" stopped by Ctrl-C after {}: {e:#}", took(start))
            }
            Err(e) => {
                eprintln!("FAILED after {}: {e:#}", took(start));
                self.failed.push(format!("{what}: {e:#}"));
            }
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.args.out.join(name)
    }

    /// Write a results document and remember it for the report.
    fn keep(&mut self, name: &str, results: &Results) -> anyhow::Result<PathBuf> {
        let p = self.path(name);
        write_json(&p, results)?;
        self.inputs.push(p.clone());
        self.summary.push(summary_line(results));
        Ok(p)
    }

    /// The host the plan is for: `--host`/`--host-model` when given; else this host, with its
    /// cached calibration (`rtvirt host calibrate`) or one made now in quick mode (written to
    /// host.json and cached), or with --no-measure its live limits and CPUs with the default
    /// costs.
    fn calibrate_step(&mut self) -> anyhow::Result<Step> {
        let cores = self.scenario.host.cores;
        if self.args.host.named() {
            self.host = self.args.host.resolve(None, cores)?;
            return Ok(Step::Skipped(format!("planning for {}", self.host.name)));
        }
        let state = rtvirt_host::journal::default_state_dir();
        let this = rtvirt_probe::this_host::this_host(&state);
        for note in &this.notes {
            eprint!(" ({note})");
        }
        let cached = this.calibration.clone();
        self.host = rtvirt_loop::host_choice::this_host_plan(this, cores);
        if self.args.no_measure {
            return Ok(Step::Skipped(format!("--no-measure: planning for {}", self.host.name)));
        }
        if let Some(p) = cached {
            return Ok(Step::Skipped(format!("reusing this host's calibration {}", p.display())));
        }
        let defaults = rtvirt_probe::calibrate::CalibrateConfig::default();
        let step = if self.args.quick { rtvirt_probe::calibrate::QUICK_STEP } else { defaults.step };
        let cfg = rtvirt_probe::calibrate::CalibrateConfig { step, state_dir: Some(state.clone()), ..defaults };
        let model = rtvirt_probe::calibrate::run(&cfg, &mut |_| {})?;
        let p = self.path("host.json");
        write_json(&p, &model)?;
        let mut files = vec![p];
        match rtvirt_probe::this_host::write_cache(&state, &model) {
            Ok(cache) => files.push(cache),
            Err(why) => eprint!(" (not cached: {why})"),
        }
        self.host = rtvirt_loop::host_choice::this_host_plan(rtvirt_probe::this_host::this_host(&state), cores);
        if self.host.model.as_ref().is_some_and(|m| m.measurements.is_empty()) {
            // not cached (an untrusted state directory): plan with the calibration just made
            let name = format!("this host (calibrated by the demo: {})", files[0].display());
            self.host = rtvirt_analysis::requests::PlanHost::of_model(name, model, cores);
        }
        Ok(Step::Done(files))
    }

    fn plan_step(&mut self) -> anyhow::Result<Step> {
        let guarantee = self.args.host.guarantee()?;
        let request = rtvirt_analysis::requests::PlanRequest {
            max_rho: true,
            ..crate::plan_host::request(&self.scenario, &self.host, PlanOptions::default(), guarantee)
        };
        let planned = rtvirt_loop::planning::plan(&request)?;
        let p = self.path("plan.json");
        write_json(&p, &planned.plan)?;
        if !planned.plan.feasible {
            let why: Vec<String> = planned.unplaced.iter().map(|u| format!("{}: {}", u.name, u.reason)).collect();
            anyhow::bail!("the scenario does not fit {}: {}", self.host.name, why.join("; "));
        }
        self.summary.push(promise_line(&planned.plan));
        self.plan = Some(planned.plan);
        self.inputs.push(p.clone());
        Ok(Step::Done(vec![p]))
    }

    fn simulate_step(&mut self) -> anyhow::Result<Step> {
        let Some(plan) = &self.plan else { anyhow::bail!("no feasible plan to simulate") };
        let cfg = SimConfig::new(
            &self.scenario,
            Some(plan),
            Overrides { duration: Some(self.sim_time()), seed: Some(1), ..Default::default() },
        )?;
        let mut r =
            simulate_with_host_model(&self.scenario, &cfg, &RunOptions::default(), self.host.model.as_ref()).results;
        r.label = Some("simulated (plan)".into());
        add_uniform_rho(&mut r, &self.scenario);
        self.simulated = true;
        Ok(Step::Done(vec![self.keep("simulated.json", &r)?]))
    }

    /// Plan every guest at one uniform rho and simulate, for each rho of [`SWEEP_RHOS`].
    fn sweep_step(&mut self) -> anyhow::Result<Step> {
        let dir = self.path("rho-sweep");
        std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        let mut infeasible = Vec::new();
        for rho in SWEEP_RHOS {
            let Ok(plan) = rtvirt_analysis::requests::plan_sweep_cell(&self.scenario, rho) else {
                infeasible.push(rho.to_string());
                continue;
            };
            let cfg = SimConfig::new(
                &self.scenario,
                Some(&plan),
                Overrides { duration: Some(self.sim_time()), seed: Some(1), ..Default::default() },
            )?;
            let mut r = simulate(&self.scenario, &cfg, &RunOptions::default()).results;
            r.label = Some(format!("simulated rho={rho}"));
            r.rho = Some(rho);
            let p = dir.join(format!("simulated_rho{rho}.json"));
            write_json(&p, &r)?;
            self.sweep.push(p);
        }
        if !infeasible.is_empty() {
            eprint!(" (no feasible plan at rho {})", infeasible.join(", "));
        }
        Ok(Step::Done(vec![dir]))
    }

    fn sim_time(&self) -> Nanos {
        self.args.sim_time.unwrap_or(self.args.measure_time)
    }

    fn timer_step(&mut self, with_load: bool) -> anyhow::Result<Step> {
        if self.args.no_measure {
            return Ok(Step::Skipped("--no-measure".into()));
        }
        let cfg = TimerConfig {
            duration: self.args.measure_time,
            interval_report: Some(report_every(self.args.measure_time)),
            ..TimerConfig::default()
        };
        let loads = if with_load { vec![syscall_load(&cfg.cpus)?] } else { Vec::new() };
        let running = load::start_all(&loads)?;
        let mut intervals = Vec::new();
        let measured = timer::run_with_reports(&cfg, &mut |rep| intervals.push(rep.into()));
        let load_reports = load::stop_all(running);
        let run = measured?;
        let mut r = run.results;
        r.label = Some(if with_load { "measured: timer + syscall load" } else { "measured: timer idle" }.into());
        r.histogram_ns = Some(HistogramBucket::from_pairs(run.overall.buckets()));
        r.intervals = Some(intervals);
        if let Some(env) = r.environment.as_mut() {
            env.load = load_reports;
        }
        Ok(Step::Done(vec![self.keep(if with_load { "timer_load.json" } else { "timer_idle.json" }, &r)?]))
    }

    fn tasks_step(&mut self) -> anyhow::Result<Step> {
        if self.args.no_measure {
            return Ok(Step::Skipped("--no-measure".into()));
        }
        let Some(plan) = self.plan.clone() else { anyhow::bail!("no feasible plan to run the tasks under") };
        let cfg = TasksConfig {
            duration: self.args.measure_time,
            seed: 1,
            force: false,
            state_dir: Some(rtvirt_host::journal::default_state_dir()),
            window: None,
            explain: true,
            // the phase the prediction (step 3) simulated, where the host's ticks can be read
            tick_phase: rtvirt_probe::tick::this_host(0)
                .is_ok()
                .then_some(Nanos(self.scenario.sim.settings.tick_phase)),
        };
        let mut r = rtvirt_probe::tasks::run(&self.scenario, &plan, &cfg)?;
        r.label = Some("measured (plan's reservations)".into());
        add_uniform_rho(&mut r, &self.scenario);
        let mut files = vec![self.keep("measured_tasks.json", &r)?];
        if self.simulated {
            files.push(self.verify(&plan, &r)?);
        }
        Ok(Step::Done(files))
    }

    /// `rtvirt verify` on the task run: the plan simulated as the run went
    /// (`rtvirt_loop::prediction`), compared task by task; a summary line says whether they agree.
    fn verify(&mut self, plan: &Plan, measured: &Results) -> anyhow::Result<PathBuf> {
        let predicted = rtvirt_loop::prediction::of_run(&self.scenario, plan, self.host.model.as_ref(), measured, 1)?;
        self.summary.push(promise_kept_line(plan, measured));
        let mut v = Verification::compare(&predicted, measured, Tolerance::default()).map_err(anyhow::Error::msg)?;
        v.scenario = self.scenario.name.clone();
        let p = self.path("verify.json");
        write_json(&p, &v)?;
        let n = v.disagreeing().count();
        self.summary.push(match v.verdict {
            Verdict::Agree => format!(
                "prediction vs measurement: agree (every task within tolerance; all jobs DSR {:+.2} pp)",
                v.totals.dsr_difference_points
            ),
            Verdict::Disagree => format!(
                "prediction vs measurement: DISAGREE on {n} of {} tasks (all jobs DSR {:+.2} pp; {}): see {} - \
                 shown, not a failure of the demo (`rtvirt verify` exits 1 on it)",
                v.tasks.len(),
                v.totals.dsr_difference_points,
                v.tolerance.describe(),
                p.display()
            ),
        });
        for t in v.disagreeing() {
            self.summary.push(late_job_line(&format!("{}/{}", t.guest, t.name), measured));
        }
        Ok(p)
    }

    fn report_step(&mut self) -> anyhow::Result<Step> {
        if self.inputs.is_empty() {
            anyhow::bail!("no step produced anything to report");
        }
        let title = format!("rtvirt demo: {}", self.scenario.name);
        let inputs = rtvirt_report::load_inputs(&self.inputs)?;
        let mut report = rtvirt_report::build_report(&title, &inputs);
        if let Some(sec) = self.prediction_section(&inputs)? {
            // after the plan (the verdict and the inputs come first)
            let after = report
                .sections
                .iter()
                .position(|s| s.title.starts_with("Plan"))
                .map_or(report.sections.len(), |i| i + 1);
            report.sections.insert(after, sec);
        }
        let html = rtvirt_report::render(&report, rtvirt_report::ReportFormat::Html);
        let md = rtvirt_report::render(&report, rtvirt_report::ReportFormat::Markdown);
        let (ph, pm) = (self.path("report.html"), self.path("report.md"));
        std::fs::write(&ph, html).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", ph.display()))?;
        std::fs::write(&pm, md).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", pm.display()))?;
        Ok(Step::Done(vec![ph, pm]))
    }

    /// The predicted DSR-versus-rho curve (the sweep) with the measured task run as a point.
    fn prediction_section(
        &self,
        inputs: &[rtvirt_report::Input],
    ) -> anyhow::Result<Option<rtvirt_report::doc::Section>> {
        if self.sweep.is_empty() {
            return Ok(None);
        }
        let mut curve = rtvirt_report::load_inputs(&self.sweep)?;
        curve.extend(inputs.iter().filter(|i| i.results().is_some_and(|r| r.kind == "tasks")).cloned());
        Ok(rtvirt_report::build::dsr_versus_rho_section("Prediction: deadline satisfaction versus rho", &curve))
    }

    fn finish(self) -> CmdResult {
        for line in &self.summary {
            println!("{line}");
        }
        let report = self.path("report.html");
        if report.exists() {
            let shown = std::fs::canonicalize(&report).unwrap_or(report);
            println!("report: {}", shown.display());
        }
        if interrupted() {
            eprintln!("rtvirt demo: interrupted (Ctrl-C); every host setting a measurement changed has been restored");
            std::process::exit(INTERRUPTED_EXIT);
        }
        if self.failed.is_empty() {
            return Ok(Outcome::Ok);
        }
        anyhow::bail!("{} step(s) failed:\n  {}", self.failed.len(), self.failed.join("\n  "))
    }
}

/// Exit code after Ctrl-C (128 + SIGINT, as a shell reports a killed command).
const INTERRUPTED_EXIT: i32 = 130;

fn interrupted() -> bool {
    rtvirt_os::signals::interrupted()
}

/// One line about a result: pooled DSR for task results, p50/p99/max for latencies.
fn summary_line(results: &Results) -> String {
    let mut label = results.label.clone().unwrap_or_else(|| results.kind.clone());
    if results.interrupted {
        label.push_str(" (interrupted by Ctrl-C)");
    }
    if let Some(l) = &results.latency_ns {
        let missed = results
            .timer
            .as_ref()
            .and_then(|t| t.missed_periods)
            .map_or(String::new(), |m| format!(", {m} missed periods"));
        return format!(
            "{label}: latency p50 {} p99 {} max {} over {} samples{missed}",
            fmt_ns(l.p50 as f64),
            fmt_ns(l.p99 as f64),
            fmt_ns(l.max as f64),
            l.count
        );
    }
    let (jobs, misses) = results.tasks.iter().fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses));
    format!(
        "{label}: {jobs} jobs, {misses} deadline misses, DSR {:.4}",
        rtvirt_model::results::TaskResult::dsr_of(jobs, misses)
    )
}

/// Print a dot every second until `done`, so that long steps show they are alive.
fn tick_while_running(done: &AtomicBool) {
    let mut waited = 0;
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
        if waited % 10 == 0 && !done.load(Ordering::SeqCst) {
            eprint!(".");
            let _ = std::io::stderr().flush();
        }
    }
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Record `rho` on the result when every task of the scenario was planned with the same one.
fn add_uniform_rho(results: &mut Results, scenario: &Scenario) {
    let rhos: Vec<Option<f64>> =
        scenario.guests.iter().flat_map(|g| g.tasks.iter().map(move |t| t.rho.or(g.rho))).collect();
    if let Some(Some(first)) = rhos.first() {
        if rhos.iter().all(|x| *x == Some(*first)) {
            results.rho = Some(*first);
        }
    }
}

/// Interval reports: about ten per measurement, at least every 100 ms.
fn report_every(total: Nanos) -> Nanos {
    Nanos((total.0 / 10).max(100_000_000))
}

/// One system-call stress worker per measured CPU (Abeni 2023's "kernel stress").
fn syscall_load(cpus: &[u32]) -> anyhow::Result<LoadSpec> {
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    let spec =
        LoadSpec::parse(&format!("syscalls:{}@{}", cpus.len().max(1), list.join(","))).map_err(anyhow::Error::msg)?;
    spec.validate("--load", false)?;
    Ok(spec)
}

/// The plan's host and promise, for the closing summary.
/// The causes of `task`'s longest measured job (`measure tasks --explain`), largest first.
fn late_job_line(task: &str, measured: &Results) -> String {
    let sample = measured.explain.as_ref().and_then(|e| e.samples.iter().find(|s| s.task.as_deref() == Some(task)));
    let Some(s) = sample else {
        let why = measured.explain.as_ref().and_then(|e| e.limitations.first().cloned());
        return format!("  {task}: its late jobs not explained ({})", why.unwrap_or_else(|| "no trace".into()));
    };
    let ranked = rtvirt_model::results::ExplainSection::summarize(std::slice::from_ref(s));
    let causes: Vec<String> =
        ranked.iter().take(4).map(|c| format!("{} {} {}", c.kind.as_str(), c.name, Nanos(c.total_ns))).collect();
    format!("  {task}: longest job {} on CPU {}: {}", Nanos(s.latency_ns), s.cpu, causes.join(", "))
}

fn promise_line(plan: &Plan) -> String {
    let worst = plan.guests.iter().flat_map(|g| &g.tasks).filter_map(|t| t.miss_bound).fold(0.0, f64::max);
    format!(
        "plan: for {}; promise {}: every task's miss probability at most {worst:.4} (per task in plan.json)",
        plan.settings.host.as_deref().unwrap_or("-"),
        plan.settings.guarantee.as_deref().unwrap_or("-")
    )
}

/// Each task's measured DSR against the plan's promise (`1 - miss_bound`).
fn promise_kept_line(plan: &Plan, measured: &Results) -> String {
    let mut broken = vec![];
    for g in &plan.guests {
        for t in &g.tasks {
            let (Some(bound), Some(m)) =
                (t.miss_bound, measured.tasks.iter().find(|r| r.guest == g.name && r.name == t.name))
            else {
                continue;
            };
            let dsr = m.dsr;
            if dsr < 1.0 - bound {
                broken.push(format!("{}/{} DSR {dsr:.4} < {:.4}", g.name, t.name, 1.0 - bound));
            }
        }
    }
    match broken.len() {
        0 => "promise vs measurement: kept (every task's measured DSR at or above 1 - its miss bound)".into(),
        _ => format!("promise vs measurement: BROKEN on {} task(s): {}", broken.len(), broken.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::{Cause, CauseKind, ExplainSection, ExplainedSample};

    fn cause(kind: CauseKind, name: &str, duration_ns: u64) -> Cause {
        Cause { kind, name: name.into(), pid: None, cpu: 1, start_ns: 0, duration_ns, policy: None, kernel_prio: None }
    }

    #[test]
    fn a_late_jobs_causes_are_ranked_by_their_total_and_a_missing_one_says_why() {
        let causes = vec![
            cause(CauseKind::Guest, "vm1/vcpu0", 1_000_000),
            cause(CauseKind::Throttled, "out of budget", 3_000_000),
            cause(CauseKind::Guest, "vm1/vcpu0", 1_500_000),
        ];
        let sample = ExplainedSample {
            task: Some("vm1/t1".into()),
            cpu: 1,
            latency_ns: 5_500_000,
            causes,
            ..Default::default()
        };
        let mut measured = Results::new("tasks", 1);
        measured.explain = Some(ExplainSection { samples: vec![sample], ..Default::default() });
        assert_eq!(
            late_job_line("vm1/t1", &measured),
            "  vm1/t1: longest job 5.5ms on CPU 1: throttled out of budget 3ms, guest vm1/vcpu0 2.5ms"
        );
        assert!(late_job_line("vm2/t1", &measured).contains("vm2/t1: its late jobs not explained"));
    }
}
