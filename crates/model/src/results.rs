//! Results of simulations and real measurements, one versioned schema (`rtvirt.results/v1`) so
//! that reports can put them side by side. A document has a `kind` ("simulation", "timer",
//! "net", "tasks", "netsim", ...) and the sections that kind fills; absent sections are omitted.

use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const RESULTS_SCHEMA: &str = "rtvirt.results/v1";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// Kind-specific fields (missed_periods, requests, arrivals, histogram buckets, ...).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub guest: String,
    pub name: String,
    pub jobs: u64,
    pub misses: u64,
    /// Deadline satisfaction ratio (jobs - misses) / jobs (1.0 when no job was released).
    pub dsr: f64,
    pub response_ns: Summary,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestResult {
    pub name: String,
    pub cpu_time_ns: u64,
    pub utilisation: f64,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreResult {
    pub id: u32,
    pub utilisation: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_ns: Option<u64>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuLatency {
    pub cpu: u32,
    pub latency_ns: Summary,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One network flow: end-to-end latency, its split into segments, throughput, drops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Summary>,
    /// Mean/percentiles per segment, e.g. "host_receive", "guest", "host_send".
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub segments_ns: serde_json::Map<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<f64>,
    #[serde(default)]
    pub drops: u64,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The environment a result was measured in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// "host" | "container" | "vm" | "simulation"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#in: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// e.g. "PREEMPT_DYNAMIC (voluntary)", "PREEMPT_RT"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolated_cpus: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuidle_driver: Option<String>,
    /// Loads that ran alongside, with what they achieved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtvirt_version: Option<String>,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Results {
    pub fn new(kind: &str, duration_ns: u64) -> Results {
        Results { schema: RESULTS_SCHEMA.into(), kind: kind.into(), duration_ns, ..Default::default() }
    }

    /// Read a results file, checking the schema.
    pub fn from_file(path: &Path) -> Result<Results, crate::InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Results)?;
        let r: Results = serde_json::from_str(&text).map_err(|e| {
            crate::InputError::new(format!("not an rtvirt.results/v1 document: {e}"))
                .in_file(path)
                .at_line(e.line(), e.column())
        })?;
        if r.schema != RESULTS_SCHEMA {
            return Err(crate::InputError::field("schema", format!("\"{}\": expected \"{RESULTS_SCHEMA}\"", r.schema))
                .in_file(path));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_fields_round_trip() {
        let mut r = Results::new("timer", 10);
        r.extra.insert("missed_periods".into(), 3.into());
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"missed_periods\":3"));
        assert!(!text.contains("tasks"));
        let back: Results = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
