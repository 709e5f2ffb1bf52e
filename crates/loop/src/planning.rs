//! The plan every front end makes: the one planning path (`rtvirt_analysis::requests`) and, on a
//! host that enforces budgets at the tick, its promise checked by simulation.
//!
//! The analysis charges a quantile promise's host costs at their quantile but cannot charge the
//! tick: a depleted server runs on until the next tick (up to 4 ms at HZ = 250) and delays the
//! other servers of its CPU, an effect with no useful per-job probability
//! (`rtvirt_analysis::requests`, "Enforcement"). So a plan for such a host under a quantile
//! promise is simulated with the host's costs and its tick as the kernel behaves
//! (`rtvirt_sim::simulate_with_host_model`, what `verify` compares a measurement with) over
//! [`PROMISE_CHECK`], once per [`TICK_PHASES`] phase of the tick: where the ticks fall after the
//! releases decides how long each overrun lasts, and a real run keeps one phase it does not choose
//! (`rtvirt_probe::tick`; on this host one plan's p95 response times were 2 ms or 8.6 ms by phase
//! alone). Each guest with a task whose simulated DSR falls below `1 - miss_bound` at any phase
//! does not fit - unless planning again with the tick's overrun charged analytically
//! (`PlanRequest::charge_tick`, as `--hard` charges it) gives a plan the simulation keeps, which
//! is then the plan. A guest that does not fit is unplaced, the plan is infeasible, and its need names HRTICK with the
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
/// The promise check simulates the ticks falling at k/TICK_PHASES of a tick after the releases.
pub const TICK_PHASES: u64 = 8;

/// A task whose simulated DSR falls below its promise.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub guest: String,
    pub task: String,
    pub simulated_dsr: f64,
    pub promised_dsr: f64,
    /// Where the ticks fell after the releases in the simulation that broke it.
    pub tick_phase: Nanos,
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
    if broken.is_empty() {
        return Ok(checked(planned, model));
    }
    if let Some(raised) = with_budgets_raised(request.scenario, &planned, &broken, model) {
        return Ok(checked(raised, model));
    }
    if !request.charge_tick {
        let charged = requests::plan_with(&PlanRequest { charge_tick: true, ..request.clone() }, step)?;
        if charged.plan.feasible && broken_promises(request.scenario, &charged.plan, model).is_empty() {
            return Ok(checked(charged, model));
        }
    }
    let overrun = Nanos(model.enforcement.overrun_max_ns);
    for guest in unique_guests(&broken) {
        let tasks: Vec<&Broken> = broken.iter().filter(|b| b.guest == guest).collect();
        refuse(&mut planned, &guest, &tasks, overrun);
    }
    Ok(planned)
}

/// Budget raises tried, in order, for the guests whose promise the tick broke.
const RAISES: [f64; 4] = [1.1, 1.25, 1.5, 2.0];

/// The plan with the broken guests' budgets raised (same periods: more supply only helps the
/// analysis, Shin & Lee 2003) by the first factor of [`RAISES`] whose simulation keeps every
/// promise within each core's cap; None when none does. Guests of several vCPUs keep theirs.
fn with_budgets_raised(
    scenario: &Scenario,
    planned: &Planned,
    broken: &[Broken],
    model: &HostModel,
) -> Option<Planned> {
    let cap = planned.plan.settings.bandwidth_cap.unwrap_or(1.0);
    let guests = unique_guests(broken);
    RAISES.iter().find_map(|&factor| {
        let mut p = planned.clone();
        let raised = raise(&mut p.plan, &guests, factor, cap)?;
        broken_promises(scenario, &p.plan, model).is_empty().then(|| {
            p.plan.settings.assumptions.push(format!(
                "budgets raised under the tick: {raised} (the analysis' budgets broke the promise in simulation \
                 with this host's tick enforcement)"
            ));
            p
        })
    })
}

/// Raise `guests`' budgets by `factor` (at most their period); None if a core would pass `cap` or
/// a guest has several vCPUs. What was raised, in words.
fn raise(plan: &mut Plan, guests: &[String], factor: f64, cap: f64) -> Option<String> {
    let mut said = vec![];
    for g in plan.guests.iter_mut().filter(|g| guests.contains(&g.name)) {
        if !g.vcpus.is_empty() {
            return None;
        }
        let budget = ((g.budget_ns as f64 * factor) as u64).min(g.period_ns);
        said.push(format!("{} {} -> {} per {}", g.name, Nanos(g.budget_ns), Nanos(budget), Nanos(g.period_ns)));
        g.budget_ns = budget;
        g.bandwidth = budget as f64 / g.period_ns as f64;
    }
    for c in plan.cores.iter_mut() {
        c.bandwidth = plan.guests.iter().filter(|g| c.guests.contains(&g.name)).map(|g| g.bandwidth).sum();
        if c.bandwidth > cap + 1e-9 {
            return None;
        }
    }
    Some(said.join(", "))
}

/// A plan whose promise the simulation with the tick kept, saying so.
fn checked(mut planned: Planned, model: &HostModel) -> Planned {
    let overrun = Nanos(model.enforcement.overrun_max_ns);
    planned.plan.settings.assumptions.push(format!(
        "checked by simulation: this plan simulated for {PROMISE_CHECK} with this host's costs and its tick \
         enforcement (overruns up to {overrun}), with the ticks at each of {TICK_PHASES} phases after the \
         releases, keeps every task's promise"
    ));
    planned
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
/// enforcement at each of [`TICK_PHASES`] phases of its tick, falls below `1 - miss_bound` at
/// one of them (the lowest DSR per task; none when the simulation cannot run the plan).
pub fn broken_promises(scenario: &Scenario, plan: &Plan, model: &HostModel) -> Vec<Broken> {
    let tick = model.enforcement.overrun_max_ns.max(1);
    let mut out: Vec<Broken> = vec![];
    for k in 0..TICK_PHASES {
        let phase = Nanos(tick * k / TICK_PHASES);
        for b in broken_at(scenario, plan, model, phase) {
            match out.iter_mut().find(|o| o.guest == b.guest && o.task == b.task) {
                Some(o) if b.simulated_dsr < o.simulated_dsr => *o = b,
                Some(_) => {}
                None => out.push(b),
            }
        }
    }
    out
}

/// The tasks whose DSR falls below their promise with the ticks `phase` after the releases.
fn broken_at(scenario: &Scenario, plan: &Plan, model: &HostModel, phase: Nanos) -> Vec<Broken> {
    let overrides = rtvirt_sim::Overrides { duration: Some(PROMISE_CHECK), seed: Some(1), tick_phase: Some(phase) };
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
                    tick_phase: phase,
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
        .map(|b| {
            let (task, dsr, promised, phase) = (&b.task, b.simulated_dsr, b.promised_dsr, b.tick_phase);
            format!("{task} simulated DSR {dsr:.4} < promised {promised:.4} (ticks {phase} after the releases)")
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let json = r#"{"schema":"rtvirt.plan/v1","feasible":true,"cores_used":1,"guests":[
            {"name":"a","scheduler":"edf","model":"prm","period_ns":4000000,"budget_ns":1000000,"deadline_ns":4000000,
             "bandwidth":0.25,"core":1,"tasks":[]},
            {"name":"b","scheduler":"edf","model":"prm","period_ns":2000000,"budget_ns":1000000,"deadline_ns":2000000,
             "bandwidth":0.5,"core":1,"tasks":[]}],
            "cores":[{"id":1,"guests":["a","b"],"bandwidth":0.75}],"settings":{}}"#;
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_raise_keeps_the_period_updates_the_cores_and_stops_at_the_cap() {
        let mut p = plan();
        let said = raise(&mut p, &["a".into()], 1.5, 0.9).unwrap();
        assert_eq!((p.guests[0].budget_ns, p.guests[0].period_ns), (1_500_000, 4_000_000));
        assert_eq!(p.guests[1].budget_ns, 1_000_000, "only the named guest");
        assert!((p.cores[0].bandwidth - 0.875).abs() < 1e-12);
        assert!(said.contains("a 1.5ms") || said.contains("a 1ms -> 1.5ms"), "{said}");
        // 0.5 + 0.5 passes a 0.9 cap
        assert!(raise(&mut plan(), &["a".into()], 2.0, 0.9).is_none());
        // never above the period
        let mut p = plan();
        raise(&mut p, &["b".into()], 3.0, 2.0).unwrap();
        assert_eq!(p.guests[1].budget_ns, 2_000_000);
    }
}
