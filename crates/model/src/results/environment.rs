//! Where and under what conditions a result was measured: the machine, the loads that ran
//! alongside, and the container or VM a measurement ran in.

use crate::vocab::{LoadKind, MeasuredIn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The environment a result was measured in. Fields after `rtvirt_version` are written in key
/// order, the order of the map they were once kept in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// "host" | "container" | "vm" | "simulation"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#in: Option<MeasuredIn>,
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
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "super::serde_fns::sorted")]
    pub load: Vec<LoadReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtvirt_version: Option<String>,
    /// QEMU's accelerator ("kvm" | "tcg") of a VM measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel: Option<String>,
    /// The container a measurement ran in (or, from the host, the container it talked to).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "super::serde_fns::sorted")]
    pub container: Option<ContainerDetail>,
    /// The CPU latency target (/dev/cpu_dma_latency) when the environment was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_dma_latency_us: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_boot_ns: Option<u64>,
    /// The guest's own environment, for measurements taken on the host against a guest.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "super::serde_fns::sorted")]
    pub guest_environment: Option<Box<Environment>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_ip: Option<String>,
    /// The guest kernel's flavour ("stock", "rt", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_kernel_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_kernel: Option<String>,
    /// Label of the host loads that ran beside a VM ("none", "cpu+net", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<String>,
    /// What a network measurement talked to, when it is not on this machine's loopback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// /proc/sys/kernel/sched_rt_runtime_us as read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_rt_runtime_us: Option<String>,
    /// The tool that measured, when not rtvirt ("cyclictest", "sockperf", ...: `rtvirt import`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool's command line, as its output records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_command_line: Option<String>,
    /// The tool's version, as its output records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// Host CPUs the vCPUs were pinned to, or "none".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpu_pinning: Option<VcpuPinning>,
    /// Host thread ids of the vCPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpu_threads: Option<Vec<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpus: Option<u32>,
    /// Whether /dev/vhost-net was usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vhost_net: Option<bool>,
    /// Why the numbers mean less than they seem (e.g. QEMU without KVM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A load that ran alongside a measurement, with what it achieved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadReport {
    /// "net" | "net-udp" | "syscalls" | "cache" | "cpu"
    pub kind: LoadKind,
    pub workers: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_requested: Option<String>,
    /// CPUs the workers were really seen running on.
    pub cpus_ran_on: String,
    pub duration_ns: u64,
    pub ops: u64,
    pub ops_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_rate: Option<f64>,
    /// Unit of `ops` ("iterations", "bytes", ...).
    pub unit: String,
    /// "host" for loads on the host of a VM measurement.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub r#where: Option<String>,
}

/// The network namespace, bridge and cgroups of a measurement's container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerDetail {
    pub bridge: String,
    pub cgroups: Vec<String>,
    pub container_addr: String,
    pub cpuset: String,
    pub host_addr: String,
    pub netns: String,
    /// Host end, container end.
    pub veth: Vec<String>,
}

/// Where a VM's vCPUs ran: pinned to host CPUs, or "none".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VcpuPinning {
    Cpus(Vec<u32>),
    Unpinned(String),
}
