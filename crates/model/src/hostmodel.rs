//! The host model, `rtvirt.hostmodel/v1`: what one host really costs a reservation (written by
//! `rtvirt host calibrate`, read by `rtvirt plan --host-model`) and the admission limits its
//! kernel enforces.
//!
//! Every field may be omitted: it then takes the value of [`HostModel::uncalibrated`], the
//! documented default model for a host never calibrated (docs/plan.md, "Host models"). The
//! defaults are deliberately pessimistic figures for a stock (not PREEMPT_RT) x86 Linux/KVM host
//! of 2024-2026: a 3 us context switch, 10 us of overhead per server period (replenishment timer,
//! two switches), release latency p50 10 us / p99 60 us / max 200 us, enforcement at the tick
//! (HZ = 250, overrun up to 4 ms), 20 us of cache reload per preemption, and the kernel's stock
//! admission limit 950000/1000000 us with a 50 ms/1 s fair server on every CPU (Linux >= 6.12).
//!
//! The per-core bandwidth cap a plan may use ([`HostModel::bandwidth_cap`]) is
//! `sched_rt_runtime_us / sched_rt_period_us` less the largest fair-server bandwidth of any CPU:
//! the kernel admits deadline reservations per root domain against that limit, and the fair server
//! is a deadline reservation already there. Without a host model the planner uses
//! [`SAFE_DEFAULT_CAP`] (the same rule applied to the stock settings).

use crate::error::InputError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const HOST_MODEL_SCHEMA: &str = "rtvirt.hostmodel/v1";

/// The kernel's stock SCHED_DEADLINE admission limit (sched_rt_runtime_us / sched_rt_period_us).
pub const STOCK_KERNEL_CAP: f64 = 0.95;
/// The stock fair server's bandwidth (50 ms every 1 s, Linux >= 6.12).
pub const STOCK_FAIR_SERVER: f64 = 0.05;
/// The per-core cap without a host model: safe on current kernels, with or without a fair server.
pub const SAFE_DEFAULT_CAP: f64 = 0.90;

/// `rtvirt.hostmodel/v1`: measured costs and admission limits of one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "rtvirt.hostmodel/v1")]
pub struct HostModel {
    pub schema: String,
    /// Cost of one server period (ns): the replenishment timer's interrupt and the two context
    /// switches of a throttle/replenish cycle; paid by each server once per period out of its budget.
    #[serde(default = "defaults::server_overhead_ns")]
    pub server_overhead_ns: u64,
    /// One context switch between two threads on a CPU (ns).
    #[serde(default = "defaults::context_switch_ns")]
    pub context_switch_ns: u64,
    /// Timer wake-up latency (release latency, ns): how late a thread runs after its timer expired.
    #[serde(default = "defaults::release_latency_ns")]
    pub release_latency_ns: LatencySummary,
    /// How the kernel enforces a reservation's runtime.
    #[serde(default)]
    pub enforcement: Enforcement,
    /// Extra execution a preempted job needs to reload its working set (ns per preemption).
    #[serde(default = "defaults::cache_reload_ns")]
    pub cache_reload_ns: u64,
    /// One vCPU exit and re-entry (ns), measured under KVM; None when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpu_exit_ns: Option<u64>,
    /// The kernel's admission limits.
    #[serde(default)]
    pub admission: AdmissionLimits,
    /// How each figure above was obtained (empty in the default model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<Measurement>,
    /// Where the model was made (kernel, CPU, virtualisation...), free form.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub environment: serde_json::Map<String, serde_json::Value>,
}

/// A latency distribution's summary (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LatencySummary {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// "tick": runtime depletion is noticed at the next scheduler tick (HRTICK off, the default);
/// "hrtick": a high-resolution timer throttles the reservation when its runtime is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EnforcementKind {
    Tick,
    Hrtick,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Enforcement {
    pub kind: EnforcementKind,
    /// Largest execution beyond its runtime a reservation gets before it is throttled (ns); the
    /// kernel pays it back from the following periods.
    pub overrun_max_ns: u64,
}

impl Default for Enforcement {
    fn default() -> Self {
        Enforcement { kind: EnforcementKind::Tick, overrun_max_ns: 4_000_000 }
    }
}

/// The kernel's SCHED_DEADLINE admission limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdmissionLimits {
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1: admission control disabled).
    pub rt_runtime_us: i64,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub rt_period_us: i64,
    /// Each CPU's fair-server reservation (Linux >= 6.12). Omitted or null: not known, every CPU
    /// is assumed to carry the stock 50 ms / 1 s; an empty list: the kernel has none.
    #[serde(default)]
    pub fair_servers: Option<Vec<FairServerEntry>>,
    /// CPUs isolated from the general scheduler (`isolcpus`, `nohz_full`...).
    #[serde(default)]
    pub isolated_cpus: Vec<u32>,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        AdmissionLimits { rt_runtime_us: 950_000, rt_period_us: 1_000_000, fair_servers: None, isolated_cpus: vec![] }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FairServerEntry {
    pub cpu: u32,
    pub runtime_ns: u64,
    pub period_ns: u64,
}

/// One measured figure: how it was measured and its distribution (ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// What was measured, e.g. "release_latency cpu0", "context_switch".
    pub name: String,
    /// How: the experiment in one sentence.
    pub method: String,
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// Caveats (e.g. "TCG: not representative of KVM").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

mod defaults {
    use super::LatencySummary;
    pub fn server_overhead_ns() -> u64 {
        10_000
    }
    pub fn context_switch_ns() -> u64 {
        3_000
    }
    pub fn release_latency_ns() -> LatencySummary {
        LatencySummary { p50: 10_000, p99: 60_000, max: 200_000 }
    }
    pub fn cache_reload_ns() -> u64 {
        20_000
    }
}

/// A per-core bandwidth cap and why it is the one used.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthCap {
    pub value: f64,
    pub why: String,
}

impl BandwidthCap {
    /// Without a host model: [`SAFE_DEFAULT_CAP`].
    pub fn safe_default() -> BandwidthCap {
        BandwidthCap {
            value: SAFE_DEFAULT_CAP,
            why: format!(
                "default without a host model: the kernel's stock {STOCK_KERNEL_CAP} \
                 (sched_rt_runtime_us/sched_rt_period_us) less a fair server's {STOCK_FAIR_SERVER} (Linux >= 6.12)"
            ),
        }
    }
}

impl HostModel {
    /// The documented default model of a host never calibrated.
    pub fn uncalibrated() -> HostModel {
        HostModel::from_json(&format!("{{\"schema\":\"{HOST_MODEL_SCHEMA}\"}}")).expect("the default model reads")
    }

    /// Read a host model JSON file; every error names the file, line/column and field.
    pub fn from_file(path: &Path) -> Result<HostModel, InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::HostModel)?;
        HostModel::from_json(&text).map_err(|e| e.in_file(path))
    }

    pub fn from_json(text: &str) -> Result<HostModel, InputError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let model: HostModel = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            InputError::field(
                field,
                format!("{inner} (expected an {HOST_MODEL_SCHEMA} JSON document from `rtvirt host calibrate`)"),
            )
            .at_line(inner.line(), inner.column())
        })?;
        if model.schema != HOST_MODEL_SCHEMA {
            return Err(InputError::field("schema", format!("\"{}\": expected \"{HOST_MODEL_SCHEMA}\"", model.schema)));
        }
        model.check()?;
        Ok(model)
    }

    /// Values that cannot describe a host: a release latency whose quantiles decrease, a kernel
    /// period of 0, a fair server larger than its period, overheads beyond an hour.
    fn check(&self) -> Result<(), InputError> {
        let r = self.release_latency_ns;
        if !(r.p50 <= r.p99 && r.p99 <= r.max) {
            return Err(InputError::field(
                "release_latency_ns",
                format!("p50 {} / p99 {} / max {} ns: expected p50 <= p99 <= max", r.p50, r.p99, r.max),
            ));
        }
        let hour = crate::scenario::MAX_TIMING.0;
        for (field, v) in [
            ("server_overhead_ns", self.server_overhead_ns),
            ("context_switch_ns", self.context_switch_ns),
            ("release_latency_ns.max", r.max),
            ("enforcement.overrun_max_ns", self.enforcement.overrun_max_ns),
            ("cache_reload_ns", self.cache_reload_ns),
        ] {
            if v > hour {
                return Err(InputError::field(field, format!("{v} ns: expected at most {hour} ns (1 hour)")));
            }
        }
        let a = &self.admission;
        if a.rt_period_us <= 0 || a.rt_runtime_us < -1 || a.rt_runtime_us > a.rt_period_us {
            return Err(InputError::field(
                "admission.rt_runtime_us",
                format!(
                    "{} / {} us: expected -1 (no admission control) or 0 <= sched_rt_runtime_us <= sched_rt_period_us, \
                     period > 0",
                    a.rt_runtime_us, a.rt_period_us
                ),
            ));
        }
        for (i, f) in a.fair_servers.iter().flatten().enumerate() {
            if f.period_ns == 0 || f.runtime_ns > f.period_ns {
                return Err(InputError::field(
                    format!("admission.fair_servers[{i}]"),
                    format!(
                        "runtime {} / period {} ns: expected 0 <= runtime <= period, period > 0",
                        f.runtime_ns, f.period_ns
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The per-core cap a plan may use on this host, and why.
    pub fn bandwidth_cap(&self) -> BandwidthCap {
        let a = &self.admission;
        if a.rt_runtime_us < 0 {
            return BandwidthCap {
                value: 1.0,
                why: "host model: sched_rt_runtime_us = -1 (no admission control): a whole core".into(),
            };
        }
        // in millionths, rounded down for the kernel's limit and up for the fair server (safe side)
        let kernel_ppm = a.rt_runtime_us as u128 * 1_000_000 / a.rt_period_us as u128;
        let ppm = |f: &FairServerEntry| (f.runtime_ns as u128 * 1_000_000).div_ceil(f.period_ns as u128);
        let (fair_ppm, which) = match &a.fair_servers {
            None => (
                (STOCK_FAIR_SERVER * 1e6) as u128,
                "the stock fair server (not recorded in the host model)".to_string(),
            ),
            Some(list) => match list.iter().max_by_key(|f| ppm(f)) {
                None => (0, "no fair server".to_string()),
                Some(f) => (ppm(f), format!("CPU {}'s fair server (the largest)", f.cpu)),
            },
        };
        let (kernel, fair) = (kernel_ppm as f64 / 1e6, fair_ppm as f64 / 1e6);
        let value = kernel_ppm.saturating_sub(fair_ppm) as f64 / 1e6;
        BandwidthCap {
            value,
            why: format!(
                "host model: sched_rt_runtime_us/sched_rt_period_us {}/{} = {kernel} less {which} {fair}",
                a.rt_runtime_us, a.rt_period_us
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omitted_fields_take_the_documented_defaults() {
        let m = HostModel::uncalibrated();
        assert_eq!(m.server_overhead_ns, 10_000);
        assert_eq!(m.context_switch_ns, 3_000);
        assert_eq!(m.release_latency_ns, LatencySummary { p50: 10_000, p99: 60_000, max: 200_000 });
        assert_eq!(m.enforcement, Enforcement { kind: EnforcementKind::Tick, overrun_max_ns: 4_000_000 });
        assert_eq!(m.cache_reload_ns, 20_000);
        assert_eq!(m.admission, AdmissionLimits::default());
        // the default model's cap is the safe default
        assert_eq!(m.bandwidth_cap().value, SAFE_DEFAULT_CAP);
        let partial = HostModel::from_json(r#"{"schema":"rtvirt.hostmodel/v1","context_switch_ns":1500}"#).unwrap();
        assert_eq!(partial, HostModel { context_switch_ns: 1500, ..m });
    }

    #[test]
    fn the_issue_shape_reads_and_round_trips() {
        let text = r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":7000,"context_switch_ns":2100,
            "release_latency_ns":{"p50":4000,"p99":30000,"max":90000},
            "enforcement":{"kind":"hrtick","overrun_max_ns":2000},"cache_reload_ns":15000,
            "admission":{"rt_runtime_us":950000,"rt_period_us":1000000,
                         "fair_servers":[{"cpu":0,"runtime_ns":50000000,"period_ns":1000000000},
                                         {"cpu":1,"runtime_ns":0,"period_ns":1000000000}]},
            "environment":{"kernel":"6.12.0"}}"#;
        let m = HostModel::from_json(text).unwrap();
        assert_eq!(m.enforcement.kind, EnforcementKind::Hrtick);
        let cap = m.bandwidth_cap();
        assert_eq!(cap.value, 0.9);
        assert!(cap.why.contains("CPU 0's fair server"), "{}", cap.why);
        let again = HostModel::from_json(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(again, m);
        let none = HostModel::from_json(concat!(
            r#"{"schema":"rtvirt.hostmodel/v1","admission":{"rt_runtime_us":950000,"rt_period_us":1000000,"#,
            r#""fair_servers":[]}}"#,
        ))
        .unwrap();
        assert_eq!(none.bandwidth_cap().value, 0.95);
        let off = HostModel::from_json(
            r#"{"schema":"rtvirt.hostmodel/v1","admission":{"rt_runtime_us":-1,"rt_period_us":1000000}}"#,
        )
        .unwrap();
        assert_eq!(off.bandwidth_cap().value, 1.0);
    }

    #[test]
    fn bad_models_are_located() {
        let e = HostModel::from_json(r#"{"schema":"rtvirt.plan/v1"}"#).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("schema"));
        assert!(e.message.contains("expected \"rtvirt.hostmodel/v1\""), "{e}");
        let e =
            HostModel::from_json("{\"schema\":\"rtvirt.hostmodel/v1\",\n\"context_switch_ns\":\"fast\"}").unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("context_switch_ns"));
        assert_eq!(e.at.line_col.map(|l| l.0), Some(2));
        let e = HostModel::from_json(r#"{"schema":"rtvirt.hostmodel/v1","cache_reload":1}"#).unwrap_err();
        assert!(e.message.contains("unknown field `cache_reload`"), "{e}");
        let e =
            HostModel::from_json(r#"{"schema":"rtvirt.hostmodel/v1","release_latency_ns":{"p50":5,"p99":4,"max":9}}"#)
                .unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("release_latency_ns"));
        let e = HostModel::from_json(
            r#"{"schema":"rtvirt.hostmodel/v1","admission":{"rt_runtime_us":2000000,"rt_period_us":1000000}}"#,
        )
        .unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("admission.rt_runtime_us"));
        let e =
            HostModel::from_json(r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":4000000000000}"#).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("server_overhead_ns"));
        let e = HostModel::from_json("[1]").unwrap_err();
        assert!(e.message.contains("expected an rtvirt.hostmodel/v1 JSON document"), "{e}");
    }
}
