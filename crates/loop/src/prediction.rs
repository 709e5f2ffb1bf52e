//! The prediction a measurement is compared with (`rtvirt verify`, the demo): the plan simulated
//! with the host's costs over the time the task run really took, with its seed and with the
//! host's ticks where the run had them (`Results::tick_phase`, `rtvirt_probe::tick`), so that
//! both sides are the same experiment. An interrupted run is compared over the time it ran (the
//! simulation is deterministic: a shorter horizon is a prefix of the longer one).

use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::{InputError, Nanos};
use rtvirt_sim::{simulate_with_host_model, Overrides, RunOptions, SimConfig};

/// The simulation of `scenario` under `plan` on `host` matching the task run `measured` made
/// with `seed` (None: no host model, the ideal host).
pub fn of_run(
    scenario: &Scenario,
    plan: &Plan,
    host: Option<&HostModel>,
    measured: &Results,
    seed: u64,
) -> Result<Results, InputError> {
    let cfg = config(scenario, plan, Nanos(measured.duration_ns.max(1)), seed, measured.tick_phase())?;
    Ok(simulate_with_host_model(scenario, &cfg, &RunOptions::default(), host).results)
}

/// The simulation's configuration for `horizon`, `seed` and the ticks `tick_phase` after the
/// releases (None: the scenario's `[sim] tick_phase`); checks the plan against the scenario.
pub fn config(
    scenario: &Scenario,
    plan: &Plan,
    horizon: Nanos,
    seed: u64,
    tick_phase: Option<Nanos>,
) -> Result<SimConfig, InputError> {
    SimConfig::new(scenario, Some(plan), Overrides { duration: Some(horizon), seed: Some(seed), tick_phase })
}
