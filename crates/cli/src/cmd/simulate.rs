//! `rtvirt simulate`: scenario [+ plan] -> deterministic simulation results (and a trace), or a
//! parallel sweep over scenarios x rho x seeds.

use crate::cli_common::{load_scenario, print_json, CmdResult, Format, Outcome};
use anyhow::Context;
use clap::Args;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::sim::locate_sim_error;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::{InputError, Nanos};
use rtvirt_sim::engine::trace::{TraceWindow, MAX_TRACE_EVENTS};
use rtvirt_sim::sweep::{run_sweep, SweepSpec};
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args)]
#[command(after_help = "The host, the vCPU policies (fifo, rr, deadline, other, credit, rtds, ds, ps, supply) \
and extra host threads come from the scenario's [sim] and [guest.vcpu] sections (see docs/simulate.md); \
without [guest.vcpu] a vCPU is a SCHED_OTHER thread on core (guest index mod cores). \
--plan turns every vCPU into a SCHED_DEADLINE reservation from `rtvirt plan --format json`.\n\n\
Same scenario + same seed = byte-identical results. Deadline misses are results, not errors: \
the exit code is 0 unless the input is wrong (2).\n\n\
Examples:\n  rtvirt simulate scenarios/sim_policies.toml --duration 5s --trace trace.json\n  \
rtvirt plan s.toml --format json > plan.json && rtvirt simulate s.toml --plan plan.json --format json\n  \
rtvirt simulate --sweep experiments/seeds5_dsr_vs_rho.sweep.toml --threads 2")]
pub struct SimulateArgs {
    /// Scenario file (TOML). Without it (and without --sweep), the embedded default scenario.
    #[arg(conflicts_with = "sweep")]
    pub scenario: Option<PathBuf>,
    /// Apply a plan (rtvirt.plan/v1 JSON) as SCHED_DEADLINE reservations of the vCPU threads.
    #[arg(long, value_name = "PLAN.json")]
    pub plan: Option<PathBuf>,
    /// Simulated horizon, e.g. 10s (default: the scenario's [sim] duration, else 10s).
    #[arg(long, value_parser = parse_nanos)]
    pub duration: Option<Nanos>,
    /// Random seed (default: the scenario's [sim] seed, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write a Chrome trace-event JSON (open it in https://ui.perfetto.dev): a track per core
    /// (which host thread runs) and per guest (which task runs).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Start of the traced window.
    #[arg(long, value_parser = parse_nanos, default_value = "0s")]
    pub trace_from: Nanos,
    /// Length of the traced window.
    #[arg(long, value_parser = parse_nanos, default_value = "1s")]
    pub trace_window: Nanos,
    /// Most events kept in the trace (at most 20000000); later ones are counted as dropped.
    #[arg(long, default_value_t = 1_000_000)]
    pub trace_max_events: usize,
    /// Run a grid of simulations described by a sweep file (scenarios x rho x seeds).
    #[arg(long, value_name = "SWEEP.toml")]
    pub sweep: Option<PathBuf>,
    /// Worker threads for --sweep (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

fn parse_nanos(s: &str) -> Result<Nanos, String> {
    Nanos::parse(s)
}

pub fn run(a: SimulateArgs) -> CmdResult {
    if let Some(sweep) = &a.sweep {
        return run_grid(sweep, &a);
    }
    let scenario = load_scenario(a.scenario.as_deref())?;
    if scenario.net.is_some() {
        if a.plan.is_some() {
            return Err(InputError::field("--plan", "the scenario has a [net] section: the network-path simulator places and prioritises its threads from [net] itself; a plan applies to scenarios without [net]").into());
        }
        return super::netsim::run(&scenario, &a);
    }
    let plan = match &a.plan {
        Some(p) => {
            let plan = Plan::from_file(p)?;
            plan.check_matches(&scenario).map_err(|e| e.in_file(p))?;
            Some(plan)
        }
        None => None,
    };
    let cfg = SimConfig::new(&scenario, plan.as_ref(), Overrides { duration: a.duration, seed: a.seed }).map_err(
        |e| match (&a.plan, e.at.field.as_deref()) {
            (Some(p), Some(f)) if f.starts_with("guests") => e.in_file(p),
            (_, Some(f)) if f.starts_with("--") => e,
            _ => locate_sim_error(e, &scenario),
        },
    )?;
    if cfg.threads().next().is_none() {
        return Err(locate_sim_error(
            InputError::field("guest", "no [[guest]] and no [[sim.thread]]: nothing to simulate"),
            &scenario,
        )
        .into());
    }
    let opts = RunOptions { trace: trace_window(&a)?, progress: progress_printer(), ..Default::default() };
    // the trace file is created before the run, so that a bad path fails before the work
    let trace_file = match &a.trace {
        Some(path) => {
            Some(std::fs::File::create(path).with_context(|| format!("cannot write trace {}", path.display()))?)
        }
        None => None,
    };
    let started = Instant::now();
    let out = simulate(&scenario, &cfg, &opts);
    let wall = started.elapsed().as_secs_f64();
    if let (Some(path), Some(file), Some(trace)) = (&a.trace, trace_file, &out.trace) {
        trace
            .write_json(std::io::BufWriter::new(file))
            .with_context(|| format!("cannot write trace {}", path.display()))?;
        eprintln!(
            "trace: {} events written to {} ({} dropped: beyond --trace-max-events)",
            trace.len(),
            path.display(),
            trace.dropped()
        );
    }
    match a.format {
        Format::Json => print_json(&out.results)?,
        Format::Table => print_table(&scenario, &out.results),
    }
    eprintln!(
        "simulated {} in {wall:.2}s wall ({} events, {:.1} M events/s)",
        Nanos(out.results.duration_ns),
        out.events,
        out.events as f64 / wall.max(1e-9) / 1e6
    );
    Ok(Outcome::Ok)
}

fn trace_window(a: &SimulateArgs) -> Result<Option<TraceWindow>, InputError> {
    if a.trace.is_none() {
        return Ok(None);
    }
    if a.trace_max_events == 0 || a.trace_max_events > MAX_TRACE_EVENTS {
        return Err(InputError::field(
            "--trace-max-events",
            format!("{}: expected 1..{MAX_TRACE_EVENTS} (a larger trace would not fit in memory)", a.trace_max_events),
        ));
    }
    if a.trace_window.0 == 0 {
        return Err(InputError::field("--trace-window", "zero window: expected a positive duration"));
    }
    let to = a.trace_from.checked_add(a.trace_window).unwrap_or(Nanos::MAX);
    Ok(Some(TraceWindow { from: a.trace_from, to, max_events: a.trace_max_events }))
}

/// Progress on stderr (terminals only) for runs that take more than a couple of seconds.
fn progress_printer() -> Option<Arc<dyn Fn(u64, u64) + Send + Sync>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let started = Instant::now();
    Some(Arc::new(move |now, horizon| {
        if started.elapsed().as_secs() >= 2 {
            eprint!("\rsimulated {} / {} ({:.0}%)   ", Nanos(now), Nanos(horizon), 100.0 * now as f64 / horizon as f64);
        }
    }))
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

fn print_table(s: &Scenario, r: &Results) {
    println!("scenario {}  seed {}  horizon {}", s.name, r.seed.unwrap_or(0), Nanos(r.duration_ns));
    println!();
    println!(
        "{:<10} {:<10} {:>9} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "guest", "task", "jobs", "misses", "DSR", "mean_us", "sd_us", "p50_us", "p99_us", "p999_us", "max_us"
    );
    for t in &r.tasks {
        let x = &t.response_ns;
        println!(
            "{:<10} {:<10} {:>9} {:>7} {:>8.5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            t.guest,
            t.name,
            t.jobs,
            t.misses,
            t.dsr,
            us(x.mean),
            us(x.sd),
            us(x.p50 as f64),
            us(x.p99 as f64),
            us(x.p999 as f64),
            us(x.max as f64)
        );
    }
    println!();
    println!("{:<10} {:<10} {:<8} {:>12} {:>8}", "guest", "policy", "cores", "cpu_time", "util");
    for g in &r.guests {
        let policy = g.extra.get("policy").and_then(|v| v.as_str()).unwrap_or("");
        let cores = g.extra.get("cores").map(|v| v.to_string()).unwrap_or_default();
        println!(
            "{:<10} {:<10} {:<8} {:>12} {:>8.4}",
            g.name,
            policy,
            cores,
            Nanos(g.cpu_time_ns).to_string(),
            g.utilisation
        );
    }
    if let Some(threads) = r.extra.get("threads").and_then(|v| v.as_array()) {
        for t in threads {
            let name = t["name"].as_str().unwrap_or("");
            println!(
                "{:<10} {:<10} {:<8} {:>12} {:>8.4}",
                name,
                t["policy"].as_str().unwrap_or(""),
                t["cores"].to_string(),
                Nanos(t["cpu_time_ns"].as_u64().unwrap_or(0)).to_string(),
                t["utilisation"].as_f64().unwrap_or(0.0)
            );
        }
    }
    println!();
    for c in &r.cores {
        let busy = c.cpu_time_ns.map(|t| format!("  cpu_time {}", Nanos(t))).unwrap_or_default();
        println!("core {:<3} util {:.4}{busy}", c.id, c.utilisation);
    }
}

fn run_grid(path: &std::path::Path, a: &SimulateArgs) -> CmdResult {
    if a.plan.is_some() || a.trace.is_some() || a.seed.is_some() {
        return Err(InputError::new(
            "--sweep takes its seeds and rho from the sweep file; --plan, --seed and --trace apply to single runs",
        )
        .into());
    }
    let mut spec = SweepSpec::from_file(path)?;
    if a.duration.is_some() {
        spec.duration = a.duration;
    }
    if a.threads == Some(0) {
        return Err(InputError::field("--threads", "0: expected at least one worker thread").into());
    }
    let planner = |s: &Scenario, rho: f64| -> Result<Plan, InputError> {
        let o = rtvirt_analysis::planner::PlanOptions::default();
        let p = rtvirt_analysis::planner::plan_at(s, &o, Some(rho));
        if !p.plan.feasible {
            let why: Vec<String> = p.unplaced.iter().map(|u| format!("{}: {}", u.name, u.reason)).collect();
            return Err(InputError::field(
                "rho",
                format!("at rho {rho} the plan of \"{}\" is infeasible ({})", s.name, why.join("; ")),
            ));
        }
        Ok(p.plan)
    };
    let tty = std::io::stderr().is_terminal();
    let progress = move |done: usize, total: usize| {
        if tty {
            eprint!("\r{done}/{total} runs   ");
        }
    };
    let results = run_sweep(&spec, &planner, a.threads, &progress)?;
    if tty {
        eprintln!();
    }
    match a.format {
        Format::Json => print_json(&results)?,
        Format::Table => print_grid(&results),
    }
    Ok(Outcome::Ok)
}

fn print_grid(results: &[Results]) {
    println!(
        "{:<40} {:>6} {:>6} {:>10} {:>8} {:>9} {:>9}",
        "scenario", "rho", "seed", "jobs", "misses", "DSR", "min_DSR"
    );
    for r in results {
        let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
        let misses: u64 = r.tasks.iter().map(|t| t.misses).sum();
        let min = r.tasks.iter().map(|t| t.dsr).fold(1.0, f64::min);
        let rho = r.extra.get("rho").and_then(|v| v.as_f64()).map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into());
        // the file name (the JSON keeps the scenario's full path)
        let sc = r.extra.get("scenario").and_then(|v| v.as_str()).unwrap_or("");
        let sc = std::path::Path::new(sc).file_name().map_or(sc.into(), |f| f.to_string_lossy());
        println!(
            "{:<40} {:>6} {:>6} {:>10} {:>8} {:>9.5} {:>9.5}",
            sc,
            rho,
            r.seed.unwrap_or(0),
            jobs,
            misses,
            rtvirt_model::results::TaskResult::dsr_of(jobs, misses),
            min
        );
    }
}
