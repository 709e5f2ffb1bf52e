//! The JSON file `cyclictest --json=FILE` writes (rt-tests 2.x), which `rtvirt measure timer
//! --json FILE` writes too, so that wrappers written for cyclictest read rtvirt's runs. Key names
//! are rt-tests' own, the two with a trailing colon included; times are whole microseconds
//! (`resolution_in_ns` 0, as cyclictest without -N).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// rt-tests' `file_version`.
pub const FILE_VERSION: u32 = 1;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "cyclictest --json (rt-tests)")]
pub struct CyclictestJson {
    pub file_version: u32,
    /// The command line, its words joined by spaces.
    #[serde(rename = "cmdline:")]
    pub cmdline: String,
    /// rt-tests' version there; here "rtvirt VERSION".
    #[serde(rename = "rt_test_version:")]
    pub rt_test_version: String,
    /// "Mon, 07 Dec 2026 17:41:00 +0000" (RFC 2822, as cyclictest's strftime).
    pub start_time: String,
    pub end_time: String,
    pub return_code: i32,
    pub sysinfo: Sysinfo,
    pub num_threads: usize,
    /// 0: values in microseconds (1 would be nanoseconds, cyclictest -N).
    pub resolution_in_ns: u32,
    /// Per measuring thread, by its index ("0", "1", ...).
    pub thread: BTreeMap<String, ThreadStats>,
}

/// uname(2) and whether the kernel is PREEMPT_RT (`/sys/kernel/realtime`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sysinfo {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
    pub realtime: u32,
}

/// One measuring thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadStats {
    /// Latency in whole microseconds -> wake-ups, for the non-empty rows below the histogram's
    /// size (cyclictest's -h); later wake-ups are its overflows, counted in `cycles` only.
    pub histogram: BTreeMap<String, u64>,
    pub cycles: u64,
    pub min: u64,
    pub max: u64,
    /// Mean latency in microseconds.
    pub avg: f64,
    pub cpu: u32,
    /// NUMA node of the CPU.
    pub node: u32,
}
