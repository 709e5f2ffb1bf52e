//! `rtvirt simulate --sweep`: a grid of simulations (scenarios x rho x seeds) run in parallel.

use super::args::SimulateArgs;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::InputError;
use rtvirt_sim::sweep::{run_sweep, SweepSpec};
use std::io::IsTerminal;

pub fn run_grid(path: &std::path::Path, a: &SimulateArgs) -> CmdResult {
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
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} sweep cells failed (each cell's error is in its row and in its \"error\" field)",
            results.len()
        );
    }
    Ok(Outcome::Ok)
}

fn print_grid(results: &[Results]) {
    println!(
        "{:<40} {:>6} {:>6} {:>10} {:>8} {:>9} {:>9}",
        "scenario", "rho", "seed", "jobs", "misses", "DSR", "min_DSR"
    );
    for r in results {
        let rho = r.rho.map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into());
        // the file name (the JSON keeps the scenario's full path)
        let sc = r.scenario.as_deref().unwrap_or("");
        let sc = std::path::Path::new(sc).file_name().map_or(sc.into(), |f| f.to_string_lossy());
        if let Some(error) = &r.error {
            println!("{:<40} {:>6} {:>6} FAILED: {error}", sc, rho, r.seed.unwrap_or(0));
            continue;
        }
        let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
        let misses: u64 = r.tasks.iter().map(|t| t.misses).sum();
        let min = r.tasks.iter().map(|t| t.dsr).fold(1.0, f64::min);
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
