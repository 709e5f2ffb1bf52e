//! Apply a plan: each bound guest's vCPU thread gets SCHED_DEADLINE (runtime = budget, deadline,
//! period) inside a cpuset partition of its planned core, after the per-core admission tests
//! ([`super::admission`]).

use super::admission::{admit_per_core, Admission, Pinned, Server};
use super::run::{
    affinity_change, check_online, lint_and_run, sched_change, ApplyError, ApplyOptions, ApplyReport, Binding, Prepared,
};
use crate::error::{HostError, Result};
use crate::lint::Planned;
use crate::threads::{Role, ThreadInfo};
use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::InputError;
use rtvirt_os::cgroup::Hierarchy;
use rtvirt_os::cpulist::CpuList;
use rtvirt_os::restore::Change;
use rtvirt_os::sched::SchedAttr;
use rtvirt_os::sysinfo::FairServers;

/// Check, resolve and apply a plan; `admission` tests run per core in addition to the kernel cap.
pub fn apply_plan(
    plan: &Plan,
    bindings: &[Binding],
    admission: &[&dyn Admission],
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(&Change),
) -> Result<ApplyReport, ApplyError> {
    let prepared = prepare(plan, bindings, admission)?;
    lint_and_run(prepared, opts, &mut || Ok(Vec::new()), progress)
}

/// Validate the plan against this host and compute every change, touching nothing.
fn prepare(plan: &Plan, bindings: &[Binding], admission: &[&dyn Admission]) -> Result<Prepared> {
    check_fits(plan)?;
    if bindings.is_empty() {
        return Err(HostError::input(
            "no guest to apply the plan to: give each guest's vCPU with --vm GUEST=QMP_SOCKET or --pid GUEST=TID",
        ));
    }
    let mut targets: Vec<Target> = Vec::new();
    for b in bindings {
        let (i, g) = plan.guests.iter().enumerate().find(|(_, g)| g.name == b.guest).ok_or_else(|| {
            let names: Vec<&str> = plan.guests.iter().map(|g| g.name.as_str()).collect();
            InputError::field(
                if matches!(b.source, super::run::GuestSource::Thread(_)) { "--pid" } else { "--vm" },
                format!("guest \"{}\" is not in the plan (plan guests: {})", b.guest, names.join(", ")),
            )
        })?;
        if !g.vcpus.is_empty() {
            for t in vcpu_targets(i, g, b)? {
                if targets.iter().any(|o| o.guest.name == g.name && o.vcpu == t.vcpu) {
                    let which = t.vcpu.unwrap_or(0);
                    return Err(HostError::input(format!("vCPU {which} of guest \"{}\" is bound twice", g.name)));
                }
                targets.push(t);
            }
            continue;
        }
        let core = g.core.ok_or_else(|| {
            InputError::field(format!("guests[{i}].core"), format!("guest \"{}\" has no core in the plan", g.name))
        })?;
        check_core_online(core, &format!("guests[{i}].core"))?;
        if targets.iter().any(|t| t.guest.name == g.name) {
            return Err(HostError::input(format!("guest \"{}\" is bound twice", g.name)));
        }
        let attr = SchedAttr::deadline(g.budget_ns, g.deadline_ns, g.period_ns);
        targets.push(Target { guest: g, label: g.name.clone(), vcpu: None, thread: vcpu_thread(b)?, core, attr });
    }
    let fair_server = FairServers::of_this_host();
    admit(&targets, admission, &fair_server)?;
    let hierarchy = Hierarchy::find("cpuset").ok_or_else(|| {
        HostError::input(
            "no cpuset cgroup controller is mounted: partitioned SCHED_DEADLINE needs one (mount cgroup v2, or the v1 \
             cpuset controller)",
        )
    })?;
    let partitions: CpuList = targets.iter().map(|t| t.core).collect();
    let mut changes = hierarchy.partition_changes(&partitions)?;
    let mut planned = Vec::new();
    for Target { guest: g, thread: t, core, attr, .. } in &targets {
        changes.push(affinity_change(t, CpuList::single(*core)));
        changes.push(hierarchy.move_change(t.tid, t.starttime, *core));
        changes.push(sched_change(t, *attr));
        planned.push(Planned {
            tid: t.tid,
            comm: t.comm.clone(),
            role: t.role.clone(),
            guest: Some(g.name.clone()),
            sched: *attr,
            cpus: CpuList::single(*core),
        });
    }
    let skipped = plan
        .guests
        .iter()
        .filter(|g| !targets.iter().any(|t| t.guest.name == g.name))
        .map(|g| g.name.clone())
        .collect();
    Ok(Prepared { changes, planned, partitions, skipped, fair_server, ..Default::default() })
}

/// The plan itself must be feasible and place every guest.
fn check_fits(plan: &Plan) -> Result<(), InputError> {
    if !plan.unplaced.is_empty() {
        return Err(InputError::field(
            "unplaced",
            format!("the plan does not fit its cores: guests {} have no core", plan.unplaced.join(", ")),
        ));
    }
    if !plan.feasible {
        return Err(InputError::field(
            "feasible",
            "the plan is not feasible (rtvirt plan found no schedulable placement); nothing to apply",
        ));
    }
    Ok(())
}

/// Rtvirt's exact tests, then the kernel's cap, on each core the plan uses.
fn admit(targets: &[Target], exact: &[&dyn Admission], fair_server: &FairServers) -> Result<(), InputError> {
    let pinned: Vec<Pinned> = targets
        .iter()
        .map(|t| Pinned {
            core: t.core,
            tid: t.thread.tid,
            server: Server {
                guest: t.label.clone(),
                runtime_ns: t.attr.runtime_ns,
                deadline_ns: t.attr.deadline_ns,
                period_ns: t.attr.period_ns,
            },
        })
        .collect();
    admit_per_core(&pinned, exact, fair_server, "the plan", "cores")
}

/// A vCPU thread to reserve: the plan's server for it, on its core.
struct Target<'p> {
    guest: &'p GuestPlan,
    /// Names it in admission messages: the guest's name, or "GUEST vCPU N" for a vCPU of a plan's
    /// `vcpus` list.
    label: String,
    /// The vCPU of a plan's `vcpus` list; None: the guest's single reservation.
    vcpu: Option<u32>,
    thread: ThreadInfo,
    core: u32,
    attr: SchedAttr,
}

/// `core` of the plan must be an online CPU of this host.
fn check_core_online(core: u32, field: &str) -> Result<(), InputError> {
    check_online(&CpuList::single(core), field)
        .map_err(|e| InputError::field(field, format!("the plan does not fit this host's cores: {}", e.message)))
}

/// A guest of several planned vCPUs (the plan's `vcpus`): each reserved vCPU's thread, found by
/// its vCPU index, with that vCPU's server and core. `vcpu=N` (and a `--pid` thread, which stands
/// for vCPU N, default 0) binds that vCPU only; a QMP binding without it binds every reserved
/// vCPU and must find as many vCPU threads as the plan has vCPUs. Housekeeping vCPUs (no
/// reservation) are left as they are.
fn vcpu_targets<'p>(i: usize, g: &'p GuestPlan, b: &Binding) -> Result<Vec<Target<'p>>> {
    let flag = if matches!(b.source, super::run::GuestSource::Thread(_)) { "--pid" } else { "--vm" };
    let threads = vcpu_threads(b)?;
    if threads.is_empty() {
        return Err(HostError::input(format!("guest \"{}\": no vCPU thread found", b.guest)));
    }
    let only = match b.source {
        super::run::GuestSource::Thread(_) => Some(b.vcpu.unwrap_or(0)),
        _ => b.vcpu,
    };
    let ids: Vec<String> = g.vcpus.iter().map(|v| v.id.to_string()).collect();
    if let Some(n) = only.filter(|n| !g.vcpus.iter().any(|v| v.id == *n)) {
        let why = format!("guest \"{}\" has no vCPU {n} in the plan (its vCPUs: {})", g.name, ids.join(", "));
        return Err(InputError::field(flag, why).into());
    }
    if only.is_none() && threads.len() != g.vcpus.len() {
        let why = format!(
            "guest \"{}\" has {} vCPU threads, the plan {} vCPUs ({}): start the VM with as many, or bind one vCPU \
             with {}=SOCKET,vcpu=N",
            g.name,
            threads.len(),
            g.vcpus.len(),
            ids.join(", "),
            g.name
        );
        return Err(InputError::field(flag, why).into());
    }
    let mut targets = Vec::new();
    for (j, v) in g.vcpus.iter().enumerate().filter(|(_, v)| only.is_none() || only == Some(v.id)) {
        let label = format!("vCPU {} of guest \"{}\"", v.id, g.name);
        if !v.reserved() {
            if only.is_some() {
                let why = format!("{label} has no reservation in the plan (model \"{}\"): nothing to apply", v.model);
                return Err(InputError::field(format!("guests[{i}].vcpus[{j}].model"), why).into());
            }
            continue;
        }
        let field = format!("guests[{i}].vcpus[{j}].core");
        let core = v.core.ok_or_else(|| InputError::field(&field, format!("{label} has no core in the plan")))?;
        check_core_online(core, &field)?;
        let thread = threads.iter().find(|(k, _)| *k == v.id).map(|(_, t)| t.clone());
        let thread = thread.ok_or_else(|| HostError::input(format!("{label}: no thread of vCPU {} found", v.id)))?;
        let attr = SchedAttr::deadline(v.budget_ns, v.deadline_ns, v.period_ns);
        let label = format!("{} vCPU {}", g.name, v.id);
        targets.push(Target { guest: g, label, vcpu: Some(v.id), thread, core, attr });
    }
    Ok(targets)
}

/// The binding's vCPU threads with their vCPU index.
fn vcpu_threads(b: &Binding) -> Result<Vec<(u32, ThreadInfo)>> {
    let index = |t: &ThreadInfo| match t.role {
        Role::Vcpu { index } => Some(index),
        _ => None,
    };
    Ok(b.threads()?.into_iter().filter_map(|t| index(&t).map(|i| (i, t))).collect())
}

/// The thread that carries a guest's reservation.
fn vcpu_thread(b: &Binding) -> Result<ThreadInfo> {
    let vcpus: Vec<ThreadInfo> = b.threads()?.into_iter().filter(|t| matches!(t.role, Role::Vcpu { .. })).collect();
    let index = |t: &ThreadInfo| match t.role {
        Role::Vcpu { index } => index,
        _ => u32::MAX,
    };
    match (b.vcpu, vcpus.len()) {
        (_, 0) => Err(HostError::input(format!("guest \"{}\": no vCPU thread found", b.guest))),
        (None, 1) => Ok(vcpus.into_iter().next().expect("one vCPU")),
        (None, _) => {
            let list: Vec<String> = vcpus.iter().map(|t| format!("vCPU {} = thread {}", index(t), t.tid)).collect();
            Err(InputError::field(
                "--vm",
                format!(
                    "guest \"{}\" has {} vCPUs ({}); the plan reserves one server per guest: choose one with \
                     {}=SOCKET,vcpu=N",
                    b.guest,
                    vcpus.len(),
                    list.join(", "),
                    b.guest
                ),
            )
            .into())
        }
        (Some(n), _) => vcpus
            .into_iter()
            .find(|t| index(t) == n)
            .ok_or_else(|| HostError::input(format!("guest \"{}\" has no vCPU {n}", b.guest))),
    }
}
