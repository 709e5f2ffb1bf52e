//! `rtvirt simulate` of the host's CPU scheduling: vCPU threads (or the plan's reservations) and
//! the guests' tasks, printed as per-task and per-guest tables or results JSON.

use super::args::SimulateArgs;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::progress;
use crate::table::{micros, Table};
use anyhow::Context;
use indicatif::ProgressBar;
use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::{InputError, Nanos};
use rtvirt_sim::{simulate_with_host_model, Overrides, RunOptions, SimConfig};
use std::sync::Arc;
use std::time::Instant;

/// Simulate `scenario` (without `[net]`) with the command line's plan and overrides.
pub fn run(scenario: &Scenario, args: &SimulateArgs) -> CmdResult {
    let plan = match &args.plan {
        Some(p) => {
            let plan = Plan::from_file(p)?;
            plan.check_matches(scenario).map_err(|e| e.in_file(p))?;
            Some(plan)
        }
        None if args.adapt => Some(planned(scenario)?),
        None => None,
    };
    let host = args.host_model.as_deref().map(HostModel::from_file).transpose()?;
    // scenario errors come back located in the scenario; the plan's name its fields
    let cfg = SimConfig::new(
        scenario,
        plan.as_ref(),
        Overrides { duration: args.duration, seed: args.seed, tick_phase: args.tick_phase },
    )
    .map_err(|e| match (&args.plan, e.at.field.as_deref()) {
        (Some(p), Some(f)) if f.starts_with("guests") => e.in_file(p),
        _ => e,
    })?;
    let cfg = match (&plan, args.adapt) {
        (Some(p), true) => rtvirt_sim::adapt::adapting(cfg, scenario, p)?,
        _ => cfg,
    };
    if cfg.threads().next().is_none() {
        return Err(scenario
            .locate(InputError::field("guest", "no [[guest]] and no [[sim.thread]]: nothing to simulate"))
            .into());
    }
    let (bar, progress) = progress_bar();
    let opts = RunOptions { trace: args.trace_window()?, progress: Some(progress), ..Default::default() };
    // the trace file is created before the run, so that a bad path fails before the work
    let trace_file = match &args.trace {
        Some(path) => {
            Some(std::fs::File::create(path).with_context(|| format!("cannot write trace {}", path.display()))?)
        }
        None => None,
    };
    let started = Instant::now();
    let out = simulate_with_host_model(scenario, &cfg, &opts, host.as_ref());
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    if let (Some(path), Some(file), Some(trace)) = (&args.trace, trace_file, &out.trace) {
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
    match args.format {
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

/// The plan `--adapt` starts from without `--plan`: the scenario planned as `rtvirt plan` does
/// (its rhos, the default options and the per-core cap of the current kernels).
fn planned(scenario: &Scenario) -> anyhow::Result<Plan> {
    let host = crate::plan_host::HostArgs::default();
    let p = crate::plan_host::plan(scenario, &host, Default::default(), None)?.0;
    if !p.plan.feasible {
        let why: Vec<String> = p.unplaced.iter().map(|u| format!("{}: {}", u.name, u.reason)).collect();
        return Err(InputError::field(
            "--adapt",
            format!("the scenario's plan is infeasible ({}): expected a feasible scenario or --plan", why.join("; ")),
        )
        .into());
    }
    Ok(p.plan)
}

/// Progress on stderr for runs that take more than a couple of seconds: a bar on terminals, else
/// a line at every tenth of the horizon.
fn progress_bar() -> (ProgressBar, Arc<dyn Fn(u64, u64) + Send + Sync>) {
    let bar = progress::bar("{bar:40} {percent:>3}% simulated {msg}");
    let shown = bar.clone();
    let started = Instant::now();
    let tenths = std::sync::atomic::AtomicU64::new(0);
    let report = move |now: u64, horizon: u64| {
        if started.elapsed().as_secs() < 2 {
            return;
        }
        let what = format!("{} / {}", Nanos(now), Nanos(horizon));
        if shown.is_hidden() {
            let tenth = (u128::from(now) * 10 / u128::from(horizon.max(1))) as u64;
            if tenth > tenths.fetch_max(tenth, std::sync::atomic::Ordering::Relaxed) {
                eprintln!("rtvirt: simulated {what} ({}s wall)", started.elapsed().as_secs());
            }
            return;
        }
        shown.set_length(horizon);
        shown.set_position(now);
        shown.set_message(what);
    };
    (bar, Arc::new(report))
}

fn print_table(scenario: &Scenario, results: &Results) {
    println!("scenario {}  seed {}  horizon {}", scenario.name, results.seed.unwrap_or(0), Nanos(results.duration_ns));
    println!();
    let header =
        ["guest", "task", "jobs", "misses", "DSR", "mean_us", "sd_us", "p50_us", "p99_us", "p999_us", "max_us"];
    let mut tasks = Table::new(&header, 2);
    for t in &results.tasks {
        let x = &t.response_ns;
        let mut cells = vec![t.guest.clone(), t.name.clone(), t.jobs.to_string(), t.misses.to_string()];
        cells.push(format!("{:.5}", t.dsr));
        cells.extend([x.mean, x.sd].map(micros));
        cells.extend([x.p50, x.p99, x.p999, x.max].map(|v| micros(v as f64)));
        tasks.row(cells);
    }
    tasks.print();
    println!();
    let mut threads = Table::new(&["guest", "policy", "cores", "cpu_time", "util"], 3);
    for g in &results.guests {
        let policy = g.policy.clone().unwrap_or_default();
        let cores = g.cores.as_deref().map(core_list).unwrap_or_default();
        let cpu_time = Nanos(g.cpu_time_ns).to_string();
        threads.row([g.name.clone(), policy, cores, cpu_time, format!("{:.4}", g.utilisation)]);
    }
    for t in results.simulation.iter().flat_map(|scenario| scenario.threads.iter().flatten()) {
        let policy = t.policy.clone().unwrap_or_default();
        let cores = t.cores.as_deref().map_or("null".into(), core_list);
        let cpu_time = Nanos(t.cpu_time_ns).to_string();
        threads.row([t.name.clone(), policy, cores, cpu_time, format!("{:.4}", t.utilisation)]);
    }
    threads.print();
    println!();
    for c in &results.cores {
        let busy = c.cpu_time_ns.map(|t| format!("  cpu_time {}", Nanos(t))).unwrap_or_default();
        println!("core {:<3} util {:.4}{busy}", c.id, c.utilisation);
    }
}

/// Cores as the table has always shown them: `[0,1]`.
fn core_list(cores: &[u32]) -> String {
    format!("[{}]", cores.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
}
