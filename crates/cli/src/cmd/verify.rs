//! `rtvirt verify`: a plan's prediction checked against a measurement on this host. The
//! scenario's task sets run for real under the plan's reservations (`rtvirt_probe::tasks`, as
//! `measure tasks`), the same scenario, plan, seed and host model are simulated (`rtvirt_sim`, as
//! `simulate --plan --host-model`) over the time the measurement really ran, and `rtvirt_model::verify` compares them
//! task by task against the stated tolerance. Exit 1 when they disagree, 2 on bad input, 130
//! after Ctrl-C (the comparison of the part that ran is still printed).

use crate::cli_common::{load_scenario, print_json, CmdResult, Format, Outcome};
use crate::table::Table;
use anyhow::Context as _;
use clap::Args;
use rtvirt_loop::prediction;
use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::verify::{Side, Tolerance, Verdict, Verification};
use rtvirt_model::{InputError, Nanos};
use rtvirt_probe::tasks::TasksConfig;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Args)]
#[command(after_help = "Agreement (--tolerance, defaults in brackets): per task and over all jobs, the measured \
DSR within dsr [3] percentage points of the predicted one; per task with at least jobs [100] jobs on both sides, \
the measured p99 response time within a factor p99 [2] of the predicted one, or within slack [1ms] of it (below \
that the difference is the timer latency of a kernel that is not PREEMPT_RT). Where either side has fewer than 10 \
jobs beyond its p99 (under 1,000 jobs), the p99 compares noise: the highest of p95 and p90 with 10 beyond it is \
judged instead (the \"tail ratio\" column names it; a ratio in brackets is shown, not judged). p50 and max are \
shown, not judged.\n\n\
Runs on this host only (needs root: SCHED_DEADLINE reservations in exclusive cpusets, restored afterwards, also \
on Ctrl-C).\n\nExit codes: 0 prediction and measurement agree; 1 they disagree beyond the tolerance; 2 bad input \
or environment; 130 interrupted (the part that ran is compared and printed).\n\nExamples:\n  rtvirt plan s.toml \
--format json > plan.json && rtvirt verify s.toml --plan plan.json\n  rtvirt verify --rho 0.5 --duration 30s \
--tolerance dsr=1,p99=1.5 --format json\n  rtvirt host calibrate -o host.json && rtvirt verify s.toml --plan plan.json \
--host-model host.json\n  rtvirt verify s.toml --plan plan.json --keep out/ && rtvirt report \
out/simulated.json out/measured.json -o report.html")]
pub struct VerifyArgs {
    /// Scenario file (TOML). Without it, the embedded default scenario.
    pub scenario: Option<PathBuf>,
    /// Plan (rtvirt.plan/v1 JSON from `rtvirt plan --format json`). Without it, the scenario is
    /// planned here.
    #[arg(long, value_name = "PLAN.json")]
    pub plan: Option<PathBuf>,
    /// When planning here: one rho for every task (overrides the scenario's rhos).
    #[arg(long, conflicts_with = "plan")]
    pub rho: Option<f64>,
    /// The host: the prediction simulates its costs (as `simulate --host-model`), and a plan
    /// made here is made for it (as `plan --host`).
    #[command(flatten)]
    pub host: crate::plan_host::HostArgs,
    /// How long to run (and simulate) the task sets.
    #[arg(long, value_parser = parse_nanos, default_value = "10s")]
    pub duration: Nanos,
    /// Seed of the execution-time draws, the same for both sides.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How far measurement may be from prediction: dsr=PP,p99=RATIO,slack=TIME,jobs=N (any
    /// subset; see below).
    #[arg(long, default_value = "")]
    pub tolerance: String,
    /// Also write simulated.json and measured.json (rtvirt.results/v1) and verify.json here, for
    /// `rtvirt report` (created if missing).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Start the task sets so that the host's scheduler ticks fall TIME after their first release
    /// (e.g. 0ns, 1500us): under tick enforcement (no HRTICK) a reservation that runs out of
    /// budget overruns until the next tick, so results depend on this phase. Without it the run
    /// starts when it is ready; the phase it had is recorded (`tick_phase_ns`) either way, and
    /// `verify` simulates with it.
    #[arg(long, value_parser = rtvirt_model::Nanos::parse, value_name = "TIME")]
    pub tick_phase: Option<rtvirt_model::Nanos>,
    /// Allow runs over one hour.
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn parse_nanos(text: &str) -> Result<Nanos, String> {
    match Nanos::parse(text)? {
        Nanos(0) => Err("must be longer than 0".into()),
        n => Ok(n),
    }
}

/// Exit code after Ctrl-C (128 + SIGINT).
const INTERRUPTED_EXIT: i32 = 130;

/// The files `--keep` writes.
const KEPT: [&str; 3] = ["simulated.json", "measured.json", "verify.json"];

pub fn run(args: VerifyArgs) -> CmdResult {
    let inputs: Vec<&Path> =
        args.scenario.iter().chain(&args.plan).map(|p| p.as_path()).chain(args.host.inputs()).collect();
    if let Some(dir) = &args.keep {
        crate::output_file::check_in_dir("--keep", dir, &KEPT, &inputs)?;
    }
    let scenario = load_scenario(args.scenario.as_deref())?;
    let tolerance = Tolerance::parse(&args.tolerance)?;
    let (plan, host) = plan_of(&scenario, &args)?;
    warn_payback(&plan, host.as_ref());
    if let Some(dir) = &args.keep {
        std::fs::create_dir_all(dir).with_context(|| format!("--keep: cannot create {}", dir.display()))?;
        crate::output_file::check_in_dir("--keep", dir, &KEPT, &inputs)?;
    }
    // every input is checked before the measurement: the simulation's configuration too
    prediction::config(&scenario, &plan, args.duration, args.seed, None).map_err(|e| locate(e, &args))?;
    rtvirt_os::signals::install();
    let config = TasksConfig {
        duration: args.duration,
        seed: args.seed,
        force: args.force,
        state_dir: Some(rtvirt_host::journal::default_state_dir()),
        window: None,
        explain: false,
        tick_phase: args.tick_phase,
    };
    let measured = with_progress(args.duration, &scenario, || rtvirt_probe::tasks::run(&scenario, &plan, &config))?;
    let predicted =
        prediction::of_run(&scenario, &plan, host.as_ref(), &measured, args.seed).map_err(|e| locate(e, &args))?;
    let mut verification = Verification::compare(&predicted, &measured, tolerance).map_err(anyhow::Error::msg)?;
    verification.scenario = scenario.name.clone();
    verification.host_model = args.host.host_model.as_ref().map(|p| p.display().to_string());
    match args.format {
        Format::Json => print_json(&verification)?,
        Format::Table => print_table(&verification),
    }
    if let Some(dir) = &args.keep {
        keep(dir, &predicted, &measured, &verification)?;
    }
    if verification.interrupted {
        eprintln!("rtvirt: interrupted (Ctrl-C): compared over the {} that ran", Nanos(measured.duration_ns));
        std::process::exit(INTERRUPTED_EXIT);
    }
    Ok(if verification.verdict == Verdict::Agree { Outcome::Ok } else { Outcome::Failed })
}

/// A plan made without a host model, run on a host that enforces at the tick (the given model's,
/// else the default model's 4 ms): the guests whose overrun pay-back outlasts a task deadline
/// (`overhead::payback_warnings`), on stderr before the run.
fn warn_payback(plan: &Plan, host: Option<&HostModel>) {
    let model = host.cloned().unwrap_or_else(HostModel::uncalibrated);
    let which = if host.is_some() { "the host model's" } else { "the default host model's" };
    for w in rtvirt_analysis::overhead::payback_warnings(plan, &rtvirt_analysis::overhead::Overheads::of(&model)) {
        eprintln!("rtvirt: warning ({which} enforcement): {w}");
    }
}

/// The plan from `--plan` (checked against the scenario), else planned here (at `--rho`) through
/// the one planning path for the host of `--host`; and that host's model (None: ideal).
fn plan_of(scenario: &Scenario, args: &VerifyArgs) -> anyhow::Result<(Plan, Option<HostModel>)> {
    let (plan, host) = match &args.plan {
        Some(path) => {
            let p = Plan::from_file(path)?;
            p.check_matches(scenario).map_err(|e| e.in_file(path))?;
            (p, args.host.model()?)
        }
        None => {
            if let Some(r) = args.rho.filter(|r| !(*r > 0.0 && *r <= 1.0)) {
                return Err(InputError::field("--rho", format!("{r}: expected 0 < rho <= 1")).into());
            }
            let (p, host) = crate::plan_host::plan(scenario, &args.host, Default::default(), args.rho)?;
            (p.plan, host.model)
        }
    };
    if !plan.feasible {
        let from = args.plan.as_ref().map_or("the plan made here".to_string(), |p| p.display().to_string());
        return Err(InputError::new(format!(
            "{from} is infeasible: it has no reservations to run and predict (see `rtvirt plan`)"
        ))
        .into());
    }
    Ok((plan, host))
}

/// A configuration error located in the scenario, or in the plan file for its guests.
fn locate(e: InputError, args: &VerifyArgs) -> anyhow::Error {
    match (&args.plan, e.at.field.as_deref()) {
        (Some(p), Some(f)) if f.starts_with("guests") => e.in_file(p).into(),
        _ => e.into(),
    }
}

/// Run `measure`, showing its progress on stderr: a bar over the run's length on a terminal, one
/// line otherwise.
fn with_progress<T>(duration: Nanos, scenario: &Scenario, measure: impl FnOnce() -> T) -> T {
    let what = format!("running {} guest(s) of \"{}\" under their reservations", scenario.guests.len(), scenario.name);
    let bar = crate::progress::bar("{msg} {bar:30} {percent:>3}%");
    if bar.is_hidden() {
        crate::cmd::measure::progress(duration, &what);
    }
    bar.set_length(duration.0);
    bar.set_message(what);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            while !done.load(Ordering::SeqCst) {
                bar.set_position((start.elapsed().as_nanos() as u64).min(duration.0));
                std::thread::sleep(Duration::from_millis(200));
            }
            bar.finish_and_clear();
        });
        let out = measure();
        done.store(true, Ordering::SeqCst);
        out
    })
}

fn keep(dir: &Path, predicted: &Results, measured: &Results, verification: &Verification) -> anyhow::Result<()> {
    let mut predicted = predicted.clone();
    predicted.label = Some("predicted (simulated)".into());
    let mut measured = measured.clone();
    measured.label = Some("measured".into());
    write_json(&dir.join("simulated.json"), &predicted)?;
    write_json(&dir.join("measured.json"), &measured)?;
    write_json(&dir.join("verify.json"), verification)?;
    eprintln!("rtvirt: wrote simulated.json, measured.json and verify.json to {}", dir.display());
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The comparison for people: one row per task (predicted / measured), the totals, the verdict
/// and every reason for a disagreement.
pub fn print_table(v: &Verification) {
    println!(
        "verify \"{}\": seed {}, {} predicted and {} measured",
        v.scenario,
        v.seed,
        Nanos(v.duration_ns),
        Nanos(v.measured_duration_ns)
    );
    let header = [
        "guest",
        "task",
        "jobs",
        "misses",
        "DSR pred",
        "DSR meas",
        "diff pp",
        "p50 pred/meas",
        "p99 pred/meas",
        "tail ratio",
        "max pred/meas",
        "verdict",
    ];
    let mut table = Table::aligned(&header, |c| !matches!(c, 0 | 1 | 11));
    for t in &v.tasks {
        let ratio = match (&t.tail_percentile, t.tail_ratio, t.p99_ratio) {
            (Some(key), Some(r), _) => format!("x{r:.2} {key}"),
            (_, _, Some(r)) => format!("(x{r:.2} p99)"),
            _ => "-".into(),
        };
        table.row([
            t.guest.clone(),
            t.name.clone(),
            both(&t.predicted, &t.measured, |s| s.jobs.to_string()),
            both(&t.predicted, &t.measured, |s| s.misses.to_string()),
            format!("{:.4}", t.predicted.dsr),
            format!("{:.4}", t.measured.dsr),
            format!("{:+.2}", t.dsr_difference_points),
            response(t, |s| s.p50),
            response(t, |s| s.p99),
            ratio,
            response(t, |s| s.max),
            verdict(t.verdict).into(),
        ]);
    }
    let tot = &v.totals;
    table.row([
        "all".into(),
        "".into(),
        both(&tot.predicted, &tot.measured, |s| s.jobs.to_string()),
        both(&tot.predicted, &tot.measured, |s| s.misses.to_string()),
        format!("{:.4}", tot.predicted.dsr),
        format!("{:.4}", tot.measured.dsr),
        format!("{:+.2}", tot.dsr_difference_points),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        verdict(tot.verdict).to_string(),
    ]);
    table.print();
    println!(
        "tolerance: {}; tail ratio at the p99, or at the p95/p90 where fewer than 10 jobs lie beyond a side's p99; (x..): not judged (too few jobs)",
        v.tolerance.describe()
    );
    let disagreeing: Vec<_> = v.disagreeing().collect();
    match (v.verdict, disagreeing.len()) {
        (Verdict::Agree, _) => println!("verdict: prediction and measurement agree"),
        (Verdict::Disagree, n) => {
            println!("verdict: prediction and measurement DISAGREE ({n} of {} tasks)", v.tasks.len());
            for t in disagreeing {
                for reason in &t.reasons {
                    println!("  {}/{}: {reason}", t.guest, t.name);
                }
            }
            if tot.verdict == Verdict::Disagree {
                println!("  all tasks: DSR {:+.2} pp, beyond {} pp", tot.dsr_difference_points, v.tolerance.dsr_points);
            }
        }
    }
}

fn both(predicted: &Side, measured: &Side, f: impl Fn(&Side) -> String) -> String {
    format!("{}/{}", f(predicted), f(measured))
}

/// A response-time percentile on both sides, in microseconds.
fn response(t: &rtvirt_model::verify::TaskComparison, f: impl Fn(&rtvirt_model::stats::Summary) -> u64) -> String {
    let us = |s: &Side| s.response_ns.as_ref().map_or("-".into(), |r| format!("{:.0}", f(r) as f64 / 1e3));
    format!("{}/{}us", us(&t.predicted), us(&t.measured))
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Agree => "agree",
        Verdict::Disagree => "DISAGREE",
    }
}
