//! Scenario sections used by the simulator: `[sim]` (engine settings, extra host threads) and
//! `[guest.vcpu]` (how a guest's vCPU thread is scheduled on the host).
//!
//! ```toml
//! [sim]
//! duration = "10s"            # simulated horizon (default 10s; `--duration` overrides)
//! seed = 1                    # default 1 (`--seed` overrides)
//! miss_policy = "continue"    # or "abort": a late job is dropped at its deadline
//! hz = 1000                   # scheduler tick (SCHED_DEADLINE enforcement without hrtick)
//! hrtick = false              # exact SCHED_DEADLINE budget enforcement (kernel default: off)
//! rt_throttling = true        # SCHED_FIFO/RR throttling, rt_runtime per rt_period
//! rt_runtime = "950ms"
//! rt_period = "1s"
//! vcpu_switch = "0ns"         # host cost of switching a core to another thread
//! guest_slowdown = 0.0        # jobs in guests run this fraction longer than drawn (VM overhead)
//! credit_tslice = "30ms"      # Xen Credit time slice
//! credit_ratelimit = "0ns"    # Xen Credit rate limit (Xen's own default is 1ms)
//! credit_accounting = "tick"  # or "precise": burn credits for the exact time run
//!
//! [[sim.thread]]              # an extra host thread (interference), periodic or busy
//! name = "noise"
//! period = "10ms"             # with run: runs `run` every `period` from `offset`
//! run = "2ms"
//! sched = { core = 0, policy = "fifo", priority = 90 }
//!
//! [guest.vcpu]                # per guest (default: SCHED_OTHER nice 0 on core i % cores)
//! core = 0                    # or cores = [0, 1] (global scheduling over those cores)
//! policy = "deadline"         # fifo | rr | deadline | other | credit | rtds | ds | ps | supply
//! runtime = "2ms"             # deadline: runtime/deadline/period; rtds/ds/ps/supply: budget/period
//! period = "10ms"
//! idle = "halt"               # or "poll": an idle vCPU busy-waits instead of blocking
//! context_switch = "0ns"      # guest task-switch cost
//! slowdown = 0.0              # this guest's own guest_slowdown
//! ```
//!
//! These are the file's raw fields; the simulator (`rtvirt-sim`, `config.rs`) checks their values
//! and combinations and reports errors with the field path (located by [`locate_sim_error`]).

use super::Scenario;
use crate::duration::Nanos;
use crate::error::InputError;
use serde::Deserialize;

/// `[sim]`: simulator settings.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSim {
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
    /// "continue" (default) or "abort".
    pub miss_policy: Option<String>,
    pub hz: Option<i64>,
    pub hrtick: Option<bool>,
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
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVcpu {
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
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawThread {
    pub name: String,
    pub period: Option<Nanos>,
    pub run: Option<Nanos>,
    pub offset: Option<Nanos>,
    pub busy: Option<bool>,
    #[serde(default)]
    pub sched: RawVcpu,
}

/// Give a simulator-section error found after parsing its line/column in the scenario's file
/// (re-read from `scenario.source`) and the file name.
pub fn locate_sim_error(e: InputError, scenario: &Scenario) -> InputError {
    let Some(path) = &scenario.source else { return e };
    let located = match (&e.at.field, std::fs::read_to_string(path)) {
        (Some(f), Ok(src)) => match super::locate_field(&src, f) {
            Some((l, c)) => e.at_line(l, c),
            None => e,
        },
        _ => e,
    };
    located.in_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sim_sections() {
        let src = r#"
[host]
cores = 1
[sim]
duration = "2s"
miss_policy = "abort"
[[sim.thread]]
name = "noise"
period = "10ms"
run = "1ms"
sched = { core = 0, policy = "fifo", priority = 90 }
[[guest]]
name = "vm1"
scheduler = "edf"
[guest.vcpu]
policy = "deadline"
runtime = "2ms"
period = "10ms"
[[guest.task]]
name = "t"
period = "10ms"
wcet = "1ms"
"#;
        let s = Scenario::from_toml(src, None).unwrap();
        let sim = s.sim.as_ref().unwrap();
        assert_eq!(sim.duration, Some(Nanos::from_secs(2)));
        assert_eq!(sim.threads[0].sched.priority, Some(90));
        assert_eq!(s.guests[0].vcpu.as_ref().unwrap().runtime, Some(Nanos::from_ms(2)));
        let e = Scenario::from_toml(&src.replace("runtime = ", "runtme = "), None).unwrap_err();
        assert!(e.to_string().contains("runtme"), "{e}");
    }
}
