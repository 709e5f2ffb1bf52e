//! Apply a plan: each bound guest's vCPU thread gets SCHED_DEADLINE (runtime = budget, deadline,
//! period) inside a cpuset partition of its planned core, after the per-core admission tests
//! ([`super::admission`]).

use super::admission::{admit_per_core, Admission, Pinned, Server};
use super::{
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
    let mut targets: Vec<(&GuestPlan, ThreadInfo, u32)> = Vec::new();
    for b in bindings {
        let (i, g) = plan.guests.iter().enumerate().find(|(_, g)| g.name == b.guest).ok_or_else(|| {
            let names: Vec<&str> = plan.guests.iter().map(|g| g.name.as_str()).collect();
            InputError::field(
                if matches!(b.source, super::GuestSource::Thread(_)) { "--pid" } else { "--vm" },
                format!("guest \"{}\" is not in the plan (plan guests: {})", b.guest, names.join(", ")),
            )
        })?;
        let core = g.core.ok_or_else(|| {
            InputError::field(format!("guests[{i}].core"), format!("guest \"{}\" has no core in the plan", g.name))
        })?;
        check_online(&CpuList::single(core), &format!("guests[{i}].core")).map_err(|e| {
            InputError::field(
                format!("guests[{i}].core"),
                format!("the plan does not fit this host's cores: {}", e.message),
            )
        })?;
        if targets.iter().any(|(o, _, _)| o.name == g.name) {
            return Err(HostError::input(format!("guest \"{}\" is bound twice", g.name)));
        }
        targets.push((g, vcpu_thread(b)?, core));
    }
    let fair_server = FairServers::of_this_host();
    admit(&targets, admission, &fair_server)?;
    let hierarchy = Hierarchy::find("cpuset").ok_or_else(|| {
        HostError::input(
            "no cpuset cgroup controller is mounted: partitioned SCHED_DEADLINE needs one (mount cgroup v2, or the v1 \
             cpuset controller)",
        )
    })?;
    let partitions: CpuList = targets.iter().map(|(_, _, c)| *c).collect();
    let mut changes = hierarchy.partition_changes(&partitions)?;
    let mut planned = Vec::new();
    for (g, t, core) in &targets {
        let attr = SchedAttr::deadline(g.budget_ns, g.deadline_ns, g.period_ns);
        changes.push(affinity_change(t, CpuList::single(*core)));
        changes.push(hierarchy.move_change(t.tid, t.starttime, *core));
        changes.push(sched_change(t, attr));
        planned.push(Planned {
            tid: t.tid,
            comm: t.comm.clone(),
            role: t.role.clone(),
            guest: Some(g.name.clone()),
            sched: attr,
            cpus: CpuList::single(*core),
        });
    }
    let skipped = plan
        .guests
        .iter()
        .filter(|g| !targets.iter().any(|(t, _, _)| t.name == g.name))
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
fn admit(
    targets: &[(&GuestPlan, ThreadInfo, u32)],
    exact: &[&dyn Admission],
    fair_server: &FairServers,
) -> Result<(), InputError> {
    let pinned: Vec<Pinned> = targets
        .iter()
        .map(|(g, t, core)| Pinned {
            core: *core,
            tid: t.tid,
            server: Server {
                guest: g.name.clone(),
                runtime_ns: g.budget_ns,
                deadline_ns: g.deadline_ns,
                period_ns: g.period_ns,
            },
        })
        .collect();
    admit_per_core(&pinned, exact, fair_server, "the plan", "cores")
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
