//! `rtvirt simulate --sweep`: a grid of simulations (scenarios x rho x seeds) run in parallel.

use super::args::SimulateArgs;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::progress;
use crate::table::Table;
use rtvirt_model::results::Results;
use rtvirt_model::InputError;
use rtvirt_sim::sweep::{run_sweep, SweepSpec, MAX_THREADS};

pub fn run_grid(path: &std::path::Path, args: &SimulateArgs) -> CmdResult {
    if args.plan.is_some() || args.trace.is_some() || args.seed.is_some() || args.host_model.is_some() {
        return Err(InputError::new(
            "--sweep takes its seeds and rho from the sweep file; --plan, --seed, --trace and --host-model apply to \
             single runs",
        )
        .into());
    }
    let mut spec = SweepSpec::from_file(path)?;
    if args.duration.is_some() {
        spec.duration = args.duration;
    }
    if let Some(n) = args.threads.filter(|n| !(1..=MAX_THREADS).contains(n)) {
        return Err(InputError::field("--threads", format!("{n}: expected 1 to {MAX_THREADS} worker threads")).into());
    }
    let planner = rtvirt_analysis::requests::plan_sweep_cell;
    let bar = progress::bar("{pos}/{len} runs {bar:40} {elapsed}");
    let progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let results = run_sweep(&spec, &planner, args.threads, &progress);
    bar.finish_and_clear();
    let results = results?;
    match args.format {
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
    let header = ["scenario", "rho", "seed", "jobs", "misses", "DSR", "min_DSR", ""];
    let mut table = Table::aligned(&header, |column| (1..7).contains(&column));
    for r in results {
        let rho = r.rho.map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into());
        // the file name (the JSON keeps the scenario's full path)
        let scenario = r.scenario.as_deref().unwrap_or("");
        let scenario = std::path::Path::new(scenario).file_name().map_or(scenario.into(), |f| f.to_string_lossy());
        let mut cells = vec![scenario.into_owned(), rho, r.seed.unwrap_or(0).to_string()];
        match &r.error {
            Some(error) => cells.extend(vec![String::new(); 4].into_iter().chain([format!("FAILED: {error}")])),
            None => {
                let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
                let misses: u64 = r.tasks.iter().map(|t| t.misses).sum();
                let min = r.tasks.iter().map(|t| t.dsr).fold(1.0, f64::min);
                let dsr = rtvirt_model::results::TaskResult::dsr_of(jobs, misses);
                cells.extend([jobs.to_string(), misses.to_string(), format!("{dsr:.5}"), format!("{min:.5}")]);
            }
        }
        table.row(cells);
    }
    table.print();
}
