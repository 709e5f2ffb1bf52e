//! What runs on a host thread: a guest (one vCPU, EDF or fixed-priority scheduler over periodic
//! tasks) or an extra host load (a periodic run, or a CPU hog).
//!
//! Jobs of one task are served in release order, so the pending jobs of a task are just the index
//! range `head..released` (release k at offset + k*T): memory stays constant whatever the horizon
//! and however late the jobs are. A job's execution time is drawn from the task's own random
//! stream when it becomes the head job, so draws do not depend on the schedule.
//!
//! Counting: a job counts when it completes (a miss if its response time exceeds the deadline),
//! when it is aborted at its deadline (`abort` policy: a miss), or at the end of the run if its
//! deadline has passed (a miss without a response-time sample). Jobs still pending whose deadline
//! is after the horizon are not counted.

use crate::config::VcpuSpec;
use crate::engine::rng::SimRng;
use crate::host::ThreadId;
use rtvirt_model::exec::ExecModel;
use rtvirt_model::scenario::{Guest, GuestScheduler, Phase};
use rtvirt_model::stats::{CompactHistogram, LatencyHistogram};
use rtvirt_model::Nanos;

/// One periodic task and its statistics.
pub struct TaskState {
    pub name: String,
    period: u64,
    deadline: u64,
    wcet: Nanos,
    offset: u64,
    prio: u32,
    exec: ExecModel,
    /// Models that replace `exec` for jobs released from their start on.
    phases: Vec<Phase>,
    /// The head job's execution demand (drawn and stretched), reported when it ends.
    demand: u64,
    /// Execution-time factor in the guest (1 + slowdown).
    stretch: f64,
    rng: SimRng,
    released: u64,
    head: u64,
    remaining: u64,
    ready_since: u64,
    /// The head job has executed since it started or since its last cache reload was charged.
    head_ran: bool,
    pub jobs: u64,
    pub misses: u64,
    pub response: ResponseTimes,
}

/// Response times: a small buffer flushed, sorted and run-length encoded, into a compact
/// histogram (only its non-empty HDR buckets). A dense HDR histogram per task costs tens of KiB
/// even for one job (10,000 tasks took 1.1 GB); this costs the buffer while jobs run (at most
/// `ResponseTimes::BUFFER` values, freed by [`ResponseTimes::histogram`]) and 16 bytes per
/// distinct bucket. The dense histogram is built once, at the end, for the summary.
pub struct ResponseTimes {
    buf: Vec<u64>,
    hist: CompactHistogram,
}

impl ResponseTimes {
    const BUFFER: usize = 2048;

    fn new() -> ResponseTimes {
        ResponseTimes { buf: Vec::new(), hist: CompactHistogram::new() }
    }

    fn record(&mut self, ns: u64) {
        self.buf.push(ns);
        if self.buf.len() == Self::BUFFER {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.buf.sort_unstable();
        self.hist.record_sorted(&self.buf);
        self.buf.clear();
    }

    /// Bytes held on the heap: the buffer and the compact histogram's buckets.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() * std::mem::size_of::<u64>() + self.hist.heap_bytes()
    }

    /// Every response time recorded so far, as a dense histogram (the buffer is released).
    pub fn histogram(&mut self) -> LatencyHistogram {
        self.flush();
        self.buf = Vec::new();
        self.hist.expand()
    }
}

impl TaskState {
    fn release_of(&self, k: u64) -> u64 {
        self.offset + k * self.period
    }

    fn pending(&self) -> bool {
        self.head < self.released
    }

    /// Start the head job: draw its (bare-metal) execution time, stretched by the guest's
    /// slowdown.
    fn start_head(&mut self, now: u64) {
        let release = self.release_of(self.head);
        let drawn = Phase::model_at(&self.exec, &self.phases, release).draw(self.wcet, self.rng.inner()).0;
        self.remaining = if self.stretch == 1.0 { drawn } else { (drawn as f64 * self.stretch).round() as u64 };
        self.demand = self.remaining;
        self.ready_since = now;
        self.head_ran = false;
    }
}

/// One finished or aborted job (recorded only when a job log is requested, e.g. cross-checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRecord {
    pub workload: u32,
    pub task: u32,
    pub index: u64,
    pub release: u64,
    /// Completion time; None when aborted or still pending at the end.
    pub end: Option<u64>,
}

pub struct Workload {
    pub name: String,
    pub thread: ThreadId,
    /// A guest (reported per task) or an extra host thread.
    pub is_guest: bool,
    edf: bool,
    pub tasks: Vec<TaskState>,
    /// Task whose head job the guest is serving.
    pub current: Option<u32>,
    last_ran: Option<u32>,
    overhead: u64,
    context_switch: u64,
    /// A host model's extra execution for a preempted job (0 without one).
    cache_reload: u64,
    idle_poll: bool,
    pub log: Option<Vec<JobRecord>>,
    /// Ended jobs' (task, execution demand) since last taken, kept only when something observes
    /// them (`simulate --adapt`: the guest agent's reports).
    pub ended: Option<Vec<(u32, u64)>>,
    index: u32,
}

impl Workload {
    /// A guest's workload; random streams are (seed, workload index, task index).
    pub fn guest(index: u32, g: &Guest, thread: ThreadId, seed: u64, v: &VcpuSpec) -> Workload {
        let tasks = g
            .tasks
            .iter()
            .enumerate()
            .map(|(ti, t)| {
                let mut s = task(
                    &t.name,
                    t.period.0,
                    t.deadline.0,
                    t.wcet,
                    t.offset.0,
                    t.priority,
                    t.exec.clone(),
                    SimRng::new(seed, ((index as u64) << 32) | ti as u64),
                );
                s.stretch = 1.0 + v.slowdown;
                s.phases = t.phases.clone();
                s
            })
            .collect();
        Workload {
            name: g.name.clone(),
            thread,
            is_guest: true,
            edf: g.scheduler == GuestScheduler::Edf,
            tasks,
            current: None,
            last_ran: None,
            overhead: 0,
            context_switch: v.context_switch,
            cache_reload: 0,
            idle_poll: v.idle_poll,
            log: None,
            ended: None,
            index,
        }
    }

    /// An extra host thread: `Some((period, run, offset))` periodic, None a CPU hog.
    pub fn load(index: u32, name: &str, thread: ThreadId, periodic: Option<(u64, u64, u64)>) -> Workload {
        let tasks = periodic
            .map(|(p, r, o)| vec![task("run", p, p, Nanos(r), o, 1, ExecModel::Constant, SimRng::new(0, 0))])
            .unwrap_or_default();
        Workload {
            name: name.to_string(),
            thread,
            is_guest: false,
            edf: false,
            tasks,
            current: None,
            last_ran: None,
            overhead: 0,
            context_switch: 0,
            cache_reload: 0,
            idle_poll: periodic.is_none(),
            log: None,
            ended: None,
            index,
        }
    }

    /// A host model's guest costs ([`crate::host_costs`]): every task switch costs
    /// `context_switch`, a preempted job needs `cache_reload` more when it resumes.
    pub fn set_costs(&mut self, context_switch: u64, cache_reload: u64) {
        self.context_switch = context_switch;
        self.cache_reload = cache_reload;
    }

    /// First release time of each task.
    pub fn first_releases(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.tasks.iter().enumerate().map(|(i, t)| (i as u32, t.offset))
    }

    /// Release the next job of task `ti` at `now`. Returns (next release time, this job's index
    /// and absolute deadline).
    pub fn release(&mut self, ti: u32, now: u64) -> (u64, u64, u64) {
        let t = &mut self.tasks[ti as usize];
        let k = t.released;
        t.released += 1;
        if t.head == k {
            t.start_head(now);
        }
        self.pick();
        let t = &self.tasks[ti as usize];
        (t.release_of(k + 1), k, t.release_of(k) + t.deadline)
    }

    /// Whether the thread has something to run (poll mode: always).
    pub fn runnable(&self) -> bool {
        self.current.is_some() || self.idle_poll
    }

    /// Time the current work still needs (u64::MAX while busy-polling).
    pub fn work_left(&self) -> u64 {
        match self.current {
            Some(c) => self.overhead + self.tasks[c as usize].remaining,
            None if self.idle_poll => u64::MAX,
            None => 0,
        }
    }

    /// The guest scheduler's choice: EDF (deadline, then time ready, then task order) or the
    /// highest fixed priority. A change of task costs a context switch.
    fn pick(&mut self) {
        let mut best: Option<(u64, u64, u64, u32)> = None;
        for (i, t) in self.tasks.iter().enumerate() {
            if !t.pending() {
                continue;
            }
            let key = if self.edf {
                (t.release_of(t.head) + t.deadline, t.ready_since, 0, i as u32)
            } else {
                (u32::MAX as u64 - t.prio as u64, 0, 0, i as u32)
            };
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        let choice = best.map(|b| b.3);
        if choice != self.current {
            if choice.is_some() && self.last_ran.is_some() && choice != self.last_ran {
                self.overhead = self.context_switch;
            }
            self.current = choice;
        }
    }

    /// `dt` ns of CPU time ending at `now`: pay the context switch, advance the current job and
    /// complete it when done. Returns whether there is still work.
    pub fn progress(&mut self, dt: u64, now: u64) -> bool {
        let Some(c) = self.current else { return self.idle_poll };
        let paid = self.overhead.min(dt);
        self.overhead -= paid;
        let work = dt - paid;
        if work == 0 {
            return true;
        }
        if self.cache_reload > 0 {
            self.reload_preempted(c);
        }
        self.last_ran = Some(c);
        let t = &mut self.tasks[c as usize];
        t.head_ran = true;
        debug_assert!(work <= t.remaining, "a job ran past its completion");
        t.remaining = t.remaining.saturating_sub(work);
        if t.remaining == 0 {
            self.complete(c, now);
        }
        self.runnable()
    }

    /// Task `c` runs after the job of another task that had started and is not finished: that
    /// job was preempted and needs a cache reload when it resumes.
    fn reload_preempted(&mut self, c: u32) {
        let Some(p) = self.last_ran.filter(|&p| p != c) else { return };
        let preempted = &mut self.tasks[p as usize];
        if preempted.pending() && preempted.head_ran {
            preempted.remaining += self.cache_reload;
            preempted.head_ran = false;
        }
    }

    fn complete(&mut self, c: u32, now: u64) {
        let t = &mut self.tasks[c as usize];
        let release = t.release_of(t.head);
        let response = now - release;
        t.jobs += 1;
        t.misses += (response > t.deadline) as u64;
        t.response.record(response);
        if let Some(log) = &mut self.log {
            log.push(JobRecord { workload: self.index, task: c, index: t.head, release, end: Some(now) });
        }
        if let Some(ended) = &mut self.ended {
            ended.push((c, t.demand));
        }
        self.next_head(c, now);
    }

    fn next_head(&mut self, c: u32, now: u64) {
        let t = &mut self.tasks[c as usize];
        t.head += 1;
        if t.pending() {
            t.start_head(now);
        }
        self.pick();
    }

    /// `abort` policy: job `k` of task `ti` reached its deadline; drop it if unfinished.
    /// Returns whether a job was dropped.
    pub fn abort(&mut self, ti: u32, k: u64, now: u64) -> bool {
        let t = &mut self.tasks[ti as usize];
        if t.head != k || !t.pending() {
            return false;
        }
        t.jobs += 1;
        t.misses += 1;
        if let Some(log) = &mut self.log {
            log.push(JobRecord { workload: self.index, task: ti, index: k, release: t.release_of(k), end: None });
        }
        if let Some(ended) = &mut self.ended {
            ended.push((ti, t.demand));
        }
        if self.current == Some(ti) {
            self.overhead = 0;
        }
        self.next_head(ti, now);
        true
    }

    /// End of the run: pending jobs whose deadline has passed are misses.
    pub fn finish(&mut self, horizon: u64) {
        for t in &mut self.tasks {
            for k in t.head..t.released {
                if t.release_of(k) + t.deadline <= horizon {
                    t.jobs += 1;
                    t.misses += 1;
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn task(
    name: &str,
    period: u64,
    deadline: u64,
    wcet: Nanos,
    offset: u64,
    prio: u32,
    exec: ExecModel,
    rng: SimRng,
) -> TaskState {
    TaskState {
        name: name.to_string(),
        period,
        deadline,
        wcet,
        offset,
        prio,
        exec,
        phases: vec![],
        demand: 0,
        stretch: 1.0,
        rng,
        released: 0,
        head: 0,
        remaining: 0,
        ready_since: 0,
        head_ran: false,
        jobs: 0,
        misses: 0,
        response: ResponseTimes::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_times_hold_little_memory_per_task() {
        // one job: a few bytes, not a dense HDR histogram (tens of KiB)
        let mut one = ResponseTimes::new();
        one.record(1_000_000);
        assert!(one.heap_bytes() <= 64, "{}", one.heap_bytes());
        assert_eq!(one.histogram().count(), 1);
        assert!(one.heap_bytes() <= 16, "buffer released: {}", one.heap_bytes());
        // a million jobs spread over 1 us..10 ms: one entry per non-empty HDR bucket (at most ~1.5x
        // a dense histogram, which is the worst case: responses spread evenly over a wide range)
        let mut many = ResponseTimes::new();
        let mut x: u64 = 1;
        for _ in 0..1_000_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            many.record(1_000 + (x >> 33) % 10_000_000);
        }
        let buckets = many.histogram().buckets().len();
        assert_eq!(many.heap_bytes(), many.hist.heap_bytes());
        assert_eq!(many.heap_bytes(), 16 * buckets, "16 bytes per non-empty bucket, nothing else");
    }
}
