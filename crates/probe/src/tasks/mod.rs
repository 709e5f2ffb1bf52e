//! `measure tasks`: the sched_test_app of Burns 2014 under real reservations. Each guest of the
//! scenario is a process ([`worker`]) with one thread per real-time vCPU; each thread gets its
//! vCPU's reservation from the plan - SCHED_DEADLINE runtime = budget, deadline, period - pinned
//! to its planned core (each used core in its own exclusive cpuset, the SCHED_DEADLINE root-domain
//! requirement), and runs its tasks under a user-level EDF or FP scheduler ([`guest`]) with work
//! calibrated on that core ([`work`]). Jobs, misses, DSR and response times come out per task in
//! the simulator's schema (`Results.tasks`), so that `rtvirt simulate` and this can be compared.

pub mod global;
pub mod guest;
mod multi_vcpus;
mod placement;
pub mod protocol;
pub mod work;
pub mod worker;

use crate::error::{Error, Result};
use crate::explain::jobs::{JobTrace, JobWindow};
use crate::rt::Reservation;
use placement::Placement;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::ExplainSection;
use rtvirt_model::results::{GuestResult, Interval, PlanSummary, Results, TaskResult, TaskTotals, TaskWindow};
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;

#[derive(Debug, Clone)]
pub struct TasksConfig {
    pub duration: Nanos,
    /// Seed of the execution-time draws.
    pub seed: u64,
    /// Allow runs over one hour.
    pub force: bool,
    /// Where the exclusive cpusets are journaled before they are made, so that `rtvirt host
    /// revert` (or the next journaled run) restores them after a kill -9; `None`: restored on
    /// drop only.
    pub state_dir: Option<std::path::PathBuf>,
    /// `--interval-report`: each task's jobs and misses per window of this length as well, in
    /// `Results.intervals` (by the job's release since the start).
    pub window: Option<Nanos>,
    /// `--explain`: trace the vCPU threads' CPUs and attribute each task's longest jobs
    /// (`Results.explain`, [`crate::explain::jobs`]).
    pub explain: bool,
    /// `--tick-phase`: start the task sets so that the host's ticks fall this long after the first
    /// release ([`crate::tick`]); None: whenever they start (the phase is recorded either way).
    pub tick_phase: Option<Nanos>,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            duration: Nanos::from_secs(10),
            seed: 1,
            force: false,
            state_dir: None,
            window: None,
            explain: false,
            tick_phase: None,
        }
    }
}

/// Check the plan against the scenario and this machine; per guest, its real-time vCPUs.
fn placements(scenario: &Scenario, plan: &Plan) -> Result<Vec<Vec<Placement>>> {
    let allowed = crate::cpus::allowed();
    scenario
        .guests
        .iter()
        .map(|g| {
            let at = plan.guests.iter().position(|p| p.name == g.name);
            let (i, p) = at
                .map(|i| (i, &plan.guests[i]))
                .ok_or_else(|| Error::input("--plan", format!("the plan has no guest \"{}\"", g.name)))?;
            let vcpus = if g.is_multi_vcpu() { multi_vcpus::planned(g, i, p)? } else { planned_vcpu(p, g)? };
            for v in &vcpus {
                if !allowed.contains(&v.core) {
                    return Err(Error::input(
                        "--plan",
                        format!(
                            "guest \"{}\" is planned on core {}, which this machine does not have (usable CPUs: {})",
                            g.name,
                            v.core,
                            crate::cpus::format_list(&allowed)
                        ),
                    ));
                }
                if v.reservation.runtime_ns == 0 {
                    return Err(Error::input("--plan", format!("guest \"{}\" has a zero budget", g.name)));
                }
            }
            Ok(vcpus)
        })
        .collect()
}

/// The one vCPU of a single-vCPU guest, running every task.
fn planned_vcpu(p: &rtvirt_model::plan::GuestPlan, g: &rtvirt_model::scenario::Guest) -> Result<Vec<Placement>> {
    let core = p.core.ok_or_else(|| {
        Error::input("--plan", format!("guest \"{}\" was not placed on a core by the plan (infeasible)", g.name))
    })?;
    Ok(vec![Placement {
        id: 0,
        core,
        reservation: Reservation { runtime_ns: p.budget_ns, deadline_ns: p.deadline_ns, period_ns: p.period_ns },
        tasks: (0..g.tasks.len()).collect(),
    }])
}

/// Run every guest of `scenario` under its planned reservation for `cfg.duration`: one worker
/// process per guest ([`worker`]), each core in its own exclusive cpuset held by this process.
pub fn run(scenario: &Scenario, plan: &Plan, cfg: &TasksConfig) -> Result<Results> {
    plan.check_matches(scenario).map_err(|e| Error::Input(e.under("plan")))?;
    crate::limits::check_duration("--duration", cfg.duration, cfg.force)?;
    check_window(cfg)?;
    let places = placements(scenario, plan)?;
    let mut cores: Vec<u32> = places.iter().flatten().map(|p| p.core).collect();
    cores.sort_unstable();
    cores.dedup();
    let exclusive = match &cfg.state_dir {
        Some(dir) => rtvirt_os::cgroup::ExclusiveCpus::create_journaled(&cores, dir)?,
        None => rtvirt_os::cgroup::ExclusiveCpus::create(&cores)?,
    };
    let specs = scenario
        .guests
        .iter()
        .zip(&places)
        .enumerate()
        .map(|(gi, (g, vcpus))| {
            let vcpus = vcpus
                .iter()
                .map(|p| {
                    Ok(protocol::VcpuWork {
                        id: p.id,
                        core: p.core,
                        reservation: p.reservation,
                        cpuset_join: exclusive.join_file(p.core)?,
                        tasks: p.tasks.clone(),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(protocol::WorkerSpec {
                guest: protocol::GuestSpec { window_ns: cfg.window.map(|w| w.0), ..protocol::GuestSpec::of(g) },
                vcpus,
                seed: cfg.seed.wrapping_add(gi as u64 * 1000),
                global: g.is_multi_vcpu() && g.placement == rtvirt_model::scenario::Placement::Global,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let grid = tick_grid(cfg, cores.first().copied().unwrap_or(0))?;
    let trace = cfg.explain.then(|| start_trace(cfg, &cores));
    let run_start = crate::rt::now_ns();
    let start_at = |earliest: u64| match (grid, cfg.tick_phase) {
        (Some(g), Some(phase)) => g.start_with_phase(earliest, phase.0),
        _ => earliest,
    };
    let run = worker::run_workers(&specs, cfg.duration.0, start_at);
    drop(exclusive);
    let run = run?;
    let explain = trace.map(|t| explain_jobs(t, scenario, &run.outcomes, run_start));
    let mut results = assemble(scenario, plan, &places, run.outcomes, cfg, run.ran_ns);
    results.explain = explain;
    if let (Some(g), Some(totals)) = (grid, results.task_totals.as_mut()) {
        totals.tick_ns = Some(g.tick_ns);
        totals.tick_phase_ns = Some(g.phase_after(run.start_ns));
    }
    Ok(results)
}

/// The tick grid of `core` (the first reserved one: without `skew_tick=1` every CPU's ticks
/// fall together). Unreadable: an error when `--tick-phase` asked for a phase, else None (the
/// run states no phase).
fn tick_grid(cfg: &TasksConfig, core: u32) -> Result<Option<crate::tick::TickGrid>> {
    match (crate::tick::this_host(core), cfg.tick_phase) {
        (Ok(g), _) => Ok(Some(g)),
        (Err(why), Some(_)) => {
            Err(Error::input("--tick-phase", format!("cannot place the run on the host's ticks: {why}")))
        }
        (Err(_), None) => Ok(None),
    }
}

/// The trace of `cores` for `--explain` (why not, when it cannot be made).
fn start_trace(cfg: &TasksConfig, cores: &[u32]) -> std::result::Result<JobTrace, String> {
    let dir = cfg.state_dir.as_ref().ok_or("no state directory to journal the tracing instance in")?;
    JobTrace::start(dir, cores)
}

/// Each task's longest jobs, explained from the trace.
fn explain_jobs(
    trace: std::result::Result<JobTrace, String>,
    scenario: &Scenario,
    outcomes: &[protocol::WorkerOutcome],
    run_start: u64,
) -> ExplainSection {
    let trace = match trace {
        Ok(t) => t,
        Err(why) => {
            let limitations = vec![format!("kernel tracing unavailable, no job explained: {why}")];
            return ExplainSection { limitations, ..Default::default() };
        }
    };
    let mut jobs = Vec::new();
    for (g, o) in scenario.guests.iter().zip(outcomes) {
        for (t, w) in g.tasks.iter().zip(&o.tasks) {
            let task = format!("{}/{}", g.name, t.name);
            jobs.extend(w.worst.iter().map(|j| JobWindow {
                task: task.clone(),
                cpu: j.cpu,
                tid: j.tid,
                release: j.release,
                finish: j.finish,
            }));
        }
    }
    trace.finish(&jobs, run_start)
}

/// The results document; `ran_ns` is how long the task sets really ran (shorter than asked when
/// interrupted).
fn assemble(
    scenario: &Scenario,
    plan: &Plan,
    places: &[Vec<Placement>],
    outcomes: Vec<protocol::WorkerOutcome>,
    cfg: &TasksConfig,
    ran_ns: u64,
) -> Results {
    let mut r = Results::new("tasks", ran_ns);
    let mut runaways = Vec::new();
    let mut windows = Vec::new();
    r.seed = Some(cfg.seed);
    r.label = Some(scenario.name.clone());
    for ((g, p), o) in scenario.guests.iter().zip(places).zip(outcomes) {
        for (t, w) in g.tasks.iter().zip(o.tasks) {
            windows.push(w.windows);
            let tr = TaskResult {
                guest: g.name.clone(),
                name: t.name.clone(),
                jobs: w.jobs,
                misses: w.misses,
                dsr: TaskResult::dsr_of(w.jobs, w.misses),
                response_ns: w.response_ns,
                unfinished: Some(w.unfinished),
                cpus: Some(w.cpus),
                ..Default::default()
            };
            r.tasks.push(tr);
        }
        // a multi-vCPU guest's cores and reservations are its plan's; the first vCPU's here
        let first = &p[0];
        let gr = GuestResult {
            name: g.name.clone(),
            cpu_time_ns: o.cpu_time_ns,
            utilisation: o.utilisation,
            core: Some(first.core),
            reservation: Some(crate::timer::reservation_of(&first.reservation)),
            work_iterations_per_ns: Some(o.iters_per_ns),
            worker_pid: Some(o.pid),
            vcpus: g.is_multi_vcpu().then(|| multi_vcpus::results(g, p, &o.vcpus)),
            ..Default::default()
        };
        runaways.extend(o.runaways);
        r.guests.push(gr);
    }
    let (jobs, misses): (u64, u64) = r.tasks.iter().fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses));
    r.task_totals = Some(TaskTotals {
        dsr: Some(TaskResult::dsr_of(jobs, misses)),
        jobs: Some(jobs),
        misses: Some(misses),
        plan: Some(PlanSummary { feasible: plan.feasible, max_rho: plan.max_rho, settings: plan.settings.clone() }),
        ..Default::default()
    });
    if !runaways.is_empty() {
        r.runaway_threads_demoted = Some(runaways);
    }
    if let Some(window) = cfg.window {
        r.intervals = Some(task_windows(&r.tasks, &windows, window.0, ran_ns));
    }
    r.interrupted = rtvirt_os::signals::interrupted();
    r.environment = Some(crate::environment::collect());
    r
}

/// Report windows shorter than this are refused (a job count per window needs jobs in it).
const MIN_WINDOW: Nanos = Nanos::from_ms(1);
/// At most this many report windows in a run (each costs every task two counters).
const MAX_WINDOWS: u64 = 100_000;

/// `--interval-report`: at least [`MIN_WINDOW`], at most [`MAX_WINDOWS`] in the run.
fn check_window(cfg: &TasksConfig) -> Result<()> {
    let Some(w) = cfg.window else { return Ok(()) };
    if w < MIN_WINDOW || cfg.duration.0.div_ceil(w.0) > MAX_WINDOWS {
        return Err(Error::input(
            "--interval-report",
            format!(
                "{w}: expected a window of at least {MIN_WINDOW} and at most {MAX_WINDOWS} windows in --duration {}",
                cfg.duration
            ),
        ));
    }
    Ok(())
}

/// The `intervals` of a run with report windows of `window_ns`: one per window of the `ran_ns`
/// the task sets ran (the last one cut at the end), each with every task's (jobs, misses) of the
/// jobs released in it (`windows`, per task in `tasks`' order).
fn task_windows(tasks: &[TaskResult], windows: &[Vec<(u64, u64)>], window_ns: u64, ran_ns: u64) -> Vec<Interval> {
    let count = ran_ns.div_ceil(window_ns.max(1)).max(windows.iter().map(Vec::len).max().unwrap_or(0) as u64);
    (0..count)
        .map(|k| {
            let start_ns = k * window_ns;
            let end_ns = ((k + 1) * window_ns).min(ran_ns.max(start_ns));
            let tasks = tasks
                .iter()
                .zip(windows)
                .map(|(t, w)| {
                    let (jobs, misses) = w.get(k as usize).copied().unwrap_or((0, 0));
                    TaskWindow { guest: t.guest.clone(), name: t.name.clone(), jobs, misses }
                })
                .collect();
            Interval {
                interval: Some(k),
                start_ns: Some(start_ns),
                end_ns: Some(end_ns),
                t_ns: Some(end_ns),
                tasks: Some(tasks),
                r#type: Some("interval".into()),
                ..Default::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
