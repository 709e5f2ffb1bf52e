//! Global EDF or fixed-priority scheduling inside a guest of several vCPUs (`placement =
//! "global"`): the worker's vCPU threads share one set of ready queues under a lock. At every
//! preemption point (each [`super::guest::CHUNK_NS`] of work) a vCPU gives back the job it ran and
//! takes the highest-priority head job no other vCPU is running, so the m highest-priority jobs
//! run on the m vCPUs up to one chunk, and a job migrates to whichever vCPU takes it next - the
//! guest-level global scheduler the MPR analysis assumes (Shin, Easwaran & Lee 2008). As in a
//! real guest, a job on a vCPU its host reservation has throttled waits for that vCPU.

use super::guest::{self, TaskState};
use super::protocol::{GuestSpec, TaskOutcome};
use super::work;
use crate::agent::jobs::JobReporter;
use crate::rt;
use rtvirt_model::scenario::GuestScheduler;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The guest's tasks, shared by its vCPU threads.
pub struct Shared {
    guest: GuestSpec,
    seed: u64,
    state: Mutex<Option<State>>,
}

struct State {
    tasks: Vec<TaskState>,
    /// The end of the run.
    end: u64,
    /// Per vCPU, the task whose head job it is running.
    running: Vec<Option<usize>>,
}

impl Shared {
    pub fn new(guest: GuestSpec, seed: u64) -> Shared {
        Shared { guest, seed, state: Mutex::new(None) }
    }

    /// The state, made for the run's window by the first vCPU to get here.
    fn lock(&self, (start, end): (u64, u64), vcpus: usize) -> MutexGuard<'_, Option<State>> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_none() {
            let tasks = guest::task_states(&self.guest, self.seed, start);
            *s = Some(State { tasks, end, running: vec![None; vcpus] });
        }
        s
    }

    /// Every task's outcome once all vCPUs stopped (None: no vCPU ran).
    pub fn outcomes(&self) -> Option<Vec<TaskOutcome>> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        Some(guest::outcomes(state.tasks, rt::now_ns().min(state.end)))
    }
}

/// Run vCPU `me` (of `vcpus`) of a global guest from `start` to `end`; the caller has put the
/// thread under its reservation. Returns its CPU time and the wall time it was taken over, as
/// [`guest::run_tasks`] does; each completed job is reported to the guest agent as there.
pub fn run_vcpu(
    shared: &Shared,
    (me, vcpus): (usize, usize),
    agent: Option<&JobReporter>,
    iters_per_ns: f64,
    window: (u64, u64),
    stop: &AtomicBool,
) -> guest::GuestRun {
    let end = window.1;
    let sched = shared.guest.scheduler();
    let wall0 = rt::now_ns();
    let cpu0 = rt::thread_cpu_ns();
    let chunk_iters = ((guest::CHUNK_NS as f64 * iters_per_ns) as u64).max(1);
    while !stop.load(Ordering::Relaxed) && !rtvirt_os::signals::interrupted() {
        let now = rt::now_ns();
        if now >= end {
            break;
        }
        match take(shared, (me, vcpus), sched, window, now, iters_per_ns, chunk_iters) {
            Ok((i, n)) => {
                work::burn(n);
                if let Some((period, deadline, exec_ns)) = give_back(shared, (me, vcpus), window, i, n) {
                    if let Some(a) = agent {
                        a.job_done(&shared.guest.agent_name(i), period, deadline, exec_ns);
                    }
                }
            }
            Err(next) => {
                rt::sleep_until_or_stopped(next.min(end), stop);
            }
        }
    }
    if let Some(s) = shared.lock(window, vcpus).as_mut() {
        s.running[me] = None;
    }
    let cpu_time_ns = rt::thread_cpu_ns() - cpu0;
    let ran_ns = rt::now_ns() - wall0;
    guest::GuestRun { tasks: Vec::new(), cpu_time_ns, ran_ns }
}

/// Release what is due, then claim the best head job no other vCPU runs: (task, iterations of
/// this chunk), or the next release time when there is none.
fn take(
    shared: &Shared,
    (me, vcpus): (usize, usize),
    sched: GuestScheduler,
    window: (u64, u64),
    now: u64,
    iters_per_ns: f64,
    chunk_iters: u64,
) -> Result<(usize, u64), u64> {
    let end = window.1;
    let mut guard = shared.lock(window, vcpus);
    let s = guard.as_mut().expect("made by lock");
    guest::release_due(&mut s.tasks, now, end, iters_per_ns);
    s.running[me] = None;
    let running = s.running.clone();
    let free = |i: usize| !running.contains(&Some(i));
    match guest::pick_where(&s.tasks, sched, free) {
        Some(i) => {
            s.running[me] = Some(i);
            let job = s.tasks[i].queue.front().expect("picked task has a job");
            Ok((i, job.remaining.min(chunk_iters)))
        }
        None => Err(s.tasks.iter().map(|t| t.next_release).min().unwrap_or(end)),
    }
}

/// Account `n` iterations of work on task `i`'s head job; complete it when done: then the task's
/// period, deadline and the job's execution time (for the guest agent).
fn give_back(
    shared: &Shared,
    (me, vcpus): (usize, usize),
    window: (u64, u64),
    i: usize,
    n: u64,
) -> Option<(u64, u64, u64)> {
    let mut guard = shared.lock(window, vcpus);
    let s = guard.as_mut().expect("made by lock");
    s.running[me] = None;
    let task = &mut s.tasks[i];
    task.ran_on(rt::current_cpu());
    let job = task.queue.front_mut().expect("a claimed job stays at the head");
    job.remaining -= n;
    (job.remaining == 0).then(|| {
        let exec_ns = guest::complete(task, rt::now_ns());
        (task.period(), task.deadline(), exec_ns)
    })
}
