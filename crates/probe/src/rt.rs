//! Real-time plumbing for measuring threads: scheduling policies and CPU pinning (through
//! rtvirt-os's `sched_setattr`/`sched_setaffinity` wrappers, whose errors explain the errno), the
//! memory lock, `/dev/cpu_dma_latency`, the monotonic clock, and the runaway guard.
//!
//! Everything that changes process state is a guard that restores the previous state on drop.

use crate::error::{Error, Result};
use rtvirt_os::sched::{self as os_sched, SchedAttr};
use rtvirt_os::CpuList;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Highest priority usable without `--force`; 99 is left to the kernel's own threads.
pub const MAX_PRIORITY_WITHOUT_FORCE: u32 = 98;

/// A Linux scheduling policy for a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinuxPolicy {
    Fifo,
    Rr,
    Deadline,
    Other,
}

impl LinuxPolicy {
    pub fn parse(text: &str) -> std::result::Result<LinuxPolicy, String> {
        Ok(match text {
            "fifo" => LinuxPolicy::Fifo,
            "rr" => LinuxPolicy::Rr,
            "deadline" => LinuxPolicy::Deadline,
            "other" => LinuxPolicy::Other,
            _ => return Err(format!("\"{text}\" is not a policy (expected fifo, rr, deadline or other)")),
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            LinuxPolicy::Fifo => "fifo",
            LinuxPolicy::Rr => "rr",
            LinuxPolicy::Deadline => "deadline",
            LinuxPolicy::Other => "other",
        }
    }
}

/// SCHED_DEADLINE reservation: `runtime` every `period`, to be used within `deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// Kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The attributes `sched` stands for, in rtvirt-os's terms.
fn os_attr(sched: Sched) -> SchedAttr {
    match sched {
        Sched::Other => SchedAttr::other(0),
        Sched::Fifo(p) => SchedAttr::fixed(os_sched::SCHED_FIFO, p),
        Sched::Rr(p) => SchedAttr::fixed(os_sched::SCHED_RR, p),
        Sched::Deadline(r) => SchedAttr::deadline(r.runtime_ns, r.deadline_ns, r.period_ns),
    }
}

/// Apply `sched` to thread `tid` (0 = the calling thread), by rtvirt-os's `sched_setattr`.
pub fn set_sched(tid: i32, sched: Sched) -> Result<()> {
    os_sched::set(tid as u32, &os_attr(sched))
        .map_err(|e| Error::kernel(&format!("cannot set scheduling {sched:?} on thread {tid}"), &e))
}

/// Pin the calling thread to one CPU.
pub fn pin_current_thread(cpu: u32) -> Result<()> {
    pin_thread(0, &[cpu])
}

/// Restrict thread `tid` (0 = calling thread) to `cpus`, by rtvirt-os's `sched_setaffinity`.
pub fn pin_thread(tid: i32, cpus: &[u32]) -> Result<()> {
    if let Some(c) = cpus.iter().find(|&&c| c as usize >= libc::CPU_SETSIZE as usize) {
        return Err(Error::input("--cpus", format!("CPU {c} is out of range")));
    }
    let list: CpuList = cpus.iter().copied().collect();
    os_sched::set_affinity(tid as u32, &list)
        .map_err(|e| Error::kernel(&format!("cannot pin thread to CPU(s) {list}"), &e))
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

/// Longest stretch any wait of rtvirt sleeps without looking at its stop condition (its stop
/// flag and Ctrl-C/SIGTERM/SIGHUP, `rtvirt_os::signals`): a stop is seen within 0.1 s, and a
/// measurement's reporting thread wakes rarely (each wake-up is CPU time the measurement pays for).
pub const STOP_POLL_NS: u64 = 100_000_000;

/// Sleep until `deadline_ns` (CLOCK_MONOTONIC, absolute) unless `stop` is raised or the user
/// interrupts first; true when the deadline was reached. Long sleeps are cut into stretches of at
/// most [`STOP_POLL_NS`] with a look at the stop condition between them; the last stretch sleeps
/// straight to the deadline and returns at once, so that a measuring caller's wake-up time is
/// the same as with [`sleep_until`].
pub fn sleep_until_or_stopped(deadline_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) || rtvirt_os::signals::interrupted() {
            return false;
        }
        let now = now_ns();
        if deadline_ns.saturating_sub(now) <= STOP_POLL_NS {
            sleep_until(deadline_ns);
            return true;
        }
        sleep_until(now + STOP_POLL_NS);
    }
}

/// Absolute `clock_nanosleep` on CLOCK_MONOTONIC until `deadline_ns`, resumed after signals.
/// Only for short, bounded sleeps: a wait that may be long is [`sleep_until_or_stopped`].
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; the remaining-time pointer is unused with TIMER_ABSTIME.
        let rc =
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
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
                return Err(Error::Permission(format!(
                    "cannot lock memory (mlockall): {err}; the memory-lock limit (ulimit -l) is too low for a non-root \
                     user"
                )));
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

/// What `/dev/cpu_dma_latency` reads when no process holds a request (the kernel's default).
pub const NO_DMA_LATENCY_REQUEST: i32 = 2_000_000_000;

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

    /// The machine-wide CPU latency target now, in us: the smallest request any process holds
    /// (0 while cyclictest or `measure timer` runs; [`NO_DMA_LATENCY_REQUEST`] when nobody holds
    /// one). None when the device cannot be read (not root). Reading opens the device with the
    /// default request, which changes nothing.
    pub fn current_us() -> Option<i32> {
        let mut b = [0u8; 4];
        File::open("/dev/cpu_dma_latency").and_then(|mut f| f.read_exact(&mut b)).ok()?;
        Some(i32::from_ne_bytes(b))
    }
}

/// Validate a real-time priority: 1..=98 always, 99 only with `force`.
pub fn check_priority(priority: u32, force: bool) -> Result<()> {
    if !(1..=99).contains(&priority) {
        return Err(Error::input("--priority", format!("{priority} is not a real-time priority (expected 1..99)")));
    }
    if priority > MAX_PRIORITY_WITHOUT_FORCE && !force {
        return Err(Error::input(
            "--priority",
            "priority 99 competes with the kernel's own watchdog/migration threads; add --force if you mean it",
        ));
    }
    Ok(())
}

/// The runaway guard. Real-time threads register their thread id; when the run's end plus a
/// grace period has passed and a thread has not stopped, the guard (itself a sleeping SCHED_FIFO
/// 99 thread, so that a spinning thread cannot starve it) demotes the thread to SCHED_OTHER and
/// records it. It also raises the shared stop flag at the end of the run, so every loop that
/// polls the flag has a bounded duration even if its own clock logic is wrong. It sleeps on a
/// condition variable until its deadline or the end of the run: it wakes at most three times,
/// never in the middle of a measurement.
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    shared: Arc<WatchShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct WatchShared {
    state: Mutex<WatchState>,
    finished: Condvar,
}

impl WatchShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn finish(&self) {
        self.lock().finished = true;
        self.finished.notify_all();
    }
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
        let shared = Arc::new(WatchShared::default());
        let (st, flag) = (shared.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("rtvirt-watchdog".into())
            .spawn(move || {
                let _ = set_sched(0, Sched::Fifo(99));
                if sleep_or_finish(&st, end_ns) {
                    return;
                }
                flag.store(true, Ordering::SeqCst);
                if sleep_or_finish(&st, end_ns + grace.as_nanos() as u64) {
                    return;
                }
                let mut s = st.lock();
                if !s.finished {
                    for tid in s.tids.clone() {
                        if set_sched(tid, Sched::Other).is_ok() {
                            s.demoted.push(tid);
                        }
                    }
                }
            })
            .expect("spawn watchdog thread");
        Watchdog { stop, shared, thread: Some(thread) }
    }

    /// Register the calling thread.
    pub fn register_current(&self) {
        self.register(gettid());
    }

    /// Register a thread of this process.
    pub fn register(&self, tid: i32) {
        self.shared.lock().tids.push(tid);
    }

    /// The stop flag every guarded loop polls.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// End the guard; returns the threads that had to be demoted (runaways).
    pub fn finish(mut self) -> Vec<i32> {
        self.shared.finish();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut self.shared.lock().demoted)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.finish();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sleep until `until_ns` (CLOCK_MONOTONIC) or until the run is finished; whether it is.
fn sleep_or_finish(shared: &WatchShared, until_ns: u64) -> bool {
    let mut s = shared.lock();
    loop {
        let now = now_ns();
        if s.finished || now >= until_ns {
            return s.finished;
        }
        s = match shared.finished.wait_timeout(s, Duration::from_nanos(until_ns - now)) {
            Ok((g, _)) => g,
            Err(e) => e.into_inner().0,
        };
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
    fn policies_map_to_os_attributes() {
        assert_eq!(os_attr(Sched::Fifo(90)), SchedAttr::fixed(os_sched::SCHED_FIFO, 90));
        let r = Reservation { runtime_ns: 100_000, deadline_ns: 1_000_000, period_ns: 1_000_000 };
        assert_eq!(os_attr(Sched::Deadline(r)).to_string(), "DEADLINE 100000/1000000/1000000ns");
        assert_eq!(os_attr(Sched::Other).policy, os_sched::SCHED_OTHER);
    }

    #[test]
    fn out_of_range_cpu_is_an_input_error() {
        assert!(matches!(pin_thread(0, &[100_000]), Err(Error::Input(_))));
    }

    #[test]
    fn fifo_set_and_restored_on_a_real_thread() {
        rtvirt_testkit::require_root!();
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
        rtvirt_testkit::require_root!();
        let stop = Arc::new(AtomicBool::new(false));
        let wd = Watchdog::start(stop.clone(), now_ns() + 50_000_000, Duration::from_millis(50));
        let wd_state = wd.shared.clone();
        let t = std::thread::spawn(move || {
            wd_state.lock().tids.push(gettid());
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
    fn watchdog_finished_early_returns_without_stopping_the_run() {
        let stop = Arc::new(AtomicBool::new(false));
        let wd = Watchdog::start(stop.clone(), now_ns() + 600_000_000_000, Duration::from_secs(1));
        assert!(wd.finish().is_empty());
        // The guard left its sleep when told, not at the end of the run (which raises the flag).
        assert!(!stop.load(Ordering::SeqCst));
    }

    #[test]
    fn dma_latency_is_held_and_released() {
        rtvirt_testkit::require_root!();
        // The target is machine-wide: another process (cyclictest, another measurement) may hold
        // it at 0 too, and then our release cannot be seen; try until nobody else holds it.
        let mut seen_free = None;
        for _ in 0..20 {
            let before = DmaLatency::current_us().expect("root can read /dev/cpu_dma_latency");
            if before != 0 {
                seen_free.get_or_insert(before);
            }
            let g = DmaLatency::hold_zero().unwrap();
            assert_eq!(DmaLatency::current_us(), Some(0), "held at 0");
            drop(g);
            let after = DmaLatency::current_us();
            if before != 0 && after == Some(before) {
                return; // released: back to what the machine had before
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        assert_eq!(
            seen_free, None,
            "the target was free ({seen_free:?}) before we held it, and never came back after our release"
        );
        eprintln!("another process held /dev/cpu_dma_latency at 0 for 5 s: release not observable");
    }
}
