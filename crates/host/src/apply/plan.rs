//! Apply a plan: each bound guest's vCPU thread gets SCHED_DEADLINE (runtime = budget, deadline,
//! period) inside a cpuset partition of its planned core, after the per-core admission tests.

use super::{affinity_change, check_online, lint_and_run, sched_change, ApplyOptions, ApplyReport, Binding, Prepared};
use crate::change::Change;
use crate::cpulist::CpuList;
use crate::cpuset::Hierarchy;
use crate::error::{HostError, Result};
use crate::lint::Planned;
use crate::sched::SchedAttr;
use crate::sysinfo;
use crate::threads::{self, Role, ThreadInfo};
use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::InputError;
use std::collections::BTreeMap;

/// One reservation on a core, as the admission tests see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub guest: String,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// A per-core admission test: Ok if the servers can all be guaranteed on one core.
pub trait Admission {
    fn name(&self) -> &str;
    fn admit(&self, servers: &[Server]) -> std::result::Result<(), String>;
}

/// The kernel's own SCHED_DEADLINE rule, checked before asking it: the servers' total bandwidth
/// must stay within sched_rt_runtime_us/sched_rt_period_us. (A necessary condition only; the exact
/// EDF demand test comes from rtvirt-analysis through [`Admission`].)
pub struct KernelBandwidthCap {
    /// None: admission control is disabled (sched_rt_runtime_us = -1).
    pub cap: Option<f64>,
}

impl KernelBandwidthCap {
    pub fn of_this_host() -> Self {
        KernelBandwidthCap { cap: sysinfo::dl_bandwidth_cap() }
    }
}

impl Admission for KernelBandwidthCap {
    fn name(&self) -> &str {
        "kernel SCHED_DEADLINE bandwidth cap"
    }
    fn admit(&self, servers: &[Server]) -> std::result::Result<(), String> {
        let Some(cap) = self.cap else { return Ok(()) };
        // Integer arithmetic in the kernel's units (bandwidth << 20), as in dl_overflow().
        let total: u128 = servers.iter().map(|s| ((s.runtime_ns as u128) << 20) / s.period_ns.max(1) as u128).sum();
        let limit = (cap * (1u64 << 20) as f64) as u128;
        if total > limit {
            return Err(format!("total bandwidth {:.3} exceeds the kernel's cap {cap:.3} (sched_rt_runtime_us/sched_rt_period_us)", total as f64 / (1u64 << 20) as f64));
        }
        Ok(())
    }
}

/// Check, resolve and apply a plan; `admission` tests run per core in addition to the kernel cap.
pub fn apply_plan(plan: &Plan, bindings: &[Binding], admission: &[&dyn Admission], opts: &ApplyOptions, progress: &mut dyn FnMut(&Change)) -> Result<ApplyReport> {
    let prepared = prepare(plan, bindings, admission)?;
    lint_and_run(prepared, opts, &mut || Ok(Vec::new()), progress)
}

/// Validate the plan against this host and compute every change, touching nothing.
fn prepare(plan: &Plan, bindings: &[Binding], admission: &[&dyn Admission]) -> Result<Prepared> {
    check_fits(plan)?;
    if bindings.is_empty() {
        return Err(HostError::input("no guest to apply the plan to: give each guest's vCPU with --vm GUEST=QMP_SOCKET or --pid GUEST=TID"));
    }
    let mut targets: Vec<(&GuestPlan, ThreadInfo, u32)> = Vec::new();
    for b in bindings {
        let (i, g) = plan.guests.iter().enumerate().find(|(_, g)| g.name == b.guest).ok_or_else(|| {
            let names: Vec<&str> = plan.guests.iter().map(|g| g.name.as_str()).collect();
            InputError::field(if matches!(b.source, super::GuestSource::Thread(_)) { "--pid" } else { "--vm" }, format!("guest \"{}\" is not in the plan (plan guests: {})", b.guest, names.join(", ")))
        })?;
        let core = g.core.ok_or_else(|| InputError::field(format!("guests[{i}].core"), format!("guest \"{}\" has no core in the plan", g.name)))?;
        check_online(&CpuList::single(core), &format!("guests[{i}].core")).map_err(|e| InputError::field(format!("guests[{i}].core"), format!("the plan does not fit this host's cores: {}", e.message)))?;
        if targets.iter().any(|(o, _, _)| o.name == g.name) {
            return Err(HostError::input(format!("guest \"{}\" is bound twice", g.name)));
        }
        targets.push((g, vcpu_thread(b)?, core));
    }
    admit_per_core(&targets, admission)?;
    let hierarchy = Hierarchy::find().ok_or_else(|| HostError::input("no cpuset cgroup controller is mounted: partitioned SCHED_DEADLINE needs one (mount cgroup v2, or the v1 cpuset controller)"))?;
    let partitions: CpuList = targets.iter().map(|(_, _, c)| *c).collect();
    let mut changes = hierarchy.partition_changes(&partitions)?;
    let mut planned = Vec::new();
    for (g, t, core) in &targets {
        let attr = SchedAttr::deadline(g.budget_ns, g.deadline_ns, g.period_ns);
        changes.push(affinity_change(t, CpuList::single(*core)));
        changes.push(hierarchy.move_change(t.tid, t.starttime, *core));
        changes.push(sched_change(t, attr));
        planned.push(Planned { tid: t.tid, comm: t.comm.clone(), role: t.role.clone(), guest: Some(g.name.clone()), sched: attr, cpus: CpuList::single(*core) });
    }
    let skipped = plan.guests.iter().filter(|g| !targets.iter().any(|(t, _, _)| t.name == g.name)).map(|g| g.name.clone()).collect();
    Ok(Prepared { changes, planned, partitions, placed_irqs: Vec::new(), skipped })
}

/// The plan itself must be feasible and place every guest.
fn check_fits(plan: &Plan) -> Result<(), InputError> {
    if !plan.unplaced.is_empty() {
        return Err(InputError::field("unplaced", format!("the plan does not fit its cores: guests {} have no core", plan.unplaced.join(", "))));
    }
    if !plan.feasible {
        return Err(InputError::field("feasible", "the plan is not feasible (rtvirt plan found no schedulable placement); nothing to apply"));
    }
    Ok(())
}

/// What will run on each core: the bound guests' servers plus the SCHED_DEADLINE threads already
/// pinned there (other guests, earlier applies); every admission test must pass.
fn admit_per_core(targets: &[(&GuestPlan, ThreadInfo, u32)], extra: &[&dyn Admission]) -> Result<(), InputError> {
    let mut per_core: BTreeMap<u32, Vec<Server>> = BTreeMap::new();
    for (g, _, core) in targets {
        per_core.entry(*core).or_default().push(Server { guest: g.name.clone(), runtime_ns: g.budget_ns, deadline_ns: g.deadline_ns, period_ns: g.period_ns });
    }
    let existing = threads::all_threads();
    for t in existing.iter().filter(|t| t.sched.is_deadline() && t.affinity.len() == 1 && !targets.iter().any(|(_, x, _)| x.tid == t.tid)) {
        if let Some(v) = per_core.get_mut(&t.affinity.iter().next().expect("one CPU")) {
            v.push(Server { guest: format!("existing thread {} ({})", t.tid, t.comm), runtime_ns: t.sched.runtime_ns, deadline_ns: t.sched.deadline_ns, period_ns: t.sched.period_ns });
        }
    }
    let kernel = KernelBandwidthCap::of_this_host();
    let tests: Vec<&dyn Admission> = std::iter::once(&kernel as &dyn Admission).chain(extra.iter().copied()).collect();
    for (core, servers) in &per_core {
        for t in &tests {
            t.admit(servers).map_err(|why| {
                let names: Vec<&str> = servers.iter().map(|s| s.guest.as_str()).collect();
                InputError::field("cores", format!("the plan does not fit core {core} ({}): {} failed: {why}", names.join(", "), t.name()))
            })?;
        }
    }
    Ok(())
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
            Err(InputError::field("--vm", format!("guest \"{}\" has {} vCPUs ({}); the plan reserves one server per guest: choose one with {}=SOCKET,vcpu=N", b.guest, vcpus.len(), list.join(", "), b.guest)).into())
        }
        (Some(n), _) => vcpus.into_iter().find(|t| index(t) == n).ok_or_else(|| HostError::input(format!("guest \"{}\" has no vCPU {n}", b.guest))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(r: u64, p: u64) -> Server {
        Server { guest: "g".into(), runtime_ns: r, deadline_ns: p, period_ns: p }
    }

    #[test]
    fn kernel_cap_uses_the_kernels_fixed_point() {
        let k = KernelBandwidthCap { cap: Some(0.95) };
        assert!(k.admit(&[server(5, 10), server(4, 10)]).is_ok());
        assert!(k.admit(&[server(5, 10), server(5, 10)]).unwrap_err().contains("exceeds"));
        assert!(KernelBandwidthCap { cap: None }.admit(&[server(10, 10), server(10, 10)]).is_ok());
    }
}
