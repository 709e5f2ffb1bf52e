//! `--explain`: the causes of a measurement's late samples, from kernel traces (rtvirt-probe's
//! `explain`). Each kept sample's latency is split into causes that add up to it (the slides'
//! L = L1 + L2 + I made concrete: timer interrupt delay, what ran before the thread, the wake-up);
//! what no event explains stays as an `unexplained` cause, never dropped.
//!
//! A request of `measure net --explain` is a sample too: its round trip split into path segments
//! ([`PathSegment`], in path order, adding up to the round trip) instead of causes, and the section
//! then summarizes the segments ([`SegmentSummary`]: mean, p99, max) so that a report draws them
//! beside a network simulation's `host_receive` / `guest` / `host_send`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The section `explain` of a results document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainSection {
    /// Samples above this latency were explained (`--explain-above`, else the run's p99).
    pub threshold_ns: u64,
    /// Samples above the threshold in the whole run (`samples` keeps the worst of them).
    pub samples_above: u64,
    /// The explained samples, worst first.
    pub samples: Vec<ExplainedSample>,
    /// Causes over all explained samples, ranked by total time.
    pub summary: Vec<CauseSummary>,
    /// Trace events the kernel's ring buffers lost (overwritten or dropped): samples in their
    /// time are partly `unexplained`.
    pub events_lost: u64,
    /// The kernel events that were recorded (`system/name`).
    pub events_present: Vec<String>,
    /// Events asked for that this kernel does not have.
    #[serde(default)]
    pub events_absent: Vec<String>,
    /// What could not be explained, and why (no tracefs, an absent event, lost events...).
    #[serde(default)]
    pub limitations: Vec<String>,
    /// `--break`: the latency that stopped the run, when a sample exceeded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_break_ns: Option<u64>,
    /// `measure net`: each path segment over the explained requests, in path order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentSummary>,
    /// `--break`: the file the whole raw trace was written to (ftrace's text layout), and its
    /// number of events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_trace_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_trace_events: Option<u64>,
    /// `--in vm`: how the guest's times were put on the host's clock (guest side of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_clock: Option<ClockSync>,
    /// `measure net`: the run's start on the measuring machine's CLOCK_MONOTONIC, ns (the zero
    /// of `expected_ns` and `start_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_start_ns: Option<u64>,
}

/// A guest clock related to the host's by timed handshakes (`--in vm --explain`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClockSync {
    /// How: "serial handshake" (the guest asks the host's CLOCK_MONOTONIC over a serial port).
    pub method: String,
    /// The guest run's start (the zero of `expected_ns` and `start_ns`) in the host's
    /// CLOCK_MONOTONIC, ns.
    pub run_start_host_ns: u64,
    /// Uncertainty of the conversion: half the best handshake's round trip, ns.
    pub precision_ns: u64,
    /// Handshakes made (at the start and at the end of the run).
    pub rounds: u32,
    /// The guest clock's rate against the host's, from the offsets at the start and at the end
    /// (parts per million; 0 with one handshake series).
    pub drift_ppm: f64,
}

/// One late sample and its causes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainedSample {
    /// `measure tasks --explain`: the job's task ("guest/task"); its `latency_ns` is the job's
    /// response time and `expected_ns` its release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub cpu: u32,
    pub latency_ns: u64,
    /// When the timer was programmed to expire, since the start of the run.
    pub expected_ns: u64,
    /// The measuring thread.
    pub tid: u32,
    /// Causes in time order; their durations add up to `latency_ns` (empty for a request of
    /// `measure net`: its time is in `segments`). With `--in vm`, the host-side causes (kinds
    /// `host_*`, `vcpu_*`) follow: what the vCPU thread went through on the host in the same time,
    /// an overlay of the guest's causes, not added to them.
    pub causes: Vec<Cause>,
    /// `measure net`: the request's sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// `measure net`: the request's path, in path order; their durations add up to `latency_ns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<PathSegment>,
}

/// One segment of a request's path on this host, between two trace milestones (or the client's
/// own clock readings at the ends of the round trip).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathSegment {
    /// `send_lag` (intended send time -> the client's send syscall: the client late, not the
    /// network), `client_send` (-> the request queued to the first device),
    /// `host_receive` (-> the server's wake-up: veth/bridge or IRQ, NET_RX softirq/NAPI, socket
    /// enqueue), `server` (-> its send syscall), `host_send` (-> the response leaves the first
    /// device, `net_dev_xmit`), `client_receive` (-> the client read it); to a server in a guest
    /// behind a tap: `host_receive` (-> the request's transmit into the tap), `guest` (-> the
    /// response's receive from the tap), `host_send` (-> the client's wake-up) - with the guest
    /// server's own records joined, `guest` is `virtualization` (QEMU and the virtual interrupt
    /// both ways: the rest of `guest`), `guest_receive`, `guest_server`, `guest_send` (the
    /// guest's own segments, on its CPUs and clock); or `unexplained` (the
    /// milestones in `missing` are not in the trace: the segments they bound are merged).
    pub name: String,
    /// Since the start of the run.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// The CPU of the event that ends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// The trace events on the way, in order (`net_dev_queue rtvbr1`, `softirq NET_RX cpu 1`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
    /// `unexplained`: the milestones the trace lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// One path segment over all explained requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SegmentSummary {
    pub name: String,
    /// Requests that had it.
    pub requests: u64,
    pub mean_ns: f64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// Why a share of a sample's latency was spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// The timer interrupt came late: programmed expiry to the hrtimer's expiry (L1).
    TimerIrq,
    /// A hard interrupt handler ran on the CPU.
    Irq,
    /// An inter-processor interrupt's handler ran on the CPU (`reschedule`, `call_function`,
    /// `call_function_single`); its name says which CPU and thread sent it and the function it
    /// asked for, when the trace has the sending (`ipi_send_cpu`/`ipi_send_cpumask`).
    Ipi,
    /// A softirq ran on the CPU.
    Softirq,
    /// Another thread ran on the CPU before the measuring thread.
    Thread,
    /// Wake-up to switch-in not spent in anything above (the scheduler, the switch itself).
    Wakeup,
    /// Switch-in to the return from `clock_nanosleep`.
    Return,
    /// `--in vm` under KVM, host side: the vCPU thread out of the guest, from `kvm_exit` to its
    /// next `kvm_entry` (or its switch out); named by the exit reason.
    KvmExit,
    /// No trace event explains it (events lost or absent, or outside what is traced).
    Unexplained,
    /// `--in vm`, host side (beside the guest's causes, which alone add up to the latency): a
    /// host thread ran on the vCPU thread's CPU while the vCPU thread waited (preempted or woken).
    HostThread,
    /// `--in vm`, host side: a host IRQ or vector handler on the vCPU thread's CPU.
    HostIrq,
    /// `--in vm`, host side: a host softirq on the vCPU thread's CPU.
    HostSoftirq,
    /// `--in vm`, host side: the vCPU thread woken, not yet on a CPU, nothing else named.
    VcpuWakeup,
    /// `--in vm`, host side: the vCPU thread asleep (the guest idle, waiting for its timer
    /// interrupt, which the host delivers by waking the thread).
    VcpuAsleep,
    /// `measure tasks --explain`: the guest's vCPU thread ran (this job and the guest's other
    /// tasks, as its scheduler chose).
    Guest,
    /// `measure tasks --explain`: the guest's vCPU thread runnable but not running while its CPU
    /// was idle - its reservation out of budget (throttled until its next period).
    Throttled,
}

impl CauseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::TimerIrq => "timer_irq",
            CauseKind::Irq => "irq",
            CauseKind::Ipi => "ipi",
            CauseKind::Softirq => "softirq",
            CauseKind::Thread => "thread",
            CauseKind::Wakeup => "wakeup",
            CauseKind::Return => "return",
            CauseKind::KvmExit => "kvm_exit",
            CauseKind::Unexplained => "unexplained",
            CauseKind::HostThread => "host_thread",
            CauseKind::HostIrq => "host_irq",
            CauseKind::HostSoftirq => "host_softirq",
            CauseKind::VcpuWakeup => "vcpu_wakeup",
            CauseKind::VcpuAsleep => "vcpu_asleep",
            CauseKind::Guest => "guest",
            CauseKind::Throttled => "throttled",
        }
    }

    /// Whether the cause is a host-side one of a guest's sample (an overlay of the guest's causes).
    pub fn is_host_side(self) -> bool {
        matches!(
            self,
            CauseKind::HostThread
                | CauseKind::KvmExit
                | CauseKind::HostIrq
                | CauseKind::HostSoftirq
                | CauseKind::VcpuWakeup
                | CauseKind::VcpuAsleep
        )
    }
}

/// One cause of one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cause {
    pub kind: CauseKind,
    /// The thread's command name, the IRQ handler's name, the softirq (`NET_RX`, `TIMER`...).
    pub name: String,
    /// The thread (kind `thread`).
    pub pid: Option<u32>,
    pub cpu: u32,
    /// Since the start of the run.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// The thread's policy ("fifo", "rr", "deadline", "other") and priority as the kernel
    /// reports it (`prio`: 0-99 real-time, inverted as in the kernel; 100-139 normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_prio: Option<i32>,
}

/// One cause over all explained samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CauseSummary {
    pub kind: CauseKind,
    pub name: String,
    /// Explained samples it delayed.
    pub samples: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

impl ExplainSection {
    /// Rank the causes of `samples` by total time (then kind and name, for a stable order).
    pub fn summarize(samples: &[ExplainedSample]) -> Vec<CauseSummary> {
        let mut by: std::collections::BTreeMap<(CauseKind, String), CauseSummary> = Default::default();
        for s in samples {
            let mut per_sample: std::collections::BTreeMap<(CauseKind, String), u64> = Default::default();
            for c in &s.causes {
                *per_sample.entry((c.kind, c.name.clone())).or_default() += c.duration_ns;
            }
            for ((kind, name), ns) in per_sample {
                let e = by.entry((kind, name.clone())).or_insert(CauseSummary {
                    kind,
                    name,
                    samples: 0,
                    total_ns: 0,
                    max_ns: 0,
                });
                e.samples += 1;
                e.total_ns += ns;
                e.max_ns = e.max_ns.max(ns);
            }
        }
        let mut out: Vec<CauseSummary> = by.into_values().collect();
        out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.kind.cmp(&b.kind)).then(a.name.cmp(&b.name)));
        out
    }

    /// Mean, p99 and max of each path segment of `samples`, in path order (first seen first).
    pub fn summarize_segments(samples: &[ExplainedSample]) -> Vec<SegmentSummary> {
        let mut order: Vec<&str> = Vec::new();
        let mut by: std::collections::HashMap<&str, crate::stats::LatencyHistogram> = Default::default();
        for seg in samples.iter().flat_map(|s| &s.segments) {
            if !by.contains_key(seg.name.as_str()) {
                order.push(&seg.name);
            }
            by.entry(&seg.name).or_default().record(seg.duration_ns);
        }
        order
            .into_iter()
            .map(|name| {
                let h = &by[name];
                let s = h.summary();
                SegmentSummary {
                    name: name.to_string(),
                    requests: h.count(),
                    mean_ns: s.mean,
                    p99_ns: s.p99,
                    max_ns: s.max,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(kind: CauseKind, name: &str, ns: u64) -> Cause {
        Cause {
            kind,
            name: name.into(),
            pid: None,
            cpu: 0,
            start_ns: 0,
            duration_ns: ns,
            policy: None,
            kernel_prio: None,
        }
    }

    #[test]
    fn the_summary_ranks_causes_by_total_time_and_counts_a_sample_once_per_cause() {
        let s = |causes| ExplainedSample { causes, ..Default::default() };
        let samples = vec![
            s(vec![
                cause(CauseKind::Thread, "hog", 300),
                cause(CauseKind::Thread, "hog", 200),
                cause(CauseKind::Wakeup, "", 5),
            ]),
            s(vec![cause(CauseKind::Irq, "eth0", 100), cause(CauseKind::Wakeup, "", 7)]),
        ];
        let sum = ExplainSection::summarize(&samples);
        assert_eq!(
            sum[0],
            CauseSummary { kind: CauseKind::Thread, name: "hog".into(), samples: 1, total_ns: 500, max_ns: 500 }
        );
        assert_eq!(sum[1].kind, CauseKind::Irq);
        assert_eq!(
            sum[2],
            CauseSummary { kind: CauseKind::Wakeup, name: "".into(), samples: 2, total_ns: 12, max_ns: 7 }
        );
    }

    #[test]
    fn kinds_are_written_as_the_issue_names_them() {
        assert_eq!(serde_json::to_string(&CauseKind::TimerIrq).unwrap(), "\"timer_irq\"");
        assert_eq!(serde_json::to_string(&CauseKind::KvmExit).unwrap(), "\"kvm_exit\"");
    }
}
