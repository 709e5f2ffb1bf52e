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

/// One vCPU of a workload: its host thread and the task it is serving.
pub struct VcpuSlot {
    pub thread: ThreadId,
    /// Task whose head job this vCPU is serving.
    pub current: Option<u32>,
    last_ran: Option<u32>,
    /// Guest task-switch cost still to pay before the current job progresses.
    overhead: u64,
    /// Runs real-time tasks (false: a housekeeping vCPU, never given a task).
    rt: bool,
    /// Global guests: the host has the thread on a core (set by [`Workload::observe_host`]).
    on_core: bool,
    /// Global guests: the host would run the thread now if it were runnable.
    eligible: bool,
}

impl VcpuSlot {
    fn new(thread: ThreadId, rt: bool) -> VcpuSlot {
        VcpuSlot { thread, current: None, last_ran: None, overhead: 0, rt, on_core: false, eligible: true }
    }
}

/// How a guest's tasks are spread over its vCPUs.
pub enum Dispatch {
    /// Task i runs only on vCPU slot `vcpu_of[i]` (one vCPU: every task on slot 0).
    Partitioned { vcpu_of: Vec<u32> },
    /// The guest scheduler runs its most urgent jobs on whichever vCPUs the host runs (global
    /// EDF or FP; a job migrates at no cost).
    Global,
}

pub struct Workload {
    pub name: String,
    /// Its vCPUs (an extra host thread: one).
    pub vcpus: Vec<VcpuSlot>,
    /// A guest (reported per task) or an extra host thread.
    pub is_guest: bool,
    edf: bool,
    pub tasks: Vec<TaskState>,
    dispatch: Dispatch,
    context_switch: u64,
    /// A host model's extra execution for a preempted job (0 without one).
    cache_reload: u64,
    idle_poll: bool,
    pub log: Option<Vec<JobRecord>>,
    /// Ended jobs' (task, execution demand) since last taken, kept only when something observes
    /// them (`simulate --adapt`: the guest agent's reports).
    pub ended: Option<Vec<(u32, u64)>>,
    index: u32,
    /// Scratch for the global ranking.
    ranked: Vec<u32>,
}

/// A guest's vCPUs as the simulator runs them: per vCPU its host thread and whether it runs
/// real-time tasks, and how tasks are dispatched.
pub struct GuestVcpus {
    pub threads: Vec<(ThreadId, bool)>,
    pub dispatch: Dispatch,
}

impl Workload {
    /// A guest's workload; random streams are (seed, workload index, task index).
    pub fn guest(index: u32, g: &Guest, vcpus: GuestVcpus, seed: u64, v: &VcpuSpec) -> Workload {
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
            vcpus: vcpus.threads.iter().map(|&(t, rt)| VcpuSlot::new(t, rt)).collect(),
            is_guest: true,
            edf: g.scheduler == GuestScheduler::Edf,
            tasks,
            dispatch: vcpus.dispatch,
            context_switch: v.context_switch,
            cache_reload: 0,
            idle_poll: v.idle_poll,
            log: None,
            ended: None,
            index,
            ranked: Vec::new(),
        }
    }

    /// An extra host thread: `Some((period, run, offset))` periodic, None a CPU hog.
    pub fn load(index: u32, name: &str, thread: ThreadId, periodic: Option<(u64, u64, u64)>) -> Workload {
        let tasks: Vec<TaskState> = periodic
            .map(|(p, r, o)| vec![task("run", p, p, Nanos(r), o, 1, ExecModel::Constant, SimRng::new(0, 0))])
            .unwrap_or_default();
        Workload {
            name: name.to_string(),
            vcpus: vec![VcpuSlot::new(thread, true)],
            is_guest: false,
            edf: false,
            dispatch: Dispatch::Partitioned { vcpu_of: vec![0; tasks.len()] },
            tasks,
            context_switch: 0,
            cache_reload: 0,
            idle_poll: periodic.is_none(),
            log: None,
            ended: None,
            index,
            ranked: Vec::new(),
        }
    }

    /// A host model's guest costs ([`crate::host_costs`]): every task switch costs
    /// `context_switch`, a preempted job needs `cache_reload` more when it resumes.
    pub fn set_costs(&mut self, context_switch: u64, cache_reload: u64) {
        self.context_switch = context_switch;
        self.cache_reload = cache_reload;
    }

    /// Whether the guest schedules its tasks globally over its vCPUs.
    pub fn is_global(&self) -> bool {
        matches!(self.dispatch, Dispatch::Global)
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
        self.repick(ti);
        let t = &self.tasks[ti as usize];
        (t.release_of(k + 1), k, t.release_of(k) + t.deadline)
    }

    /// Whether a release of task `ti` now finds its vCPU idle (blocked: the release has to wake
    /// it, and pays the host's wake-up latency); a busy vCPU takes it in at once. A global guest:
    /// whether any of its vCPUs is idle (the release wakes one).
    pub fn idle_for(&self, ti: u32) -> bool {
        match &self.dispatch {
            Dispatch::Partitioned { vcpu_of } => !self.runnable(vcpu_of[ti as usize] as usize),
            Dispatch::Global => (0..self.vcpus.len()).any(|slot| !self.runnable(slot)),
        }
    }

    /// Whether vCPU `slot`'s thread has something to run (poll mode: always).
    pub fn runnable(&self, slot: usize) -> bool {
        let v = &self.vcpus[slot];
        v.current.is_some() || (self.idle_poll && v.rt)
    }

    /// Time the current work of vCPU `slot` still needs (u64::MAX while busy-polling).
    pub fn work_left(&self, slot: usize) -> u64 {
        let v = &self.vcpus[slot];
        match v.current {
            Some(c) => v.overhead + self.tasks[c as usize].remaining,
            None if self.idle_poll && v.rt => u64::MAX,
            None => 0,
        }
    }

    /// Re-decide after task `ti` changed: its vCPU (partitioned) or every vCPU (global).
    fn repick(&mut self, ti: u32) {
        match &self.dispatch {
            Dispatch::Partitioned { vcpu_of } => {
                let slot = vcpu_of[ti as usize] as usize;
                self.pick(slot)
            }
            Dispatch::Global => self.assign_global(),
        }
    }

    /// The priority key of task `i`'s head job: EDF (deadline, then time ready, then task order)
    /// or the highest fixed priority; None when it has no pending job.
    fn key(&self, i: usize) -> Option<(u64, u64, u64, u32)> {
        let t = &self.tasks[i];
        if !t.pending() {
            return None;
        }
        Some(if self.edf {
            (t.release_of(t.head) + t.deadline, t.ready_since, 0, i as u32)
        } else {
            (u32::MAX as u64 - t.prio as u64, 0, 0, i as u32)
        })
    }

    /// A partitioned vCPU's choice among its own tasks.
    fn pick(&mut self, slot: usize) {
        let mut best: Option<(u64, u64, u64, u32)> = None;
        let Dispatch::Partitioned { vcpu_of } = &self.dispatch else { unreachable!("pick is partitioned") };
        for (i, &v) in vcpu_of.iter().enumerate() {
            if v as usize != slot {
                continue;
            }
            if let Some(key) = self.key(i) {
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
        self.set_current(slot, best.map(|b| b.3));
    }

    /// A change of task on a vCPU costs a context switch.
    fn set_current(&mut self, slot: usize, choice: Option<u32>) {
        let v = &mut self.vcpus[slot];
        if choice != v.current {
            if choice.is_some() && v.last_ran.is_some() && choice != v.last_ran {
                v.overhead = self.context_switch;
            }
            v.current = choice;
        }
    }

    /// Global guests: what the host does with each vCPU thread now - on a core, and whether it
    /// could run if it had work (the guest scheduler gives its jobs to the vCPUs that run).
    /// Returns whether the assignment of jobs to vCPUs changed.
    pub fn observe_host(&mut self, state: impl Fn(ThreadId) -> (bool, bool)) -> bool {
        for v in &mut self.vcpus {
            (v.on_core, v.eligible) = state(v.thread);
        }
        let before: Vec<Option<u32>> = self.vcpus.iter().map(|v| v.current).collect();
        self.assign_global();
        self.vcpus.iter().zip(before).any(|(v, b)| v.current != b)
    }

    /// Global EDF/FP over the vCPUs: the r most urgent jobs run on the r real-time vCPUs that are
    /// on a core (a job keeps its vCPU while it stays among them), the next ones wait on the
    /// other vCPUs, those the host could run first, so that their threads ask for a core.
    fn assign_global(&mut self) {
        let mut ranked = std::mem::take(&mut self.ranked);
        ranked.clear();
        let mut keyed: Vec<((u64, u64, u64, u32), u32)> =
            (0..self.tasks.len()).filter_map(|i| self.key(i).map(|k| (k, i as u32))).collect();
        keyed.sort_unstable();
        ranked.extend(keyed.iter().map(|k| k.1));
        let running: Vec<usize> =
            (0..self.vcpus.len()).filter(|&s| self.vcpus[s].rt && self.vcpus[s].on_core).collect();
        let top = ranked.len().min(running.len());
        let mut next: Vec<Option<u32>> = vec![None; self.vcpus.len()];
        // jobs among the top that already run on a running vCPU keep it
        for &s in &running {
            if let Some(c) = self.vcpus[s].current.filter(|c| ranked[..top].contains(c)) {
                next[s] = Some(c);
            }
        }
        let free: Vec<usize> = running.iter().copied().filter(|&s| next[s].is_none()).collect();
        let mut free = free.into_iter();
        for &c in &ranked[..top] {
            if !next.contains(&Some(c)) {
                next[free.next().expect("as many running vCPUs as top jobs")] = Some(c);
            }
        }
        let mut waiting: Vec<usize> =
            (0..self.vcpus.len()).filter(|&s| self.vcpus[s].rt && !self.vcpus[s].on_core).collect();
        waiting.sort_by_key(|&s| (!self.vcpus[s].eligible, s));
        for (&c, s) in ranked[top..].iter().zip(waiting) {
            next[s] = Some(c);
        }
        for (s, c) in next.into_iter().enumerate() {
            self.set_current(s, c);
        }
        self.ranked = ranked;
    }

    /// `dt` ns of CPU time of vCPU `slot` ending at `now`: pay the context switch, advance its job
    /// and complete it when done. Returns whether the vCPU still has work.
    pub fn progress(&mut self, slot: usize, dt: u64, now: u64) -> bool {
        let Some(c) = self.vcpus[slot].current else { return self.runnable(slot) };
        let v = &mut self.vcpus[slot];
        let paid = v.overhead.min(dt);
        v.overhead -= paid;
        let work = dt - paid;
        if work == 0 {
            return true;
        }
        if self.cache_reload > 0 {
            self.reload_preempted(slot, c);
        }
        self.vcpus[slot].last_ran = Some(c);
        let t = &mut self.tasks[c as usize];
        t.head_ran = true;
        debug_assert!(work <= t.remaining, "a job ran past its completion");
        t.remaining = t.remaining.saturating_sub(work);
        if t.remaining == 0 {
            self.complete(slot, c, now);
        }
        self.runnable(slot)
    }

    /// Task `c` runs on `slot` after the job of another task that had started there and is not
    /// finished: that job was preempted and needs a cache reload when it resumes.
    fn reload_preempted(&mut self, slot: usize, c: u32) {
        let Some(p) = self.vcpus[slot].last_ran.filter(|&p| p != c) else { return };
        let preempted = &mut self.tasks[p as usize];
        if preempted.pending() && preempted.head_ran {
            preempted.remaining += self.cache_reload;
            preempted.head_ran = false;
        }
    }

    fn complete(&mut self, slot: usize, c: u32, now: u64) {
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
        self.next_head(c, now, Some(slot));
    }

    /// Task `c` moves on to its next job. `freed`: the vCPU that completed it (global guests:
    /// it pulls the most urgent job no running vCPU serves; the other vCPUs are not disturbed,
    /// as they may still be charged for the same instant).
    fn next_head(&mut self, c: u32, now: u64, freed: Option<usize>) {
        let t = &mut self.tasks[c as usize];
        t.head += 1;
        if t.pending() {
            t.start_head(now);
        }
        match (&self.dispatch, freed) {
            (Dispatch::Global, Some(slot)) => self.pull(slot),
            _ => self.repick(c),
        }
    }

    /// Global guests: vCPU `slot` takes the most urgent pending job that no running vCPU serves.
    fn pull(&mut self, slot: usize) {
        let served =
            |c: u32| self.vcpus.iter().enumerate().any(|(s, v)| s != slot && v.on_core && v.current == Some(c));
        let best = (0..self.tasks.len()).filter(|&i| !served(i as u32)).filter_map(|i| self.key(i)).min();
        let choice = best.map(|b| b.3);
        if let Some(c) = choice {
            for v in self.vcpus.iter_mut().filter(|v| v.current == Some(c)) {
                v.current = None;
            }
        }
        self.set_current(slot, choice);
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
        for v in self.vcpus.iter_mut().filter(|v| v.current == Some(ti)) {
            v.overhead = 0;
        }
        self.next_head(ti, now, None);
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
