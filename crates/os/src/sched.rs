//! Scheduling attributes of one thread: `sched_getattr`/`sched_setattr` (policy, nice, RT priority,
//! SCHED_DEADLINE runtime/deadline/period and flags) and CPU affinity, by raw syscalls.
//!
//! The structure is `libc::sched_attr` (the kernel's `SCHED_ATTR_SIZE_VER0`, 48 bytes); the calls
//! go through `libc::syscall` because neither libc nor nix wraps `sched_{get,set}attr` (glibc only
//! added a wrapper in 2.41). Utilisation clamps are never touched.

use crate::cpulist::CpuList;
use crate::error::{KernelError, Op};
use serde::{Deserialize, Serialize};
use std::fmt;

pub const SCHED_OTHER: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
pub const SCHED_DEADLINE: u32 = 6;
pub const SCHED_EXT: u32 = 7;

pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
pub const SCHED_FLAG_RECLAIM: u64 = 0x02;
pub const SCHED_FLAG_DL_OVERRUN: u64 = 0x04;
/// The flags rtvirt reads and restores (utilisation-clamp and KEEP_* flags are never set).
const RESTORABLE_FLAGS: u64 = SCHED_FLAG_RESET_ON_FORK | SCHED_FLAG_RECLAIM | SCHED_FLAG_DL_OVERRUN;

/// The size rtvirt passes: version 0 of the structure, without utilisation clamps.
const SCHED_ATTR_SIZE: u32 = std::mem::size_of::<libc::sched_attr>() as u32;

/// What `sched_getattr` says about a thread; also what `sched_setattr` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SchedAttr {
    pub policy: u32,
    pub flags: u64,
    pub nice: i32,
    pub priority: u32,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

impl SchedAttr {
    pub fn deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> Self {
        SchedAttr { policy: SCHED_DEADLINE, runtime_ns, deadline_ns, period_ns, ..Default::default() }
    }
    pub fn fixed(policy: u32, priority: u32) -> Self {
        SchedAttr { policy, priority, ..Default::default() }
    }
    pub fn other(nice: i32) -> Self {
        SchedAttr { policy: SCHED_OTHER, nice, ..Default::default() }
    }
    pub fn is_rt(&self) -> bool {
        matches!(self.policy, SCHED_FIFO | SCHED_RR)
    }
    pub fn is_deadline(&self) -> bool {
        self.policy == SCHED_DEADLINE
    }
    /// The same attributes with the fields the kernel ignores for this policy zeroed, so that two
    /// readings can be compared for "would sched_setattr change anything".
    pub fn normalized(&self) -> SchedAttr {
        let mut a = *self;
        a.flags &= RESTORABLE_FLAGS;
        if !a.is_deadline() {
            a.runtime_ns = 0;
            a.deadline_ns = 0;
            a.period_ns = 0;
            a.flags &= SCHED_FLAG_RESET_ON_FORK;
        }
        if a.is_rt() || a.is_deadline() {
            a.nice = 0;
        } else {
            a.priority = 0;
        }
        a
    }
}

/// Policy name as `chrt` prints it without the SCHED_ prefix.
pub fn policy_name(policy: u32) -> &'static str {
    match policy {
        SCHED_OTHER => "OTHER",
        SCHED_FIFO => "FIFO",
        SCHED_RR => "RR",
        SCHED_BATCH => "BATCH",
        SCHED_IDLE => "IDLE",
        SCHED_DEADLINE => "DEADLINE",
        SCHED_EXT => "EXT",
        _ => "UNKNOWN",
    }
}

/// Parse a policy name from a profile ("fifo", "rr", "other", "batch", "idle", "deadline").
pub fn parse_policy(name: &str) -> Option<u32> {
    Some(match name.to_ascii_lowercase().as_str() {
        "other" | "normal" => SCHED_OTHER,
        "fifo" => SCHED_FIFO,
        "rr" => SCHED_RR,
        "batch" => SCHED_BATCH,
        "idle" => SCHED_IDLE,
        "deadline" => SCHED_DEADLINE,
        _ => return None,
    })
}

impl fmt::Display for SchedAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.policy {
            SCHED_DEADLINE => write!(f, "DEADLINE {}/{}/{}ns", self.runtime_ns, self.deadline_ns, self.period_ns)?,
            SCHED_FIFO | SCHED_RR => write!(f, "{} {}", policy_name(self.policy), self.priority)?,
            p => write!(f, "{} nice {}", policy_name(p), self.nice)?,
        }
        if self.flags & SCHED_FLAG_RECLAIM != 0 {
            f.write_str(" +reclaim")?;
        }
        if self.flags & SCHED_FLAG_RESET_ON_FORK != 0 {
            f.write_str(" +reset-on-fork")?;
        }
        Ok(())
    }
}

/// `sched_getattr(tid)`.
pub fn get(tid: u32) -> Result<SchedAttr, KernelError> {
    // SAFETY: sched_attr is plain data (all zeroes is valid).
    let mut raw: libc::sched_attr = unsafe { std::mem::zeroed() };
    raw.size = SCHED_ATTR_SIZE;
    // SAFETY: raw is a valid, writable sched_attr of the size we pass.
    let rc = unsafe {
        libc::syscall(libc::SYS_sched_getattr, tid as libc::pid_t, &mut raw as *mut libc::sched_attr, raw.size, 0u32)
    };
    if rc != 0 {
        return Err(KernelError::new(Op::GetSched, format!("sched_getattr on thread {tid}"), last_errno()));
    }
    Ok(SchedAttr {
        policy: raw.sched_policy,
        flags: raw.sched_flags & RESTORABLE_FLAGS,
        nice: raw.sched_nice,
        priority: raw.sched_priority,
        runtime_ns: raw.sched_runtime,
        deadline_ns: raw.sched_deadline,
        period_ns: raw.sched_period,
    })
}

/// `sched_setattr(tid, attr)`; errors carry the kernel's reason in words.
pub fn set(tid: u32, attr: &SchedAttr) -> Result<(), KernelError> {
    let a = attr.normalized();
    let mut raw = libc::sched_attr {
        size: SCHED_ATTR_SIZE,
        sched_policy: a.policy,
        sched_flags: a.flags,
        sched_nice: a.nice,
        sched_priority: a.priority,
        sched_runtime: a.runtime_ns,
        sched_deadline: a.deadline_ns,
        sched_period: a.period_ns,
    };
    // SAFETY: raw is a valid sched_attr of the size it declares.
    let rc =
        unsafe { libc::syscall(libc::SYS_sched_setattr, tid as libc::pid_t, &mut raw as *mut libc::sched_attr, 0u32) };
    if rc != 0 {
        let op = if a.is_deadline() { Op::SetSchedDeadline } else { Op::SetSchedOther };
        return Err(KernelError::new(op, format!("sched_setattr({a}) on thread {tid}"), last_errno()));
    }
    Ok(())
}

/// `sched_getaffinity(tid)`.
pub fn get_affinity(tid: u32) -> Result<CpuList, KernelError> {
    // SAFETY: cpu_set_t is plain data; the kernel fills at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(KernelError::new(Op::GetAffinity, format!("sched_getaffinity on thread {tid}"), last_errno()));
        }
        Ok((0..libc::CPU_SETSIZE as u32).filter(|&c| libc::CPU_ISSET(c as usize, &set)).collect())
    }
}

/// `sched_setaffinity(tid, cpus)`.
pub fn set_affinity(tid: u32, cpus: &CpuList) -> Result<(), KernelError> {
    // SAFETY: as above; CPU_SET stays within CPU_SETSIZE (checked).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus.iter().filter(|&c| (c as usize) < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(tid as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(KernelError::new(
                Op::SetAffinity,
                format!("sched_setaffinity({cpus}) on thread {tid}"),
                last_errno(),
            ));
        }
    }
    Ok(())
}

pub fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_thread() {
        let tid = unsafe { libc::gettid() } as u32;
        let a = get(tid).unwrap();
        assert!(matches!(a.policy, SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_FIFO | SCHED_RR | SCHED_DEADLINE));
        assert!(!get_affinity(tid).unwrap().is_empty());
    }

    #[test]
    fn raw_attr_has_the_kernel_size() {
        assert_eq!(SCHED_ATTR_SIZE, 48);
    }

    #[test]
    fn stale_tid_is_esrch_in_words() {
        let e = get(u32::MAX / 2).unwrap_err();
        assert_eq!(e.errno, libc::ESRCH);
        assert!(e.to_string().contains("no longer exists"), "{e}");
    }

    #[test]
    fn normalized_ignores_unused_fields() {
        let mut a = SchedAttr::fixed(SCHED_FIFO, 10);
        a.nice = 5;
        assert_eq!(a.normalized(), SchedAttr::fixed(SCHED_FIFO, 10));
        assert_eq!(parse_policy("FIFO"), Some(SCHED_FIFO));
        assert_eq!(SchedAttr::deadline(1, 2, 3).to_string(), "DEADLINE 1/2/3ns");
    }
}
