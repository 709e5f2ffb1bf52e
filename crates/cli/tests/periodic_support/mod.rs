//! A real periodic thread for the observe and adapt tests: each job spins a set amount of its own
//! CPU time (CLOCK_THREAD_CPUTIME_ID, so preemption on a loaded machine does not shorten it), then
//! sleeps until the next release (absolute clock_nanosleep: one voluntary switch per job). The
//! execution time may change at stated times (phases). Bounded in time; stopped and joined on drop.
#![allow(dead_code)]

use rtvirt_os::sched::{self, SchedAttr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A periodic thread of this test process.
pub struct Periodic {
    pub tid: u32,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<u64>>,
}

impl Periodic {
    /// Start a thread with `attr` (None: keep SCHED_OTHER) releasing a job every `period`; job
    /// execution time `phases[i].1` from `phases[i].0` on (the first phase at 0). Ends after
    /// `limit` at the latest.
    pub fn start(
        attr: Option<SchedAttr>,
        period: Duration,
        phases: &[(Duration, Duration)],
        limit: Duration,
    ) -> Periodic {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let phases = phases.to_vec();
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let tid = unsafe { libc::gettid() } as u32;
            let set = attr.map_or(Ok(()), |a| sched::set(tid, &a).map_err(|e| e.to_string()));
            tx.send((tid, set)).unwrap();
            run(period, &phases, limit, &flag)
        });
        let (tid, set) = rx.recv().unwrap();
        let p = Periodic { tid, stop, handle: Some(handle) };
        set.expect("sched_setattr of the periodic thread");
        p
    }

    /// Stop; the number of jobs run.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

impl Drop for Periodic {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn now(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn run(period: Duration, phases: &[(Duration, Duration)], limit: Duration, stop: &AtomicBool) -> u64 {
    let start = Instant::now();
    let mut release = now(libc::CLOCK_MONOTONIC);
    let mut jobs = 0;
    while !stop.load(Ordering::Relaxed) && start.elapsed() < limit {
        let at = start.elapsed();
        let exec = phases.iter().rev().find(|(from, _)| *from <= at).map_or(Duration::ZERO, |p| p.1);
        let cpu0 = now(libc::CLOCK_THREAD_CPUTIME_ID);
        while now(libc::CLOCK_THREAD_CPUTIME_ID) - cpu0 < exec {
            std::hint::spin_loop();
        }
        jobs += 1;
        release += period;
        let ts = libc::timespec { tv_sec: release.as_secs() as i64, tv_nsec: release.subsec_nanos() as i64 };
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
    jobs
}
