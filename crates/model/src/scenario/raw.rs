//! The scenario file exactly as written (serde, unknown fields rejected). These types never
//! leave the model crate: `validate.rs` and `validate_sim.rs` check them into the typed
//! [`super::Scenario`] (as ripgrep's `lowargs.rs` -> `hiargs.rs`).

use crate::duration::Nanos;
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Scenario",
    description = "An rtvirt scenario as JSON (a scenario file whose name ends in .json): the document of the TOML scenario format, durations as strings with a unit (docs/plan.md, docs/simulate.md)."
)]
pub(crate) struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub host: RawHost,
    #[serde(default, rename = "guest")]
    pub guests: Vec<RawGuest>,
    /// Simulator settings and extra host threads (see `sim.rs`).
    pub sim: Option<RawSim>,
    /// Network path of the simulator (see `net.rs`).
    pub net: Option<super::net::RawNet>,
    /// Online adaptation of the reservations (see `adapt.rs`).
    pub adapt: Option<super::adapt::RawAdapt>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHost {
    pub cores: i64,
    /// Per-core bandwidth cap for reservations (default 0.95, SCHED_DEADLINE's default).
    pub bandwidth_cap: Option<f64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGuest {
    pub name: String,
    pub scheduler: String,
    /// Candidate server periods: a list of durations or `{ min, max, step }`.
    pub server_periods: Option<RawPeriods>,
    pub rho: Option<f64>,
    #[serde(default, rename = "task")]
    pub tasks: Vec<RawTask>,
    /// Number of vCPUs (default 1).
    pub vcpus: Option<i64>,
    /// "partitioned" (default) or "global": how the guest schedules its tasks over its vCPUs.
    pub placement: Option<String>,
    /// vCPUs that run no real-time task: no reservation, only a core.
    pub housekeeping: Option<Vec<i64>>,
    /// The guest's vCPUs on distinct host cores (default true).
    pub spread: Option<bool>,
    /// How the guest's vCPU threads run in the simulated host (see `sim.rs`).
    pub vcpu: Option<RawVcpu>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(
    untagged,
    expecting = "a list of durations such as [\"5ms\", \"10ms\"] or a range { min = \"1ms\", max = \"10ms\", step = \
                 \"1ms\" }"
)]
pub(crate) enum RawPeriods {
    List(Vec<Nanos>),
    Range(RawRange),
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRange {
    pub min: Nanos,
    pub max: Nanos,
    pub step: Nanos,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTask {
    pub name: String,
    pub period: Nanos,
    pub deadline: Option<Nanos>,
    /// A duration, or with samples "max" / "p99" / "p99.9".
    pub wcet: String,
    pub priority: Option<i64>,
    pub rho: Option<f64>,
    pub offset: Option<Nanos>,
    pub exec: Option<RawExec>,
    /// Partitioned guests: the vCPU this task is bound to (else the planner assigns one).
    pub vcpu: Option<i64>,
    /// `[[guest.task.phase]]`: execution-time models that take over during a run.
    #[serde(default, rename = "phase")]
    pub phases: Vec<RawPhase>,
}

/// `[[guest.task.phase]]`: from `at` on, jobs released draw from `exec`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPhase {
    pub at: Nanos,
    pub exec: RawExec,
}

/// An execution-time model: a table only (see its `Deserialize`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub(crate) struct RawExec {
    pub dist: Option<String>,
    pub mean: Option<Nanos>,
    pub sd: Option<Nanos>,
    pub min: Option<Nanos>,
    pub max: Option<Nanos>,
    pub samples: Option<String>,
}

/// serde's derived structs also read a list as their fields in order, so a six-item list read
/// as `dist`..`samples` and was refused for giving both: read a table only, and say which.
impl<'de> Deserialize<'de> for RawExec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Table;
        impl<'de> serde::de::Visitor<'de> for Table {
            type Value = RawExec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a table with `dist` and its parameters or with `samples`, e.g. { dist = \"normal\", mean = \
                     \"200us\", sd = \"50us\" } or { samples = \"exec.csv\" }",
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawExec, A::Error> {
                RawExec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Table)
    }
}

/// `[sim]`: simulator settings.
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSim {
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
    /// "continue" (default) or "abort".
    pub miss_policy: Option<String>,
    pub hz: Option<i64>,
    pub hrtick: Option<bool>,
    pub tick_phase: Option<Nanos>,
    pub rt_throttling: Option<bool>,
    pub rt_runtime: Option<Nanos>,
    pub rt_period: Option<Nanos>,
    pub vcpu_switch: Option<Nanos>,
    /// Every guest job runs this fraction longer than its drawn (bare-metal) execution time.
    pub guest_slowdown: Option<f64>,
    pub credit_tslice: Option<Nanos>,
    pub credit_ratelimit: Option<Nanos>,
    /// Xen Credit accounting: "tick" (default: the vCPU running at each 10 ms tick is debited
    /// 10 ms of credit, as credit1 does) or "precise" (credits burnt for the exact time run).
    pub credit_accounting: Option<String>,
    /// Extra host threads.
    #[serde(default, rename = "thread")]
    pub threads: Vec<RawThread>,
}

/// `[guest.vcpu]`: the host-side scheduling of one guest's vCPU thread (also the `sched` table of
/// an extra host thread, where `idle` and `context_switch` do not apply).
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVcpu {
    pub core: Option<i64>,
    pub cores: Option<Vec<i64>>,
    pub policy: Option<String>,
    /// fifo/rr: 1..99; ds/ps: server priority (higher = more urgent).
    pub priority: Option<i64>,
    /// other: nice -20..19.
    pub nice: Option<i64>,
    /// credit: weight 1..65535 (default 256).
    pub weight: Option<i64>,
    /// rr: quantum (default 100ms, Linux's sched_rr_timeslice_ms).
    pub quantum: Option<Nanos>,
    /// deadline: sched_runtime.
    pub runtime: Option<Nanos>,
    /// deadline: sched_deadline (default = period).
    pub deadline: Option<Nanos>,
    /// deadline / rtds / ds / ps / supply: period.
    pub period: Option<Nanos>,
    /// rtds / ds / ps / supply: budget per period.
    pub budget: Option<Nanos>,
    /// rtds: may run beyond its budget when the core is otherwise idle.
    pub extratime: Option<bool>,
    /// supply: where the budget sits in each period: "early" | "late" | "prm-worst" | "random".
    pub supply: Option<String>,
    /// "halt" (default) or "poll".
    pub idle: Option<String>,
    pub context_switch: Option<Nanos>,
    /// Overrides `[sim] guest_slowdown` for this guest.
    pub slowdown: Option<f64>,
}

/// `[[sim.thread]]`: an extra host thread that runs `run` every `period` (or all the time with
/// `busy = true`).
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawThread {
    pub name: String,
    pub period: Option<Nanos>,
    pub run: Option<Nanos>,
    pub offset: Option<Nanos>,
    pub busy: Option<bool>,
    #[serde(default)]
    pub sched: RawVcpu,
}
