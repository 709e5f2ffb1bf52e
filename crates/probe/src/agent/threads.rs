//! The guest's real-time threads as the agent learns them on its own: every user thread under
//! SCHED_DEADLINE, FIFO or RR (`sched_getattr`), its period (the SCHED_DEADLINE period, else the
//! time between two voluntary sleeps) and the mean execution time of its jobs per interval (CPU
//! time over voluntary sleeps, from schedstat) - for tasks that do not call the job API.

use rtvirt_os::procfs::{self, CpuAccount};
use rtvirt_os::sched::{self, SchedAttr};
use std::collections::HashMap;

/// Threads followed at most (the host keeps fewer: `agent_wire::MAX_TASKS`).
const MAX_THREADS: usize = 256;

/// One interval of one real-time thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadJobs {
    pub tid: u32,
    pub name: String,
    pub policy: &'static str,
    pub period_ns: u64,
    pub deadline_ns: u64,
    pub runtime_ns: u64,
    /// Mean execution time of the jobs of the interval (one sample).
    pub mean_exec_ns: u64,
}

/// The RT threads seen at the previous scan, with their accounts.
#[derive(Debug, Default)]
pub struct RtThreads {
    last: HashMap<(u32, u64), (u64, CpuAccount)>,
}

impl RtThreads {
    /// Scan /proc at `now_ns`; the threads that ran jobs since the previous scan.
    pub fn scan(&mut self, now_ns: u64, skip: &dyn Fn(u32) -> bool) -> Vec<ThreadJobs> {
        let me = std::process::id();
        let mut next = HashMap::new();
        let mut out = Vec::new();
        'pids: for pid in procfs::pids().into_iter().filter(|&p| p != me) {
            for tid in procfs::tids(pid) {
                if next.len() >= MAX_THREADS {
                    break 'pids;
                }
                let (Ok(stat), Ok(attr)) = (procfs::stat(tid), sched::get(tid)) else { continue };
                let Some(policy) = rt_policy(&attr).filter(|_| !stat.is_kthread()) else { continue };
                let Ok(account) = procfs::cpu_account(tid) else { continue };
                let key = (tid, stat.starttime);
                if let Some((then, before)) = self.last.get(&key).copied() {
                    if let Some(j) = jobs(tid, &stat.comm, policy, &attr, account.since(&before), now_ns - then) {
                        if !skip(tid) {
                            out.push(j);
                        }
                    }
                }
                next.insert(key, (now_ns, account));
            }
        }
        self.last = next;
        out
    }
}

fn rt_policy(attr: &SchedAttr) -> Option<&'static str> {
    match attr.policy {
        sched::SCHED_DEADLINE => Some("deadline"),
        sched::SCHED_FIFO => Some("fifo"),
        sched::SCHED_RR => Some("rr"),
        _ => None,
    }
}

/// The interval's jobs of one thread: `delta` over `wall` ns; None if it slept no time (no job
/// ended) or did not run.
fn jobs(
    tid: u32,
    comm: &str,
    policy: &'static str,
    attr: &SchedAttr,
    delta: CpuAccount,
    wall: u64,
) -> Option<ThreadJobs> {
    if delta.voluntary_switches == 0 || delta.run_ns == 0 {
        return None;
    }
    let period_ns = match attr.period_ns.max(attr.deadline_ns) {
        0 => wall / delta.voluntary_switches,
        p => p,
    };
    Some(ThreadJobs {
        tid,
        name: comm.to_string(),
        policy,
        period_ns,
        deadline_ns: if attr.deadline_ns == 0 { period_ns } else { attr.deadline_ns },
        runtime_ns: attr.runtime_ns,
        mean_exec_ns: delta.run_ns / delta.voluntary_switches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(run_ns: u64, voluntary_switches: u64) -> CpuAccount {
        CpuAccount { run_ns, wait_ns: 0, timeslices: 0, voluntary_switches }
    }

    #[test]
    fn fifo_periods_come_from_sleeps_deadline_periods_from_the_attributes() {
        let fifo = SchedAttr::fixed(sched::SCHED_FIFO, 50);
        let j = jobs(1, "ctl", "fifo", &fifo, delta(4_000_000, 4), 40_000_000).unwrap();
        assert_eq!((j.period_ns, j.deadline_ns, j.mean_exec_ns), (10_000_000, 10_000_000, 1_000_000));
        let dl = SchedAttr::deadline(2_000_000, 5_000_000, 20_000_000);
        let j = jobs(1, "ctl", "deadline", &dl, delta(3_000_000, 2), 40_000_000).unwrap();
        assert_eq!(
            (j.period_ns, j.deadline_ns, j.runtime_ns, j.mean_exec_ns),
            (20_000_000, 5_000_000, 2_000_000, 1_500_000)
        );
        assert_eq!(jobs(1, "x", "fifo", &fifo, delta(5, 0), 10), None, "no job ended");
    }
}
