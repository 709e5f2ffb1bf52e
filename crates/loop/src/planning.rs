//! The plan every front end makes: the one planning path (`rtvirt_analysis::requests`) and, on a
//! host that enforces budgets at the tick, its promise checked by simulation.
//!
//! The analysis charges a quantile promise's host costs at their quantile but cannot charge the
//! tick: a depleted server runs on until the next tick (up to 4 ms at HZ = 250) and delays the
//! other servers of its CPU, an effect with no useful per-job probability
//! (`rtvirt_analysis::requests`, "Enforcement"). So a plan for such a host under a quantile
//! promise is simulated with the host's costs and its tick as the kernel behaves
//! (`rtvirt_sim::simulate_with_host_model`, what `verify` compares a measurement with) over
//! [`PROMISE_CHECK`]; each guest with a task whose simulated DSR falls below `1 - miss_bound`
//! does not fit: it is unplaced, the plan is infeasible, and its need names HRTICK with the
//! simulated figures. A plan that passes says so in its assumptions. `--hard` charges the largest
//! overrun analytically instead and is not simulated.

use rtvirt_analysis::needs::HRTICK_HOW;
use rtvirt_analysis::planner::{Planned, Unplaced};
use rtvirt_analysis::requests::{self, Guarantee, PlanRequest};
use rtvirt_model::hostmodel::{EnforcementKind, HostModel};
use rtvirt_model::plan::{need_setting, Need, Plan};
use rtvirt_model::scenario::Scenario;
use rtvirt_model::{InputError, Nanos};

/// Simulated time of the promise check.
pub const PROMISE_CHECK: Nanos = Nanos::from_secs(10);

/// A task whose simulated DSR falls below its promise.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub guest: String,
    pub task: String,
    pub simulated_dsr: f64,
    pub promised_dsr: f64,
}

/// Plan `request` (the one planning path) and check a tick host's promise by simulation;
/// `step(lo, hi)` during the max-rho search.
pub fn plan_with(request: &PlanRequest, step: &mut dyn FnMut(f64, f64)) -> Result<Planned, InputError> {
    let mut planned = requests::plan_with(request, step)?;
    let Some(model) = tick_under_quantile(request) else { return Ok(planned) };
    if !planned.plan.feasible {
        return Ok(planned);
    }
    let broken = broken_promises(request.scenario, &planned.plan, model);
    let overrun = Nanos(model.enforcement.overrun_max_ns);
    if broken.is_empty() {
        planned.plan.settings.assumptions.push(format!(
            "checked by simulation: this plan simulated for {PROMISE_CHECK} with this host's costs and its tick \
             enforcement (overruns up to {overrun}) keeps every task's promise"
        ));
    }
    for guest in unique_guests(&broken) {
        let tasks: Vec<&Broken> = broken.iter().filter(|b| b.guest == guest).collect();
        refuse(&mut planned, &guest, &tasks, overrun);
    }
    Ok(planned)
}

/// [`plan_with`] without progress.
pub fn plan(request: &PlanRequest) -> Result<Planned, InputError> {
    plan_with(request, &mut |_, _| {})
}

/// The host model when its enforcement is the tick and the promise a quantile.
fn tick_under_quantile<'a>(request: &PlanRequest<'a>) -> Option<&'a HostModel> {
    let model = request.host.model.as_ref()?;
    let quantile = matches!(request.guarantee, Guarantee::Quantile(_));
    (quantile && model.enforcement.kind == EnforcementKind::Tick).then_some(model)
}

/// The tasks of `plan` whose DSR, simulated for [`PROMISE_CHECK`] with `model`'s costs and
/// enforcement, falls below `1 - miss_bound` (none when the simulation cannot run the plan).
pub fn broken_promises(scenario: &Scenario, plan: &Plan, model: &HostModel) -> Vec<Broken> {
    let overrides = rtvirt_sim::Overrides { duration: Some(PROMISE_CHECK), seed: Some(1) };
    let Ok(cfg) = rtvirt_sim::SimConfig::new(scenario, Some(plan), overrides) else { return vec![] };
    let run = rtvirt_sim::simulate_with_host_model(scenario, &cfg, &rtvirt_sim::RunOptions::default(), Some(model));
    let mut out = vec![];
    for g in plan.guests.iter().filter(|g| g.core.is_some()) {
        for t in &g.tasks {
            let Some(bound) = t.miss_bound else { continue };
            let Some(r) = run.results.tasks.iter().find(|r| r.guest == g.name && r.name == t.name) else { continue };
            if r.jobs > 0 && r.dsr < 1.0 - bound {
                out.push(Broken {
                    guest: g.name.clone(),
                    task: t.name.clone(),
                    simulated_dsr: r.dsr,
                    promised_dsr: 1.0 - bound,
                });
            }
        }
    }
    out
}

fn unique_guests(broken: &[Broken]) -> Vec<String> {
    let mut out: Vec<String> = broken.iter().map(|b| b.guest.clone()).collect();
    out.dedup();
    out
}

/// Unplace `guest` (its promise broken on a tick host): off its cores, the plan infeasible, its
/// reason and its need (HRTICK, with the simulated figures).
fn refuse(planned: &mut Planned, guest: &str, tasks: &[&Broken], overrun: Nanos) {
    let figures: Vec<String> = tasks
        .iter()
        .map(|b| format!("{} simulated DSR {:.4} < promised {:.4}", b.task, b.simulated_dsr, b.promised_dsr))
        .collect();
    let figures = figures.join(", ");
    let plan = &mut planned.plan;
    plan.feasible = false;
    let mut bandwidth = 0.0;
    if let Some(g) = plan.guests.iter_mut().find(|g| g.name == guest) {
        g.core = None;
        g.vcpus.iter_mut().for_each(|v| v.core = None);
        bandwidth = g.bandwidth;
    }
    for c in plan.cores.iter_mut().filter(|c| c.guests.iter().any(|n| n == guest)) {
        c.guests.retain(|n| n != guest);
        c.bandwidth = (c.bandwidth - bandwidth).max(0.0);
    }
    plan.cores.retain(|c| !c.guests.is_empty());
    plan.cores_used = plan.cores.len() as u32;
    plan.unplaced.push(guest.to_string());
    planned.unplaced.push(Unplaced {
        name: guest.to_string(),
        reason: format!(
            "fits the analysis, but simulated with this host's tick enforcement (overruns up to {overrun}) it \
             misses its promise: {figures}"
        ),
        too_large: false,
    });
    plan.needs.push(Need {
        guest: Some(guest.to_string()),
        setting: need_setting::BUDGET_ENFORCEMENT.into(),
        value: format!("HRTICK (under the tick: {figures})"),
        how: HRTICK_HOW.into(),
    });
}
