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
//! tick_phase = "0ns"          # ticks at tick_phase + k * tick after the first release (mod the tick)
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
//! Parsing checks every value (`validate_sim.rs`) and every combination ([`check_threads`]) into
//! the types below; the simulator (`rtvirt-sim`) consumes them as they are and only combines a
//! plan (`--plan`, checked again with [`check_threads`]) and the command line's
//! `--duration`/`--seed` at run time.

use crate::duration::Nanos;

use crate::error::InputError;
use std::collections::HashMap;

/// Default simulated horizon (`[sim] duration`).
pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(10);

/// Shortest period, budget or quantum the simulator takes: one microsecond, for task periods
/// (checked by `rtvirt simulate`; the planner takes any), `rtds`/`ds`/`ps`/`supply` budgets and
/// periods, `deadline` periods, the RR `quantum`, `rt_period`, `[[sim.thread]]` periods and the
/// Xen ping `period`. Shorter values cost an event per nanosecond (about 130 s of wall time per
/// simulated second); SCHED_DEADLINE's own runtime floor stays 1024 ns.
pub const MIN_SIM_TIMING: Nanos = Nanos::from_us(1);

/// `duration` when it is at least [`MIN_SIM_TIMING`], else an error naming `field`.
pub fn check_sim_timing(duration: Nanos, field: &str) -> Result<Nanos, InputError> {
    if duration < MIN_SIM_TIMING {
        return Err(InputError::field(
            field,
            format!("{duration}: the simulator takes periods, budgets and quanta of at least {MIN_SIM_TIMING}"),
        ));
    }
    Ok(duration)
}

/// Largest accepted `guest_slowdown` / `slowdown` (a guest ten times slower than bare metal).
pub const MAX_SLOWDOWN: f64 = 10.0;

/// The checked `[sim]` section (defaults when the file has none).
#[derive(Debug, Clone, PartialEq)]
pub struct SimSection {
    pub settings: Settings,
    /// `guest_slowdown`: the slowdown of vCPUs that do not set their own (already applied to
    /// every [`VcpuSpec`]).
    pub guest_slowdown: f64,
    /// `[[sim.thread]]`: extra host threads, in file order.
    pub threads: Vec<ExtraThread>,
}

impl VcpuSpec {
    /// vCPU 0 of a guest without `[guest.vcpu]`: SCHED_OTHER nice 0 on `core`.
    pub fn default_for(guest: &str, core: u32) -> VcpuSpec {
        VcpuSpec {
            thread: ThreadSpec {
                name: vcpu_thread_name(guest, 0),
                cores: vec![core],
                policy: Policy::Other { nice: 0 },
            },
            idle_poll: false,
            context_switch: 0,
            slowdown: 0.0,
        }
    }
}

/// The simulated host thread of a guest's vCPU `id`: `<guest>/vcpu<id>`.
pub fn vcpu_thread_name(guest: &str, id: u32) -> String {
    format!("{guest}/vcpu{id}")
}

/// How a host thread is scheduled.
#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// SCHED_FIFO (rr_quantum None) or SCHED_RR, priority 1..99 (higher = more urgent).
    Rt { prio: u8, rr_quantum: Option<u64> },
    /// SCHED_DEADLINE (runtime <= deadline <= period, ns).
    Deadline { runtime: u64, deadline: u64, period: u64 },
    /// SCHED_OTHER with a nice value.
    Other { nice: i8 },
    /// Xen Credit scheduler (credit1) weight.
    Credit { weight: u32 },
    /// Xen RTDS: EDF over deferrable servers; `extratime` lets a depleted vCPU use idle time.
    Rtds { budget: u64, period: u64, extratime: bool },
    /// RT-Xen fixed-priority deferrable server (higher prio = more urgent).
    Ds { prio: u32, budget: u64, period: u64 },
    /// RT-Xen fixed-priority periodic (polling) server: budget idles away when it has no work.
    Ps { prio: u32, budget: u64, period: u64 },
    /// A static periodic supply: the thread owns its core for `budget` in every `period`, at the
    /// position given by the pattern (time partitioning; the analysis' periodic resource).
    Supply { budget: u64, period: u64, pattern: SupplyPattern },
}

/// Position of the supply window inside each period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SupplyPattern {
    /// [kP, kP + B)
    Early,
    /// [(k+1)P - B, (k+1)P)
    Late,
    /// Early in the first period, late in every later one: the periodic resource model's
    /// worst-case blackout of 2(P - B) right after the first window (Shin & Lee 2003, Fig. 2).
    PrmWorst,
    /// A uniformly random position in each period (seeded).
    Random,
}

/// Which host scheduler family a policy belongs to; one cluster of cores runs one family
/// (plus `supply` windows, which sit above any family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Linux,
    Credit,
    Rtds,
    RtXen,
    Supply,
}

impl Policy {
    pub fn family(&self) -> Family {
        match self {
            Policy::Rt { .. } | Policy::Deadline { .. } | Policy::Other { .. } => Family::Linux,
            Policy::Credit { .. } => Family::Credit,
            Policy::Rtds { .. } => Family::Rtds,
            Policy::Ds { .. } | Policy::Ps { .. } => Family::RtXen,
            Policy::Supply { .. } => Family::Supply,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Policy::Rt { rr_quantum: None, .. } => "fifo",
            Policy::Rt { .. } => "rr",
            Policy::Deadline { .. } => "deadline",
            Policy::Other { .. } => "other",
            Policy::Credit { .. } => "credit",
            Policy::Rtds { .. } => "rtds",
            Policy::Ds { .. } => "ds",
            Policy::Ps { .. } => "ps",
            Policy::Supply { .. } => "supply",
        }
    }
}

/// A host thread: name, affinity (cores it may run on) and policy.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSpec {
    pub name: String,
    pub cores: Vec<u32>,
    pub policy: Policy,
}

/// One guest's vCPU thread.
#[derive(Debug, Clone, PartialEq)]
pub struct VcpuSpec {
    pub thread: ThreadSpec,
    /// An idle vCPU busy-polls (stays runnable) instead of halting.
    pub idle_poll: bool,
    /// Guest cost of switching between two tasks (ns).
    pub context_switch: u64,
    /// Every job of the guest needs `(1 + slowdown)` times its drawn execution time: the task
    /// models are bare-metal times, a guest pays nested paging, VM exits and cache/TLB
    /// pollution on every instruction it runs (see docs/simulate.md).
    pub slowdown: f64,
}

/// What an extra host thread does.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Runs `run` ns every `period` ns from `offset`.
    Periodic { period: u64, run: u64, offset: u64 },
    /// Always runnable (a CPU hog).
    Busy,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExtraThread {
    pub thread: ThreadSpec,
    pub load: Load,
}

/// `[sim]`'s engine settings, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub duration: u64,
    pub seed: u64,
    /// Late jobs are aborted at their deadline (else they keep running).
    pub abort_late: bool,
    /// Scheduler tick period (ns), 1e9 / HZ.
    pub tick: u64,
    /// Where the ticks fall: at `tick_phase + k * tick` (taken modulo the tick), time 0 being
    /// the first release. A real run's phase is fixed by when it started (the kernel's ticks are
    /// at multiples of the tick on CLOCK_MONOTONIC), so a measurement states it.
    pub tick_phase: u64,
    pub hrtick: bool,
    /// RT throttling (rt_runtime, rt_period) per core, None when disabled.
    pub rt_throttle: Option<(u64, u64)>,
    pub vcpu_switch: u64,
    pub credit_tslice: u64,
    pub credit_ratelimit: u64,
    /// Xen Credit burns credits for the exact time run (else: sampled 10 ms tick accounting).
    pub credit_precise: bool,
}

/// The rules that span host threads: affinities equal or disjoint, one scheduler family per
/// cluster, SCHED_DEADLINE admission. `threads` are the guests' vCPU threads and the extra
/// threads, each with the field its errors name (`guest[1].vcpu`, `sim.thread[0].sched`);
/// `rt_throttle` is `[sim]`'s (rt_runtime, rt_period).
pub fn check_threads(threads: &[(&ThreadSpec, String)], rt_throttle: Option<(u64, u64)>) -> Result<(), InputError> {
    let specs: Vec<&ThreadSpec> = threads.iter().map(|t| t.0).collect();
    let field = |i: usize| threads[i].1.clone();
    check_clusters(&specs, &field)?;
    check_deadline_admission(&specs, rt_throttle, &field)
}

/// The kernel's SCHED_DEADLINE admission control: the reservations of a set of cores may not
/// exceed m * sched_rt_runtime_us / sched_rt_period_us (m with RT throttling disabled); beyond it
/// `sched_setattr` fails with EBUSY, so such a host cannot be configured.
fn check_deadline_admission(
    specs: &[&ThreadSpec],
    rt_throttle: Option<(u64, u64)>,
    field: &dyn Fn(usize) -> String,
) -> Result<(), InputError> {
    let limit = rt_throttle.map(|(r, p)| r as f64 / p as f64).unwrap_or(1.0);
    // the reservations so far per set of cores (one pass: planned scenarios hold thousands)
    let mut reserved: HashMap<&[u32], f64> = HashMap::new();
    for (i, thread) in specs.iter().enumerate() {
        let Policy::Deadline { runtime, period, .. } = thread.policy else { continue };
        let bandwidth = reserved.entry(thread.cores.as_slice()).or_insert(0.0);
        *bandwidth += runtime as f64 / period as f64;
        let (bandwidth, cap) = (*bandwidth, limit * thread.cores.len() as f64);
        if bandwidth > cap + 1e-12 {
            return Err(InputError::field(
                format!("{}.runtime", field(i)),
                format!(
                "SCHED_DEADLINE admission control: reservations on cores {:?} add up to bandwidth {bandwidth:.4} > \
                 {cap:.4} (rt_runtime / rt_period per core); the kernel would refuse sched_setattr (EBUSY)",
                thread.cores
            ),
            ));
        }
    }
    Ok(())
}

/// Affinities must be equal or disjoint (each set of cores is one scheduling cluster), and one
/// cluster runs one scheduler family (supply windows may sit above any of them).
fn check_clusters(specs: &[&ThreadSpec], field: &dyn Fn(usize) -> String) -> Result<(), InputError> {
    // the earlier threads on each core: only those can overlap (one pass, not every pair)
    let mut on_core: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, a) in specs.iter().enumerate() {
        let mut earlier: Vec<usize> = a.cores.iter().filter_map(|c| on_core.get(c)).flatten().copied().collect();
        earlier.sort_unstable();
        earlier.dedup();
        for b in earlier.into_iter().map(|j| specs[j]) {
            if a.cores != b.cores {
                return Err(InputError::field(
                    format!("{}.cores", field(i)),
                    format!(
                        "cores {:?} overlap the cores {:?} of \"{}\" without being the same set: affinities must be \
                         equal (global scheduling) or disjoint (partitioned)",
                        a.cores, b.cores, b.name
                    ),
                ));
            }
            let (fa, fb) = (a.policy.family(), b.policy.family());
            if fa != fb && fa != Family::Supply && fb != Family::Supply {
                return Err(InputError::field(
                    format!("{}.policy", field(i)),
                    format!(
                        "\"{}\" cannot share cores with \"{}\" ({}): one set of cores runs one host scheduler (Linux, \
                         Xen Credit, Xen RTDS or RT-Xen)",
                        a.policy.name(),
                        b.name,
                        b.policy.name()
                    ),
                ));
            }
        }
        for &c in &a.cores {
            on_core.entry(c).or_default().push(i);
        }
    }
    Ok(())
}

#[cfg(test)]
mod cross_thread_tests {
    use super::*;
    use proptest::prelude::*;

    /// The rules checked pairwise, as written (the oracle of the one-pass checks).
    fn pairwise(specs: &[&ThreadSpec], limit: f64) -> Result<(), String> {
        for (i, a) in specs.iter().enumerate() {
            for b in &specs[..i] {
                let overlap = a.cores.iter().any(|c| b.cores.contains(c));
                if overlap && a.cores != b.cores {
                    return Err(format!("{i}.cores"));
                }
                let (fa, fb) = (a.policy.family(), b.policy.family());
                if overlap && fa != fb && fa != Family::Supply && fb != Family::Supply {
                    return Err(format!("{i}.policy"));
                }
            }
        }
        for (i, a) in specs.iter().enumerate() {
            let bandwidth: f64 = specs[..=i]
                .iter()
                .filter(|b| b.cores == a.cores)
                .map(|b| match b.policy {
                    Policy::Deadline { runtime, period, .. } => runtime as f64 / period as f64,
                    _ => 0.0,
                })
                .sum();
            if matches!(a.policy, Policy::Deadline { .. }) && bandwidth > limit * a.cores.len() as f64 + 1e-12 {
                return Err(format!("{i}.runtime"));
            }
        }
        Ok(())
    }

    fn spec(cores: Vec<u32>, kind: u8, runtime: u64) -> ThreadSpec {
        let policy = match kind {
            0 => Policy::Deadline { runtime, deadline: 10, period: 10 },
            1 => Policy::Rt { prio: 10, rr_quantum: None },
            2 => Policy::Credit { weight: 256 },
            _ => Policy::Supply { budget: 1, period: 2, pattern: SupplyPattern::Early },
        };
        ThreadSpec { name: format!("t{kind}"), cores, policy }
    }

    proptest! {
        #[test]
        fn one_pass_checks_find_what_the_pairwise_rules_find(
            threads in prop::collection::vec(
                (prop::collection::btree_set(0u32..4, 1..3), 0u8..4, 1u64..8),
                0..12,
            ),
            throttled in any::<bool>(),
        ) {
            let specs: Vec<ThreadSpec> =
                threads.into_iter().map(|(cores, kind, rt)| spec(cores.into_iter().collect(), kind, rt)).collect();
            let refs: Vec<&ThreadSpec> = specs.iter().collect();
            let named: Vec<(&ThreadSpec, String)> = specs.iter().enumerate().map(|(i, s)| (s, i.to_string())).collect();
            let rt_throttle = throttled.then_some((950_000, 1_000_000));
            let limit = if throttled { 0.95 } else { 1.0 };
            let fast = check_threads(&named, rt_throttle).map_err(|e| e.to_string());
            match pairwise(&refs, limit) {
                Ok(()) => prop_assert!(fast.is_ok(), "{fast:?}"),
                Err(field) => prop_assert!(fast.as_ref().is_err_and(|e| e.contains(&field)), "{field} vs {fast:?}"),
            }
        }
    }
}
