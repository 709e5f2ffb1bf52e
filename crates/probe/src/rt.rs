//! Real-time plumbing for measuring threads: scheduling policies through the `sched_setattr`
//! system call (libc has no wrapper for SCHED_DEADLINE attributes), CPU pinning, the memory lock,
//! `/dev/cpu_dma_latency`, the monotonic clock, and the runaway guard.
//!
//! Everything that changes process state is a guard that restores the previous state on drop.

use crate::error::{Error, Result};
use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Highest priority usable without `--force`; 99 is left to the kernel's own threads.
pub const MAX_PRIORITY_WITHOUT_FORCE: u32 = 98;

/// A Linux scheduling policy for a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    Deadline,
    Other,
}

impl Policy {
    pub fn parse(text: &str) -> std::result::Result<Policy, String> {
        Ok(match text {
            "fifo" => Policy::Fifo,
            "rr" => Policy::Rr,
            "deadline" => Policy::Deadline,
            "other" => Policy::Other,
            _ => return Err(format!("\"{text}\" is not a policy (expected fifo, rr, deadline or other)")),
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
            Policy::Other => "other",
        }
    }
}

/// SCHED_DEADLINE reservation: `runtime` every `period`, to be used within `deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reservation {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// What a thread is switched to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sched {
    Other,
    Fifo(u32),
    Rr(u32),
    Deadline(Reservation),
}

const SCHED_DEADLINE: u32 = 6;

/// `struct sched_attr` (first version, 48 bytes) of include/uapi/linux/sched/types.h.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Apply `sched` to thread `tid` (0 = the calling thread).
pub fn set_sched(tid: i32, sched: Sched) -> Result<()> {
    let mut attr = SchedAttr { size: std::mem::size_of::<SchedAttr>() as u32, ..Default::default() };
    match sched {
        Sched::Other => attr.sched_policy = libc::SCHED_OTHER as u32,
        Sched::Fifo(p) => (attr.sched_policy, attr.sched_priority) = (libc::SCHED_FIFO as u32, p),
        Sched::Rr(p) => (attr.sched_policy, attr.sched_priority) = (libc::SCHED_RR as u32, p),
        Sched::Deadline(r) => {
            attr.sched_policy = SCHED_DEADLINE;
            (attr.sched_runtime, attr.sched_deadline, attr.sched_period) = (r.runtime_ns, r.deadline_ns, r.period_ns);
        }
    }
    // SAFETY: attr is a valid sched_attr of the declared size; the kernel only reads it.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0u32) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        let hint = match (sched, err.raw_os_error()) {
            (Sched::Deadline(_), Some(libc::EBUSY)) => " (the CPUs' SCHED_DEADLINE bandwidth is used up)",
            (Sched::Deadline(_), Some(libc::EPERM)) => " (a SCHED_DEADLINE thread must be allowed on its whole root domain: rtvirt uses an exclusive cpuset for that; or not root)",
            _ => "",
        };
        return Err(Error::os(format!("cannot set scheduling {sched:?} on thread {tid}{hint}"), err));
    }
    Ok(())
}

/// Pin the calling thread to one CPU.
pub fn pin_current_thread(cpu: u32) -> Result<()> {
    pin_thread(0, &[cpu])
}

/// Restrict thread `tid` (0 = calling thread) to `cpus`.
pub fn pin_thread(tid: i32, cpus: &[u32]) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked by the guard below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c as usize >= libc::CPU_SETSIZE as usize {
                return Err(Error::input("--cpus", format!("CPU {c} is out of range")));
            }
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(Error::last_os(format!("cannot pin thread to CPU(s) {}", crate::cpus::format_list(cpus))));
        }
    }
    Ok(())
}

/// CPU the calling thread runs on right now.
pub fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no arguments.
    unsafe { libc::sched_getcpu().max(0) as u32 }
}

/// CLOCK_MONOTONIC now, in nanoseconds.
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time consumed by the whole process, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Absolute `clock_nanosleep` on CLOCK_MONOTONIC until `deadline_ns`, resumed after signals.
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec { tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t, tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long };
    loop {
        // SAFETY: ts is a valid timespec; the remaining-time pointer is unused with TIMER_ABSTIME.
        let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Whether the process runs with root privileges (euid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Locks all current and future memory (mlockall) while alive; unlocks on drop.
pub struct MemoryLock(());

impl MemoryLock {
    pub fn acquire() -> Result<MemoryLock> {
        // SAFETY: plain syscall.
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ENOMEM) && !is_root() {
                return Err(Error::Permission(format!("cannot lock memory (mlockall): {err}; the memory-lock limit (ulimit -l) is too low for a non-root user")));
            }
            return Err(Error::os("cannot lock memory (mlockall)", err));
        }
        Ok(MemoryLock(()))
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        // SAFETY: plain syscall.
        unsafe { libc::munlockall() };
    }
}

/// Holds `/dev/cpu_dma_latency` at 0 us (no deep C-states) while alive; the kernel releases the
/// request when the file is closed on drop.
pub struct DmaLatency(#[allow(dead_code)] File);

impl DmaLatency {
    pub fn hold_zero() -> Result<DmaLatency> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .map_err(|e| Error::os("cannot open /dev/cpu_dma_latency", e))?;
        f.write_all(&0i32.to_ne_bytes()).map_err(|e| Error::os("cannot write /dev/cpu_dma_latency", e))?;
        Ok(DmaLatency(f))
    }
}

/// Validate a real-time priority: 1..=98 always, 99 only with `force`.
pub fn check_priority(priority: u32, force: bool) -> Result<()> {
    if !(1..=99).contains(&priority) {
        return Err(Error::input("--priority", format!("{priority} is not a real-time priority (expected 1..99)")));
    }
    if priority > MAX_PRIORITY_WITHOUT_FORCE && !force {
        return Err(Error::input("--priority", "priority 99 competes with the kernel's own watchdog/migration threads; add --force if you mean it"));
    }
    Ok(())
}

/// The runaway guard. Real-time threads register their thread id; when the run's end plus a
/// grace period has passed and a thread has not stopped, the guard (itself a sleeping SCHED_FIFO
/// 99 thread, so that a spinning thread cannot starve it) demotes the thread to SCHED_OTHER and
/// records it. It also raises the shared stop flag at the end of the run, so every loop that
/// polls the flag has a bounded duration even if its own clock logic is wrong.
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    state: Arc<Mutex<WatchState>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct WatchState {
    tids: Vec<i32>,
    finished: bool,
    demoted: Vec<i32>,
}

impl Watchdog {
    /// Guard a run that must end by `end_ns` (CLOCK_MONOTONIC), allowing `grace` after it.
    pub fn start(stop: Arc<AtomicBool>, end_ns: u64, grace: Duration) -> Watchdog {
        let state = Arc::new(Mutex::new(WatchState::default()));
        let (st, flag) = (state.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("rtvirt-watchdog".into())
            .spawn(move || {
                let _ = set_sched(0, Sched::Fifo(99));
                sleep_or_finish(&st, end_ns);
                flag.store(true, Ordering::SeqCst);
                sleep_or_finish(&st, end_ns + grace.as_nanos() as u64);
                let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
                if !s.finished {
                    for tid in s.tids.clone() {
                        if set_sched(tid, Sched::Other).is_ok() {
                            s.demoted.push(tid);
                        }
                    }
                }
            })
            .expect("spawn watchdog thread");
        Watchdog { stop, state, thread: Some(thread) }
    }

    /// Register the calling thread.
    pub fn register_current(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).tids.push(gettid());
    }

    /// The stop flag every guarded loop polls.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// End the guard; returns the threads that had to be demoted (runaways).
    pub fn finish(mut self) -> Vec<i32> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).finished = true;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()).demoted)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).finished = true;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sleep until `until_ns` in short steps, returning early once the run is finished.
fn sleep_or_finish(state: &Mutex<WatchState>, until_ns: u64) {
    while now_ns() < until_ns {
        if state.lock().unwrap_or_else(|e| e.into_inner()).finished {
            return;
        }
        sleep_until((now_ns() + 20_000_000).min(until_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_rules() {
        assert!(check_priority(90, false).is_ok());
        assert!(check_priority(99, false).is_err());
        assert!(check_priority(99, true).is_ok());
        assert!(check_priority(0, true).is_err());
    }

    #[test]
    fn sched_attr_has_kernel_size() {
        assert_eq!(std::mem::size_of::<SchedAttr>(), 48);
    }

    #[test]
    fn fifo_set_and_restored_on_a_real_thread() {
        if !is_root() {
            return;
        }
        let t = std::thread::spawn(|| {
            set_sched(0, Sched::Fifo(10)).unwrap();
            // SAFETY: plain syscall.
            let p = unsafe { libc::sched_getscheduler(0) };
            set_sched(0, Sched::Other).unwrap();
            p
        });
        assert_eq!(t.join().unwrap(), libc::SCHED_FIFO);
    }

    #[test]
    fn watchdog_demotes_a_spinning_thread() {
        if !is_root() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let wd = Watchdog::start(stop.clone(), now_ns() + 50_000_000, Duration::from_millis(50));
        let wd_state = wd.state.clone();
        let t = std::thread::spawn(move || {
            wd_state.lock().unwrap().tids.push(gettid());
            set_sched(0, Sched::Fifo(5)).unwrap();
            // A runaway: ignores the stop flag, spins until demoted (bounded by 2 s anyway).
            let end = now_ns() + 2_000_000_000;
            // SAFETY: plain syscall.
            while now_ns() < end && unsafe { libc::sched_getscheduler(0) } == libc::SCHED_FIFO {
                std::hint::spin_loop();
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        let demoted = wd.finish();
        t.join().unwrap();
        assert!(stop.load(Ordering::SeqCst));
        assert_eq!(demoted.len(), 1);
    }

    #[test]
    fn dma_latency_is_held_and_released() {
        if !is_root() {
            return;
        }
        let g = DmaLatency::hold_zero().unwrap();
        drop(g);
    }
}
