//! One guest "vCPU": a thread of a worker process ([`super::worker`]) under the vCPU's
//! SCHED_DEADLINE reservation, pinned to its core, running a user-level EDF or fixed-priority
//! scheduler over the periodic tasks bound to it. Jobs burn calibrated work in chunks of [`CHUNK_NS`];
//! between chunks new releases are taken in and the scheduler re-decides (fine-grained preemption
//! points). A late job keeps running (as in the simulator); a job unfinished at the end whose
//! deadline has passed is a miss.

use super::protocol::{GuestSpec, TaskOutcome, WorstJob};
use super::work;
use crate::agent::jobs::JobReporter;
use crate::rt;
use rand::SeedableRng;
use rtvirt_model::exec::ExecModel;
use rtvirt_model::scenario::{GuestScheduler, Phase};
use rtvirt_model::stats::LatencyHistogram;
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

/// Work between two preemption points.
pub const CHUNK_NS: u64 = 20_000;

pub(super) struct Job {
    release: u64,
    deadline: u64,
    /// Iterations of work left.
    pub(super) remaining: u64,
    /// The execution time drawn for it.
    exec_ns: u64,
}

/// Per-task state of the user-level scheduler.
pub(super) struct TaskState {
    period: u64,
    deadline: u64,
    wcet: u64,
    priority: u32,
    exec: ExecModel,
    /// Models replacing `exec` from their start on (since the run's start).
    phases: Vec<Phase>,
    /// The run's start: phases are timed from it.
    start: u64,
    pub(super) next_release: u64,
    pub(super) queue: VecDeque<Job>,
    rng: rand_pcg::Pcg64Mcg,
    /// Statistics: jobs whose deadline fell inside the run, misses, response times.
    jobs: u64,
    misses: u64,
    unfinished: u64,
    response: LatencyHistogram,
    /// Report windows (`--interval-report`): their length, and per window since `start` the
    /// (jobs, misses) of the jobs released in it.
    window_ns: Option<u64>,
    windows: Vec<(u64, u64)>,
    /// The CPUs its work ran on.
    cpus: BTreeSet<u32>,
    /// Its longest completed jobs.
    worst: Vec<super::protocol::WorstJob>,
}

/// What one guest's run measured: per task, and the vCPU thread's CPU time over the time it ran.
pub struct GuestRun {
    pub tasks: Vec<TaskOutcome>,
    /// CPU time of the vCPU thread while it ran the tasks.
    pub cpu_time_ns: u64,
    /// Wall time over which `cpu_time_ns` was taken (read on the same thread, around it).
    pub ran_ns: u64,
}

impl GuestRun {
    /// The share of one core the vCPU used: CPU time over the wall time of the same stretch
    /// (0 when it did not run), so at most 1 whenever the run stopped.
    pub fn utilisation(&self) -> f64 {
        if self.ran_ns == 0 {
            0.0
        } else {
            self.cpu_time_ns as f64 / self.ran_ns as f64
        }
    }
}

/// Run the guest's tasks from `start` to `end` (CLOCK_MONOTONIC ns), each completed job reported
/// to the guest agent's job-boundary API when `agent` is given (`rtvirt guest-agent`). The caller
/// has already put the thread under its reservation. Stops early when `stop` is raised or on
/// Ctrl-C/SIGTERM.
/// Returns what each task measured and the thread's CPU time with the wall time it was taken
/// over: the wall clock is read before the CPU clock at the beginning and after it at the end,
/// so the CPU time never exceeds that stretch (a run stopped before `start` ran for a few
/// microseconds and used less).
pub fn run_tasks(
    guest: &GuestSpec,
    agent: Option<&JobReporter>,
    iters_per_ns: f64,
    seed: u64,
    (start, end): (u64, u64),
    stop: &AtomicBool,
) -> GuestRun {
    let mut tasks = task_states(guest, seed, start);
    let names: Vec<String> = (0..tasks.len()).map(|i| guest.agent_name(i)).collect();
    let wall0 = rt::now_ns();
    let cpu0 = rt::thread_cpu_ns();
    let chunk_iters = ((CHUNK_NS as f64 * iters_per_ns) as u64).max(1);
    while !stop.load(Ordering::Relaxed) && !rtvirt_os::signals::interrupted() {
        let now = rt::now_ns();
        if now >= end {
            break;
        }
        release_due(&mut tasks, now, end, iters_per_ns);
        match pick(&tasks, guest.scheduler()) {
            Some(i) => {
                let job = tasks[i].queue.front_mut().expect("picked task has a job");
                let n = job.remaining.min(chunk_iters);
                work::burn(n);
                job.remaining -= n;
                let done = job.remaining == 0;
                tasks[i].ran_on(rt::current_cpu());
                if done {
                    let exec_ns = complete(&mut tasks[i], rt::now_ns());
                    if let Some(a) = agent {
                        a.job_done(&names[i], tasks[i].period, tasks[i].deadline, exec_ns);
                    }
                }
            }
            None => {
                let next = tasks.iter().map(|t| t.next_release).min().unwrap_or(end).min(end);
                rt::sleep_until_or_stopped(next, stop);
            }
        }
    }
    let end_now = rt::now_ns().min(end);
    let outcomes = outcomes(tasks, end_now);
    let cpu_time_ns = rt::thread_cpu_ns() - cpu0;
    let ran_ns = rt::now_ns() - wall0;
    GuestRun { tasks: outcomes, cpu_time_ns, ran_ns }
}

impl TaskState {
    /// Count a job released at `release` that met or `missed` its deadline, in the run and in
    /// its release's window.
    fn count(&mut self, release: u64, missed: bool) {
        self.jobs += 1;
        self.misses += missed as u64;
        if let Some(w) = self.window_ns {
            let k = ((release - self.start) / w) as usize;
            if self.windows.len() <= k {
                self.windows.resize(k + 1, (0, 0));
            }
            self.windows[k].0 += 1;
            self.windows[k].1 += missed as u64;
        }
    }

    /// Note that a chunk of its work just ran on `cpu`.
    pub(super) fn ran_on(&mut self, cpu: u32) {
        self.cpus.insert(cpu);
    }

    pub(super) fn period(&self) -> u64 {
        self.period
    }
    pub(super) fn deadline(&self) -> u64 {
        self.deadline
    }
}

/// The scheduler's state of each task of `guest`, first releases at `start` + offset.
pub(super) fn task_states(guest: &GuestSpec, seed: u64, start: u64) -> Vec<TaskState> {
    guest
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| TaskState {
            period: t.period_ns,
            deadline: t.deadline_ns,
            wcet: t.wcet_ns,
            priority: t.priority,
            exec: t.exec.model(),
            phases: t.phase_models(),
            start,
            next_release: start + t.offset_ns,
            queue: VecDeque::new(),
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64)),
            jobs: 0,
            misses: 0,
            unfinished: 0,
            response: LatencyHistogram::new(),
            window_ns: guest.window_ns.filter(|&w| w > 0),
            windows: Vec::new(),
            cpus: BTreeSet::new(),
            worst: Vec::new(),
        })
        .collect()
}

/// What each task measured, once the run stopped at `end_now`: a job left unfinished past its
/// deadline is a miss.
pub(super) fn outcomes(mut tasks: Vec<TaskState>, end_now: u64) -> Vec<TaskOutcome> {
    for t in &mut tasks {
        for j in std::mem::take(&mut t.queue) {
            if j.deadline <= end_now {
                t.count(j.release, true);
                t.unfinished += 1;
                t.response.record(end_now - j.release);
            }
        }
    }
    tasks
        .into_iter()
        .map(|t| TaskOutcome {
            jobs: t.jobs,
            misses: t.misses,
            unfinished: t.unfinished,
            response_ns: t.response.summary(),
            windows: t.windows,
            cpus: t.cpus.into_iter().collect(),
            worst: t.worst,
        })
        .collect()
}

/// Release every job due at `now` (releases after `end` are not made).
pub(super) fn release_due(tasks: &mut [TaskState], now: u64, end: u64, iters_per_ns: f64) {
    for t in tasks.iter_mut() {
        while t.next_release <= now && t.next_release < end {
            let release = t.next_release;
            let model = Phase::model_at(&t.exec, &t.phases, release - t.start);
            let exec = model.draw(rtvirt_model::Nanos(t.wcet), &mut t.rng).0;
            t.queue.push_back(Job {
                release,
                deadline: release + t.deadline,
                remaining: ((exec as f64 * iters_per_ns) as u64).max(1),
                exec_ns: exec,
            });
            t.next_release += t.period;
        }
    }
}

/// The task whose head job runs next: earliest absolute deadline (EDF) or highest priority (FP),
/// ties to the lower index.
fn pick(tasks: &[TaskState], sched: GuestScheduler) -> Option<usize> {
    pick_where(tasks, sched, |_| true)
}

/// [`pick`] among the tasks for which `free` holds.
pub(super) fn pick_where(tasks: &[TaskState], sched: GuestScheduler, free: impl Fn(usize) -> bool) -> Option<usize> {
    let ready = tasks.iter().enumerate().filter(|(i, _)| free(*i));
    let ready = ready.filter_map(|(i, t)| t.queue.front().map(|j| (i, j, t.priority)));
    match sched {
        GuestScheduler::Edf => ready.min_by_key(|(i, j, _)| (j.deadline, *i)).map(|(i, _, _)| i),
        GuestScheduler::Fp => ready.min_by_key(|(i, _, p)| (std::cmp::Reverse(*p), *i)).map(|(i, _, _)| i),
    }
}

/// Complete the head job at `now`; its execution time.
pub(super) fn complete(task: &mut TaskState, now: u64) -> u64 {
    let job = task.queue.pop_front().expect("completing a job");
    task.count(job.release, now > job.deadline);
    task.response.record(now - job.release);
    let done = WorstJob { release: job.release, finish: now, cpu: rt::current_cpu(), tid: rt::gettid() as u32 };
    super::protocol::keep_worst(&mut task.worst, done);
    job.exec_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(deadline_abs: u64, priority: u32) -> TaskState {
        let mut t = TaskState {
            period: 10,
            deadline: 10,
            wcet: 1,
            priority,
            exec: ExecModel::Constant,
            phases: Vec::new(),
            start: 0,
            next_release: 0,
            queue: VecDeque::new(),
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(0),
            jobs: 0,
            misses: 0,
            unfinished: 0,
            response: LatencyHistogram::new(),
            window_ns: None,
            windows: Vec::new(),
            cpus: BTreeSet::new(),
            worst: Vec::new(),
        };
        t.queue.push_back(Job { release: 0, deadline: deadline_abs, remaining: 1, exec_ns: 1 });
        t
    }

    #[test]
    fn edf_picks_earliest_deadline_fp_highest_priority() {
        let tasks = vec![state(30, 1), state(20, 2), state(25, 5)];
        assert_eq!(pick(&tasks, GuestScheduler::Edf), Some(1));
        assert_eq!(pick(&tasks, GuestScheduler::Fp), Some(2));
        assert_eq!(pick(&[], GuestScheduler::Edf), None);
    }

    #[test]
    fn jobs_draw_from_the_phase_in_force_at_their_release_since_the_start() {
        let fixed = |ns| ExecModel::Uniform { min: rtvirt_model::Nanos(ns), max: rtvirt_model::Nanos(ns) };
        let mut t = state(0, 1);
        t.queue.clear();
        (t.exec, t.wcet, t.start, t.next_release) = (fixed(3), 10, 100, 100);
        t.phases = vec![Phase { at: rtvirt_model::Nanos(20), exec: fixed(7) }];
        let mut tasks = vec![t];
        release_due(&mut tasks, 140, 1_000, 1.0);
        let drawn: Vec<u64> = tasks[0].queue.iter().map(|j| j.exec_ns).collect();
        assert_eq!(drawn, [3, 3, 7, 7, 7], "released at 100, 110 | 120, 130, 140");
    }

    #[test]
    fn late_completion_is_a_miss() {
        let mut t = state(100, 1);
        complete(&mut t, 150);
        assert_eq!((t.jobs, t.misses, t.response.max()), (1, 1, Some(150)));
    }
}
