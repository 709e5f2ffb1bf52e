//! `rtvirt host adapt PLAN`: the plan applied (rtvirt-host's apply), then rtvirt-host's adapt loop
//! driving rtvirt-analysis's adaptation controller (the one the simulator runs too), then every
//! setting of the run restored (rtvirt-host's adapt marker): wiring only.
//!
//! What is adapted is a reservation: a guest of one vCPU's, or each reserved vCPU's of a guest of
//! several (the plan's `vcpus`), named `GUEST/vcpuK` in the decision log. A partitioned guest's vCPU
//! is sized from the jobs of the tasks the plan runs on it (the guest agent's reports, routed by
//! task), else from its own CPU time per server period; a global guest's vCPUs, which share every
//! task, from their own CPU time.

use super::exact_edf::ExactEdf;
use crate::cli_common::{CmdResult, Outcome};
use crate::output_file;
use anyhow::Context;
use clap::Args;
use rtvirt_analysis::adapt::config::AdaptConfig;
use rtvirt_analysis::adapt::{AdaptGuest, Controller, Reason};
use rtvirt_analysis::interface::{Interface, Model};
use rtvirt_host::adapt::marker::{self, RunMarker};
use rtvirt_host::adapt::{self, AdaptOptions, AdaptTarget, Decision};
use rtvirt_host::apply::admission::KernelBandwidthCap;
use rtvirt_host::apply::{ApplyError, ApplyOptions, Binding};
use rtvirt_host::observe::GuestObserver;
use rtvirt_host::render;
use rtvirt_host::threads::Role;
use rtvirt_model::adapt_log::ChangeKind;
use rtvirt_model::observe::Reservation;
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::adapt::AdaptSection;
use rtvirt_model::scenario::{Guest, GuestScheduler, PeriodChoice, Placement, Scenario, Vcpu};
use rtvirt_model::{InputError, Nanos};
use rtvirt_os::sysinfo::FairServers;
use rtvirt_os::Change;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct AdaptArgs {
    /// The plan to start from (rtvirt.plan/v1 JSON); it is applied first, as `host apply` does.
    pub plan: PathBuf,
    /// The scenario the plan was made from: its `[adapt]` section configures the controller
    /// (docs/adapt.md) and the agent's job reports are matched to its tasks (`GUEST.tN`: task N of
    /// GUEST). Without it: the `[adapt]` defaults, and only the vCPU's CPU time per server period.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// A guest's vCPU: NAME[=QMP_SOCKET][,vcpu=N] (as `host apply`); repeatable.
    #[arg(long = "vm", value_name = "NAME[=QMP]")]
    pub vms: Vec<String>,
    /// A thread standing for a guest's vCPU: GUEST=TID; repeatable.
    #[arg(long = "pid", value_name = "GUEST=TID")]
    pub pids: Vec<String>,
    /// The agent port of a guest not started by rtvirt: NAME=SOCKET; repeatable.
    #[arg(long = "agent", value_name = "NAME=SOCKET")]
    pub agents: Vec<String>,
    /// How long to adapt (at most 1h; Ctrl-C, or the end of every guest's vCPU thread, ends
    /// early). Every setting the run made (the plan's apply, each reservation change) is restored
    /// at the end; after a kill -9, by the next run or `rtvirt host revert`.
    #[arg(long, default_value = "60s", value_parser = Nanos::parse)]
    pub duration: Nanos,
    /// How often the controller decides (10ms..60s) [default: the `[adapt]` interval, 100ms].
    #[arg(long, value_parser = Nanos::parse)]
    pub step: Option<Nanos>,
    /// Probability a job stays within its budget [default: the `[adapt]` rho, 0.9].
    #[arg(long)]
    pub rho: Option<f64>,
    /// The decision log (JSON lines) [default: stdout].
    #[arg(long, value_name = "FILE.jsonl")]
    pub log: Option<PathBuf>,
    /// Journal directory [default: $RTVIRT_STATE_DIR, else /var/lib/rtvirt].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Apply even if the lint fails.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: AdaptArgs) -> CmdResult {
    rtvirt_os::signals::install();
    if args.duration.0 == 0 || args.duration > rtvirt_model::scenario::MAX_TIMING {
        return Err(
            InputError::field("--duration", format!("{}: expected more than 0 and at most 1h", args.duration)).into()
        );
    }
    if let Some(log) = &args.log {
        output_file::check("--log", log, &[args.plan.as_path()])?;
    }
    let plan = Plan::from_file(&args.plan)?;
    let scenario = args.scenario.as_deref().map(Scenario::from_file).transpose()?;
    let section = scenario.as_ref().and_then(|s| s.adapt.clone()).unwrap_or_default();
    let step = args.step.unwrap_or(section.interval);
    if step < Nanos::from_ms(10) || step > Nanos::from_secs(60) {
        return Err(InputError::field("--step", format!("{step}: expected 10ms..60s")).into());
    }
    let config = controller_config(&plan, &section, args.rho)?;
    let mut bindings: Vec<Binding> = args.vms.iter().map(|s| Binding::parse_vm(s)).collect::<Result<_, _>>()?;
    bindings.extend(args.pids.iter().map(|s| Binding::parse_pid(s)).collect::<Result<Vec<_>, _>>()?);
    if bindings.is_empty() {
        return Err(InputError::field("--vm", "expected at least one --vm or --pid").into());
    }
    let state_dir = args.state_dir.clone().unwrap_or_else(rtvirt_host::journal::default_state_dir);
    if let Some(restored) = marker::recover_killed(&state_dir)? {
        eprintln!("adapt: a killed `host adapt` left {} change(s); restored:", restored.len());
        restored.iter().for_each(|c| eprintln!("  restored: {c}"));
    }
    let mut log: Box<dyn std::io::Write> = match &args.log {
        Some(p) => Box::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?),
        None => Box::new(std::io::stdout()),
    };
    let run = RunMarker::begin(&state_dir)?;
    let adapted = adapt_applied(&args, &plan, scenario.as_ref(), &bindings, config, step, &mut log);
    let restored = run.finish();
    let outcome = adapted?;
    eprintln!("adapt: restored {} setting(s) the run made", restored?.len());
    Ok(outcome)
}

/// The controller's settings: the `[adapt]` section (`--rho` over its rho), the plan's model
/// and per-core cap.
fn controller_config(plan: &Plan, section: &AdaptSection, rho: Option<f64>) -> Result<AdaptConfig, InputError> {
    let model = if plan.guests.iter().any(|g| g.model == "edp") { Model::Edp } else { Model::Prm };
    let cap =
        plan.settings.bandwidth_cap.unwrap_or(rtvirt_model::scenario::DEFAULT_BANDWIDTH_CAP).min(kernel_free(plan));
    let mut config = AdaptConfig::from_section(section, model, cap);
    if let Some(rho) = rho {
        if !(rho > 0.0 && rho <= 1.0) {
            return Err(InputError::field("--rho", format!("{rho}: expected a probability in (0, 1]")));
        }
        config.rho = rho;
    }
    Ok(config)
}

/// Apply `plan` before `host adapt` adapts it (already applied settings are skipped); a failing
/// lint is printed and is `Outcome::Failed` (nothing changed).
fn apply_plan_for_adapt(plan: &Plan, bindings: &[Binding], state_dir: &Path, force: bool) -> CmdResult {
    let opts = ApplyOptions { state_dir: state_dir.to_path_buf(), force, dry_run: false };
    let mut progress = |c: &Change| eprintln!("  applied: {}", c.describe());
    match rtvirt_host::apply::plan::apply_plan(plan, bindings, &[&ExactEdf], &opts, &mut progress) {
        Ok(_) => Ok(Outcome::Ok),
        Err(ApplyError::LintFailed(lint)) => {
            eprint!("{}", render::lint(&lint));
            eprintln!("rtvirt: the lint failed; nothing was changed (use --force to adapt anyway)");
            Ok(Outcome::Failed)
        }
        Err(e) => Err(e.into()),
    }
}

/// The least deadline bandwidth the kernel leaves on the plan's cores (its cap less each core's
/// fair server), less a margin for its fixed-point arithmetic: the controller never asks more.
fn kernel_free(plan: &Plan) -> f64 {
    let kernel = KernelBandwidthCap::of_this_host(FairServers::of_this_host());
    let cores = plan.guests.iter().flat_map(|g| g.vcpu_plans().into_iter().filter_map(|v| v.core).chain(g.core));
    cores.filter_map(|c| kernel.free_on(c)).map(|f| f - 0.001).fold(1.0, f64::min)
}

/// Apply the plan, then adapt it until the duration or Ctrl-C (the caller restores).
fn adapt_applied(
    args: &AdaptArgs,
    plan: &Plan,
    scenario: Option<&Scenario>,
    bindings: &[Binding],
    config: AdaptConfig,
    step: Nanos,
    log: &mut dyn std::io::Write,
) -> CmdResult {
    let state_dir = args.state_dir.clone().unwrap_or_else(rtvirt_host::journal::default_state_dir);
    if apply_plan_for_adapt(plan, bindings, &state_dir, args.force)? == Outcome::Failed {
        return Ok(Outcome::Failed);
    }
    let targets = targets(plan, bindings, &args.agents)?;
    let ranks = scenario.and_then(|s| s.adapt.as_ref()).cloned().unwrap_or_default();
    let mut controller = PlannerController::new(scenario, &targets, config, &ranks)?;
    let targets: Vec<AdaptTarget> = targets.into_iter().map(|(t, _)| t).collect();
    let opts = AdaptOptions {
        state_dir,
        duration: std::time::Duration::from_nanos(args.duration.0),
        step: std::time::Duration::from_nanos(step.0),
    };
    eprintln!("adapt: {} reservation(s) for {} (decisions every {step})", targets.len(), args.duration);
    let s = adapt::run(targets, &mut controller, &opts, log)?;
    eprintln!(
        "adapt: {} rounds, {} reservation change(s){}",
        s.rounds,
        s.changes,
        if s.ended.is_empty() { String::new() } else { format!(", guests ended: {}", s.ended.join(", ")) }
    );
    Ok(Outcome::Ok)
}

/// One adapted reservation: a guest of one vCPU, or one reserved vCPU of a guest of several.
struct Unit {
    /// The guest's name in the plan and the scenario.
    guest: String,
    /// The vCPU of a guest of several (its name is then `GUEST/vcpuK`).
    vcpu: Option<u32>,
    /// Its tasks (indices among the guest's; a global guest's vCPUs: none, they share them all).
    tasks: Option<Vec<String>>,
    core: u32,
}

impl Unit {
    fn name(&self) -> String {
        match self.vcpu {
            None => self.guest.clone(),
            Some(k) => format!("{}/vcpu{k}", self.guest),
        }
    }
}

/// Each bound reservation's observer (of the vCPU carrying it), vCPU thread and planned
/// reservation: per reserved vCPU for a guest of several (`vcpu=N` selects one; a guest's agent
/// is read by its first), else the vCPU `vcpu=N` (default 0) carrying the guest's.
fn targets(plan: &Plan, bindings: &[Binding], agents: &[String]) -> anyhow::Result<Vec<(AdaptTarget, Unit)>> {
    let sockets = super::observe::parse_agents(agents)?;
    let mut out: Vec<(AdaptTarget, Unit)> = Vec::new();
    for b in bindings {
        let g = plan
            .guest(&b.guest)
            .ok_or_else(|| InputError::field("--vm", format!("guest \"{}\" is not in the plan", b.guest)))?;
        let threads = b.threads()?;
        let only = match b.source {
            rtvirt_host::apply::GuestSource::Thread(_) => Some(b.vcpu.unwrap_or(0)),
            _ => b.vcpu,
        };
        let several = !g.vcpus.is_empty();
        let wanted: Vec<rtvirt_model::plan::VcpuPlan> = g
            .vcpu_plans()
            .into_iter()
            .filter(|v| !several || (v.reserved() && only.is_none_or(|n| n == v.id)))
            .collect();
        for v in wanted {
            let index = if several { v.id } else { b.vcpu.unwrap_or(0) };
            let vcpu = threads
                .iter()
                .find(|t| matches!(t.role, Role::Vcpu { index: i } if i == index))
                .ok_or_else(|| InputError::field("--vm", format!("guest \"{}\": no vCPU {index}", b.guest)))?;
            let first_of_guest = !out.iter().any(|(_, u)| u.guest == b.guest);
            let agent = super::observe::agent_socket(b, &sockets).filter(|_| first_of_guest);
            let global = g.placement == Placement::Global;
            let unit = Unit {
                guest: b.guest.clone(),
                vcpu: several.then_some(v.id),
                tasks: (several && !global).then(|| v.tasks.clone()),
                core: v.core.or(g.core).unwrap_or(0),
            };
            let target = AdaptTarget {
                observer: GuestObserver::new(&unit.name(), std::slice::from_ref(vcpu), agent),
                tid: vcpu.tid,
                starttime: vcpu.starttime,
                planned: Reservation { runtime_ns: v.budget_ns, deadline_ns: v.deadline_ns, period_ns: v.period_ns },
            };
            out.push((target, unit));
        }
    }
    Ok(out)
}

/// rtvirt-analysis's controller, addressed by reservation (guest or `GUEST/vcpuK`) and task names.
struct PlannerController {
    inner: Controller,
    units: Vec<Unit>,
    /// Per unit, the whole guest's index of each of its tasks (the controller's task order).
    numbers: Vec<Vec<usize>>,
}

impl PlannerController {
    fn new(
        scenario: Option<&Scenario>,
        targets: &[(AdaptTarget, Unit)],
        config: AdaptConfig,
        ranks: &AdaptSection,
    ) -> Result<PlannerController, InputError> {
        let mut guests = Vec::new();
        let mut numbers = Vec::new();
        for (t, unit) in targets {
            let whole = match scenario.map(|s| s.guests.iter().find(|sg| sg.name == unit.guest)) {
                Some(Some(sg)) => sg.clone(),
                Some(None) => {
                    let why = format!("the scenario has no guest \"{}\"", unit.guest);
                    return Err(InputError::field("--scenario", why));
                }
                None => bare_guest(&unit.guest, unit.core),
            };
            let (guest, mine) = unit_guest(whole, unit);
            guests.push(AdaptGuest {
                guest,
                core: unit.core,
                reservation: Interface {
                    period: t.planned.period_ns,
                    budget: t.planned.runtime_ns,
                    deadline: t.planned.deadline_ns,
                },
                rank: ranks.rank(&unit.guest),
            });
            numbers.push(mine);
        }
        let units =
            targets.iter().map(|(_, u)| Unit { tasks: u.tasks.clone(), guest: u.guest.clone(), ..*u }).collect();
        Ok(PlannerController { inner: Controller::new(config, guests)?, units, numbers })
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.units.iter().position(|u| u.name() == name)
    }

    /// The unit of the same guest as `name` that runs task `task` of the guest, and its place
    /// among that unit's tasks.
    fn task_of(&self, name: &str, task: &str) -> Option<(usize, usize)> {
        let guest = &self.units[self.index(name)?].guest;
        let n = task_index(guest, task)?;
        (0..self.units.len())
            .filter(|&u| &self.units[u].guest == guest)
            .find_map(|u| self.numbers[u].iter().position(|&k| k == n).map(|i| (u, i)))
    }
}

/// The guest a unit's controller sizes, named as the unit, and the whole guest's index of each of
/// its tasks: a partitioned vCPU's tasks only; a global guest's vCPU none (its own CPU time sizes
/// it); a guest of one vCPU all of them.
fn unit_guest(mut g: Guest, unit: &Unit) -> (Guest, Vec<usize>) {
    let mine: Vec<usize> = match (&unit.tasks, unit.vcpu) {
        (_, None) => (0..g.tasks.len()).collect(),
        (None, Some(_)) => vec![],
        (Some(names), Some(_)) => (0..g.tasks.len()).filter(|&i| names.contains(&g.tasks[i].name)).collect(),
    };
    g.tasks = mine.iter().map(|&i| g.tasks[i].clone()).collect();
    if let Some(k) = unit.vcpu {
        g.vcpus.retain(|v| v.id == k);
        g.placement = Placement::Partitioned;
    }
    g.name = unit.name();
    (g, mine)
}

/// A guest known only by name (no scenario): no tasks, so only its vCPU's server-period demand
/// sizes it.
fn bare_guest(name: &str, core: u32) -> Guest {
    Guest {
        name: name.to_string(),
        scheduler: GuestScheduler::Edf,
        server_periods: PeriodChoice::Default,
        rho: None,
        tasks: Vec::new(),
        placement: Placement::Partitioned,
        spread: true,
        vcpus: vec![Vcpu {
            id: 0,
            housekeeping: false,
            sim: rtvirt_model::scenario::sim::VcpuSpec::default_for(name, core),
        }],
    }
}

/// Task N of `guest` from an agent task name `GUEST.tN` (as `measure tasks` reports its jobs).
fn task_index(guest: &str, task: &str) -> Option<usize> {
    task.strip_prefix(guest)?.strip_prefix(".t")?.parse().ok()
}

impl adapt::Controller for PlannerController {
    fn observe_job(&mut self, guest: &str, task: &str, ns: u64) {
        if let Some((u, t)) = self.task_of(guest, task) {
            self.inner.observe_job(u, t, ns);
        }
    }
    fn observe_server_period(&mut self, guest: &str, ns: u64) {
        if let Some(g) = self.index(guest) {
            self.inner.observe_server_period(g, ns);
        }
    }
    fn remove(&mut self, guest: &str) {
        if let Some(g) = self.index(guest) {
            self.inner.remove(g);
        }
    }
    fn step(&mut self, now_ns: u64) -> Vec<Decision> {
        self.inner
            .step(now_ns)
            .into_iter()
            .map(|d| Decision {
                guest: d.guest,
                new: Reservation { runtime_ns: d.new.budget, deadline_ns: d.new.deadline, period_ns: d.new.period },
                demand: d.demand,
                reason: d.reason.text(),
                change: match d.reason {
                    Reason::Grow => ChangeKind::Grow,
                    Reason::Shrink => ChangeKind::Shrink,
                    Reason::Degraded { .. } => ChangeKind::Degraded,
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partitioned guest of two vCPUs: each vCPU's controller sizes only the tasks the plan
    /// runs on it, and an agent report of task N of the guest (read by vCPU 0's observer) goes
    /// to the vCPU that runs it, at its place there.
    #[test]
    fn agent_jobs_go_to_the_vcpu_that_runs_the_task() {
        let mut text = "[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\n".to_string();
        for (name, vcpu) in [("a", 0), ("b", 1), ("c", 0)] {
            text += &format!("[[guest.task]]\nname = \"{name}\"\nperiod = \"10ms\"\nwcet = \"1ms\"\nvcpu = {vcpu}\n");
        }
        let s = Scenario::from_toml(&text, None).unwrap();
        let unit = |vcpu: u32, tasks: &[&str]| Unit {
            guest: "g".into(),
            vcpu: Some(vcpu),
            tasks: Some(tasks.iter().map(|t| t.to_string()).collect()),
            core: vcpu,
        };
        let target = |u: &Unit| AdaptTarget {
            observer: GuestObserver::new(&u.name(), &[], None),
            tid: 1,
            starttime: 0,
            planned: Reservation { runtime_ns: 2_000_000, deadline_ns: 10_000_000, period_ns: 10_000_000 },
        };
        let units = [unit(0, &["a", "c"]), unit(1, &["b"])];
        let targets: Vec<(AdaptTarget, Unit)> =
            units.iter().map(|u| (target(u), Unit { tasks: u.tasks.clone(), guest: u.guest.clone(), ..*u })).collect();
        let c = PlannerController::new(Some(&s), &targets, AdaptConfig::default(), &AdaptSection::default()).unwrap();
        assert_eq!(c.numbers, vec![vec![0, 2], vec![1]]);
        assert_eq!(c.task_of("g/vcpu0", "g.t2"), Some((0, 1)));
        assert_eq!(c.task_of("g/vcpu0", "g.t1"), Some((1, 0)));
        assert_eq!(c.task_of("g/vcpu0", "g.t3"), None);
        assert_eq!(c.task_of("h/vcpu0", "g.t1"), None);
        let (guest, mine) = unit_guest(s.guests[0].clone(), &units[1]);
        assert_eq!((guest.name.as_str(), guest.tasks.len(), guest.vcpus.len(), mine), ("g/vcpu1", 1, 1, vec![1]));
    }

    #[test]
    fn agent_task_names_map_to_scenario_tasks() {
        assert_eq!(task_index("g0", "g0.t3"), Some(3));
        assert_eq!(task_index("g0", "g1.t3"), None);
        assert_eq!(task_index("g0", "worker"), None);
    }
}
