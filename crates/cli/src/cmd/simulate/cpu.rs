//! `rtvirt simulate` of the host's CPU scheduling: vCPU threads (or the plan's reservations) and
//! the guests' tasks, printed as per-task and per-guest tables or results JSON.

use super::args::SimulateArgs;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use anyhow::Context;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::{InputError, Nanos};
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

/// Simulate `scenario` (without `[net]`) with the command line's plan and overrides.
pub fn run(scenario: &Scenario, a: &SimulateArgs) -> CmdResult {
    let plan = match &a.plan {
        Some(p) => {
            let plan = Plan::from_file(p)?;
            plan.check_matches(scenario).map_err(|e| e.in_file(p))?;
            Some(plan)
        }
        None => None,
    };
    // scenario errors come back located in the scenario; the plan's name its fields
    let cfg = SimConfig::new(scenario, plan.as_ref(), Overrides { duration: a.duration, seed: a.seed }).map_err(
        |e| match (&a.plan, e.at.field.as_deref()) {
            (Some(p), Some(f)) if f.starts_with("guests") => e.in_file(p),
            _ => e,
        },
    )?;
    if cfg.threads().next().is_none() {
        return Err(scenario
            .locate(InputError::field("guest", "no [[guest]] and no [[sim.thread]]: nothing to simulate"))
            .into());
    }
    let opts = RunOptions { trace: a.trace_window()?, progress: progress_printer(), ..Default::default() };
    // the trace file is created before the run, so that a bad path fails before the work
    let trace_file = match &a.trace {
        Some(path) => {
            Some(std::fs::File::create(path).with_context(|| format!("cannot write trace {}", path.display()))?)
        }
        None => None,
    };
    let started = Instant::now();
    let out = simulate(scenario, &cfg, &opts);
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
        Format::Table => print_table(scenario, &out.results),
    }
    eprintln!(
        "simulated {} in {wall:.2}s wall ({} events, {:.1} M events/s)",
        Nanos(out.results.duration_ns),
        out.events,
        out.events as f64 / wall.max(1e-9) / 1e6
    );
    Ok(Outcome::Ok)
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
        let policy = g.policy.as_deref().unwrap_or("");
        let cores = g.cores.as_deref().map(core_list).unwrap_or_default();
        println!(
            "{:<10} {:<10} {:<8} {:>12} {:>8.4}",
            g.name,
            policy,
            cores,
            Nanos(g.cpu_time_ns).to_string(),
            g.utilisation
        );
    }
    for t in r.simulation.iter().flat_map(|s| s.threads.iter().flatten()) {
        println!(
            "{:<10} {:<10} {:<8} {:>12} {:>8.4}",
            t.name,
            t.policy.as_deref().unwrap_or(""),
            t.cores.as_deref().map_or("null".into(), core_list),
            Nanos(t.cpu_time_ns).to_string(),
            t.utilisation
        );
    }
    println!();
    for c in &r.cores {
        let busy = c.cpu_time_ns.map(|t| format!("  cpu_time {}", Nanos(t))).unwrap_or_default();
        println!("core {:<3} util {:.4}{busy}", c.id, c.utilisation);
    }
}

/// Cores as the table has always shown them: `[0,1]`.
fn core_list(cores: &[u32]) -> String {
    format!("[{}]", cores.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
}
