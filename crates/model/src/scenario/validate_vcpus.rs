//! A guest's vCPUs as written - `vcpus`, `placement`, `housekeeping` and each task's `vcpu` -
//! checked against each other and the host's cores. Field paths are relative to the guest.

use super::raw::RawGuest;
use super::types::{HostSection, Placement};
use crate::error::InputError;

type R<T> = Result<T, InputError>;

/// The checked vCPU fields of one guest.
pub(super) struct GuestVcpus {
    pub count: u32,
    pub placement: Placement,
    /// Per vCPU id: runs no real-time task.
    pub housekeeping: Vec<bool>,
    pub spread: bool,
}

/// `vcpus`, `placement`, `housekeeping` and `spread` of `guest` on `host`.
pub(super) fn guest_vcpus(guest: &RawGuest, host: &HostSection) -> R<GuestVcpus> {
    let count = count(guest.vcpus, host.cores)?;
    let placement = placement(guest.placement.as_deref())?;
    let housekeeping = housekeeping(guest.housekeeping.as_deref(), count)?;
    if !guest.tasks.is_empty() && housekeeping.iter().all(|&h| h) {
        return Err(InputError::field(
            "housekeeping",
            format!(
                "every vCPU ({count}) is a housekeeping vCPU: expected at least one vCPU for the guest's real-time tasks"
            ),
        ));
    }
    Ok(GuestVcpus { count, placement, housekeeping, spread: guest.spread.unwrap_or(true) })
}

fn count(vcpus: Option<i64>, cores: u32) -> R<u32> {
    match vcpus {
        None => Ok(1),
        Some(n) if n < 1 => {
            Err(InputError::field("vcpus", format!("{n} vCPUs: expected a whole number of vCPUs, at least 1")))
        }
        Some(n) if n > cores as i64 => Err(InputError::field(
            "vcpus",
            format!("{n} vCPUs: more than the host's {cores} cores (expected at most {cores})"),
        )),
        Some(n) if n > super::limits::MAX_VCPUS as i64 => Err(InputError::field(
            "vcpus",
            format!("{n} vCPUs: expected at most {} (the most KVM gives a guest)", super::limits::MAX_VCPUS),
        )),
        Some(n) => Ok(n as u32),
    }
}

fn placement(placement: Option<&str>) -> R<Placement> {
    match placement {
        None | Some("partitioned") => Ok(Placement::Partitioned),
        Some("global") => Ok(Placement::Global),
        Some(o) => Err(InputError::field("placement", format!("\"{o}\": expected \"partitioned\" or \"global\""))),
    }
}

fn housekeeping(ids: Option<&[i64]>, count: u32) -> R<Vec<bool>> {
    let mut flags = vec![false; count as usize];
    for (i, &id) in ids.unwrap_or_default().iter().enumerate() {
        let at = format!("housekeeping[{i}]");
        let flag = vcpu_slot(&mut flags, id).ok_or_else(|| InputError::field(&at, no_such_vcpu(id, count)))?;
        if *flag {
            return Err(InputError::field(at, format!("vCPU {id} is listed twice")));
        }
        *flag = true;
    }
    Ok(flags)
}

fn vcpu_slot(flags: &mut [bool], id: i64) -> Option<&mut bool> {
    usize::try_from(id).ok().and_then(|i| flags.get_mut(i))
}

fn no_such_vcpu(id: i64, count: u32) -> String {
    format!("vCPU {id} does not exist: the guest has vCPUs 0..{} (vcpus = {count})", count - 1)
}

/// A task's `vcpu` (field paths relative to the task): a real-time vCPU of a partitioned guest.
pub(super) fn task_vcpu(vcpu: Option<i64>, guest: &GuestVcpus) -> R<Option<u32>> {
    let Some(id) = vcpu else { return Ok(None) };
    if guest.placement == Placement::Global {
        return Err(InputError::field(
            "vcpu",
            "a task of a guest with placement = \"global\" runs on any of its vCPUs: `vcpu` binds a task to one \
             vCPU only with placement = \"partitioned\"",
        ));
    }
    match usize::try_from(id).ok().and_then(|i| guest.housekeeping.get(i)) {
        None => Err(InputError::field("vcpu", no_such_vcpu(id, guest.count))),
        Some(true) => Err(InputError::field(
            "vcpu",
            format!("vCPU {id} is a housekeeping vCPU (`housekeeping`): expected a vCPU that runs real-time tasks"),
        )),
        Some(false) => Ok(Some(id as u32)),
    }
}
