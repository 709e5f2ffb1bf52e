//! The simulator's run configuration: the scenario's checked `[sim]` and `[guest.vcpu]` sections
//! (`rtvirt_model::scenario::sim`), combined at run time with a plan (every vCPU becomes a
//! SCHED_DEADLINE reservation) and the command line's `--duration` / `--seed`. Errors about the
//! scenario come back located in its file; errors about the plan name its field (`guests[0].core`).

use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::scenario::adapt::AdaptSection;
use rtvirt_model::scenario::sim::{check_sim_timing, check_threads};
pub use rtvirt_model::scenario::sim::{
    ExtraThread, Family, Load, Policy, Settings, SupplyPattern, ThreadSpec, VcpuSpec, DEFAULT_DURATION, MAX_SLOWDOWN,
};
use rtvirt_model::scenario::{check_horizon, Guest, Placement, Scenario, Task};
use rtvirt_model::{InputError, Nanos};

type R<T> = Result<T, InputError>;

/// Longest accepted horizon (the scenario model's limit for every simulator).
pub const MAX_DURATION: Nanos = rtvirt_model::scenario::MAX_HORIZON;

/// The whole checked configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub settings: Settings,
    /// One per guest, in scenario order: the settings its vCPUs share (`[guest.vcpu]`; the thread
    /// of vCPU 0, with a plan the planned one).
    pub vcpus: Vec<VcpuSpec>,
    /// One per guest, in scenario order: its vCPUs' host threads and the tasks' placement.
    pub guest_vcpus: Vec<GuestThreads>,
    pub extra: Vec<ExtraThread>,
    /// `--adapt`: the vCPUs' reservations adapted online (None: fixed).
    pub adapt: Option<AdaptSettings>,
}

/// How a run adapts its reservations: the scenario's `[adapt]` (or its defaults), the plan's
/// reservation model and per-core cap.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptSettings {
    pub section: AdaptSection,
    pub edp: bool,
    pub cap: f64,
}

/// How one guest's vCPUs run on the simulated host.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestThreads {
    /// One host thread per vCPU, by vCPU id.
    pub threads: Vec<ThreadSpec>,
    /// Per vCPU: runs real-time tasks (false: a housekeeping vCPU, never given a task).
    pub rt: Vec<bool>,
    /// Partitioned: per task, the vCPU it is bound to; None: global scheduling over the
    /// real-time vCPUs.
    pub task_vcpu: Option<Vec<u32>>,
}

impl GuestThreads {
    /// A guest of one vCPU running every task.
    pub fn single(thread: ThreadSpec, tasks: usize) -> GuestThreads {
        GuestThreads { threads: vec![thread], rt: vec![true], task_vcpu: Some(vec![0; tasks]) }
    }
}

/// Command-line values that override the scenario's `[sim]` section.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
    /// Where the ticks fall relative to the first release ([`Settings::tick_phase`]); e.g. the
    /// phase a measurement recorded.
    pub tick_phase: Option<Nanos>,
}

impl SimConfig {
    /// The scenario's checked simulator sections; with a plan, every vCPU becomes a
    /// SCHED_DEADLINE reservation (runtime = budget, deadline, period) pinned to the plan's
    /// core, and the rules that span threads are checked again.
    pub fn new(scenario: &Scenario, plan: Option<&Plan>, overrides: Overrides) -> R<SimConfig> {
        let mut settings = scenario.sim.settings.clone();
        if let Some(d) = overrides.duration {
            settings.duration = check_horizon(d, "--duration")?.0;
        }
        if let Some(seed) = overrides.seed {
            settings.seed = seed;
        }
        if let Some(phase) = overrides.tick_phase {
            settings.tick_phase = phase.0;
        }
        let mut vcpus = Vec::with_capacity(scenario.guests.len());
        let mut guest_vcpus = Vec::with_capacity(scenario.guests.len());
        for (i, g) in scenario.guests.iter().enumerate() {
            for (j, t) in g.tasks.iter().enumerate() {
                check_sim_timing(t.period, &format!("guest[{i}].task[{j}].period")).map_err(|e| scenario.locate(e))?;
            }
            if g.tasks.is_empty() {
                return Err(scenario.locate(InputError::field(
                    format!("guest[{i}]"),
                    format!(
                        "guest \"{}\" has no tasks: expected at least one [[guest.task]] (as `rtvirt plan`; to load a \
                         core without tasks, use a [[sim.thread]])",
                        g.name
                    ),
                )));
            }
            let mut v = g.vcpus[0].sim.clone();
            let threads = match plan {
                Some(p) if g.is_multi_vcpu() => planned_vcpus(p, g)?,
                Some(p) => {
                    v.thread = planned(p, &g.name, v.thread.name.clone())?;
                    GuestThreads::single(v.thread.clone(), g.tasks.len())
                }
                None => GuestThreads {
                    threads: g.vcpus.iter().map(|c| c.sim.thread.clone()).collect(),
                    rt: g.vcpus.iter().map(|c| !c.housekeeping).collect(),
                    task_vcpu: task_vcpus(g),
                },
            };
            v.thread = threads.threads[0].clone();
            guest_vcpus.push(threads);
            vcpus.push(v);
        }
        let cfg = SimConfig { settings, vcpus, guest_vcpus, extra: scenario.sim.threads.clone(), adapt: None };
        if plan.is_some() {
            check_threads(&cfg.labelled_threads(), cfg.settings.rt_throttle).map_err(|e| scenario.locate(e))?;
        }
        Ok(cfg)
    }

    /// Every thread's spec, vCPUs first (thread id = index).
    /// The cores simulated: the scenario's, or up to the highest CPU a thread is pinned to (a plan
    /// for a real host places on its CPU numbers, e.g. CPU 1 of a one-core plan that keeps CPU 0
    /// for housekeeping).
    pub fn host_cores(&self, scenario: &Scenario) -> u32 {
        let pinned = self.threads().flat_map(|t| t.cores.iter()).map(|&c| c.saturating_add(1)).max();
        pinned.unwrap_or(0).max(scenario.host.cores)
    }

    pub fn threads(&self) -> impl Iterator<Item = &ThreadSpec> {
        let vcpus = self.guest_vcpus.iter().flat_map(|g| &g.threads);
        vcpus.chain(self.extra.iter().map(|e| &e.thread))
    }

    /// Every thread's spec with the scenario field its errors name.
    fn labelled_threads(&self) -> Vec<(&ThreadSpec, String)> {
        let vcpus = self.guest_vcpus.iter().enumerate().flat_map(|(i, g)| {
            let field = format!("guest[{i}].vcpu");
            g.threads.iter().map(move |t| (t, field.clone()))
        });
        let extra = self.extra.iter().enumerate().map(|(i, e)| (&e.thread, format!("sim.thread[{i}].sched")));
        vcpus.chain(extra).collect()
    }
}

/// Partitioned guests: per task, its vCPU - the task's own `vcpu`, else the real-time vCPU with
/// the least WCET utilisation so far (in scenario order; ties to the lowest id). Global guests of
/// several vCPUs: None (the guest scheduler places every job).
fn task_vcpus(g: &Guest) -> Option<Vec<u32>> {
    if g.placement == Placement::Global && g.is_multi_vcpu() {
        return None;
    }
    let mut load: Vec<(u32, f64)> = g.rt_vcpus().map(|v| (v.id, 0.0)).collect();
    let utilisation = |t: &Task| t.wcet.0 as f64 / t.period.0 as f64;
    for t in g.tasks.iter().filter(|t| t.vcpu.is_some()) {
        if let Some(l) = load.iter_mut().find(|l| Some(l.0) == t.vcpu) {
            l.1 += utilisation(t);
        }
    }
    let of = g.tasks.iter().map(|t| match t.vcpu {
        Some(v) => v,
        None => {
            let least = load.iter_mut().min_by(|a, b| a.1.total_cmp(&b.1)).expect("a guest with tasks has an RT vCPU");
            least.1 += utilisation(t);
            least.0
        }
    });
    Some(of.collect())
}

/// A plan without per-vCPU servers for a guest of several vCPUs: refused rather than simulated
/// as one vCPU (its single reservation says nothing about how the vCPUs are served).
fn unplanned_vcpus(i: usize, g: &Guest) -> InputError {
    InputError::field(
        format!("guests[{i}]"),
        format!(
            "guest \"{}\" has {} vCPUs in the scenario but the plan gives it a single reservation: the simulator \
             needs one server per vCPU (the plan's `vcpus`); simulate without --plan to run the scenario's own \
             [guest.vcpu] threads",
            g.name,
            g.vcpus.len()
        ),
    )
}

/// The plan's entry for a guest, with its index.
fn plan_guest<'p>(p: &'p Plan, guest: &str) -> R<(usize, &'p GuestPlan)> {
    let at = p.guests.iter().position(|g| g.name == guest);
    at.map(|i| (i, &p.guests[i]))
        .ok_or_else(|| InputError::field("guests", format!("the plan has no guest \"{guest}\"")))
}

/// The plan's reservation for a guest as a pinned SCHED_DEADLINE thread.
fn planned(p: &Plan, guest: &str, name: String) -> R<ThreadSpec> {
    let (i, g) = plan_guest(p, guest)?;
    let server = Server { core: g.core, period_ns: g.period_ns, budget_ns: g.budget_ns, deadline_ns: g.deadline_ns };
    reservation(&server, name, &format!("guests[{i}]"), &format!("guest \"{guest}\""))
}

/// A planned reservation: where and how much.
struct Server {
    core: Option<u32>,
    period_ns: u64,
    budget_ns: u64,
    deadline_ns: u64,
}

/// A planned server as a pinned SCHED_DEADLINE thread; `at` is its field in the plan, `what` names
/// it in messages.
fn reservation(s: &Server, name: String, at: &str, what: &str) -> R<ThreadSpec> {
    let Some(core) = s.core else {
        return Err(InputError::field(
            format!("{at}.core"),
            format!("{what} was not placed on a core by the plan (infeasible plan): nothing to simulate"),
        ));
    };
    check_sim_timing(Nanos(s.period_ns), &format!("{at}.period_ns"))?;
    if s.budget_ns < 1024 {
        return Err(InputError::field(
            format!("{at}.budget_ns"),
            format!("budget {} ns: SCHED_DEADLINE needs at least 1024ns", s.budget_ns),
        ));
    }
    Ok(ThreadSpec {
        name,
        cores: vec![core],
        policy: Policy::Deadline { runtime: s.budget_ns, deadline: s.deadline_ns, period: s.period_ns },
    })
}

/// A planned guest of several vCPUs: each vCPU the plan reserves becomes a SCHED_DEADLINE thread
/// on its planned core and runs tasks; one without a reservation (housekeeping, or left without
/// tasks by the packing) keeps the scenario's thread, on its planned core if any, and never gets a
/// task. Partitioned guests: each task on the vCPU whose planned `tasks` name it.
fn planned_vcpus(p: &Plan, g: &Guest) -> R<GuestThreads> {
    let (i, pg) = plan_guest(p, &g.name)?;
    if pg.vcpus.is_empty() {
        return Err(unplanned_vcpus(i, g));
    }
    if pg.vcpus.len() != g.vcpus.len() {
        return Err(InputError::field(
            format!("guests[{i}].vcpus"),
            format!("{} vCPUs planned for guest \"{}\", the scenario has {}", pg.vcpus.len(), g.name, g.vcpus.len()),
        ));
    }
    let mut threads = Vec::with_capacity(pg.vcpus.len());
    for (j, (v, c)) in pg.vcpus.iter().zip(&g.vcpus).enumerate() {
        let mut t = c.sim.thread.clone();
        if v.reserved() {
            let server =
                Server { core: v.core, period_ns: v.period_ns, budget_ns: v.budget_ns, deadline_ns: v.deadline_ns };
            t = reservation(
                &server,
                t.name,
                &format!("guests[{i}].vcpus[{j}]"),
                &format!("vCPU {j} of guest \"{}\"", g.name),
            )?;
        } else if let Some(core) = v.core {
            t.cores = vec![core];
        }
        threads.push(t);
    }
    let rt: Vec<bool> = pg.vcpus.iter().zip(&g.vcpus).map(|(v, c)| v.reserved() && !c.housekeeping).collect();
    let task_vcpu = match g.placement {
        Placement::Global => None,
        Placement::Partitioned => Some(pg.task_vcpus(i, g, &rt)?),
    };
    Ok(GuestThreads { threads, rt, task_vcpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(vcpu: &str, sim: &str) -> Scenario {
        let src = format!(
            "[host]\ncores = 2\n{sim}\n[[guest]]\nname = \"vm1\"\nscheduler = \"edf\"\n{vcpu}\n[[guest.task]]\nname = \
             \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n"
        );
        Scenario::from_toml(&src, None).unwrap()
    }

    #[test]
    fn defaults_overrides_and_policies() {
        let c = SimConfig::new(&scenario("", ""), None, Overrides::default()).unwrap();
        assert_eq!(c.vcpus[0].thread.policy, Policy::Other { nice: 0 });
        assert_eq!(c.settings.duration, DEFAULT_DURATION.0);
        assert_eq!(c.settings.rt_throttle, Some((950_000_000, 1_000_000_000)));
        let c = SimConfig::new(
            &scenario("[guest.vcpu]\ncore = 1\npolicy = \"deadline\"\nruntime = \"2ms\"\nperiod = \"10ms\"\n", ""),
            None,
            Overrides { seed: Some(7), duration: Some(Nanos::from_secs(2)), ..Default::default() },
        )
        .unwrap();
        assert_eq!(c.vcpus[0].thread.cores, vec![1]);
        assert_eq!(
            c.vcpus[0].thread.policy,
            Policy::Deadline { runtime: 2_000_000, deadline: 10_000_000, period: 10_000_000 }
        );
        assert_eq!((c.settings.seed, c.settings.duration), (7, 2_000_000_000));
        let e = SimConfig::new(
            &scenario("", ""),
            None,
            Overrides { duration: Some(Nanos::ZERO), seed: None, ..Default::default() },
        )
        .unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("--duration"), "{e}");
    }

    /// A 1 ns task period is refused by the simulator (the planner takes it), located.
    #[test]
    fn task_periods_below_the_minimum_are_refused() {
        let src = "[host]\ncores = 1\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n[[guest.task]]\nname = \"t\"\n\
                   period = \"1ns\"\nwcet = \"1ns\"\n";
        let s = Scenario::from_toml(src, Some(std::path::Path::new("s.toml"))).unwrap();
        let e = SimConfig::new(&s, None, Overrides::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml:line 8, column 1: field `guest[0].task[0].period`: 1ns: the simulator takes periods, budgets and \
             quanta of at least 1us"
        );
    }
}
