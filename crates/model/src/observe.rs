//! `rtvirt.observe/v1`: each guest's real-time demand as the host learned it
//! (`rtvirt host observe`), per vCPU thread (host-side inference: the thread's CPU time per
//! window and its busy intervals between halts) and per guest task (from the guest agent, see
//! [`crate::agent_wire`]; host inference stands in for a guest whose agent is absent or vanished).
//! Each learned task says where it came from and on how many samples it rests.

use crate::agent_wire::AgentCounters;
use crate::stats::{LatencyHistogram, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const OBSERVE_SCHEMA: &str = "rtvirt.observe/v1";

/// The document `rtvirt host observe --format json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub schema: String,
    /// How long the host observed.
    pub duration_ns: u64,
    /// The host-inference window (one demand sample per vCPU and window).
    pub window_ns: u64,
    pub guests: Vec<GuestObservation>,
}

/// One guest: its vCPU threads as seen from the host, its tasks, its agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuestObservation {
    pub name: String,
    pub vcpus: Vec<VcpuObservation>,
    /// The learned tasks: the agent's, or one per vCPU inferred by the host when no agent spoke.
    pub tasks: Vec<TaskObservation>,
    pub agent: AgentStatus,
}

/// A vCPU thread's execution pattern, from the host alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VcpuObservation {
    pub vcpu: u32,
    pub tid: u32,
    /// CPU time of the thread per window (`window_ns`), one sample per window.
    pub demand: Summary,
    /// Mean share of a CPU the thread used.
    pub utilisation: f64,
    /// Busy intervals between halts (CPU time over times scheduled in, per window): the guest's
    /// jobs where it halts between them; absent before a window in which the thread ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_interval: Option<Summary>,
    /// Intervals between halts (wall time over times the thread halted, per window): the period
    /// of the guest's jobs where it halts once per job; absent as `busy_interval` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_interval: Option<Summary>,
    /// The thread's SCHED_DEADLINE reservation when the observation ended, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Reservation>,
    /// The thread ended (the guest died) before the observation did.
    pub ended: bool,
}

/// A SCHED_DEADLINE reservation (runtime every period, within deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reservation {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

impl Reservation {
    pub fn bandwidth(&self) -> f64 {
        if self.period_ns == 0 {
            0.0
        } else {
            self.runtime_ns as f64 / self.period_ns as f64
        }
    }
}

/// Where a learned task's parameters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The guest agent (sched_getattr and job execution times inside the guest).
    Agent,
    /// The host's view of a vCPU thread: period = the window (or the vCPU's server period),
    /// execution time = CPU time per period.
    HostInference,
}

/// One learned task: period, deadline and execution-time distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskObservation {
    pub name: String,
    /// The guest thread id (agent) or the host vCPU thread id (host inference).
    pub tid: u32,
    pub source: Source,
    /// `deadline`, `fifo`, `rr` (agent) or `vcpu` (host inference).
    pub policy: String,
    pub period_ns: u64,
    pub deadline_ns: u64,
    /// Execution time per job (agent) or per period (host inference).
    pub exec: Summary,
    /// Samples behind `exec`.
    pub samples: u64,
}

/// The guest agent's state and what the host made of its lines.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentStatus {
    pub state: AgentState,
    pub counters: AgentCounters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// No agent channel for this guest (not started by rtvirt with an agent port, or nothing heard).
    Absent,
    /// The agent reported during the observation and was still reporting at its end.
    Reporting,
    /// The agent reported, then fell silent or closed its port: host inference took over.
    Vanished,
}

/// A distribution of ns samples, summarised as every result does.
pub fn summarise(samples: &[u64]) -> Summary {
    let mut h = LatencyHistogram::new();
    for &s in samples {
        h.record(s);
    }
    h.summary()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_file_is_the_generated_one() {
        crate::schema::check_committed::<Observation>("observe").unwrap();
    }

    #[test]
    fn reservation_bandwidth() {
        assert_eq!(Reservation { runtime_ns: 2, deadline_ns: 10, period_ns: 10 }.bandwidth(), 0.2);
        assert_eq!(Reservation { runtime_ns: 2, deadline_ns: 0, period_ns: 0 }.bandwidth(), 0.0);
    }
}
