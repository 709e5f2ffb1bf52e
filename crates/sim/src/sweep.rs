//! Grids of simulation runs (`rtvirt simulate --sweep SWEEP.toml`): scenarios x rho x seeds, run
//! in parallel with rayon. Every cell is an independent run with its own seed and results come
//! back in grid order, so the output is identical whatever the number of threads.
//!
//! ```toml
//! scenarios = ["seeds5.toml"]   # relative to the sweep file
//! seeds = [1, 2, 3]             # or { first = 1, count = 10 }
//! rho = [0.1, 0.5, 0.9]         # optional: plan every scenario at each rho (SCHED_DEADLINE)
//! duration = "10s"              # optional, overrides the scenarios' [sim] duration
//! ```
//!
//! Planning is done by the caller's `planner` (the CLI passes `rtvirt-analysis`), so this crate
//! keeps depending on the model only.

use crate::config::{Overrides, SimConfig};
use crate::run::{simulate, RunOptions};
use rayon::prelude::*;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::{check_horizon, parse_toml_located, Scenario};
use rtvirt_model::{InputError, Nanos};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Largest grid accepted (cells).
pub const MAX_CELLS: usize = 1_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    scenarios: Vec<String>,
    seeds: Option<RawSeeds>,
    rho: Option<Vec<f64>>,
    duration: Option<Nanos>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "a list of seeds such as [1, 2, 3] or { first = 1, count = 10 }")]
enum RawSeeds {
    List(Vec<u64>),
    Range { first: u64, count: u64 },
}

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
    /// Read a sweep file; scenario paths are relative to it, and each scenario is validated.
    pub fn from_file(path: &Path) -> Result<SweepSpec, InputError> {
        let src = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(format!("cannot read sweep file: {e}")).in_file(path))?;
        let raw: RawSweep = parse_toml_located(&src).map_err(|e| e.in_file(path))?;
        let located =
            |e: InputError| match e.at.field.as_deref().and_then(|f| rtvirt_model::scenario::locate_field(&src, f)) {
                Some((l, c)) => e.at_line(l, c).in_file(path),
                None => e.in_file(path),
            };
        if raw.scenarios.is_empty() {
            return Err(located(InputError::field("scenarios", "empty list: expected at least one scenario file")));
        }
        let base = path.parent().unwrap_or(Path::new(""));
        let scenarios = raw
            .scenarios
            .iter()
            .map(|p| {
                let full = base.join(p);
                Scenario::from_file(&full).map(|s| (full, s))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let seeds = match raw.seeds {
            None => vec![1],
            Some(RawSeeds::List(l)) if !l.is_empty() => l,
            Some(RawSeeds::Range { first, count }) if count > 0 && first.checked_add(count).is_some() => {
                (first..first + count).collect()
            }
            Some(_) => {
                return Err(located(InputError::field("seeds", "expected a non-empty list or a positive count")))
            }
        };
        let rho = raw.rho.unwrap_or_default();
        if let Some(r) = rho.iter().find(|r| !(**r > 0.0 && **r < 1.0)) {
            return Err(located(InputError::field(
                "rho",
                format!("{r}: expected probabilities strictly between 0 and 1"),
            )));
        }
        let duration = raw.duration.map(|d| check_horizon(d, "duration")).transpose().map_err(located)?;
        let spec = SweepSpec { scenarios, seeds, rho, duration };
        if spec.cells().len() > MAX_CELLS {
            return Err(located(InputError::field(
                "seeds",
                format!("{} runs: at most {MAX_CELLS} per sweep", spec.cells().len()),
            )));
        }
        for (p, s) in &spec.scenarios {
            if s.net.is_some() {
                return Err(InputError::field("scenarios", "a scenario with a [net] section: sweeps run the CPU scheduling model; run network-path scenarios one by one with `rtvirt simulate FILE`").in_file(p));
            }
            SimConfig::new(s, None, Overrides { duration: spec.duration, seed: None })?;
        }
        Ok(spec)
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

/// Plans a scenario at a uniform rho.
pub type Planner<'a> = &'a (dyn Fn(&Scenario, f64) -> Result<Plan, InputError> + Sync);

/// Run every cell on `threads` threads (None: all cores). `progress(done, total)` is called as
/// cells finish. Results are in [`SweepSpec::cells`] order, each labelled with its cell.
pub fn run_sweep(
    spec: &SweepSpec,
    planner: Planner,
    threads: Option<usize>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Results>, InputError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| InputError::new(format!("cannot start worker threads: {e}")))?;
    pool.install(|| {
        let plans: Vec<(usize, f64, Plan)> = plan_all(spec, planner)?;
        let cells = spec.cells();
        let done = AtomicUsize::new(0);
        cells
            .par_iter()
            .map(|c| {
                let (path, s) = &spec.scenarios[c.scenario];
                let plan = c.rho.and_then(|r| plans.iter().find(|p| p.0 == c.scenario && p.1 == r)).map(|p| &p.2);
                let cfg = SimConfig::new(s, plan, Overrides { duration: spec.duration, seed: Some(c.seed) })
                    .map_err(|e| e.in_file(path))?;
                let mut r = simulate(s, &cfg, &RunOptions::default()).results;
                r.extra.insert("scenario".into(), path.display().to_string().into());
                if let Some(rho) = c.rho {
                    r.extra.insert("rho".into(), rho.into());
                }
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, cells.len());
                Ok(r)
            })
            .collect()
    })
}

fn plan_all(spec: &SweepSpec, planner: Planner) -> Result<Vec<(usize, f64, Plan)>, InputError> {
    let pairs: Vec<(usize, f64)> =
        (0..spec.scenarios.len()).flat_map(|s| spec.rho.iter().map(move |&r| (s, r))).collect();
    pairs
        .par_iter()
        .map(|&(s, r)| {
            let (path, sc) = &spec.scenarios[s];
            planner(sc, r).map(|p| (s, r, p)).map_err(|e| e.in_file(path))
        })
        .collect()
}
