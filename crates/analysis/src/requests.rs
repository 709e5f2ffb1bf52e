//! The one planning path: a [`PlanRequest`] - scenario, the host it is for, the user's options
//! and the promise asked for - becomes a plan with every check. `rtvirt plan`, `simulate`,
//! `verify`, `demo`, `measure tasks`, the sweeps and the Python package all call [`plan`]; no
//! other code calls the planner, so the same inputs give the same plan everywhere.
//!
//! **The host is an input.** [`PlanHost`] names the host (this one, a host-model file, a preset,
//! or the ideal host), carries its model (costs, kernel limits) and the CPUs to place on, each
//! with why. From it the request takes the per-core cap, the kernel's server period range and the
//! costs charged to every interface.
//!
//! **The promise** ([`Guarantee`], Burns 2014 extended to the host). Burns, Davis, Baruah & Bate
//! (2014) give each stochastic task the budget `c` its execution exceeds with probability at most
//! `1 - rho` (Cantelli). Here the host's costs are charged the same way: at their `q`-quantile
//! (release latency from its measured `{p50, p99, max}`, read through the piecewise CDF the
//! simulator draws from; the per-period overhead at the calibration's p99). A job then misses only
//! if its own execution exceeds `c` or its own host costs exceed the quantile charged, so by the
//! union bound `P(miss) <= (1 - rho) + (1 - q)` (a task at its WCET has no execution term).
//! This reading - a job is put at risk only by its own excesses - is stated in every plan's
//! assumptions. [`Guarantee::Hard`] keeps the worst-case meaning: the largest cost seen, bound 0.
//!
//! **Enforcement.** A host that enforces runtime at the tick lets a server overrun its budget by
//! up to a tick and pays it back from the next periods ([`crate::overhead`]). `Hard` charges the
//! largest overrun. Under a quantile guarantee an HRTICK host's overrun is charged at the
//! quantile; a tick host's is not: the overrun per depletion has no useful per-job probability
//! (it is the tick, up to 4 ms), so the plan states that its bound assumes exact enforcement and
//! names HRTICK as the setting that makes it hold; the simulator models the tick as it behaves
//! (`rtvirt_sim::host_costs`), which is what `verify` compares a measurement with, and the front
//! ends' planning (`rtvirt_loop::planning`) simulates the plan so, refusing the guests whose promise
//! the tick breaks.

use crate::overhead::Overheads;
use crate::planner::{max_rho_with, overheads_beyond_a_period, plan_at, PlanOptions, Planned};
use rtvirt_model::hostmodel::{BandwidthCap, EnforcementKind, HostModel};
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::{InputError, Nanos};

/// The quantile at which host costs are charged by default.
pub const DEFAULT_QUANTILE: f64 = 0.99;

/// The promise a plan makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Guarantee {
    /// Host costs at their `q`-quantile; each task's `P(miss) <= (1 - rho) + (1 - q)`.
    Quantile(f64),
    /// The largest costs seen: no job misses while the host stays within them.
    Hard,
}

impl Default for Guarantee {
    fn default() -> Self {
        Guarantee::Quantile(DEFAULT_QUANTILE)
    }
}

impl Guarantee {
    pub fn text(self) -> String {
        match self {
            Guarantee::Quantile(q) => format!("quantile {q}"),
            Guarantee::Hard => "hard".into(),
        }
    }

    /// The probability that a host cost exceeds what is charged for it.
    fn host_term(self) -> f64 {
        match self {
            Guarantee::Quantile(q) => 1.0 - q,
            Guarantee::Hard => 0.0,
        }
    }
}

/// The host a plan is made for.
#[derive(Debug, Clone, Default)]
pub struct PlanHost {
    /// What the plan calls it (`settings.host`).
    pub name: String,
    /// Its costs and kernel limits; None: the ideal host (nothing charged, no limits).
    pub model: Option<HostModel>,
    /// The CPUs to place on, in order of preference, each with why; empty: CPUs `0 .. cores`.
    pub cpus: Vec<(u32, String)>,
}

impl PlanHost {
    /// The ideal, overhead-free host: never silent (its name says so).
    pub fn ideal() -> PlanHost {
        PlanHost { name: IDEAL.into(), model: None, cpus: vec![] }
    }

    /// A host described by `model` (named `name`), placing on `cores` of its CPUs:
    /// [`choose_cpus`].
    pub fn of_model(name: String, model: HostModel, cores: u32) -> PlanHost {
        let cpus = choose_cpus(&model, cores);
        PlanHost { name, model: Some(model), cpus }
    }
}

/// [`PlanHost::name`] of the ideal host.
pub const IDEAL: &str = "ideal host: no overheads charged";

/// `cores` CPUs of the host, in order of preference: CPUs that are not housekeeping first (the
/// quietest, by the calibration's release latency p99, first), then housekeeping CPUs only when
/// `cores` asks for more than the others; each with the reason it was chosen. A model that does
/// not know the host's CPUs gives `0 .. cores`, none of them housekeeping but CPU 0.
pub fn choose_cpus(model: &HostModel, cores: u32) -> Vec<(u32, String)> {
    let online: Vec<u32> =
        if model.cpus.online.is_empty() { (0..cores.max(1)).collect() } else { model.cpus.online.clone() };
    let housekeeping = model.housekeeping();
    let quiet = model.release_latency_p99_by_cpu();
    let p99 = |cpu: u32| quiet.iter().find(|q| q.0 == cpu).map(|q| q.1);
    let mut free: Vec<u32> = online.iter().copied().filter(|c| !housekeeping.iter().any(|h| h.0 == *c)).collect();
    free.sort_by_key(|&c| (p99(c).unwrap_or(u64::MAX), c));
    let mut chosen: Vec<(u32, String)> = free
        .iter()
        .take(cores as usize)
        .map(|&c| {
            let why = match p99(c) {
                Some(p) => format!("not housekeeping; release latency p99 {} (calibration)", Nanos(p)),
                None => "not housekeeping".into(),
            };
            (c, why)
        })
        .collect();
    for (cpu, reason) in housekeeping.iter().filter(|h| online.contains(&h.0)) {
        if chosen.len() >= cores as usize {
            break;
        }
        let why = format!(
            "housekeeping ({reason}), used because {cores} core(s) were asked for and {} CPU(s) are not \
             housekeeping",
            free.len()
        );
        chosen.push((*cpu, why));
    }
    chosen
}

/// Everything a plan is made from.
#[derive(Debug, Clone)]
pub struct PlanRequest<'a> {
    pub scenario: &'a Scenario,
    pub host: &'a PlanHost,
    /// The user's choices (rho, model, heuristic, cores, budget method); the host-derived fields
    /// (cap, overheads, period limits, CPUs) are filled in by [`PlanRequest::options`].
    pub options: PlanOptions,
    pub guarantee: Guarantee,
    /// One rho for every task (sweeps, `--rho` of verify): overrides task and guest rhos.
    pub uniform_rho: Option<f64>,
    /// Also search the largest uniform rho (`plan.max_rho`).
    pub max_rho: bool,
    /// Under a quantile promise on a tick host, charge the tick's overrun as `Hard` does (the
    /// front ends' retry when the simulation of the uncharged plan breaks its promise).
    pub charge_tick: bool,
}

impl<'a> PlanRequest<'a> {
    /// A request with the default options and promise.
    pub fn new(scenario: &'a Scenario, host: &'a PlanHost) -> PlanRequest<'a> {
        PlanRequest {
            scenario,
            host,
            options: PlanOptions::default(),
            guarantee: Guarantee::default(),
            uniform_rho: None,
            max_rho: false,
            charge_tick: false,
        }
    }

    /// The planner's options: the user's, with the host's cap, costs, period range and CPUs.
    pub fn options(&self) -> PlanOptions {
        let model = self.host.model.as_ref();
        PlanOptions {
            bandwidth_cap: Some(bandwidth_cap(self.scenario, model)),
            overheads: model.map(|m| charged(m, self.guarantee, self.charge_tick)),
            period_limits: model.map(|m| {
                let a = &m.admission;
                (a.deadline_period_min_us.saturating_mul(1000), a.deadline_period_max_us.saturating_mul(1000))
            }),
            cpus: self.host.cpus.iter().map(|c| c.0).collect(),
            ..self.options.clone()
        }
    }
}

/// The host's costs as charged under `guarantee` (`charge_tick`: a tick host's overrun too).
pub fn charged(model: &HostModel, guarantee: Guarantee, charge_tick: bool) -> Overheads {
    let worst = Overheads::of(model);
    match guarantee {
        Guarantee::Hard => worst,
        Guarantee::Quantile(q) => Overheads {
            release_jitter: model.release_latency_ns.quantile(q),
            overrun: match model.enforcement.kind {
                EnforcementKind::Hrtick => model.overrun_summary().quantile(q),
                EnforcementKind::Tick if charge_tick => worst.overrun,
                EnforcementKind::Tick => 0,
            },
            ..worst
        },
    }
}

/// Plan `request`: checks before (something to plan; host costs below the periods), the plan
/// (and its largest uniform rho when asked), checks after (no guest too large to analyse), and
/// the plan's statement of its host, promise and assumptions. `step(lo, hi)` is called during the
/// max-rho search (progress).
pub fn plan_with(request: &PlanRequest, step: &mut dyn FnMut(f64, f64)) -> Result<Planned, InputError> {
    let s = request.scenario;
    check_plannable(s).map_err(|e| s.locate(e))?;
    let o = request.options();
    if let Some(e) = o.overheads.as_ref().and_then(|x| overheads_beyond_a_period(s, x)) {
        return Err(e);
    }
    let mut p = plan_at(s, &o, request.uniform_rho);
    too_large(s, &p)?;
    let quantile = match request.guarantee {
        Guarantee::Quantile(q) => Some(q),
        Guarantee::Hard => None,
    };
    p.plan.needs = crate::needs::needs(s, &o, &p, quantile);
    if request.max_rho {
        p.plan.max_rho = max_rho_with(s, &o, step);
    }
    state_promise(&mut p.plan, request, &o);
    Ok(p)
}

/// The largest uniform rho with which every guest of the request fits (None: not even the
/// smallest); `step(lo, hi)` before each plan of the bisection.
pub fn max_rho(request: &PlanRequest, step: &mut dyn FnMut(f64, f64)) -> Option<f64> {
    max_rho_with(request.scenario, &request.options(), step)
}

/// [`plan_with`] without progress.
pub fn plan(request: &PlanRequest) -> Result<Planned, InputError> {
    plan_with(request, &mut |_, _| {})
}

/// The plan's host, promise, assumptions, per-task miss bound and why each CPU.
fn state_promise(plan: &mut Plan, request: &PlanRequest, o: &PlanOptions) {
    let host_term = if request.host.model.is_some() { request.guarantee.host_term() } else { 0.0 };
    for g in plan.guests.iter_mut().filter(|g| g.core.is_some()) {
        for t in &mut g.tasks {
            let own = if t.budget_ns < t.wcet_ns { 1.0 - t.rho.unwrap_or(1.0) } else { 0.0 };
            // to 12 decimals: (1 - 0.9) + (1 - 0.99) is 0.11, not 0.10999999999999999
            t.miss_bound = Some(((own + host_term).min(1.0) * 1e12).round() / 1e12);
        }
    }
    for c in &mut plan.cores {
        c.why = request.host.cpus.iter().find(|x| x.0 == c.id).map(|x| x.1.clone());
    }
    let s = &mut plan.settings;
    s.host = Some(request.host.name.clone());
    s.guarantee = Some(request.guarantee.text());
    s.assumptions = assumptions(request, o);
}

/// One sentence per assumption the plan rests on.
fn assumptions(request: &PlanRequest, o: &PlanOptions) -> Vec<String> {
    let Some(m) = &request.host.model else {
        return vec![format!(
            "{IDEAL}: no release latency, no server or switching overhead, exact budget enforcement, any \
             server period; a real host adds all of these (plan for this host, or with --host-model)"
        )];
    };
    let x = o.overheads.unwrap_or_default();
    let (min, max) = o.period_limits.unwrap_or((0, 0));
    let mut out = vec![
        format!(
            "server periods within the kernel's limits {} .. {} (sched_deadline_period_min_us / _max_us)",
            Nanos(min),
            Nanos(max)
        ),
        format!("per-core bandwidth at most {}", o.cap(request.scenario)),
        format!("each job released at most {} late (release latency charged)", Nanos(x.release_jitter)),
        format!(
            "each server period costs at most {} of its budget (server overhead + cache reload)",
            Nanos(x.per_period)
        ),
        format!("each job costs at most {} more (cache reload + 2 context switches)", Nanos(x.per_job)),
    ];
    out.push(match (m.enforcement.kind, request.guarantee) {
        (EnforcementKind::Tick, Guarantee::Quantile(_)) if request.charge_tick => format!(
            "tick enforcement charged: a server overruns its budget by up to {} (the tick) and pays it back from \
             its next periods (supply delayed by ceil(overrun / budget) periods); charged because the plan that \
             did not charge it broke its promise in simulation with the tick",
            Nanos(x.overrun)
        ),
        (EnforcementKind::Tick, Guarantee::Quantile(_)) => format!(
            "exact budget enforcement: NOT this host's, which enforces at the tick (a server may overrun by up \
             to {} and pays it back from its next periods); the miss bounds hold with HRTICK (sched feature \
             HRTICK_DL); the front ends check the promise by simulating the plan with the tick and refuse the \
             guests whose promise it breaks (rtvirt_loop::planning)",
            Nanos(m.enforcement.overrun_max_ns)
        ),
        _ => format!("a server overruns its budget by at most {}, paid back from its next periods", Nanos(x.overrun)),
    });
    if let Guarantee::Quantile(q) = request.guarantee {
        out.push(format!(
            "host costs at their {q}-quantile: a job misses only if its own execution exceeds its budget c \
             (probability <= 1 - rho, Cantelli) or its own host costs exceed the quantile (<= 1 - {q}): \
             miss_bound = (1 - rho) + (1 - {q}) by the union bound (Burns 2014, extended to the host)"
        ));
    }
    out
}

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

/// The plan of a sweep cell: `scenario` planned for the ideal host at a uniform `rho`; an
/// infeasible plan is the cell's error.
pub fn plan_sweep_cell(scenario: &Scenario, rho: f64) -> Result<Plan, InputError> {
    let host = PlanHost::ideal();
    let p = plan(&PlanRequest { uniform_rho: Some(rho), ..PlanRequest::new(scenario, &host) })?;
    if !p.plan.feasible {
        let why: Vec<String> = p.unplaced.iter().map(|u| format!("{}: {}", u.name, u.reason)).collect();
        return Err(InputError::field(
            "rho",
            format!("at rho {rho} the plan of \"{}\" is infeasible ({})", scenario.name, why.join("; ")),
        ));
    }
    Ok(p.plan)
}
