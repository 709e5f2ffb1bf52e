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
//! The model also holds the kernel's SCHED_DEADLINE period limits (`sched_deadline_period_min_us`
//! / `_max_us`, 100 us / 4194304 us by default, as the kernel's own defaults) and what is known
//! of the host's CPUs (online, `nohz_full`, which CPUs take device interrupts), from which
//! [`HostModel::housekeeping`] names the CPUs a plan should leave to the host.
//!
//! Named presets ([`HostModel::preset`], docs/plan.md "Host models") describe hosts that are not
//! this one; their figures are typical, not measured here:
//! - `stock`: the defaults above.
//! - `preempt-rt`: a tuned PREEMPT_RT x86 host (isolated CPUs, no power management): release
//!   latency p50 3 us / p99 10 us / max 40 us, within the range of the long-term cyclictest
//!   results the OSADL QA Farm publishes for tuned x86 PREEMPT_RT systems (OSADL QA Farm) and of
//!   those surveyed by Reghenzani, Massari & Fornaciari 2019; HRTICK enforcement, whose overrun
//!   is bounded by the lateness of the HRTICK timer's interrupt, taken as the release latency's
//!   max (40 us). The other figures keep the defaults (they do not depend on PREEMPT_RT), and
//!   its isolated CPUs are unknown.
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
    #[serde(default = "default_server_overhead_ns")]
    pub server_overhead_ns: u64,
    /// One context switch between two threads on a CPU (ns).
    #[serde(default = "default_context_switch_ns")]
    pub context_switch_ns: u64,
    /// Timer wake-up latency (release latency, ns): how late a thread runs after its timer expired.
    #[serde(default = "default_release_latency_ns")]
    pub release_latency_ns: LatencySummary,
    /// How the kernel enforces a reservation's runtime.
    #[serde(default)]
    pub enforcement: Enforcement,
    /// Extra execution a preempted job needs to reload its working set (ns per preemption).
    #[serde(default = "default_cache_reload_ns")]
    pub cache_reload_ns: u64,
    /// One vCPU exit and re-entry (ns), measured under KVM; None when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpu_exit_ns: Option<u64>,
    /// The kernel's admission limits.
    #[serde(default)]
    pub admission: AdmissionLimits,
    /// The host's CPUs: online, tickless, taking device interrupts (all empty: not known).
    #[serde(default, skip_serializing_if = "HostCpus::is_empty")]
    pub cpus: HostCpus,
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
    /// `/proc/sys/kernel/sched_deadline_period_min_us`: the shortest reservation period the
    /// kernel accepts (sched_setattr fails with EINVAL below it).
    #[serde(default = "default_deadline_period_min_us")]
    pub deadline_period_min_us: u64,
    /// `/proc/sys/kernel/sched_deadline_period_max_us`: the longest.
    #[serde(default = "default_deadline_period_max_us")]
    pub deadline_period_max_us: u64,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        AdmissionLimits {
            rt_runtime_us: 950_000,
            rt_period_us: 1_000_000,
            fair_servers: None,
            isolated_cpus: vec![],
            deadline_period_min_us: default_deadline_period_min_us(),
            deadline_period_max_us: default_deadline_period_max_us(),
        }
    }
}

/// The host's CPUs as far as they are known (an empty list: not known).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostCpus {
    /// `/sys/devices/system/cpu/online`.
    #[serde(default)]
    pub online: Vec<u32>,
    /// `/sys/devices/system/cpu/nohz_full`: CPUs whose tick stops while one task runs.
    #[serde(default)]
    pub nohz_full: Vec<u32>,
    /// Device interrupts (IRQs with a handler) and the CPUs that take them.
    #[serde(default)]
    pub irqs: Vec<IrqPlacement>,
}

/// One device interrupt and where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IrqPlacement {
    pub irq: u32,
    /// Its handlers (/sys/kernel/irq/N/actions), e.g. "virtio1-req.0".
    pub name: String,
    /// CPUs that take it: `/proc/irq/N/effective_affinity_list`.
    pub cpus: Vec<u32>,
    /// CPUs it may be moved to: `/proc/irq/N/smp_affinity_list` (empty: not known).
    #[serde(default)]
    pub allowed: Vec<u32>,
}

impl IrqPlacement {
    /// Whether its affinity lets it go to a CPU that does not take it now (the kernel or an
    /// administrator may move it there). Unknown affinity: not movable.
    pub fn movable(&self) -> bool {
        self.allowed.iter().any(|c| !self.cpus.contains(c))
    }
}

impl HostCpus {
    pub fn is_empty(&self) -> bool {
        self.online.is_empty() && self.nohz_full.is_empty() && self.irqs.is_empty()
    }

    /// The CPUs that take a device interrupt, sorted.
    pub fn irq_cpus(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.irqs.iter().flat_map(|i| i.cpus.iter().copied()).collect();
        v.sort_unstable();
        v.dedup();
        v
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

// serde's defaults of the fields above.
fn default_server_overhead_ns() -> u64 {
    10_000
}
fn default_context_switch_ns() -> u64 {
    3_000
}
fn default_release_latency_ns() -> LatencySummary {
    LatencySummary { p50: 10_000, p99: 60_000, max: 200_000 }
}
fn default_cache_reload_ns() -> u64 {
    20_000
}
fn default_deadline_period_min_us() -> u64 {
    100
}
fn default_deadline_period_max_us() -> u64 {
    4_194_304
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
        if a.deadline_period_min_us < 1 || a.deadline_period_min_us > a.deadline_period_max_us {
            return Err(InputError::field(
                "admission.deadline_period_min_us",
                format!(
                    "{} / {} us: expected 1 <= sched_deadline_period_min_us <= sched_deadline_period_max_us",
                    a.deadline_period_min_us, a.deadline_period_max_us
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

impl LatencySummary {
    /// The `q`-quantile of the piecewise-linear distribution whose CDF runs through `(0, 0)`,
    /// `(p50, 0.5)`, `(p99, 0.99)` and `(max, 1)` (rounded to the ns): with probability 0.5 uniform
    /// in `[0, p50]`, 0.49 in `[p50, p99]`, 0.01 in `[p99, max]`. The simulator draws latencies with
    /// it (`q` uniform in [0, 1)); `q <= 0` gives 0, `q >= 1` (or NaN) the max.
    pub fn quantile(&self, q: f64) -> u64 {
        let segment =
            |from: u64, to: u64, fraction: f64| from + (to.saturating_sub(from) as f64 * fraction).round() as u64;
        if q.is_nan() || q >= 1.0 {
            self.max
        } else if q <= 0.0 {
            0
        } else if q < 0.5 {
            segment(0, self.p50, q / 0.5)
        } else if q < 0.99 {
            segment(self.p50, self.p99, (q - 0.5) / 0.49)
        } else {
            segment(self.p99, self.max, ((q - 0.99) / 0.01).min(1.0))
        }
    }
}

/// The measurement name of a CPU's release latency (`rtvirt host calibrate`).
const RELEASE_LATENCY_PREFIX: &str = "release_latency cpu";
/// The measurement name of the enforcement overrun.
pub const ENFORCEMENT_OVERRUN: &str = "enforcement_overrun";

impl HostModel {
    /// Each housekeeping CPU (one a plan should leave to the host) with why, sorted by CPU: CPU 0
    /// by convention, every CPU that takes a device interrupt that cannot go elsewhere (its
    /// affinity allows only the CPUs that take it, or is not known: [`IrqPlacement::movable`]),
    /// and when some CPUs are isolated, every online CPU that is not. A CPU that takes only
    /// interrupts that may go elsewhere is not one: their affinity can be set away from it (a
    /// profile's `irq` role, `rtvirt host apply`).
    pub fn housekeeping(&self) -> Vec<(u32, String)> {
        let mut why: std::collections::BTreeMap<u32, Vec<String>> = std::collections::BTreeMap::new();
        why.entry(0).or_default().push("housekeeping by convention (boot CPU, timers, most IRQs)".into());
        let mut irqs: std::collections::BTreeMap<u32, Vec<String>> = std::collections::BTreeMap::new();
        for i in self.cpus.irqs.iter().filter(|i| !i.movable()) {
            for &c in &i.cpus {
                irqs.entry(c).or_default().push(format!("IRQ {} ({})", i.irq, i.name));
            }
        }
        const SHOWN: usize = 6;
        for (c, list) in irqs {
            let more = list.len().saturating_sub(SHOWN);
            let mut text = format!(
                "takes device interrupts its affinity keeps there: {}",
                list[..list.len().min(SHOWN)].join(", ")
            );
            if more > 0 {
                text += &format!(" and {more} more");
            }
            why.entry(c).or_default().push(text);
        }
        let isolated = &self.admission.isolated_cpus;
        if !isolated.is_empty() {
            for &c in self.cpus.online.iter().filter(|c| !isolated.contains(c)) {
                why.entry(c).or_default().push("not isolated (isolcpus/nohz_full)".into());
            }
        }
        why.into_iter().map(|(c, w)| (c, w.join("; "))).collect()
    }

    /// Each CPU's release latency p99 (ns) from the calibration's `release_latency cpuN`
    /// measurements, sorted by CPU (empty when there are none): the quietest CPUs first to use.
    pub fn release_latency_p99_by_cpu(&self) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = self
            .measurements
            .iter()
            .filter(|m| m.count > 0)
            .filter_map(|m| Some((m.name.strip_prefix(RELEASE_LATENCY_PREFIX)?.parse().ok()?, m.p99_ns)))
            .collect();
        v.sort_unstable();
        v.dedup_by_key(|(c, _)| *c);
        v
    }

    /// The distribution of the enforcement overrun: the calibration's `enforcement_overrun`
    /// measurement's p50/p99 with `enforcement.overrun_max_ns` as its max (calibrate makes that
    /// at least a tick under tick enforcement), when the measurement is consistent with it;
    /// otherwise (none, or a figure set by hand below the measured p99) all three at
    /// `overrun_max_ns`.
    pub fn overrun_summary(&self) -> LatencySummary {
        let max = self.enforcement.overrun_max_ns;
        self.measurements
            .iter()
            .find(|m| m.name == ENFORCEMENT_OVERRUN)
            .filter(|m| m.count > 0 && m.p50_ns <= m.p99_ns && m.p99_ns <= max)
            .map_or(LatencySummary { p50: max, p99: max, max }, |m| LatencySummary {
                p50: m.p50_ns,
                p99: m.p99_ns,
                max,
            })
    }

    /// The named presets (name, one line): `--host-model` may name one instead of a file.
    pub const PRESETS: &[(&str, &str)] = &[
        ("stock", "a stock (not PREEMPT_RT) x86 Linux/KVM host never calibrated: the documented defaults, tick enforcement (4 ms overrun)"),
        ("preempt-rt", "a tuned PREEMPT_RT x86 host: HRTICK enforcement, release latency p50/p99/max 3/10/40 us (typical published cyclictest figures, not measured here)"),
    ];

    /// A named preset's model (module doc, docs/plan.md "Host models"); None for an unknown name.
    pub fn preset(name: &str) -> Option<HostModel> {
        let mut m = HostModel::uncalibrated();
        match name {
            "stock" => {}
            "preempt-rt" => {
                m.release_latency_ns = LatencySummary { p50: 3_000, p99: 10_000, max: 40_000 };
                m.enforcement = Enforcement { kind: EnforcementKind::Hrtick, overrun_max_ns: 40_000 };
            }
            _ => return None,
        }
        let (_, about) = HostModel::PRESETS.iter().find(|(n, _)| *n == name)?;
        m.environment.insert("preset".into(), name.into());
        m.environment.insert("description".into(), (*about).into());
        Some(m)
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
    fn period_limits_and_cpus_default_when_omitted_and_are_checked() {
        let m = HostModel::uncalibrated();
        assert_eq!((m.admission.deadline_period_min_us, m.admission.deadline_period_max_us), (100, 4_194_304));
        assert!(m.cpus.is_empty());
        // an old model's admission without the period limits still reads, with the defaults
        let old = HostModel::from_json(
            r#"{"schema":"rtvirt.hostmodel/v1","admission":{"rt_runtime_us":950000,"rt_period_us":1000000}}"#,
        )
        .unwrap();
        assert_eq!(old.admission.deadline_period_min_us, 100);
        let text = r#"{"schema":"rtvirt.hostmodel/v1","admission":{"rt_runtime_us":950000,"rt_period_us":1000000,
            "deadline_period_min_us":200,"deadline_period_max_us":1000000},
            "cpus":{"online":[0,1,2],"nohz_full":[2],"irqs":[{"irq":36,"name":"virtio1-req.0","cpus":[1]}]}}"#;
        let m = HostModel::from_json(text).unwrap();
        assert_eq!(m.admission.deadline_period_min_us, 200);
        assert_eq!(m.cpus.irq_cpus(), vec![1]);
        assert_eq!(HostModel::from_json(&serde_json::to_string(&m).unwrap()).unwrap(), m);
        for (min, max) in [(0, 100), (200, 100)] {
            let e = HostModel::from_json(&format!(
                r#"{{"schema":"rtvirt.hostmodel/v1","admission":{{"rt_runtime_us":950000,"rt_period_us":1000000,
                "deadline_period_min_us":{min},"deadline_period_max_us":{max}}}}}"#
            ))
            .unwrap_err();
            assert_eq!(e.at.field.as_deref(), Some("admission.deadline_period_min_us"), "{e}");
            assert!(e.message.contains("expected 1 <= sched_deadline_period_min_us"), "{e}");
        }
    }

    fn irq(irq: u32, name: &str, cpus: &[u32]) -> IrqPlacement {
        IrqPlacement { irq, name: name.into(), cpus: cpus.to_vec(), allowed: vec![] }
    }

    #[test]
    fn housekeeping_cpus_say_why() {
        let mut m = HostModel::uncalibrated();
        assert_eq!(m.housekeeping(), vec![(0, "housekeeping by convention (boot CPU, timers, most IRQs)".to_string())]);
        m.cpus.online = vec![0, 1, 2, 3];
        m.cpus.irqs = vec![irq(26, "ttyS0", &[1]), irq(36, "virtio1-req.0", &[1]), irq(41, "virtio3-rx", &[0])];
        let hk = m.housekeeping();
        assert_eq!(hk.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(
            hk[0].1,
            "housekeeping by convention (boot CPU, timers, most IRQs); takes device interrupts its affinity keeps \
             there: IRQ 41 (virtio3-rx)"
        );
        assert_eq!(hk[1].1, "takes device interrupts its affinity keeps there: IRQ 26 (ttyS0), IRQ 36 (virtio1-req.0)");
        // interrupts whose affinity lets them go elsewhere (as on this VM, 0-1 each) do not make
        // their CPU housekeeping; one pinned by its affinity does
        let movable = |n, name: &str, on: &[u32]| IrqPlacement { allowed: vec![0, 1], ..irq(n, name, on) };
        m.cpus.irqs =
            vec![movable(26, "ttyS0", &[1]), movable(41, "virtio3-rx", &[0]), movable(36, "virtio1-req.0", &[1])];
        assert!(m.cpus.irqs[0].movable());
        assert_eq!(m.housekeeping().iter().map(|h| h.0).collect::<Vec<_>>(), vec![0]);
        m.cpus.irqs.push(IrqPlacement { allowed: vec![1], ..irq(50, "nvme0q1", &[1]) });
        assert_eq!(
            m.housekeeping()[1],
            (1, "takes device interrupts its affinity keeps there: IRQ 50 (nvme0q1)".into())
        );
        m.cpus.irqs = vec![irq(26, "ttyS0", &[1]), irq(36, "virtio1-req.0", &[1]), irq(41, "virtio3-rx", &[0])];
        m.admission.isolated_cpus = vec![3];
        let hk = m.housekeeping();
        assert_eq!(hk.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(hk[2].1, "not isolated (isolcpus/nohz_full)");
        assert!(hk[1].1.ends_with("; not isolated (isolcpus/nohz_full)"), "{}", hk[1].1);
        // a long IRQ list is cut
        m.cpus.irqs = (0..10).map(|i| irq(40 + i, "q", &[3])).collect();
        let hk = m.housekeeping();
        assert!(hk.iter().any(|(c, w)| *c == 3 && w.ends_with("IRQ 45 (q) and 4 more")), "{hk:?}");
    }

    fn measured(name: &str, p50: u64, p99: u64, max: u64) -> Measurement {
        Measurement {
            name: name.into(),
            method: "test".into(),
            count: 10,
            p50_ns: p50,
            p99_ns: p99,
            max_ns: max,
            note: None,
        }
    }

    #[test]
    fn release_latency_per_cpu_and_overrun_come_from_the_measurements() {
        let mut m = HostModel::uncalibrated();
        assert!(m.release_latency_p99_by_cpu().is_empty());
        assert_eq!(m.overrun_summary(), LatencySummary { p50: 4_000_000, p99: 4_000_000, max: 4_000_000 });
        m.measurements = vec![
            measured("release_latency cpu1", 5, 30, 90),
            measured("context_switch", 1, 2, 3),
            measured("release_latency cpu0", 5, 80, 900),
            measured(ENFORCEMENT_OVERRUN, 1_000, 3_900_000, 3_950_000),
        ];
        assert_eq!(m.release_latency_p99_by_cpu(), vec![(0, 80), (1, 30)]);
        assert_eq!(m.overrun_summary(), LatencySummary { p50: 1_000, p99: 3_900_000, max: 4_000_000 });
        // a figure set by hand below the measured p99 wins
        m.enforcement = Enforcement { kind: EnforcementKind::Hrtick, overrun_max_ns: 5_000 };
        assert_eq!(m.overrun_summary(), LatencySummary { p50: 5_000, p99: 5_000, max: 5_000 });
    }

    #[test]
    fn presets_are_named_and_described() {
        assert_eq!(HostModel::preset("nope"), None);
        for (name, about) in HostModel::PRESETS {
            let m = HostModel::preset(name).unwrap();
            assert_eq!(m.environment["preset"], *name);
            assert!(!about.is_empty());
            // each reads back as a host model
            assert_eq!(HostModel::from_json(&serde_json::to_string(&m).unwrap()).unwrap(), m);
        }
        let stock = HostModel::preset("stock").unwrap();
        assert_eq!(stock.enforcement, Enforcement { kind: EnforcementKind::Tick, overrun_max_ns: 4_000_000 });
        assert_eq!(stock.release_latency_ns, HostModel::uncalibrated().release_latency_ns);
        let rt = HostModel::preset("preempt-rt").unwrap();
        assert_eq!(rt.enforcement.kind, EnforcementKind::Hrtick);
        assert!(rt.enforcement.overrun_max_ns <= 50_000);
        assert_eq!(rt.release_latency_ns, LatencySummary { p50: 3_000, p99: 10_000, max: 40_000 });
        assert!(rt.admission.isolated_cpus.is_empty());
    }

    /// The CDF through (0,0), (p50,0.5), (p99,0.99), (max,1) at x (a jump where two points share x).
    fn cdf(r: LatencySummary, x: f64) -> f64 {
        let points = [(0.0, 0.0), (r.p50 as f64, 0.5), (r.p99 as f64, 0.99), (r.max as f64, 1.0)];
        let mut f = 0.0;
        for w in points.windows(2) {
            let ((a, fa), (b, fb)) = (w[0], w[1]);
            if x >= b {
                f = fb;
            } else {
                if x >= a && b > a {
                    f = fa + (x - a) / (b - a) * (fb - fa);
                }
                break;
            }
        }
        f
    }

    proptest::proptest! {
        #[test]
        fn quantile_inverts_the_piecewise_cdf(a in 0u64..3000, b in 0u64..3000, c in 0u64..3000, q in 0.0f64..1.0) {
            let mut v = [a, b, c];
            v.sort_unstable();
            let r = LatencySummary { p50: v[0], p99: v[1], max: v[2] };
            // brute force: the least integer x with F(x) >= q
            let brute = (0..=r.max).find(|&x| cdf(r, x as f64) >= q - 1e-12).unwrap();
            let got = r.quantile(q);
            proptest::prop_assert!(got.abs_diff(brute) <= 1, "{r:?} q {q}: {got} vs {brute}");
            proptest::prop_assert!(got <= r.max);
        }
    }

    #[test]
    fn quantile_ends() {
        let r = LatencySummary { p50: 10, p99: 60, max: 200 };
        assert_eq!((r.quantile(0.0), r.quantile(0.5), r.quantile(0.99)), (0, 10, 60));
        assert_eq!((r.quantile(1.0), r.quantile(2.0), r.quantile(f64::NAN), r.quantile(-1.0)), (200, 200, 200, 0));
        assert_eq!(r.quantile(0.995), 130);
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
