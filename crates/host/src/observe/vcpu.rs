//! Host-side inference of a guest's demand from its vCPU thread alone: the thread's CPU account
//! (`/proc/<tid>/schedstat`, voluntary switches) sampled once per window gives one demand sample
//! per window (CPU time, scaled to the window when the sample came late) and, where the vCPU
//! halts between jobs, per window the mean busy interval between halts (CPU time over halts) and
//! the mean interval between halts (wall time over halts: the job period of a thread that halts
//! once per job). A halted vCPU thread sleeps in the host (KVM's HLT exit, TCG's idle wait), so
//! each halt is one voluntary switch; being preempted or throttled is not. Sampling /proc rather than tracing: it needs no tracefs and costs one read per window.

use rtvirt_model::observe::{summarise, VcpuObservation};
use rtvirt_os::procfs::{self, CpuAccount};
use std::collections::VecDeque;

/// Samples kept per vCPU (a sliding window; the oldest are dropped first).
pub const MAX_SAMPLES: usize = 100_000;

/// One vCPU thread being sampled.
#[derive(Debug)]
pub struct VcpuSampler {
    pub vcpu: u32,
    pub tid: u32,
    starttime: u64,
    last: Option<(u64, CpuAccount)>,
    demand: VecDeque<u64>,
    busy: VecDeque<u64>,
    halts: VecDeque<u64>,
    run_ns: u64,
    wall_ns: u64,
    ended: bool,
}

impl VcpuSampler {
    /// Start sampling thread `tid` (vCPU `vcpu`), whose start time identifies it.
    pub fn new(vcpu: u32, tid: u32, starttime: u64) -> VcpuSampler {
        VcpuSampler {
            vcpu,
            tid,
            starttime,
            last: None,
            demand: VecDeque::new(),
            busy: VecDeque::new(),
            halts: VecDeque::new(),
            run_ns: 0,
            wall_ns: 0,
            ended: false,
        }
    }

    /// Take one sample at `now_ns` (CLOCK_MONOTONIC) for a window of `window_ns`. Returns the
    /// window's demand sample, or None (first sample, or the thread is gone: then it is ended).
    pub fn sample(&mut self, now_ns: u64, window_ns: u64) -> Option<u64> {
        if self.ended {
            return None;
        }
        let alive = procfs::stat(self.tid).is_ok_and(|s| s.starttime == self.starttime);
        let Some(account) = alive.then(|| procfs::cpu_account(self.tid).ok()).flatten() else {
            self.ended = true;
            return None;
        };
        let previous = self.last.replace((now_ns, account));
        let (then, before) = previous?;
        let delta = account.since(&before);
        let wall = now_ns.saturating_sub(then).max(1);
        self.record(delta, wall, window_ns)
    }

    /// Record the CPU time `delta` used over `wall` ns as one sample of a `window_ns` window.
    fn record(&mut self, delta: CpuAccount, wall: u64, window_ns: u64) -> Option<u64> {
        let run = delta.run_ns.min(wall);
        self.run_ns += run;
        self.wall_ns += wall;
        let sample = ((run as u128 * window_ns as u128) / wall as u128) as u64;
        push_bounded(&mut self.demand, sample);
        if delta.voluntary_switches > 0 && run > 0 {
            push_bounded(&mut self.busy, run / delta.voluntary_switches);
            push_bounded(&mut self.halts, wall / delta.voluntary_switches);
        }
        Some(sample)
    }

    /// Whether the thread ended (the guest died).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The last `n` demand samples (most recent last).
    pub fn recent(&self, n: usize) -> Vec<u64> {
        self.demand.iter().skip(self.demand.len().saturating_sub(n)).copied().collect()
    }

    /// What was observed so far.
    pub fn observation(&self) -> VcpuObservation {
        let demand: Vec<u64> = self.demand.iter().copied().collect();
        let busy: Vec<u64> = self.busy.iter().copied().collect();
        let halts: Vec<u64> = self.halts.iter().copied().collect();
        let reservation = rtvirt_os::sched::get(self.tid).ok().filter(|a| a.is_deadline() && !self.ended).map(|a| {
            rtvirt_model::observe::Reservation {
                runtime_ns: a.runtime_ns,
                deadline_ns: a.deadline_ns,
                period_ns: a.period_ns,
            }
        });
        VcpuObservation {
            vcpu: self.vcpu,
            tid: self.tid,
            demand: summarise(&demand),
            utilisation: if self.wall_ns == 0 { 0.0 } else { self.run_ns as f64 / self.wall_ns as f64 },
            busy_interval: (!busy.is_empty()).then(|| summarise(&busy)),
            halt_interval: (!halts.is_empty()).then(|| summarise(&halts)),
            reservation,
            ended: self.ended,
        }
    }
}

fn push_bounded(q: &mut VecDeque<u64>, v: u64) {
    if q.len() == MAX_SAMPLES {
        q.pop_front();
    }
    q.push_back(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(run_ns: u64, voluntary_switches: u64) -> CpuAccount {
        CpuAccount { run_ns, wait_ns: 0, timeslices: 0, voluntary_switches }
    }

    #[test]
    fn late_samples_are_scaled_to_the_window_and_halts_split_busy_time() {
        let mut s = VcpuSampler::new(0, 1, 0);
        // 3 ms of CPU over 20 ms of wall time in a 10 ms window: 1.5 ms per window; 3 halts.
        assert_eq!(s.record(account(3_000_000, 3), 20_000_000, 10_000_000), Some(1_500_000));
        // More CPU than wall time (accounting skew) is capped at the wall time.
        assert_eq!(s.record(account(30_000_000, 0), 10_000_000, 10_000_000), Some(10_000_000));
        let o = s.observation();
        assert_eq!((o.demand.count, o.demand.max), (2, 10_000_000));
        assert_eq!(o.busy_interval.as_ref().unwrap().count, 1);
        // 20 ms of wall time with 3 halts: one halt every 6.67 ms; 3 ms of CPU: 1 ms per halt.
        assert_eq!((o.halt_interval.unwrap().max, o.busy_interval.unwrap().max), (6_666_666, 1_000_000));
        assert!((o.utilisation - 13.0 / 30.0).abs() < 1e-9, "{}", o.utilisation);
        assert_eq!(s.recent(1), vec![10_000_000]);
    }

    #[test]
    fn a_busy_thread_of_this_process_is_seen_and_a_gone_one_ends() {
        let tid = unsafe { libc::gettid() } as u32;
        let starttime = procfs::stat(tid).unwrap().starttime;
        let mut s = VcpuSampler::new(0, tid, starttime);
        let t0 = std::time::Instant::now();
        assert_eq!(s.sample(0, 10_000_000), None, "the first sample only starts");
        while t0.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        let wall = t0.elapsed().as_nanos() as u64;
        assert!(s.sample(wall, wall).unwrap() > 0);
        let mut gone = VcpuSampler::new(0, tid, starttime + 1);
        assert_eq!(gone.sample(0, 1), None);
        assert!(gone.ended());
    }
}
