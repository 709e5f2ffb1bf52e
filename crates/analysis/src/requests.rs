//! What every front end asks of the planner, in one place so that `rtvirt plan`, `rtvirt simulate
//! --sweep` and the Python package (`rtvirt.plan`, `rtvirt.sweep`) plan alike: the per-core cap
//! a plan uses, the checks before planning (something to plan) and after (no guest too large to
//! analyse), and the plan of a sweep cell.

use crate::planner::{plan_at, PlanOptions, Planned};
use rtvirt_model::hostmodel::{BandwidthCap, HostModel};
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::InputError;

/// The per-core cap: the kernel's limit from the host model (else the safe default for current
/// kernels), or the scenario's `host.bandwidth_cap` when that is lower.
pub fn bandwidth_cap(scenario: &Scenario, host: Option<&HostModel>) -> BandwidthCap {
    let kernel = host.map_or_else(BandwidthCap::safe_default, HostModel::bandwidth_cap);
    if scenario.host.bandwidth_cap < kernel.value {
        return BandwidthCap {
            value: scenario.host.bandwidth_cap,
            why: format!("the scenario's host.bandwidth_cap (below the kernel's {}: {})", kernel.value, kernel.why),
        };
    }
    kernel
}

/// Something to plan: at least one guest, and every guest with at least one task (a guest
/// without tasks would get an empty reservation, almost always a forgotten `[[guest.task]]`).
pub fn check_plannable(scenario: &Scenario) -> Result<(), InputError> {
    if scenario.guests.is_empty() {
        return Err(InputError::field(
            "guest",
            "no [[guest]]: expected at least one guest with periodic tasks to plan",
        ));
    }
    match scenario.guests.iter().position(|g| g.tasks.is_empty()) {
        Some(i) => Err(InputError::field(
            format!("guest[{i}]"),
            format!(
                "guest \"{}\" has no tasks: expected at least one [[guest.task]] (a reservation is planned for a \
                 guest's tasks)",
                scenario.guests[i].name
            ),
        )),
        None => Ok(()),
    }
}

/// A guest whose exact analysis exceeds the planner's bound is an input error (exit 2), not an
/// infeasible plan (exit 1): nothing was proven about it.
pub fn too_large(scenario: &Scenario, planned: &Planned) -> Result<(), InputError> {
    match planned.unplaced.iter().find(|u| u.too_large) {
        None => Ok(()),
        Some(u) => {
            let i = scenario.guests.iter().position(|g| g.name == u.name).unwrap_or(0);
            Err(scenario
                .locate(InputError::field(format!("guest[{i}]"), format!("guest \"{}\": {}", u.name, u.reason))))
        }
    }
}

/// The plan of a sweep cell: `scenario` planned with the default options at a uniform `rho`; an
/// infeasible plan is the cell's error.
pub fn plan_sweep_cell(scenario: &Scenario, rho: f64) -> Result<Plan, InputError> {
    let p = plan_at(scenario, &PlanOptions::default(), Some(rho));
    if !p.plan.feasible {
        let why: Vec<String> = p.unplaced.iter().map(|u| format!("{}: {}", u.name, u.reason)).collect();
        return Err(InputError::field(
            "rho",
            format!("at rho {rho} the plan of \"{}\" is infeasible ({})", scenario.name, why.join("; ")),
        ));
    }
    Ok(p.plan)
}
