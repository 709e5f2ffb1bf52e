//! What the parent and a guest's worker process say to each other, as JSON lines: the
//! [`WorkerSpec`] on the worker's stdin and the [`WorkerOutcome`] it prints when done (see
//! [`super::worker`] for the protocol's order).

use crate::rt::Reservation;
use rtvirt_model::exec::{ExecModel, Samples};
use rtvirt_model::scenario::{Guest, GuestScheduler, Phase};
use rtvirt_model::stats::Summary;
use rtvirt_model::Nanos;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// What a worker is told: its guest, and per real-time vCPU its core, reservation, cpuset and
/// tasks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    pub guest: GuestSpec,
    /// One thread each, in vCPU order.
    pub vcpus: Vec<VcpuWork>,
    pub seed: u64,
    /// A global guest: its vCPU threads share one scheduler over all its tasks
    /// ([`super::global`]).
    #[serde(default)]
    pub global: bool,
}

/// One vCPU thread of a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VcpuWork {
    /// The vCPU's id in the guest.
    pub id: u32,
    pub core: u32,
    pub reservation: Reservation,
    /// The cgroup file the vCPU thread writes its thread id into (its core's exclusive cpuset).
    pub cpuset_join: PathBuf,
    /// Indices (into the guest's tasks) of the tasks bound to this vCPU.
    pub tasks: Vec<usize>,
}

impl GuestSpec {
    /// The part of the guest one vCPU runs: the tasks at `indices`, in that order.
    pub fn subset(&self, indices: &[usize]) -> GuestSpec {
        let tasks = indices.iter().map(|&i| self.tasks[i].clone()).collect();
        GuestSpec { name: self.name.clone(), scheduler: self.scheduler, tasks, window_ns: self.window_ns }
    }
}

/// The part of a scenario guest its vCPU needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestSpec {
    pub name: String,
    pub scheduler: GuestScheduler,
    pub tasks: Vec<TaskSpec>,
    /// `--interval-report`: count each task's jobs and misses per window of this length too.
    #[serde(default)]
    pub window_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Its index among the guest's tasks in the scenario: the `N` of its name `GUEST.tN` to the
    /// guest agent, the same on whichever vCPU of a guest of several it runs.
    pub number: usize,
    pub period_ns: u64,
    pub deadline_ns: u64,
    pub wcet_ns: u64,
    pub priority: u32,
    pub offset_ns: u64,
    pub exec: ExecSpec,
    /// `[[guest.task.phase]]`: (start since the run's start, model) in increasing start order.
    #[serde(default)]
    pub phases: Vec<(u64, ExecSpec)>,
}

/// An execution-time model on the wire (a samples file travels as its values).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase")]
pub enum ExecSpec {
    Constant,
    Normal { mean_ns: u64, sd_ns: u64 },
    Uniform { min_ns: u64, max_ns: u64 },
    Samples { path: PathBuf, sorted_ns: Vec<u64> },
}

impl GuestSpec {
    pub fn of(guest: &Guest) -> GuestSpec {
        let tasks = guest
            .tasks
            .iter()
            .enumerate()
            .map(|(number, t)| TaskSpec {
                number,
                period_ns: t.period.0,
                deadline_ns: t.deadline.0,
                wcet_ns: t.wcet.0,
                priority: t.priority,
                offset_ns: t.offset.0,
                exec: ExecSpec::of(&t.exec),
                phases: t.phases.iter().map(|p| (p.at.0, ExecSpec::of(&p.exec))).collect(),
            })
            .collect();
        GuestSpec { name: guest.name.clone(), scheduler: guest.scheduler, tasks, window_ns: None }
    }

    pub fn scheduler(&self) -> GuestScheduler {
        self.scheduler
    }

    /// The name the guest agent learns task `i` of this spec by: `GUEST.tN`, `N` its index in the
    /// whole guest (not in a vCPU's subset).
    pub fn agent_name(&self, i: usize) -> String {
        format!("{}.t{}", self.name, self.tasks[i].number)
    }
}

impl TaskSpec {
    /// The task's phases as the scenario's [`Phase`]s.
    pub fn phase_models(&self) -> Vec<Phase> {
        self.phases.iter().map(|(at, exec)| Phase { at: Nanos(*at), exec: exec.model() }).collect()
    }
}

impl ExecSpec {
    pub fn of(model: &ExecModel) -> ExecSpec {
        match model {
            ExecModel::Constant => ExecSpec::Constant,
            ExecModel::Normal { mean, sd } => ExecSpec::Normal { mean_ns: mean.0, sd_ns: sd.0 },
            ExecModel::Uniform { min, max } => ExecSpec::Uniform { min_ns: min.0, max_ns: max.0 },
            ExecModel::Samples(s) => ExecSpec::Samples { path: s.path.clone(), sorted_ns: s.sorted_ns.to_vec() },
        }
    }

    pub fn model(&self) -> ExecModel {
        match self {
            ExecSpec::Constant => ExecModel::Constant,
            ExecSpec::Normal { mean_ns, sd_ns } => ExecModel::Normal { mean: Nanos(*mean_ns), sd: Nanos(*sd_ns) },
            ExecSpec::Uniform { min_ns, max_ns } => ExecModel::Uniform { min: Nanos(*min_ns), max: Nanos(*max_ns) },
            ExecSpec::Samples { path, sorted_ns } => {
                ExecModel::Samples(Samples { path: path.clone(), sorted_ns: Arc::new(sorted_ns.clone()) })
            }
        }
    }
}

/// What a worker reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerOutcome {
    /// In the guest's task order.
    pub tasks: Vec<TaskOutcome>,
    /// CPU time of all its vCPU threads.
    pub cpu_time_ns: u64,
    /// The vCPU threads' CPU time over the wall time of the same stretch
    /// ([`super::guest::GuestRun::utilisation`]), summed: in cores.
    pub utilisation: f64,
    /// Per vCPU thread, in vCPU order: (id, CPU time, utilisation).
    pub vcpus: Vec<(u32, u64, f64)>,
    pub iters_per_ns: f64,
    /// Thread ids the worker's runaway guard had to demote.
    pub runaways: Vec<i32>,
    pub pid: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskOutcome {
    pub jobs: u64,
    pub misses: u64,
    pub unfinished: u64,
    pub response_ns: Summary,
    /// Per report window since the start, (jobs, misses) of the jobs released in it (empty
    /// without `--interval-report`).
    #[serde(default)]
    pub windows: Vec<(u64, u64)>,
    /// The CPUs its work ran on, ascending.
    #[serde(default)]
    pub cpus: Vec<u32>,
    /// Its [`WORST_KEPT`] longest completed jobs, longest first (`--explain` attributes them).
    #[serde(default)]
    pub worst: Vec<WorstJob>,
}

/// Completed jobs kept per task for `--explain`.
pub const WORST_KEPT: usize = 3;

/// One completed job: when it was released and completed (CLOCK_MONOTONIC ns), where, and the
/// thread that ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorstJob {
    pub release: u64,
    pub finish: u64,
    pub cpu: u32,
    pub tid: u32,
}

impl WorstJob {
    pub fn response(&self) -> u64 {
        self.finish.saturating_sub(self.release)
    }
}

/// Keep `job` among `worst` if it is one of the [`WORST_KEPT`] longest (longest first).
pub fn keep_worst(worst: &mut Vec<WorstJob>, job: WorstJob) {
    if worst.len() == WORST_KEPT && worst.last().is_some_and(|w| w.response() >= job.response()) {
        return;
    }
    let at = worst.partition_point(|w| w.response() >= job.response());
    worst.insert(at, job);
    worst.truncate(WORST_KEPT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_worst_keeps_the_longest_jobs_longest_first_as_sorting_all_does() {
        let mut seed = 17u64;
        let mut all = Vec::new();
        let mut kept = Vec::new();
        for i in 0..500u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let job = WorstJob { release: i * 1000, finish: i * 1000 + (seed >> 40) % 5000, cpu: 1, tid: 7 };
            keep_worst(&mut kept, job);
            all.push(job);
        }
        all.sort_by_key(|j| std::cmp::Reverse(j.response()));
        let responses = |v: &[WorstJob]| v.iter().map(WorstJob::response).collect::<Vec<_>>();
        assert_eq!(responses(&kept), responses(&all[..WORST_KEPT]));
    }
}
