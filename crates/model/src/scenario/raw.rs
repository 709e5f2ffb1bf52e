//! The scenario file exactly as written (serde, unknown fields rejected). Validation into the
//! typed [`super::Scenario`] happens in `validate.rs`.

use crate::duration::Nanos;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub host: RawHost,
    #[serde(default, rename = "guest")]
    pub guests: Vec<RawGuest>,
    /// Simulator settings and extra host threads (see `sim.rs`).
    pub sim: Option<super::sim::RawSim>,
    /// Network path of the simulator (see `net.rs`).
    pub net: Option<super::net::RawNet>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    pub cores: i64,
    /// Per-core bandwidth cap for reservations (default 0.95, SCHED_DEADLINE's default).
    pub bandwidth_cap: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuest {
    pub name: String,
    pub scheduler: String,
    /// Candidate server periods: a list of durations or `{ min, max, step }`.
    pub server_periods: Option<RawPeriods>,
    pub rho: Option<f64>,
    #[serde(default, rename = "task")]
    pub tasks: Vec<RawTask>,
    /// How the guest's vCPU thread runs in the simulated host (see `sim.rs`).
    pub vcpu: Option<super::sim::RawVcpu>,
}

#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "a list of durations such as [\"5ms\", \"10ms\"] or a range { min = \"1ms\", max = \"10ms\", step = \"1ms\" }"
)]
pub enum RawPeriods {
    List(Vec<Nanos>),
    Range(RawRange),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRange {
    pub min: Nanos,
    pub max: Nanos,
    pub step: Nanos,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    pub name: String,
    pub period: Nanos,
    pub deadline: Option<Nanos>,
    /// A duration, or with samples "max" / "p99" / "p99.9".
    pub wcet: String,
    pub priority: Option<i64>,
    pub rho: Option<f64>,
    pub offset: Option<Nanos>,
    pub exec: Option<RawExec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExec {
    pub dist: Option<String>,
    pub mean: Option<Nanos>,
    pub sd: Option<Nanos>,
    pub min: Option<Nanos>,
    pub max: Option<Nanos>,
    pub samples: Option<String>,
}
