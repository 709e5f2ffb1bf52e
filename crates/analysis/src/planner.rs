//! Scenario -> plan (`rtvirt.plan/v1`): per-task budgets (Burns 2014 step 1), per-guest least
//! interfaces (step 2), partitioning onto cores (step 3) and the largest feasible uniform rho.

use crate::budgets::{effective_rho, task_budget, BudgetMethod, TaskBudget};
use crate::dbf::{Sporadic, MAX_CHECK_POINTS};
use crate::interface::{
    best_edp_with_overheads, best_interface_for, best_interface_with_overheads, edp_menu, edp_menu_with_overheads,
    has_interface_with_overheads, Demand, Interface, Model,
};
use crate::overhead::Overheads;
use crate::partition::{partition_apart, Heuristic};
use crate::vcpus::{Server, VcpuServers};
use rayon::prelude::*;
use rtvirt_model::hostmodel::BandwidthCap;
use rtvirt_model::plan::{
    CorePlan, GuestPlan, OverheadFree, Plan, PlanSettings, TaskPlan, VcpuPlan, NO_RESERVATION, PLAN_SCHEMA,
};
use rtvirt_model::scenario::{Guest, GuestScheduler, Placement, Scenario};
use rtvirt_model::{InputError, Nanos};

/// The planner's settings (`rtvirt plan` flags).
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `--rho`: used for tasks whose task and guest give none. None (default): WCET.
    pub rho: Option<f64>,
    pub model: Model,
    pub heuristic: Heuristic,
    /// `--cores`: overrides the scenario's `host.cores`.
    pub cores: Option<u32>,
    pub budget: BudgetMethod,
    /// Per-core bandwidth cap and why it is the one used; None: the scenario's
    /// `host.bandwidth_cap` (as written, else its default).
    pub bandwidth_cap: Option<BandwidthCap>,
    /// A host model's costs, charged to every interface (`--host-model`).
    pub overheads: Option<Overheads>,
    /// The kernel's server period range `[min, max]` (ns): candidate periods outside it are not
    /// used (`sched_deadline_period_min_us`/`_max_us`; None: no limit).
    pub period_limits: Option<(u64, u64)>,
    /// The host CPUs to place on, in order of preference (the partitioner's core `k` is CPU
    /// `cpus[k]`); empty: CPUs `0 .. cores`.
    pub cpus: Vec<u32>,
}

impl PlanOptions {
    /// The per-core cap these options plan `scenario` with.
    pub fn cap(&self, scenario: &Scenario) -> f64 {
        self.bandwidth_cap.as_ref().map_or(scenario.host.bandwidth_cap, |c| c.value)
    }

    /// The number of cores to place on.
    pub fn core_count(&self, scenario: &Scenario) -> u32 {
        match self.cpus.len() {
            0 => self.cores.unwrap_or(scenario.host.cores),
            n => n as u32,
        }
    }

    /// The host CPU of the partitioner's core `k`.
    fn cpu(&self, k: u32) -> u32 {
        self.cpus.get(k as usize).copied().unwrap_or(k)
    }

    /// The guest's candidate server periods (ns) inside the kernel's limits.
    fn candidates(&self, g: &Guest) -> Vec<u64> {
        let (min, max) = self.period_limits.unwrap_or((0, u64::MAX));
        g.server_periods.candidates(&g.tasks).iter().map(|p| p.0).filter(|p| (min..=max).contains(p)).collect()
    }
}

/// A guest that has no core in the plan, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unplaced {
    pub name: String,
    pub reason: String,
    /// Not analysed: its exact analysis needs more than [`MAX_CHECK_POINTS`] check points (an
    /// input outside what the planner analyses, not a proof of infeasibility).
    pub too_large: bool,
}

/// A plan and the reasons for every guest that did not fit.
#[derive(Debug, Clone)]
pub struct Planned {
    pub plan: Plan,
    pub unplaced: Vec<Unplaced>,
}

/// One guest analysed: its task budgets and its least interface (None: no candidate period works)
/// with the alternatives the partitioner may use instead (EDP: larger deadlines), least first.
/// A guest of several vCPUs has its servers in `vcpus` instead (its own interface fields unused).
#[derive(Clone)]
struct GuestAnalysis {
    budgets: Vec<TaskBudget>,
    interface: Option<Interface>,
    menu: Vec<Interface>,
    /// Sum of c / T (for messages).
    utilisation: f64,
    /// The exact analysis needs more than [`MAX_CHECK_POINTS`] check points: not analysed.
    too_large: bool,
    /// With overheads: the least interface without them (None: none, or no overheads charged).
    overhead_free: Option<Interface>,
    /// With overheads, schedulable without them but not with them: the term that did it.
    overhead_reason: Option<String>,
    /// A guest of several vCPUs: one server per vCPU ([`crate::vcpus`]).
    vcpus: Option<VcpuServers>,
}

/// The guest's task indices by decreasing priority for FP (the order the FP analysis expects;
/// EDF keeps file order).
fn analysis_order(g: &Guest) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..g.tasks.len()).collect();
    if g.scheduler == GuestScheduler::Fp {
        idx.sort_by_key(|&i| std::cmp::Reverse(g.tasks[i].priority));
    }
    idx
}

/// Task `i` of the guest as a sporadic task with its budget.
fn sporadic(g: &Guest, budgets: &[TaskBudget], i: usize) -> Sporadic {
    Sporadic { c: budgets[i].c, d: g.tasks[i].deadline.0, t: g.tasks[i].period.0 }
}

/// The guest's tasks as sporadic tasks with their budgets, sorted by decreasing priority for FP
/// (the order the FP analysis expects; EDF keeps file order).
pub(crate) fn sporadic_tasks(g: &Guest, budgets: &[TaskBudget]) -> Vec<Sporadic> {
    analysis_order(g).into_iter().map(|i| sporadic(g, budgets, i)).collect()
}

/// Budgets and interface of one guest. `uniform_rho` (max-rho search) overrides every rho.
fn analyse_guest(g: &Guest, o: &PlanOptions, cap: f64, uniform_rho: Option<f64>) -> GuestAnalysis {
    let budgets: Vec<TaskBudget> =
        g.tasks.iter().map(|t| task_budget(t, uniform_rho.or(effective_rho(t.rho, g.rho, o.rho)), o.budget)).collect();
    let candidates = o.candidates(g);
    if g.is_multi_vcpu() {
        return analyse_vcpus(g, o, cap, &candidates, budgets);
    }
    let tasks = sporadic_tasks(g, &budgets);
    GuestAnalysis { budgets, ..analyse_server(tasks, g.scheduler, o, &candidates) }
}

/// The servers of a guest of several vCPUs ([`crate::vcpus`]); each partitioned vCPU's interface
/// is found as a guest of one vCPU's ([`analyse_server`]).
fn analyse_vcpus(g: &Guest, o: &PlanOptions, cap: f64, candidates: &[u64], budgets: Vec<TaskBudget>) -> GuestAnalysis {
    let tasks: Vec<Sporadic> = (0..g.tasks.len()).map(|i| sporadic(g, &budgets, i)).collect();
    let servers = match g.placement {
        Placement::Global => {
            let overheads = o.overheads.unwrap_or_default();
            let test = crate::mpr_interface::GlobalTest { scheduler: g.scheduler, overheads };
            let inflated: Vec<Sporadic> = sporadic_tasks(g, &budgets)
                .into_iter()
                .map(|t| Sporadic { c: t.c.saturating_add(overheads.per_job), ..t })
                .collect();
            crate::vcpus::global(g, &inflated, candidates, &test)
        }
        Placement::Partitioned => {
            // each task's place in the analysis order: a set is ordered in O(k log k), not by a
            // scan of every task of the guest per set
            let mut rank = vec![0; g.tasks.len()];
            for (r, &i) in analysis_order(g).iter().enumerate() {
                rank[i] = r;
            }
            let mut analyse = |set: &[usize]| {
                let mut ordered = set.to_vec();
                ordered.sort_unstable_by_key(|&i| rank[i]);
                let on: Vec<Sporadic> = ordered.iter().map(|&i| tasks[i]).collect();
                let a = analyse_server(on, g.scheduler, o, candidates);
                Server { interface: a.interface, menu: a.menu, too_large: a.too_large }
            };
            crate::vcpus::partitioned(g, &tasks, o.model, cap, &mut analyse)
        }
    };
    GuestAnalysis {
        budgets,
        interface: None,
        menu: vec![],
        utilisation: crate::dbf::utilisation(&tasks),
        too_large: servers.too_large,
        overhead_free: None,
        overhead_reason: None,
        vcpus: Some(servers),
    }
}

/// The least interface of a server running `tasks` (a guest of one vCPU, or one vCPU of a
/// partitioned guest), without budgets.
fn analyse_server(tasks: Vec<Sporadic>, sched: GuestScheduler, o: &PlanOptions, candidates: &[u64]) -> GuestAnalysis {
    if let Some(overheads) = &o.overheads {
        return analyse_with_overheads(tasks, sched, o.model, candidates, overheads, vec![]);
    }
    let mut demand = Demand::new(&tasks, sched);
    let interface = best_interface_for(&mut demand, o.model, candidates);
    let menu = match (interface, o.model) {
        (None, _) => vec![],
        (Some(i), Model::Prm) => vec![i],
        (Some(i), Model::Edp) => edp_menu(&mut demand, i),
    };
    let utilisation = crate::dbf::utilisation(&tasks);
    if demand.too_large() {
        return GuestAnalysis {
            budgets: vec![],
            interface: None,
            menu: vec![],
            utilisation,
            too_large: true,
            overhead_free: None,
            overhead_reason: None,
            vcpus: None,
        };
    }
    GuestAnalysis {
        budgets: vec![],
        interface,
        menu,
        utilisation,
        too_large: false,
        overhead_free: None,
        overhead_reason: None,
        vcpus: None,
    }
}

/// A guest on a host with overheads ([`crate::overhead`]): jobs inflated by the per-job cost,
/// the interface of least deployed bandwidth on the delayed supply (EDP: with its menu of larger
/// deadlines); and, for comparison, the least interface without overheads.
fn analyse_with_overheads(
    tasks: Vec<Sporadic>,
    sched: GuestScheduler,
    model: Model,
    candidates: &[u64],
    overheads: &Overheads,
    budgets: Vec<TaskBudget>,
) -> GuestAnalysis {
    let inflated: Vec<Sporadic> =
        tasks.iter().map(|t| Sporadic { c: t.c.saturating_add(overheads.per_job), ..*t }).collect();
    let mut demand = Demand::new(&inflated, sched);
    // an infeasible guest is proven so by one test per period, not a least-budget search each
    let best = |demand: &mut Demand| match model {
        Model::Prm => best_interface_with_overheads(demand, candidates, overheads),
        Model::Edp => best_edp_with_overheads(demand, candidates, overheads),
    };
    let interface =
        has_interface_with_overheads(&mut demand, candidates, overheads).then(|| best(&mut demand)).flatten();
    let menu = match (interface, model) {
        (Some(i), Model::Edp) => edp_menu_with_overheads(&mut demand, i, overheads),
        (i, _) => i.into_iter().collect(),
    };
    let too_large = demand.too_large();
    let mut free_demand = Demand::new(&tasks, sched);
    let overhead_free = best_interface_for(&mut free_demand, model, candidates);
    let utilisation = crate::dbf::utilisation(&inflated);
    let interface = interface.filter(|_| !too_large);
    let menu = if too_large { vec![] } else { menu };
    let overhead_reason = (interface.is_none() && overhead_free.is_some() && !too_large)
        .then(|| overhead_term(&tasks, sched, candidates, overheads, overhead_free.map(|f| f.period)));
    GuestAnalysis { budgets, interface, menu, utilisation, too_large, overhead_free, overhead_reason, vcpus: None }
}

/// A host model whose costs exceed a period of some guest - the per-server-period cost at least
/// the guest's largest candidate server period (no budget is left at any), or the per-job cost
/// at least a task's period - cannot describe a host that scenario runs on: an input error
/// naming the host model's field (`rtvirt plan` exits 2), not an infeasible guest.
pub fn overheads_beyond_a_period(scenario: &Scenario, o: &Overheads) -> Option<InputError> {
    for g in &scenario.guests {
        let largest = g.server_periods.candidates(&g.tasks).last().map_or(0, |p| p.0);
        if largest > 0 && o.per_period >= largest {
            return Some(InputError::field(
                "server_overhead_ns",
                format!(
                    "{} ns per server period (server_overhead_ns + cache_reload_ns) is not below guest \"{}\"'s \
                     largest candidate server period ({}): expected a per-period cost below the server period",
                    o.per_period,
                    g.name,
                    Nanos(largest)
                ),
            ));
        }
        if let Some(t) = g.tasks.iter().find(|t| o.per_job >= t.period.0) {
            return Some(InputError::field(
                "context_switch_ns",
                format!(
                    "{} ns per job (cache_reload_ns + 2 context_switch_ns) is not below the period of task \"{}\" \
                     of guest \"{}\" ({}): expected a per-job cost below every task period",
                    o.per_job, t.name, g.name, t.period
                ),
            ));
        }
    }
    None
}

/// Which overhead makes a guest that is schedulable without overheads infeasible with them.
fn overhead_term(
    tasks: &[Sporadic],
    sched: GuestScheduler,
    candidates: &[u64],
    o: &Overheads,
    free_period: Option<u64>,
) -> String {
    let min_deadline = tasks.iter().map(|t| t.d).min().unwrap_or(0);
    let largest = candidates.iter().copied().max().unwrap_or(0);
    if o.release_jitter >= min_deadline {
        return format!(
            "the release latency ({} ns) is not below the shortest task deadline ({min_deadline} ns)",
            o.release_jitter
        );
    }
    if o.per_period >= largest {
        return format!(
            "the per-period server overhead ({} ns) is not below the largest candidate server period ({largest} ns)",
            o.per_period
        );
    }
    if let Some(t) = tasks.iter().find(|t| t.c.saturating_add(o.per_job) > t.d - o.release_jitter.min(t.d)) {
        return format!(
            "the per-job overhead ({} ns) makes a task's c ({} ns) exceed its deadline ({} ns) \
             less the release latency ({} ns)",
            o.per_job, t.c, t.d, o.release_jitter
        );
    }
    decisive_terms(tasks, sched, candidates, o, free_period)
        .unwrap_or_else(|| format!("the overheads together ({})", overheads_text(o)))
}

/// The overhead terms (a host model's fields) without which the guest has an interface, or
/// that alone leave it none: found by planning the guest again with each term removed (first at
/// its overhead-free period `free_period` only, which is cheap: a failing search stops at its
/// first violated check point), else with each term removed / alone over every candidate.
fn decisive_terms(
    tasks: &[Sporadic],
    sched: GuestScheduler,
    candidates: &[u64],
    o: &Overheads,
    free_period: Option<u64>,
) -> Option<String> {
    let fits = |o: &Overheads, periods: &[u64]| {
        let inflated: Vec<Sporadic> =
            tasks.iter().map(|t| Sporadic { c: t.c.saturating_add(o.per_job), ..*t }).collect();
        let mut demand = Demand::new(&inflated, sched);
        has_interface_with_overheads(&mut demand, periods, o) && !demand.too_large()
    };
    let none = Overheads::default();
    let terms = [
        (
            format!("the per-period server cost ({} ns, server_overhead_ns + cache_reload_ns)", o.per_period),
            Overheads { per_period: 0, ..*o },
            Overheads { per_period: o.per_period, ..none },
        ),
        (
            format!("the per-job cost ({} ns, cache_reload_ns + 2 context_switch_ns)", o.per_job),
            Overheads { per_job: 0, ..*o },
            Overheads { per_job: o.per_job, ..none },
        ),
        (
            format!("the release latency ({} ns, release_latency_ns.max)", o.release_jitter),
            Overheads { release_jitter: 0, ..*o },
            Overheads { release_jitter: o.release_jitter, ..none },
        ),
        (
            format!("the enforcement overrun's pay-back ({} ns, enforcement.overrun_max_ns)", o.overrun),
            Overheads { overrun: 0, ..*o },
            Overheads { overrun: o.overrun, tick: o.tick, ..none },
        ),
    ];
    let without = |periods: &[u64]| -> Vec<&str> {
        terms.iter().filter(|(_, rest, _)| fits(rest, periods)).map(|t| t.0.as_str()).collect()
    };
    if let Some(p) = free_period {
        let found = without(&[p]);
        if !found.is_empty() {
            return Some(format!("{}: without it the guest fits (at server period {})", found.join(", or "), Nanos(p)));
        }
    }
    let alone: Vec<&str> = terms.iter().filter(|(_, _, only)| !fits(only, candidates)).map(|t| t.0.as_str()).collect();
    if !alone.is_empty() {
        return Some(format!("{} alone leaves no interface at any candidate period", alone.join(" and ")));
    }
    let found = without(candidates);
    (!found.is_empty()).then(|| format!("{}: without it the guest fits", found.join(", or ")))
}

fn task_plans(g: &Guest, budgets: &[TaskBudget]) -> Vec<TaskPlan> {
    g.tasks
        .iter()
        .zip(budgets)
        .map(|(t, b)| TaskPlan {
            name: t.name.clone(),
            period_ns: t.period.0,
            deadline_ns: t.deadline.0,
            wcet_ns: t.wcet.0,
            budget_ns: b.c,
            rho: b.rho,
            bound: b.bound.as_str().to_string(),
            miss_bound: None,
        })
        .collect()
}

/// The guest's plan entry: the interface it was placed with, else its least one. Without an
/// interface it is shown as a whole core at the largest candidate period (it needs at least that).
fn guest_plan(g: &Guest, a: &GuestAnalysis, model: Model, placed: Option<(u32, Interface)>) -> GuestPlan {
    let fallback = g.server_periods.candidates(&g.tasks).last().map_or(1, |p| p.0);
    let core = placed.map(|p| p.0);
    let i = placed.map(|p| p.1).or(a.interface).unwrap_or(Interface {
        period: fallback,
        budget: fallback,
        deadline: fallback,
    });
    GuestPlan {
        name: g.name.clone(),
        scheduler: g.scheduler.as_str().to_string(),
        model: model.as_str().to_string(),
        period_ns: i.period,
        budget_ns: i.budget,
        deadline_ns: i.deadline,
        bandwidth: if a.interface.is_some() { i.bandwidth() } else { 1.0 },
        core,
        tasks: task_plans(g, &a.budgets),
        overhead_free: a.overhead_free.map(|f| OverheadFree {
            period_ns: f.period,
            budget_ns: f.budget,
            bandwidth: f.bandwidth(),
        }),
        placement: g.placement,
        vcpus: vec![],
    }
}

/// A vCPU's place: its core and, for a vCPU with a server, the interface it got there.
type VcpuPlace = Option<(u32, Option<Interface>)>;

/// The plan entry of a guest of several vCPUs: per vCPU its place, or (not placed) its least
/// interface, else a whole core at the largest candidate period; the guest's own fields are
/// those of its first vCPU with a server, its bandwidth their sum.
fn vcpus_guest_plan(g: &Guest, a: &GuestAnalysis, v: &VcpuServers, model: Model, places: &[VcpuPlace]) -> GuestPlan {
    let fallback = g.server_periods.candidates(&g.tasks).last().map_or(1, |p| p.0);
    let whole = Interface { period: fallback, budget: fallback, deadline: fallback };
    let vcpus: Vec<VcpuPlan> = v
        .vcpus
        .iter()
        .zip(places)
        .map(|(s, place)| {
            let i = place.and_then(|p| p.1).or(s.menu.first().copied());
            let (i, bandwidth) = match (s.model, i) {
                (NO_RESERVATION, _) => (Interface { period: 0, budget: 0, deadline: 0 }, 0.0),
                (_, Some(i)) => (i, i.bandwidth()),
                (_, None) => (whole, 1.0),
            };
            VcpuPlan {
                id: s.id,
                core: place.map(|p| p.0),
                model: s.model.to_string(),
                period_ns: i.period,
                budget_ns: i.budget,
                deadline_ns: i.deadline,
                bandwidth,
                tasks: s.tasks.iter().map(|&t| g.tasks[t].name.clone()).collect(),
            }
        })
        .collect();
    let first = vcpus.iter().find(|p| p.reserved()).or(vcpus.first()).cloned().expect("a guest has a vCPU");
    let placed = v.failure.is_none() && places.iter().all(Option::is_some);
    GuestPlan {
        name: g.name.clone(),
        scheduler: g.scheduler.as_str().to_string(),
        model: if g.placement == Placement::Global { crate::vcpus::MPR.into() } else { model.as_str().into() },
        period_ns: first.period_ns,
        budget_ns: first.budget_ns,
        deadline_ns: first.deadline_ns,
        bandwidth: vcpus.iter().map(|p| p.bandwidth).sum(),
        core: first.core.filter(|_| placed),
        tasks: task_plans(g, &a.budgets),
        overhead_free: None,
        placement: g.placement,
        vcpus,
    }
}

/// A guest none of whose candidate server periods is inside the kernel's period limits.
fn outside_period_limits(g: &Guest, o: &PlanOptions) -> Option<String> {
    let (min, max) = o.period_limits?;
    let all = g.server_periods.candidates(&g.tasks);
    (o.candidates(g).is_empty() && !all.is_empty()).then(|| {
        format!(
            "none of its candidate server periods ({} .. {}) is inside the kernel's limits {} .. {} \
             (sched_deadline_period_min_us / _max_us): give server_periods inside them",
            all[0],
            all[all.len() - 1],
            Nanos(min),
            Nanos(max)
        )
    })
}

fn unplaced_reason(
    g: &Guest,
    analysis: &GuestAnalysis,
    places: &[VcpuPlace],
    cap: f64,
    cores: u32,
    h: Heuristic,
    overrun: u64,
) -> String {
    if let Some(v) = &analysis.vcpus {
        return vcpus_unplaced_reason(g, v, places, cores, h);
    }
    if analysis.too_large {
        return format!(
            "too large to analyse exactly: its task periods and deadlines need more than {MAX_CHECK_POINTS} check \
             points (e.g. a 60 min period next to a 10 us one); use periods closer together"
        );
    }
    if let Some(term) = &analysis.overhead_reason {
        return format!("schedulable without the host's overheads, not with them: {term}");
    }
    match analysis.interface {
        None => format!(
            "its tasks (utilisation of the budgets {:.3}) are not schedulable even with a whole core at any candidate \
             server period",
            analysis.utilisation
        ),
        Some(i) if i.bandwidth() > cap => {
            let free = analysis
                .overhead_free
                .map(|f| format!(" (without the host's overheads {:.4})", f.bandwidth()))
                .unwrap_or_default();
            format!("its server needs bandwidth {:.4}{free}, above the per-core cap {cap}", i.bandwidth())
        }
        Some(i) => format!(
            "its server (bandwidth {:.4}) did not fit on any of the {cores} cores next to the others ({}){}",
            i.bandwidth(),
            h.as_str(),
            if overrun > 0 {
                format!(", each other server of a core charged one enforcement overrun ({overrun} ns)")
            } else {
                String::new()
            }
        ),
    }
}

/// Why a guest of several vCPUs has no place: its analysis' reason, else the first server that
/// did not fit.
fn vcpus_unplaced_reason(g: &Guest, v: &VcpuServers, places: &[VcpuPlace], cores: u32, h: Heuristic) -> String {
    if let Some(why) = &v.failure {
        return why.clone();
    }
    let Some((s, _)) = v.vcpus.iter().zip(places).find(|(_, p)| p.is_none()) else { return String::new() };
    format!(
        "the server of its vCPU {} (bandwidth {:.4}) did not fit on any of the {cores} cores next to the others ({}){}",
        s.id,
        s.menu.first().map_or(1.0, |i| i.bandwidth()),
        h.as_str(),
        if g.spread { ", on a core apart from the guest's other vCPUs (spread)" } else { "" }
    )
}

fn core_plans(guests: &[GuestPlan]) -> Vec<CorePlan> {
    // by core id (a map, not a search of the list per vCPU: 100,000 guests on 80,000 cores)
    let mut cores: std::collections::BTreeMap<u32, CorePlan> = Default::default();
    for g in guests.iter().filter(|g| g.core.is_some()) {
        for v in g.vcpu_plans() {
            let Some(c) = v.core else { continue };
            let x = cores.entry(c).or_insert_with(|| CorePlan { id: c, guests: vec![], bandwidth: 0.0, why: None });
            if !x.guests.contains(&g.name) {
                x.guests.push(g.name.clone());
            }
            x.bandwidth += v.bandwidth;
        }
    }
    cores.into_values().collect()
}

/// What a plan with a host model charged, in words (the plan's `settings.overheads`).
pub fn overheads_text(o: &Overheads) -> String {
    format!(
        "per server period {} ns (server overhead + cache reload) out of the budget; per job {} ns \
         (cache reload + 2 context switches); release jitter {} ns; enforcement overrun {} ns ({}), paid back \
         from the next periods: supply delayed by ceil(overrun / budget) periods (Phan, Xu, Lee, Lee & \
         Sokolsky 2013)",
        o.per_period,
        o.per_job,
        o.release_jitter,
        o.overrun,
        if o.tick { "the tick" } else { "hrtick" }
    )
}

fn settings(scenario: &Scenario, options: &PlanOptions, cores: u32) -> PlanSettings {
    PlanSettings {
        bandwidth_cap: Some(options.cap(scenario)),
        bandwidth_cap_source: options.bandwidth_cap.as_ref().map(|c| c.why.clone()),
        budget: Some(options.budget.as_str().into()),
        cores: Some(cores),
        heuristic: Some(options.heuristic.as_str().into()),
        model: Some(options.model.as_str().into()),
        overheads: options.overheads.map(|o| overheads_text(&o)),
        rho: Some(options.rho),
        rho_default: Some("none: tasks without rho (task, guest or --rho) use their WCET".into()),
        scenario: Some(scenario.name.clone()),
        host: None,
        guarantee: None,
        assumptions: vec![],
        extra: Default::default(),
    }
}

/// The plan at the scenario's rhos (or one `uniform_rho` for every task), without `max_rho`.
pub fn plan_at(scenario: &Scenario, options: &PlanOptions, uniform_rho: Option<f64>) -> Planned {
    let cores = options.core_count(scenario);
    let cap = options.cap(scenario);
    let analyses: Vec<GuestAnalysis> =
        scenario.guests.par_iter().map(|g| analyse_guest(g, options, cap, uniform_rho)).collect();
    let overrun = options.overheads.map_or(0, |o| o.overrun);
    let mut places = place(scenario, &analyses, cores, cap, options.heuristic, overrun);
    for p in places.iter_mut().flatten().flatten() {
        p.0 = options.cpu(p.0);
    }
    let guests: Vec<GuestPlan> = scenario
        .guests
        .iter()
        .zip(&analyses)
        .zip(&places)
        .map(|((g, a), p)| match &a.vcpus {
            None => guest_plan(g, a, options.model, p[0].map(|(c, i)| (c, i.expect("a placed guest has a server")))),
            Some(v) => vcpus_guest_plan(g, a, v, options.model, p),
        })
        .collect();
    let unplaced: Vec<Unplaced> = scenario
        .guests
        .iter()
        .zip(&analyses)
        .zip(&places)
        .zip(&guests)
        .filter(|(_, planned)| planned.core.is_none())
        .map(|(((g, a), p), _)| Unplaced {
            name: g.name.clone(),
            reason: outside_period_limits(g, options)
                .unwrap_or_else(|| unplaced_reason(g, a, p, cap, cores, options.heuristic, overrun)),
            too_large: a.too_large,
        })
        .collect();
    let cores_list = core_plans(&guests);
    let plan = Plan {
        schema: PLAN_SCHEMA.to_string(),
        feasible: unplaced.is_empty(),
        cores_used: cores_list.len() as u32,
        max_rho: None,
        guests,
        cores: cores_list,
        unplaced: unplaced.iter().map(|u| u.name.clone()).collect(),
        settings: settings(scenario, options, cores),
        needs: vec![],
    };
    Planned { plan, unplaced }
}

/// Every server onto a core (a guest of one vCPU: its one server; of several: one per vCPU with a
/// reservation, apart from each other when the guest spreads), then the vCPUs without a
/// reservation of the guests placed in full onto the least loaded core (apart from the guest's
/// others when it spreads and a core is left). Per guest, per vCPU its place.
fn place(
    scenario: &Scenario,
    analyses: &[GuestAnalysis],
    cores: u32,
    cap: f64,
    h: Heuristic,
    overrun: u64,
) -> Vec<Vec<VcpuPlace>> {
    let (mut menus, mut apart, mut owner) = (vec![], vec![], vec![]);
    for (gi, (g, a)) in scenario.guests.iter().zip(analyses).enumerate() {
        match &a.vcpus {
            None => {
                menus.push(a.menu.clone());
                apart.push(None);
                owner.push((gi, 0));
            }
            Some(v) if v.failure.is_none() => {
                for (k, s) in v.vcpus.iter().enumerate().filter(|(_, s)| !s.menu.is_empty()) {
                    menus.push(s.menu.clone());
                    apart.push(g.spread.then_some(gi));
                    owner.push((gi, k));
                }
            }
            Some(_) => {}
        }
    }
    let mut places: Vec<Vec<VcpuPlace>> = scenario.guests.iter().map(|g| vec![None; g.vcpus.len()]).collect();
    let mut load = vec![0.0; cores as usize];
    for ((gi, k), p) in owner.into_iter().zip(partition_apart(&menus, &apart, cores, cap, h, overrun)) {
        if let Some((c, i)) = p {
            places[gi][k] = Some((c, Some(i)));
            load[c as usize] += i.bandwidth();
        }
    }
    for (gi, a) in analyses.iter().enumerate() {
        let Some(v) = a.vcpus.as_ref().filter(|v| v.failure.is_none()) else { continue };
        let servers_placed = v.vcpus.iter().zip(&places[gi]).all(|(s, p)| s.menu.is_empty() || p.is_some());
        if !servers_placed {
            continue;
        }
        // the cores the guest's vCPUs hold so far (a flag per core: one pass per vCPU, not a
        // search of the guest's list for every core)
        let mut taken = vec![false; cores as usize];
        for p in places[gi].iter().flatten() {
            taken[p.0 as usize] = true;
        }
        for k in (0..v.vcpus.len()).filter(|&k| v.vcpus[k].menu.is_empty()) {
            let free = |c: &u32| !scenario.guests[gi].spread || !taken[*c as usize];
            let least = |cs: &mut dyn Iterator<Item = u32>| {
                cs.min_by(|&a, &b| load[a as usize].total_cmp(&load[b as usize]).then(a.cmp(&b)))
            };
            let core = least(&mut (0..cores).filter(free)).or_else(|| least(&mut (0..cores)));
            places[gi][k] = core.map(|c| (c, None));
            if let Some(c) = core {
                taken[c as usize] = true;
            }
        }
    }
    places
}

// The largest uniform rho for which every guest fits: one rho is applied to every task
// (overriding task and guest rhos); budgets are non-decreasing in rho (Cantelli bound and
// quantiles both are), hence so are interfaces, and the search bisects over rho in `(0, 1]` to
// [`RHO_RESOLUTION`]. `rho = 1` means every task at its WCET. The bisection assumes the
// partitioning heuristic is monotone in the servers' sizes, which holds for the exact admission
// test but not always for the greedy order (a known bin-packing anomaly); the reported value is
// always one at which the plan was verified feasible.

/// Resolution of the max-rho search.
pub const RHO_RESOLUTION: f64 = 1e-4;

fn fits(scenario: &Scenario, options: &PlanOptions, rho: f64) -> bool {
    plan_at(scenario, options, Some(rho)).plan.feasible
}

/// Largest uniform rho (multiple of [`RHO_RESOLUTION`], or 1.0 when WCET budgets fit) with a
/// feasible plan; None when not even rho = RHO_RESOLUTION fits.
pub fn max_rho(scenario: &Scenario, options: &PlanOptions) -> Option<f64> {
    max_rho_with(scenario, options, &mut |_, _| {})
}

/// [`max_rho`], calling `step(lo, hi)` before each plan it makes: the rhos between which the
/// answer lies so far (for progress; about 16 plans).
pub fn max_rho_with(scenario: &Scenario, options: &PlanOptions, step: &mut dyn FnMut(f64, f64)) -> Option<f64> {
    step(0.0, 1.0);
    if fits(scenario, options, 1.0) {
        return Some(1.0);
    }
    let steps = (1.0 / RHO_RESOLUTION).round() as u64;
    // invariant: lo fits, hi does not (in units of RHO_RESOLUTION)
    let (mut lo, mut hi) = (1u64, steps);
    step(0.0, 1.0);
    if !fits(scenario, options, lo as f64 * RHO_RESOLUTION) {
        return None;
    }
    while hi - lo > 1 {
        step(lo as f64 * RHO_RESOLUTION, hi as f64 * RHO_RESOLUTION);
        let mid = lo + (hi - lo) / 2;
        if fits(scenario, options, mid as f64 * RHO_RESOLUTION) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo as f64 * RHO_RESOLUTION)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan at the scenario's rhos with its largest uniform rho (what the one planning path
    /// makes of the planner for the ideal host).
    fn plan(scenario: &Scenario, options: &PlanOptions) -> Planned {
        let mut p = plan_at(scenario, options, None);
        p.plan.max_rho = max_rho(scenario, options);
        p
    }

    fn scenario(cores: u32, guests: &[(&str, &[(&str, &str)])]) -> Scenario {
        let mut t = format!("[host]\ncores = {cores}\n");
        for (name, tasks) in guests {
            t.push_str(&format!("[[guest]]\nname = \"{name}\"\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n"));
            for (i, (period, wcet)) in tasks.iter().enumerate() {
                t.push_str(&format!("[[guest.task]]\nname = \"t{i}\"\nperiod = \"{period}\"\nwcet = \"{wcet}\"\n"));
            }
        }
        Scenario::from_toml(&t, None).unwrap()
    }

    /// One guest with two tasks (period, wcet), the first of higher priority under FP, and
    /// candidate server period 1 ms.
    fn two_periods(scheduler: &str, tasks: [(&str, &str); 2]) -> Scenario {
        let mut t = format!(
            "[host]\ncores = 1\n[[guest]]\nname = \"g\"\nscheduler = \"{scheduler}\"\nserver_periods = [\"1ms\"]\n"
        );
        for (i, (period, wcet)) in tasks.iter().enumerate() {
            t.push_str(&format!("[[guest.task]]\nname = \"t{i}\"\nperiod = \"{period}\"\nwcet = \"{wcet}\"\n"));
            if scheduler == "fp" {
                t.push_str(&format!("priority = {}\n", 2 - i));
            }
        }
        Scenario::from_toml(&t, None).unwrap()
    }

    #[test]
    fn a_guest_beyond_the_check_point_bound_is_reported_too_large_not_infeasible() {
        // FP: 360,000,000 scheduling points for the 60 min task (the issue: a 2.9 GB abort)
        let fp = two_periods("fp", [("10us", "1us"), ("60min", "1s")]);
        // EDF at utilisation 1: a deadline every 2 ns up to 2 LCM = 2 h (the issue: an abort in
        // CheckPoints::get with periods 60 min and 1 ns)
        let edf = two_periods("edf", [("2ns", "1ns"), ("60min", "30min")]);
        for s in [fp, edf] {
            let p = plan(&s, &PlanOptions::default());
            assert!(!p.plan.feasible && p.plan.max_rho.is_none());
            assert_eq!(p.unplaced.len(), 1);
            assert!(p.unplaced[0].too_large, "{:?}", p.unplaced);
            assert!(p.unplaced[0].reason.contains("too large to analyse exactly"), "{:?}", p.unplaced);
        }
        // utilisation above 1 needs no check point: infeasible, exactly
        let over = two_periods("edf", [("1ns", "1ns"), ("60min", "1s")]);
        let p = plan(&over, &PlanOptions::default());
        assert!(!p.unplaced[0].too_large && p.unplaced[0].reason.contains("not schedulable"), "{:?}", p.unplaced);
        // below the bound the same shapes are analysed exactly
        let fp = two_periods("fp", [("10ms", "1ms"), ("60min", "1s")]);
        let p = plan(&fp, &PlanOptions::default());
        assert!(p.plan.feasible && p.unplaced.is_empty(), "{:?}", p.unplaced);
    }

    /// [`core_plans`] as it was: a search of the list per vCPU, then sorted.
    fn core_plans_by_search(guests: &[GuestPlan]) -> Vec<CorePlan> {
        let mut cores: Vec<CorePlan> = vec![];
        for g in guests.iter().filter(|g| g.core.is_some()) {
            for v in g.vcpu_plans() {
                let Some(c) = v.core else { continue };
                match cores.iter_mut().find(|x| x.id == c) {
                    Some(x) => {
                        if !x.guests.contains(&g.name) {
                            x.guests.push(g.name.clone());
                        }
                        x.bandwidth += v.bandwidth;
                    }
                    None => {
                        cores.push(CorePlan { id: c, guests: vec![g.name.clone()], bandwidth: v.bandwidth, why: None })
                    }
                }
            }
        }
        cores.sort_by_key(|c| c.id);
        cores
    }

    #[test]
    fn core_plans_are_those_of_the_search_byte_for_byte() {
        let mut spec = crate::gen::BakerSpec::light(3, 300, 4, 0.5);
        spec.cores = 120;
        let s = crate::gen::baker_scenario(&spec);
        let p = plan(&s, &PlanOptions::default()).plan;
        assert!(p.cores.len() > 10 && p.guests.iter().filter(|g| g.core.is_some()).count() > 100);
        let json = |c: &[CorePlan]| serde_json::to_string(c).unwrap();
        assert_eq!(json(&p.cores), json(&core_plans_by_search(&p.guests)));
    }

    #[test]
    fn every_unplaced_guest_has_its_reason() {
        let s = scenario(
            1,
            &[
                ("big", &[("10ms", "6ms")]),
                ("over", &[("10ms", "6ms"), ("10ms", "6ms")]),
                ("overcap", &[("10ms", "9.8ms")]),
            ],
        );
        let p = plan_at(&s, &PlanOptions::default(), None);
        assert!(!p.plan.feasible);
        let why = |n: &str| p.unplaced.iter().find(|u| u.name == n).map(|u| u.reason.clone()).unwrap_or_default();
        assert!(why("over").contains("not schedulable even with a whole core"), "{:?}", p.unplaced);
        assert!(why("overcap").contains("above the per-core cap"), "{:?}", p.unplaced);
        assert!(why("big").is_empty(), "big fits alone: {:?}", p.unplaced);
        assert_eq!(p.plan.unplaced.len(), 2);
        assert_eq!(p.plan.guests[1].bandwidth, 1.0);
        // the plan JSON passes the model's reader checks
        rtvirt_model::plan::Plan::from_json(&serde_json::to_string(&p.plan).unwrap()).unwrap();
    }

    #[test]
    fn an_infeasible_guest_names_the_decisive_overhead_terms() {
        let s = scenario(1, &[("g", &[("10ms", "2ms")])]); // one 5 ms candidate period
        let with = |o: Overheads| {
            let options = PlanOptions { overheads: Some(o), ..Default::default() };
            plan_at(&s, &options, None).unplaced.first().map(|u| u.reason.clone()).unwrap_or_default()
        };
        // each term alone is fatal (4.5 ms of every 5 ms; a 50 ms overrun's pay-back): both named
        let both = with(Overheads { per_period: 4_500_000, overrun: 50_000_000, tick: true, ..Default::default() });
        assert!(
            both.contains("the per-period server cost (4500000 ns")
                && both.contains("and the enforcement overrun's pay-back (50000000 ns")
                && both.contains("alone leaves no interface"),
            "{both}"
        );
        // together fatal, each alone fine: the guest fits without either
        let pair = with(Overheads { per_period: 1_500_000, release_jitter: 6_000_000, ..Default::default() });
        assert!(
            pair.contains("the per-period server cost (1500000 ns")
                && pair.contains("or the release latency (6000000 ns"),
            "{pair}"
        );
        assert!(pair.contains("without it the guest fits"), "{pair}");
    }

    #[test]
    fn plan_fields_follow_the_analysis() {
        let s = scenario(2, &[("a", &[("10ms", "2ms")]), ("b", &[("10ms", "3ms")])]);
        let p = plan(&s, &PlanOptions::default()).plan;
        assert!(p.feasible && p.max_rho == Some(1.0));
        // one task of U = 0.2 on a 5ms PRM: least budget from sbf(10ms) >= 2ms
        let a = &p.guests[0];
        assert_eq!((a.period_ns, a.deadline_ns), (5_000_000, 5_000_000));
        let r = crate::sbf::Edp::prm(a.period_ns, a.budget_ns);
        use crate::sbf::Supply;
        assert!(
            r.sbf(10_000_000) >= 2_000_000
                && crate::sbf::Edp::prm(a.period_ns, a.budget_ns - 1).sbf(10_000_000) < 2_000_000
        );
        assert_eq!(p.cores_used, 1);
        assert_eq!(p.cores[0].guests, vec!["a", "b"]); // scenario order
        assert_eq!(p.settings.heuristic.as_deref(), Some("bfd"));
    }
}
