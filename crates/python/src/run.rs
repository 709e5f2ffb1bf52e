//! `plan`, `simulate` and `load`: the engine's entry points as the command line calls them (the
//! same checks, the same options, the same documents), with the GIL released while they run.

use crate::documents::{Plan, Results, Scenario};
use crate::errors::to_py;
use pyo3::prelude::*;
use rtvirt_analysis::budgets::BudgetMethod;
use rtvirt_analysis::interface::Model;
use rtvirt_analysis::partition::Heuristic;
use rtvirt_analysis::planner::PlanOptions;
use rtvirt_analysis::requests::PlanRequest;
use rtvirt_loop::host_choice::HostChoice;
use rtvirt_model::document::{is_interval_report, schema_of, Schema};
use rtvirt_model::input::{read_text, InputKind};
use rtvirt_model::plan::Plan as ModelPlan;
use rtvirt_model::scenario::MAX_CORES;
use rtvirt_model::InputError;
use rtvirt_sim::{simulate as run_simulation, Overrides, RunOptions, SimConfig};
use std::path::PathBuf;

/// Plan a scenario: per-task budgets, per-guest least interfaces, guests onto cores (as
/// `rtvirt plan`).
///
/// rho: probability in (0, 1) that a job completes within its budget, for tasks whose task and
///     guest set none (None: those tasks use their WCET).
/// model: "prm" (periodic resource model, Shin & Lee 2003; deadline = period) or "edp"
///     (explicit-deadline periodic, Easwaran et al. 2007).
/// heuristic: how servers are packed onto cores: "bfd", "ffd", "wfd", "bf", "ff".
/// host_model: path of an `rtvirt.hostmodel/v1` file (`rtvirt host calibrate`): its kernel limits
///     give the per-core cap and its costs are charged to every interface (PRM or EDP).
/// host: the host to plan for when host_model is None: "this" (this host's kernel limits, CPUs
///     and interrupts, and its last `rtvirt host calibrate` on this kernel and boot), "ideal" (no
///     overheads charged), or a preset ("stock", "preempt-rt"). None: $RTVIRT_HOST, else "this"
///     (as `rtvirt plan`).
/// quantile: charge the host's costs at this quantile (0.5 <= q < 1, default 0.99): each task's
///     miss bound is (1 - rho) + (1 - q). hard: charge the largest costs seen instead (bound 0).
/// cores: number of host cores (overrides the scenario's host.cores).
/// budget: "cantelli" (default) or "quantile" (the rho-quantile of a task's samples).
///
/// Returns the Plan, feasible or not (`plan.feasible`, `plan.unplaced`). Raises rtvirt.InputError
/// for bad input, or a guest too large to analyse exactly.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of the Python function
#[pyo3(signature = (scenario, rho=None, model="prm", heuristic="bfd", host_model=None, cores=None, budget="cantelli", host=None, quantile=None, hard=false))]
pub fn plan(
    py: Python<'_>,
    scenario: &Scenario,
    rho: Option<f64>,
    model: &str,
    heuristic: &str,
    host_model: Option<PathBuf>,
    cores: Option<u32>,
    budget: &str,
    host: Option<String>,
    quantile: Option<f64>,
    hard: bool,
) -> PyResult<Plan> {
    let s = &scenario.scenario;
    let options = options(rho, model, heuristic, cores, budget).map_err(to_py)?;
    let choice = HostChoice { host, host_model, hard, quantile, field: "" };
    let guarantee = choice.guarantee().map_err(to_py)?;
    let host = choice.resolve(None, cores.unwrap_or(s.host.cores)).map_err(to_py)?.host;
    let request = PlanRequest { options, guarantee, max_rho: true, ..PlanRequest::new(s, &host) };
    let planned = py.detach(|| rtvirt_loop::planning::plan(&request)).map_err(to_py)?;
    Ok(Plan { plan: planned.plan })
}

fn options(
    rho: Option<f64>,
    model: &str,
    heuristic: &str,
    cores: Option<u32>,
    budget: &str,
) -> Result<PlanOptions, InputError> {
    if let Some(r) = rho.filter(|r| !(*r > 0.0 && *r < 1.0)) {
        return Err(InputError::field("rho", format!("{r}: expected a probability strictly between 0 and 1")));
    }
    if let Some(n) = cores.filter(|&n| n == 0 || n > MAX_CORES) {
        return Err(InputError::field("cores", format!("{n}: expected a whole number from 1 to {MAX_CORES}")));
    }
    let one_of = |field: &str, value: &str, names: &str| {
        InputError::field(field, format!("\"{value}\": expected one of {names}"))
    };
    Ok(PlanOptions {
        rho,
        model: match model {
            "prm" => Model::Prm,
            "edp" => Model::Edp,
            other => return Err(one_of("model", other, "prm, edp")),
        },
        heuristic: match heuristic {
            "bfd" => Heuristic::Bfd,
            "ffd" => Heuristic::Ffd,
            "wfd" => Heuristic::Wfd,
            "bf" => Heuristic::Bf,
            "ff" => Heuristic::Ff,
            other => return Err(one_of("heuristic", other, "bfd, ffd, wfd, bf, ff")),
        },
        cores,
        budget: match budget {
            "cantelli" => BudgetMethod::Cantelli,
            "quantile" => BudgetMethod::Quantile,
            other => return Err(one_of("budget", other, "cantelli, quantile")),
        },
        ..Default::default()
    })
}

/// Simulate a scenario (as `rtvirt simulate`): deterministic, the same scenario and seed give the
/// same results.
///
/// plan: a Plan (or its native form) applied as SCHED_DEADLINE reservations of the vCPU threads.
/// duration: the simulated horizon as a string with its unit, e.g. "10s" (default: the scenario's
///     [sim] duration, else 10s).
/// seed: random seed (default: the scenario's [sim] seed, else 1).
///
/// Deadline misses are results (Results.tasks()), not errors. Scenarios with a [net] section run
/// the network-path simulator (plan must be None). Raises rtvirt.InputError for bad input.
#[pyfunction]
#[pyo3(signature = (scenario, plan=None, duration=None, seed=None))]
pub fn simulate(
    py: Python<'_>,
    scenario: &Scenario,
    plan: Option<PyRef<'_, Plan>>,
    duration: Option<&Bound<'_, PyAny>>,
    seed: Option<u64>,
) -> PyResult<Results> {
    let s = &scenario.scenario;
    let horizon = crate::values::duration(duration, "duration").map_err(to_py)?;
    let plan: Option<&ModelPlan> = plan.as_ref().map(|p| &p.plan);
    if s.net.is_some() {
        return simulate_net(py, scenario, plan.is_some(), horizon, seed);
    }
    if let Some(p) = plan {
        p.check_matches(s).map_err(|e| to_py(e.under("plan")))?;
    }
    let cfg = SimConfig::new(s, plan, Overrides { duration: horizon, seed, ..Default::default() }).map_err(to_py)?;
    if cfg.threads().next().is_none() {
        let e = InputError::field("guest", "no [[guest]] and no [[sim.thread]]: nothing to simulate");
        return Err(to_py(s.locate(e)));
    }
    let results = py.detach(|| run_simulation(s, &cfg, &RunOptions::default()).results);
    Ok(Results { results })
}

fn simulate_net(
    py: Python<'_>,
    scenario: &Scenario,
    with_plan: bool,
    horizon: Option<rtvirt_model::Nanos>,
    seed: Option<u64>,
) -> PyResult<Results> {
    if with_plan {
        return Err(to_py(InputError::field(
            "plan",
            "the scenario has a [net] section: the network-path simulator places and prioritises its threads from \
             [net] itself; a plan applies to scenarios without [net]",
        )));
    }
    let s = &scenario.scenario;
    let mut net = s.net.clone().expect("checked by the caller");
    if let Some(d) = horizon {
        net.set_duration(d, "duration").map_err(to_py)?;
    }
    if let Some(seed) = seed {
        net.seed = seed;
    }
    let mut results = py.detach(|| rtvirt_sim::net::simulate(&net, None).results);
    results.label = Some(s.name.clone());
    Ok(Results { results })
}

/// What `load` read: one results document, several, a plan, or another rtvirt JSON document.
pub enum Loaded {
    Results(Box<Results>),
    ResultsList(Vec<Results>),
    Plan(Box<Plan>),
    /// Another document (audit, host model...): its JSON text, for `json.loads`.
    Json(String),
}

impl<'py> IntoPyObject<'py> for Loaded {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            Loaded::Results(r) => ("results", *r).into_pyobject(py)?.into_any(),
            Loaded::ResultsList(list) => ("results_list", list).into_pyobject(py)?.into_any(),
            Loaded::Plan(p) => ("plan", *p).into_pyobject(py)?.into_any(),
            Loaded::Json(text) => ("json", text).into_pyobject(py)?.into_any(),
        })
    }
}

/// Read any rtvirt JSON file: results (one document, an array of them, interval report lines and
/// their document), a plan, or another document (returned as its text).
#[pyfunction]
pub fn load(py: Python<'_>, path: PathBuf) -> PyResult<Loaded> {
    py.detach(|| load_file(&path)).map_err(to_py)
}

fn load_file(path: &std::path::Path) -> Result<Loaded, InputError> {
    let text = read_text(path, InputKind::Results)?;
    let first = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>().next();
    let first = match first {
        None => return Err(InputError::new("empty file: expected an rtvirt JSON document").in_file(path)),
        Some(Err(e)) => {
            return Err(InputError::new(format!("not JSON: {e}")).in_file(path).at_line(e.line(), e.column()));
        }
        Some(Ok(value)) => value,
    };
    let results = first.is_array() || is_interval_report(&first) || schema_of(&first) == Schema::Results;
    if results {
        let mut documents = rtvirt_model::tables::read::results_documents(path)?;
        return Ok(match (first.is_array(), documents.len()) {
            (false, 1) => Loaded::Results(Box::new(Results { results: documents.remove(0) })),
            _ => Loaded::ResultsList(documents.into_iter().map(|results| Results { results }).collect()),
        });
    }
    if schema_of(&first) == Schema::Plan {
        return Ok(Loaded::Plan(Box::new(Plan { plan: ModelPlan::from_file(path)? })));
    }
    Ok(Loaded::Json(text))
}
