//! Guests of several vCPUs in `measure tasks`: the plan's `vcpus` list becomes one worker thread
//! per reserved vCPU (its budget, deadline and period as SCHED_DEADLINE runtime, deadline and
//! period, on its planned core), running the tasks the plan lists on it. Housekeeping vCPUs, and
//! vCPUs the plan leaves without a reservation, get no thread: nothing of the task set runs there.
//!
//! A partitioned guest's threads each run their own tasks; a global guest's (one MPR interface
//! split into per-vCPU servers, Shin, Easwaran & Lee 2008) share all its tasks under one guest
//! scheduler ([`super::global`]).

use super::placement::Placement;
use crate::error::{Error, Result};
use crate::rt::Reservation;
use rtvirt_model::plan::GuestPlan;
use rtvirt_model::results::VcpuResult;
use rtvirt_model::scenario::{Guest, Placement as GuestPlacement};

/// The real-time vCPUs of a planned guest of several vCPUs (a global guest's each listing every
/// task); `i` is its index in the plan.
pub(super) fn planned(g: &Guest, i: usize, p: &GuestPlan) -> Result<Vec<Placement>> {
    let at = |field: String| format!("plan.guests[{i}]{field}");
    if p.vcpus.is_empty() {
        return Err(Error::input(
            &at(String::new()),
            format!(
                "guest \"{}\" has {} vCPUs in the scenario but the plan gives it a single reservation: measure \
                 tasks needs one server per vCPU (the plan's `vcpus`: plan the scenario again)",
                g.name,
                g.vcpus.len()
            ),
        ));
    }
    let serves: Vec<bool> = p.vcpus.iter().zip(&g.vcpus).map(|(v, c)| v.reserved() && !c.housekeeping).collect();
    let global = g.placement == GuestPlacement::Global;
    let task_vcpu = match global {
        true => Vec::new(),
        false => p.task_vcpus(i, g, &serves).map_err(|e| Error::Input(e.under("plan")))?,
    };
    let mut vcpus = Vec::new();
    for (j, v) in p.vcpus.iter().enumerate().filter(|(j, _)| serves[*j]) {
        let core = v.core.ok_or_else(|| {
            Error::input(
                &at(format!(".vcpus[{j}].core")),
                format!("vCPU {} of guest \"{}\" was not placed on a core by the plan (infeasible)", v.id, g.name),
            )
        })?;
        if v.budget_ns == 0 {
            return Err(Error::input(
                &at(format!(".vcpus[{j}].budget_ns")),
                format!("vCPU {} of guest \"{}\" has a zero budget", v.id, g.name),
            ));
        }
        vcpus.push(Placement {
            id: v.id,
            core,
            reservation: Reservation { runtime_ns: v.budget_ns, deadline_ns: v.deadline_ns, period_ns: v.period_ns },
            tasks: (0..g.tasks.len()).filter(|&t| global || task_vcpu[t] as usize == j).collect(),
        });
    }
    Ok(vcpus)
}

/// Per vCPU thread, what it was given and what it used; `used` is the worker's (id, CPU time,
/// utilisation) per thread, in the order of `vcpus`.
pub(super) fn results(g: &Guest, vcpus: &[Placement], used: &[(u32, u64, f64)]) -> Vec<VcpuResult> {
    vcpus
        .iter()
        .zip(used)
        .map(|(v, &(_, cpu_time_ns, utilisation))| VcpuResult {
            id: v.id,
            core: v.core,
            reservation: crate::timer::reservation_of(&v.reservation),
            cpu_time_ns,
            utilisation,
            tasks: v.tasks.iter().map(|&t| g.tasks[t].name.clone()).collect(),
        })
        .collect()
}
