//! The checked scenario: host, guests, vCPUs and periodic tasks.

use super::adapt;
use super::net;
use super::sim;
use crate::duration::Nanos;
use crate::exec::ExecModel;
use crate::source::Source;
use serde::{Deserialize, Serialize};

/// A scenario with every section checked: the only form in which a scenario leaves this crate.
#[derive(Debug, Serialize)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub host: HostSection,
    pub guests: Vec<Guest>,
    /// `[sim]` and `[[sim.thread]]` (defaults when absent).
    #[serde(skip)]
    pub sim: sim::SimSection,
    /// `[net]`: the network-path simulation, when given.
    #[serde(skip)]
    pub net: Option<net::NetScenario>,
    /// `[adapt]`: the online adaptation's settings, when given (`simulate --adapt` uses the
    /// defaults without it).
    #[serde(skip)]
    pub adapt: Option<adapt::AdaptSection>,
    /// The file and text it was read from, to locate errors found later ([`Scenario::locate`]).
    #[serde(skip)]
    pub source: Source,
}

/// The checked `[host]` section: the machine the scenario plans for (see the glossary in
/// docs/ARCHITECTURE.md for the other meanings of "host").
#[derive(Debug, Clone, Serialize)]
pub struct HostSection {
    pub cores: u32,
    pub bandwidth_cap: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestScheduler {
    /// Earliest deadline first.
    Edf,
    /// Fixed priority (higher `priority` number = more urgent, as in Linux SCHED_FIFO).
    Fp,
}

impl GuestScheduler {
    pub fn as_str(self) -> &'static str {
        match self {
            GuestScheduler::Edf => "edf",
            GuestScheduler::Fp => "fp",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Guest {
    pub name: String,
    pub scheduler: GuestScheduler,
    pub server_periods: PeriodChoice,
    pub rho: Option<f64>,
    pub tasks: Vec<Task>,
    /// How the guest schedules its tasks over its real-time vCPUs.
    pub placement: Placement,
    /// The guest's vCPUs may not share a host core (`spread`, default true).
    pub spread: bool,
    /// Its vCPUs, by id 0..n (`vcpus = n`, default 1).
    pub vcpus: Vec<Vcpu>,
}

impl Guest {
    /// The vCPUs that run real-time tasks (all but the housekeeping ones), by id.
    pub fn rt_vcpus(&self) -> impl Iterator<Item = &Vcpu> {
        self.vcpus.iter().filter(|v| !v.housekeeping)
    }

    /// More than one vCPU (housekeeping ones included).
    pub fn is_multi_vcpu(&self) -> bool {
        self.vcpus.len() > 1
    }
}

/// How a guest with several vCPUs schedules its tasks over them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Each task bound to one vCPU (its `vcpu`, else the planner's choice), one scheduler per vCPU.
    #[default]
    Partitioned,
    /// One scheduler over all real-time vCPUs; tasks migrate between them.
    Global,
}

impl Placement {
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Partitioned => "partitioned",
            Placement::Global => "global",
        }
    }
}

/// One vCPU of a guest.
#[derive(Debug, Clone, Serialize)]
pub struct Vcpu {
    /// 0..n, as the guest numbers them.
    pub id: u32,
    /// Runs no real-time task: gets no reservation, only a core (`housekeeping = [id, ...]`).
    pub housekeeping: bool,
    /// `[guest.vcpu]`: how this vCPU's thread runs on the simulated host (the section applies to
    /// every vCPU of the guest; the thread is named `<guest>/vcpu<id>`).
    #[serde(skip)]
    pub sim: sim::VcpuSpec,
}

/// Candidate server periods for a guest's interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeriodChoice {
    /// Not given: [`PeriodChoice::DEFAULT_STEPS`] evenly spaced periods up to the smallest task
    /// deadline (see [`PeriodChoice::candidates`]).
    Default,
    List(Vec<Nanos>),
    Range {
        min: Nanos,
        max: Nanos,
        step: Nanos,
    },
}

impl PeriodChoice {
    /// Number of candidates scanned by default.
    pub const DEFAULT_STEPS: u64 = 20;

    /// The candidate periods, ascending and deduplicated. Default: k * Dmin / 20 for k = 1..=20
    /// (Dmin = smallest task deadline), rounded down to whole microseconds, at least 1us.
    pub fn candidates(&self, tasks: &[Task]) -> Vec<Nanos> {
        let mut v: Vec<Nanos> = match self {
            PeriodChoice::List(l) => l.clone(),
            PeriodChoice::Range { min, max, step } => {
                (0..).map(|k| *min + Nanos(k * step.0)).take_while(|p| p <= max).collect()
            }
            PeriodChoice::Default => {
                let dmin = tasks.iter().map(|t| t.deadline.0).min().unwrap_or(10_000_000);
                (1..=Self::DEFAULT_STEPS)
                    .map(|k| {
                        Nanos(((dmin as u128 * k as u128 / Self::DEFAULT_STEPS as u128) as u64 / 1000 * 1000).max(1000))
                    })
                    .collect()
            }
        };
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub name: String,
    pub period: Nanos,
    pub deadline: Nanos,
    pub wcet: Nanos,
    /// Fixed priority (fp guests): higher = more urgent. For EDF guests, the deadline-monotonic
    /// rank is still filled in (informational).
    pub priority: u32,
    /// Whether `priority` was given in the file (false: deadline monotonic default).
    pub priority_given: bool,
    pub rho: Option<f64>,
    /// Release offset of the first job (simulation/measurement), default 0.
    pub offset: Nanos,
    pub exec: ExecModel,
    /// The vCPU the task is bound to (`vcpu = k`, partitioned guests only); None: the planner
    /// assigns it.
    pub vcpu: Option<u32>,
    /// `[[guest.task.phase]]`: models that replace `exec` from their start on (increasing `at`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
}

/// From `at` on (by job release time), a task's jobs draw from `exec`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    pub at: Nanos,
    pub exec: ExecModel,
}

impl Phase {
    /// The model in force for a job released at `release_ns`: the last phase started by then,
    /// else `first`.
    pub fn model_at<'a>(first: &'a ExecModel, phases: &'a [Phase], release_ns: u64) -> &'a ExecModel {
        phases.iter().rev().find(|p| p.at.0 <= release_ns).map_or(first, |p| &p.exec)
    }
}

impl Task {
    /// The execution-time model of a job released at `release_ns`.
    pub fn exec_at(&self, release_ns: u64) -> &ExecModel {
        Phase::model_at(&self.exec, &self.phases, release_ns)
    }

    /// Utilisation WCET / period.
    pub fn utilisation(&self) -> f64 {
        self.wcet.0 as f64 / self.period.0 as f64
    }
}
