//! Make a thread actually sit on a CPU of its (new) affinity before it gets SCHED_DEADLINE.
//!
//! The kernel admits SCHED_DEADLINE against the root domain of the runqueue the thread is on
//! *now*, and a sleeping thread keeps its old runqueue until it next wakes up: right after it was
//! moved into a one-CPU partition, an idle vCPU thread (a paused or halted guest) is still
//! accounted on its old CPU and sched_setattr fails with EPERM. A thread that wakes by itself
//! migrates within milliseconds; one that does not is woken once with ptrace
//! (PTRACE_SEIZE + PTRACE_INTERRUPT + PTRACE_DETACH): only that thread is touched, its
//! interrupted system call restarts transparently, nothing persists.

use crate::cpulist::CpuList;
use crate::error::{KernelError, Op, OsError, Result};
use crate::procfs;
use crate::sched;
use std::time::{Duration, Instant};

/// Wait (and if needed wake the thread once) until it is on a CPU of its affinity.
pub fn settle(tid: u32) -> Result<()> {
    let cpus = sched::get_affinity(tid)?;
    if wait_on(tid, &cpus, Duration::from_millis(20))? {
        return Ok(());
    }
    wake_once(tid)?;
    if wait_on(tid, &cpus, Duration::from_millis(500))? {
        return Ok(());
    }
    Err(OsError::Kernel(KernelError::new(
        Op::SetAffinity,
        format!(
            "thread {tid} did not move to CPU {cpus} (it stays on CPU {}; is it stopped?)",
            procfs::stat(tid)?.processor
        ),
        libc::EBUSY,
    )))
}

fn wait_on(tid: u32, cpus: &CpuList, limit: Duration) -> Result<bool> {
    let start = Instant::now();
    loop {
        if cpus.contains(procfs::stat(tid)?.processor) {
            return Ok(true);
        }
        if start.elapsed() >= limit {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Interrupt the thread once through ptrace so that it runs (and is placed on an allowed CPU).
fn wake_once(tid: u32) -> Result<()> {
    let pid = tid as libc::pid_t;
    let fail = |what: &str| {
        OsError::Kernel(KernelError::new(
            Op::SetAffinity,
            format!("{what} on thread {tid} (to wake it onto its new CPU)"),
            sched::last_errno(),
        ))
    };
    // SAFETY: plain ptrace/waitpid calls on a thread id; no memory is shared with the tracee.
    unsafe {
        if libc::ptrace(libc::PTRACE_SEIZE, pid, 0, 0) != 0 {
            return Err(fail("ptrace(PTRACE_SEIZE)"));
        }
        if libc::ptrace(libc::PTRACE_INTERRUPT, pid, 0, 0) != 0 {
            let e = fail("ptrace(PTRACE_INTERRUPT)");
            libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0);
            return Err(e);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, libc::__WALL);
        if libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0) != 0 {
            return Err(fail("ptrace(PTRACE_DETACH)"));
        }
    }
    Ok(())
}
