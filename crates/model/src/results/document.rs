//! The results document ([`Results`]) and the per-task, guest, vCPU, core and flow results it
//! carries; its JSON form is in `wire.rs`.

use super::environment::Environment;
use super::explain::ExplainSection;
use super::sections::{
    HistogramBucket, Interval, NetSection, NetServerSection, Reservation, ReservationChange, Segment,
    SimulationSection, StreamSection, TaskTotals, TimerSection, XenSection,
};
use super::serde_fns;
use crate::stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RESULTS_SCHEMA: &str = "rtvirt.results/v1";

/// One results document. The fields up to `environment` come first in the JSON, in this order;
/// the sections' fields follow in key order (they were once one sorted map, and the files
/// written since stay byte-identical).
#[derive(Debug, Clone, Default, PartialEq, JsonSchema)]
#[schemars(title = "rtvirt.results/v1", transform = serde_fns::server_either)]
pub struct Results {
    pub schema: String,
    pub kind: String,
    /// Free-form label (scenario name, configuration, method) used as the series name in reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub duration_ns: u64,
    /// Periodic tasks: jobs, misses, DSR and response times (simulation, measure tasks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guests: Vec<GuestResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<CoreResult>,
    /// Network flows (network simulation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowResult>,
    /// Timer latency over all CPUs (measure timer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Summary>,
    /// Timer latency per CPU (measure timer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuLatency>,
    /// Request/response round trip (measure net).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<Summary>,
    /// Where and under what conditions it was measured (measurements; simulations may omit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
    /// Exact histogram of `latency_ns` (measure timer, demo simulations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_ns: Option<Vec<HistogramBucket>>,
    /// Per-interval reports of a long run, in time order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Vec<Interval>>,
    /// Stopped early by Ctrl-C or SIGTERM: shorter than planned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The rho the run was planned with (simulation sweeps, demo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// Threads that ran away under a real-time policy and were demoted (their thread ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runaway_threads_demoted: Option<Vec<i32>>,
    /// The scenario file of a sweep cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Why a cell of a multi-cell command (sweep, `vm matrix`) has no results: the cell could not
    /// run; the cells that worked are beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The causes of the late samples, from kernel traces (`--explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<ExplainSection>,
    /// Bulk throughput (measure net client --stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamSection>,
    #[serde(flatten)]
    pub timer: Option<TimerSection>,
    #[serde(flatten)]
    pub net: Option<NetSection>,
    #[serde(flatten)]
    pub net_server: Option<NetServerSection>,
    #[serde(flatten)]
    pub task_totals: Option<TaskTotals>,
    #[serde(flatten)]
    pub simulation: Option<SimulationSection>,
    #[serde(flatten)]
    pub xen: Option<XenSection>,
    /// Fields this version does not know, kept as read (forward compatibility only: producers
    /// fill the typed sections).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskResult {
    pub guest: String,
    pub name: String,
    pub jobs: u64,
    pub misses: u64,
    /// Deadline satisfaction ratio (jobs - misses) / jobs (1.0 when no job was released).
    pub dsr: f64,
    pub response_ns: Summary,
    /// Jobs released but not finished when the run ended (measure tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<u64>,
    /// The CPUs its jobs' work ran on, as the CPU it was on (`sched_getcpu`) at each chunk of work
    /// (measure tasks; in a guest: the guest's CPUs, i.e. its vCPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl TaskResult {
    pub fn dsr_of(jobs: u64, misses: u64) -> f64 {
        if jobs == 0 {
            1.0
        } else {
            (jobs - misses) as f64 / jobs as f64
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GuestResult {
    pub name: String,
    pub cpu_time_ns: u64,
    pub utilisation: f64,
    /// Core of the guest's vCPU (measure tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<u32>,
    /// Cores the guest's vCPU thread may run on (simulation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<Vec<u32>>,
    /// Host scheduling policy of the vCPU thread (simulation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The vCPU's SCHED_DEADLINE reservation (measure tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Reservation>,
    /// Calibrated speed of the worker's busy loop (measure tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_iterations_per_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<u32>,
    /// Time-averaged reserved bandwidth (runtime / period) over the run (adapted reservations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_mean: Option<f64>,
    /// The reservation over time: the planned one at 0, then every change (adapted reservations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservations: Option<Vec<ReservationChange>>,
    /// A guest of several vCPUs: each real-time vCPU thread's core, reservation and use
    /// (measure tasks); `core` and `reservation` above are then its first vCPU's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpus: Option<Vec<VcpuResult>>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One real-time vCPU thread of a guest of several vCPUs (measure tasks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VcpuResult {
    /// The vCPU's id in the guest.
    pub id: u32,
    pub core: u32,
    /// Its SCHED_DEADLINE reservation.
    pub reservation: Reservation,
    pub cpu_time_ns: u64,
    /// CPU time over the wall time of the same stretch: a share of one core.
    pub utilisation: f64,
    /// The tasks it ran.
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CoreResult {
    pub id: u32,
    pub utilisation: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_ns: Option<u64>,
    /// Times the softirq budget ran out with work left (KVM network model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_squeeze: Option<u64>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl CoreResult {
    /// A core that was busy `busy_ns` of `span_ns` (utilisation = busy / span).
    pub fn busy(id: u32, busy_ns: u64, span_ns: u64) -> CoreResult {
        CoreResult {
            id,
            utilisation: busy_ns as f64 / span_ns.max(1) as f64,
            cpu_time_ns: Some(busy_ns),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuLatency {
    pub cpu: u32,
    pub latency_ns: Summary,
    /// CPU time of this CPU's measuring thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_ns: Option<Vec<HistogramBucket>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_periods: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<u64>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One network flow: end-to-end latency, its split into segments, throughput, drops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowResult {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Summary>,
    /// Statistics per segment, e.g. "host_receive", "guest", "host_send".
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub segments_ns: BTreeMap<String, Segment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<f64>,
    #[serde(default)]
    pub drops: u64,
    /// Exact histogram of `latency_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_ns: Option<Vec<HistogramBucket>>,
    /// Interference packets received per second (Xen network model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_received: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
    /// TCP segments sent again (iperf3, netperf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Requests sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<u64>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Results {
    /// Where the host's ticks fell after the first release in a task run (`tick_phase_ns`).
    pub fn tick_phase(&self) -> Option<crate::Nanos> {
        self.task_totals.as_ref().and_then(|t| t.tick_phase_ns).map(crate::Nanos)
    }

    pub fn new(kind: &str, duration_ns: u64) -> Results {
        Results { schema: RESULTS_SCHEMA.into(), kind: kind.into(), duration_ns, ..Default::default() }
    }
}
