//! The typed sections of a results document, one per kind of measurement or simulation, and the
//! values they hold. Every field is optional: producers fill what their kind measures, readers
//! take what a document has (older files, hand-written fixtures), and [`super::document::Results`] keeps
//! whatever it does not know in its `extra` bag. In the JSON the sections' fields sit at the top
//! level of the document, in key order (see `wire.rs`).

use crate::stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `measure timer`: the measuring threads' settings and what they missed or cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimerSection {
    /// CPU time of the measuring threads per latency sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_sample: Option<f64>,
    /// CPU time per wake-up (cyclictest's unit of work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns_per_wakeup: Option<f64>,
    /// Timer period of every measuring thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<u64>,
    /// Periods that passed without a wake-up (late wake-ups skip them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_periods: Option<u64>,
    /// Scheduling policy of the measuring threads ("fifo", "rr", "deadline", "other").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Real-time priority (fifo and rr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// SCHED_DEADLINE reservation of every measuring thread (deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Reservation>,
    /// Threads that went without samples for several report intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalls: Option<Vec<Stall>>,
}

/// A SCHED_DEADLINE reservation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reservation {
    pub deadline_ns: u64,
    pub period_ns: u64,
    pub runtime_ns: u64,
}

/// One change of an adapted reservation (`simulate --adapt`, `host adapt`): from `at_ns` on,
/// `reservation` is in force.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReservationChange {
    pub at_ns: u64,
    pub reservation: Reservation,
    /// runtime / period.
    pub bandwidth: f64,
    /// Observed mean demand (sum of mean execution time / period over the window) when it
    /// changed; None for the initial (planned) reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand: Option<f64>,
    /// "plan" (the start), "grow", "shrink" or "degraded".
    pub reason: String,
    /// The reason in words (degraded: which guests were kept first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A stalled measuring thread: no samples from `from_ns` on for `intervals` report intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stall {
    pub cpu: u32,
    pub from_ns: u64,
    pub intervals: u32,
}

/// `measure net client`: request/response counts, rates and the kernel's timestamps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetSection {
    /// Requests sent per second while sending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<f64>,
    /// The arrival process ("back-to-back", "periodic 1ms", "poisson 500/s", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    /// "software (SO_TIMESTAMPING)" or "unavailable".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_timestamps: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_tx_timestamps: Option<bool>,
    /// Responses that came after the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<u64>,
    /// Requests never answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<bool>,
    /// "udp" | "tcp"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Requests per second asked for; `null` for back-to-back requests.
    #[serde(default, deserialize_with = "crate::serde_field::present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub requested_rate: Option<Option<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<u64>,
    /// Round trip between the kernel's send and receive timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_kernel_ns: Option<Summary>,
    /// Round trip from the send call to the kernel's receive timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_kernel_rx_ns: Option<Summary>,
    /// From the kernel's receive timestamp to the client's wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_wakeup_ns: Option<Summary>,
    /// Whether the sender ever found the socket buffer full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_blocked: Option<bool>,
    /// How late requests left after their planned send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_ns: Option<Summary>,
    /// The server's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Request size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ns: Option<u64>,
    /// Requests without a response within the timeout: late and lost ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    /// Responses to no request of this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unexpected: Option<u64>,
}

/// `measure net server`: what the server saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetServerSection {
    /// The address it listened on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerStats>,
}

/// A request/response server's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServerStats {
    pub connections: u64,
    pub malformed: u64,
    pub oversized: u64,
    /// Connections closed at once because every slot was taken (servers before the slowloris
    /// guard; now 0: a connection waits in the listen backlog).
    #[serde(default)]
    pub rejected_connections: u64,
    pub requests: u64,
    pub responses: u64,
    pub truncated: u64,
    /// Requests not received whole within the server's request deadline (connection closed).
    #[serde(default)]
    pub slow_requests: u64,
    /// Idle connections closed to make room for a waiting one.
    #[serde(default)]
    pub closed_idle: u64,
}

/// `measure tasks`: totals over every task and the plan the reservations came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskTotals {
    /// Deadline satisfaction ratio over all tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsr: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanSummary>,
    /// The host's scheduler tick in this run (measure tasks; CONFIG_HZ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ns: Option<u64>,
    /// Where the host's ticks fell: this long after the first release, and every `tick_ns`
    /// after that (measure tasks; a simulation of the run takes the same `[sim] tick_phase`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_phase_ns: Option<u64>,
}

/// The plan a measurement ran under, in short.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSummary {
    pub feasible: bool,
    pub max_rho: Option<f64>,
    /// The planner's settings (see `rtvirt.plan/v1`).
    #[serde(default)]
    pub settings: crate::plan::PlanSettings,
}

/// `simulate` and the network simulations: the engine's work and the host's own threads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimulationSection {
    /// Events the simulator processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// "abort" (a late job is dropped at its deadline) | "continue".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_policy: Option<String>,
    /// Times a softirq waited on a lock held by a lower-priority thread (KVM network model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq_lock_inversions: Option<u64>,
    /// Host threads other than the guests' (interference, vhost, softirq...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<HostThread>>,
    /// The host model's costs charged (`simulate --host-model`), in words; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_costs: Option<String>,
}

/// A simulated host thread and the CPU time it used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostThread {
    pub name: String,
    /// Cores it may run on (CPU simulation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<Vec<u32>>,
    pub cpu_time_ns: u64,
    /// Scheduling policy (CPU simulation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Base priority (KVM network model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    pub utilisation: f64,
}

/// The Xen network model: every domain and Dom0's packet handling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct XenSection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dom0: Option<Dom0Stats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<XenDomain>>,
}

/// What Dom0Stats handled and dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Dom0Stats {
    /// "original" | "rtca"
    pub mode: String,
    pub rx_packets: u64,
    pub rx_ring_drops: u64,
    pub softirq_packets: u64,
    pub softnet_drops: u64,
    pub time_squeeze: u64,
    pub tx_packets: u64,
}

/// One simulated Xen domain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct XenDomain {
    pub name: String,
    pub core: u32,
    pub cpu_time_ns: u64,
    pub packets_received: u64,
    pub packets_sent: u64,
    /// "ping" | "echo" | "flood" | "idle"
    pub role: String,
    pub utilisation: f64,
}

/// One bucket of an exact latency histogram: `[value_ns, count]` in the JSON; read also from
/// `{"value_ns"|"low_ns": .., "count": ..}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(from = "BucketForm", into = "(u64, u64)")]
#[schemars(with = "BucketForm")]
pub struct HistogramBucket {
    /// Low value of the bucket.
    pub value_ns: u64,
    pub count: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum BucketForm {
    Pair(u64, u64),
    Object {
        #[serde(alias = "low_ns")]
        value_ns: u64,
        count: u64,
    },
}

impl From<BucketForm> for HistogramBucket {
    fn from(form: BucketForm) -> HistogramBucket {
        match form {
            BucketForm::Pair(value_ns, count) | BucketForm::Object { value_ns, count } => {
                HistogramBucket { value_ns, count }
            }
        }
    }
}

impl From<HistogramBucket> for (u64, u64) {
    fn from(bucket: HistogramBucket) -> (u64, u64) {
        (bucket.value_ns, bucket.count)
    }
}

impl HistogramBucket {
    /// The buckets of `(value, count)` pairs (e.g. `LatencyHistogram::buckets()`).
    pub fn from_pairs(pairs: Vec<(u64, u64)>) -> Vec<HistogramBucket> {
        pairs.into_iter().map(|(value_ns, count)| HistogramBucket { value_ns, count }).collect()
    }
}

/// One report of a long run: either one point (`t_ns`/`end_ns`/`start_ns`, `max_ns`, `cpu`,
/// `stall`), a `measure timer --interval-report` line with one entry per CPU in `cpus`, or a
/// `measure tasks --interval-report` window with one entry per task in `tasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<CpuInterval>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_ns: Option<u64>,
    /// Index of the report (interval report lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_periods: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_cpus: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<u64>,
    /// Time since the start of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_ns: Option<u64>,
    /// Per task, the jobs released in the window and how many of them missed (measure tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<TaskWindow>>,
    /// "interval" for interval report lines.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
}

/// One task in a `measure tasks --interval-report` window: of the jobs released in the window,
/// how many there were and how many missed their deadline (unfinished at the run's end past
/// their deadline included), as the whole run's `jobs`/`misses` count them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskWindow {
    pub guest: String,
    pub name: String,
    pub jobs: u64,
    pub misses: u64,
}

/// One CPU in an interval report line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuInterval {
    pub cpu: u32,
    pub count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_periods: Option<u64>,
}

/// One segment of a flow's latency: statistics, or a plain number read as the mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Segment {
    Mean(serde_json::Number),
    Stats(SegmentStats),
}

/// A segment's statistics, integral or not as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SegmentStats {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<serde_json::Number>,
}

impl Segment {
    /// The statistics of a summary that a flow reports per segment.
    pub fn of(summary: &Summary) -> Segment {
        let float = |v: f64| serde_json::Number::from_f64(v);
        Segment::Stats(SegmentStats {
            max: Some(summary.max.into()),
            mean: float(summary.mean),
            p50: Some(summary.p50.into()),
            p99: Some(summary.p99.into()),
            sd: float(summary.sd),
        })
    }

    pub fn mean(&self) -> Option<f64> {
        match self {
            Segment::Mean(m) => m.as_f64(),
            Segment::Stats(s) => s.mean.as_ref().and_then(serde_json::Number::as_f64),
        }
    }

    pub fn p99(&self) -> Option<f64> {
        self.stats().and_then(|s| s.p99.as_ref()).and_then(serde_json::Number::as_f64)
    }

    pub fn max(&self) -> Option<f64> {
        self.stats().and_then(|s| s.max.as_ref()).and_then(serde_json::Number::as_f64)
    }

    fn stats(&self) -> Option<&SegmentStats> {
        match self {
            Segment::Mean(_) => None,
            Segment::Stats(s) => Some(s),
        }
    }
}

/// `measure net client --stream`: bulk throughput (netperf TCP_STREAM / UDP_STREAM, iperf3), as
/// the sender sent it and the receiver (the server) got it, with both sides' CPU time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamSection {
    /// "udp" | "tcp"
    pub protocol: String,
    /// The server's address.
    pub server: String,
    /// Bytes per send call (UDP: per datagram).
    pub message_size: u64,
    /// Length of each reporting interval.
    pub interval_ns: u64,
    /// How long the sender sent.
    pub sending_ns: u64,
    pub sent_bytes: u64,
    /// Send calls (UDP: datagrams).
    pub sent_messages: u64,
    /// Payload bits per second as sent.
    pub sent_bits_per_second: f64,
    /// The bandwidth the sender was paced to (`--bandwidth`, iperf3's `-b`); absent: unpaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bits_per_second: Option<f64>,
    /// CPU time of the sending thread while it sent (CLOCK_THREAD_CPUTIME_ID).
    pub sender_cpu_ns: u64,
    /// `sender_cpu_ns` / `sending_ns` (1.0 = one CPU busy).
    pub sender_cpu_utilisation: f64,
    /// What the receiver got; absent when its receipt never came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<StreamReceipt>,
    /// Payload bits per second as received (received bytes over the sender's sending time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bits_per_second: Option<f64>,
    /// UDP: datagrams sent but never received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_messages: Option<u64>,
    /// UDP: `lost_messages` / `sent_messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_ratio: Option<f64>,
    /// `receiver.cpu_ns` / the receiver's active time (1.0 = one CPU busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cpu_utilisation: Option<f64>,
    /// Per interval of the sender's clock, in time order.
    pub intervals: Vec<StreamInterval>,
}

/// What the receiving side of a stream counted (sent back to the sender at the end).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StreamReceipt {
    pub bytes: u64,
    /// Datagrams (UDP) or read calls (TCP).
    pub messages: u64,
    /// From the first to the last byte received.
    pub active_ns: u64,
    /// CPU time of the receiving thread over the stream (CLOCK_THREAD_CPUTIME_ID).
    pub cpu_ns: u64,
    /// Bytes received per interval: UDP by the sender's interval the datagram was sent in, TCP
    /// by the receiver's clock from its first byte.
    pub interval_bytes: Vec<u64>,
    /// UDP: datagrams received per sender interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interval_messages: Vec<u64>,
}

/// One reporting interval of a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamInterval {
    /// From the start of sending.
    pub start_ns: u64,
    pub end_ns: u64,
    pub sent_bytes: u64,
    pub sent_messages: u64,
    pub sent_bits_per_second: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bits_per_second: Option<f64>,
    /// UDP: datagrams of this interval never received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_messages: Option<u64>,
}
