//! Grids of simulation runs (`rtvirt simulate --sweep SWEEP.toml`, the file format is
//! [`rtvirt_model::sweep`]): scenarios x rho x seeds, run in parallel with rayon. Every cell is
//! an independent run with its own seed and results come back in grid order, so the output is
//! identical whatever the number of threads.
//!
//! Planning is done by the caller's `planner` (the CLI passes `rtvirt-analysis`), so this crate
//! keeps depending on the model only.

use crate::config::{Overrides, SimConfig};
use crate::run::{simulate, RunOptions};
use rayon::prelude::*;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::sweep::Sweep;
pub use rtvirt_model::sweep::MAX_CELLS;
use rtvirt_model::{InputError, Nanos};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A checked sweep.
#[derive(Debug)]
pub struct SweepSpec {
    pub scenarios: Vec<(PathBuf, Scenario)>,
    pub seeds: Vec<u64>,
    /// Empty: run the scenarios as they are (no planning).
    pub rho: Vec<f64>,
    pub duration: Option<Nanos>,
}

/// One cell of the grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    pub scenario: usize,
    pub rho: Option<f64>,
    pub seed: u64,
}

impl SweepSpec {
    /// Read a checked sweep file ([`Sweep`]) and check that the simulator can run each scenario.
    pub fn from_file(path: &Path) -> Result<SweepSpec, InputError> {
        SweepSpec::from_sweep(Sweep::from_file(path)?)
    }

    /// Check that the simulator can run each scenario of a checked sweep.
    pub fn from_sweep(sweep: Sweep) -> Result<SweepSpec, InputError> {
        let Sweep { scenarios, seeds, rho, duration } = sweep;
        for (_, s) in &scenarios {
            SimConfig::new(s, None, Overrides { duration, seed: None, ..Default::default() })?;
        }
        Ok(SweepSpec { scenarios, seeds, rho, duration })
    }

    /// The grid in output order: scenario, then rho, then seed.
    pub fn cells(&self) -> Vec<Cell> {
        let rhos: Vec<Option<f64>> =
            if self.rho.is_empty() { vec![None] } else { self.rho.iter().map(|&r| Some(r)).collect() };
        let mut out = Vec::new();
        for s in 0..self.scenarios.len() {
            for &rho in &rhos {
                for &seed in &self.seeds {
                    out.push(Cell { scenario: s, rho, seed });
                }
            }
        }
        out
    }
}

/// Most worker threads of a sweep (`simulate --sweep --threads`): more would only cost memory and
/// process ids.
pub const MAX_THREADS: usize = 1024;

/// Worker threads for `cells` cells: `threads` (None: all cores), at most [`MAX_THREADS`] and
/// one per cell.
fn workers(threads: Option<usize>, cells: usize) -> usize {
    let wanted = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    wanted.min(MAX_THREADS).min(cells).max(1)
}

/// Plans a scenario at a uniform rho.
pub type Planner<'a> = &'a (dyn Fn(&Scenario, f64) -> Result<Plan, InputError> + Sync);

/// Run every cell on `threads` threads (None: all cores; at most [`MAX_THREADS`] and one per
/// cell). `progress(done, total)` is called as
/// cells finish. Results are in [`SweepSpec::cells`] order, each labelled with its cell. A cell
/// that cannot run (its rho has no feasible plan, its configuration is refused) does not stop the
/// others: its document carries the cell (scenario, rho, seed) and the reason in `"error"`.
pub fn run_sweep(
    spec: &SweepSpec,
    planner: Planner,
    threads: Option<usize>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Results>, InputError> {
    let cells = spec.cells();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers(threads, cells.len()))
        .build()
        .map_err(|e| InputError::new(format!("cannot start worker threads: {e}")))?;
    pool.install(|| {
        let plans = plan_all(spec, planner);
        let done = AtomicUsize::new(0);
        Ok(cells
            .par_iter()
            .map(|c| {
                let (path, s) = &spec.scenarios[c.scenario];
                let plan = c.rho.and_then(|r| plans.iter().find(|p| p.0 == c.scenario && p.1 == r)).map(|p| &p.2);
                let r = labelled_cell(path, s, plan, spec.duration, c);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, cells.len());
                r
            })
            .collect())
    })
}

/// Run one cell on its own (a cell sent to another machine: `rtvirt.sweep(engine="ray")` in
/// Python): planned with `planner` at its rho, then simulated; the same document as the cell's
/// in [`run_sweep`], byte for byte.
pub fn run_one_cell(
    path: &Path,
    scenario: &Scenario,
    cell: &Cell,
    duration: Option<Nanos>,
    planner: Planner,
) -> Results {
    let plan = cell.rho.map(|r| planner(scenario, r).map_err(|e| e.in_file(path)));
    labelled_cell(path, scenario, plan.as_ref(), duration, cell)
}

/// The document of a cell that ran elsewhere and could not finish there (its worker died):
/// labelled as [`run_one_cell`] labels it, with `reason` as its error.
pub fn lost_cell(path: &Path, cell: &Cell, reason: &str) -> Results {
    let mut r = failed_cell(cell, &InputError::new(reason));
    r.scenario = Some(path.display().to_string());
    r.rho = cell.rho;
    r
}

/// A cell's document (its results, or its error) labelled with its scenario file and rho.
fn labelled_cell(
    path: &Path,
    scenario: &Scenario,
    plan: Option<&Result<Plan, InputError>>,
    duration: Option<Nanos>,
    c: &Cell,
) -> Results {
    let mut r = run_cell(path, scenario, plan, duration, c).unwrap_or_else(|e| failed_cell(c, &e));
    r.scenario = Some(path.display().to_string());
    r.rho = c.rho;
    r
}

/// The plans of every (scenario, rho) pair, or why there is none.
type Plans = Vec<(usize, f64, Result<Plan, InputError>)>;

/// One cell's simulation.
fn run_cell(
    path: &Path,
    s: &Scenario,
    plan: Option<&Result<Plan, InputError>>,
    duration: Option<Nanos>,
    c: &Cell,
) -> Result<Results, InputError> {
    let plan = match plan {
        Some(plan) => Some(plan.as_ref().map_err(Clone::clone)?),
        None => None,
    };
    let cfg = SimConfig::new(s, plan, Overrides { duration, seed: Some(c.seed), ..Default::default() })
        .map_err(|e| e.in_file(path))?;
    Ok(simulate(s, &cfg, &RunOptions::default()).results)
}

/// The document of a cell that could not run.
fn failed_cell(c: &Cell, e: &InputError) -> Results {
    let mut r = Results::new("simulation", 0);
    r.seed = Some(c.seed);
    r.error = Some(e.to_string());
    r
}

fn plan_all(spec: &SweepSpec, planner: Planner) -> Plans {
    let pairs: Vec<(usize, f64)> =
        (0..spec.scenarios.len()).flat_map(|s| spec.rho.iter().map(move |&r| (s, r))).collect();
    pairs
        .par_iter()
        .map(|&(s, r)| {
            let (path, sc) = &spec.scenarios[s];
            (s, r, planner(sc, r).map_err(|e| e.in_file(path)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_starts_no_more_threads_than_cells_or_the_maximum() {
        let scenario = Scenario::default_scenario();
        let spec = SweepSpec {
            scenarios: vec![(PathBuf::from("default.toml"), scenario)],
            seeds: vec![1, 2],
            rho: vec![],
            duration: Some(Nanos::from_ms(10)),
        };
        let never = |_: &Scenario, _: f64| -> Result<Plan, InputError> { unreachable!("no rho: no planning") };
        for (asked, pool) in [(Some(64), 2), (Some(1), 1)] {
            let sizes = std::sync::Mutex::new(Vec::new());
            let progress = |_: usize, _: usize| sizes.lock().unwrap().push(rayon::current_num_threads());
            let results = run_sweep(&spec, &never, asked, &progress).unwrap();
            assert_eq!(results.len(), 2);
            assert_eq!(sizes.into_inner().unwrap(), vec![pool; 2], "--threads {asked:?}");
        }
        assert_eq!(workers(Some(5000), 1_000_000), MAX_THREADS);
    }
}
