//! Scenario (+ plan) -> the simulator's typed, checked configuration: engine settings, one vCPU
//! thread per guest (policy, affinity, idle mode) and extra host threads. Every rule here reports
//! an [`InputError`] naming the field (`guest[1].vcpu.priority`, `sim.thread[0].sched.policy`).

use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::sim::{RawSim, RawThread, RawVcpu};
use rtvirt_model::scenario::{check_horizon, check_timing, Scenario};
use rtvirt_model::{InputError, Nanos};

type R<T> = Result<T, InputError>;

/// Default simulated horizon.
pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(10);
/// Longest accepted horizon (the scenario model's limit for every simulator).
pub const MAX_DURATION: Nanos = rtvirt_model::scenario::MAX_HORIZON;

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

/// Engine settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub duration: u64,
    pub seed: u64,
    /// Late jobs are aborted at their deadline (else they keep running).
    pub abort_late: bool,
    /// Scheduler tick period (ns), 1e9 / HZ.
    pub tick: u64,
    pub hrtick: bool,
    /// RT throttling (rt_runtime, rt_period) per core, None when disabled.
    pub rt_throttle: Option<(u64, u64)>,
    pub vcpu_switch: u64,
    pub credit_tslice: u64,
    pub credit_ratelimit: u64,
    /// Xen Credit burns credits for the exact time run (else: sampled 10 ms tick accounting).
    pub credit_precise: bool,
}

/// The whole checked configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub settings: Settings,
    /// One per guest, in scenario order.
    pub vcpus: Vec<VcpuSpec>,
    pub extra: Vec<ExtraThread>,
}

/// Command-line values that override the scenario's `[sim]` section.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
}

impl SimConfig {
    /// Check the scenario's simulator sections; with a plan, every vCPU becomes a SCHED_DEADLINE
    /// reservation (runtime = budget, deadline, period) pinned to the plan's core.
    pub fn new(s: &Scenario, plan: Option<&Plan>, o: Overrides) -> R<SimConfig> {
        let raw = s.sim.clone().unwrap_or_default();
        let settings = settings(&raw, o).map_err(|e| match (e.at.field.as_deref(), o.duration) {
            // the horizon came from the command line, not from the file
            (Some("duration"), Some(_)) => InputError { at: Default::default(), ..e }.under("--duration"),
            _ => e.under("sim"),
        })?;
        let cores = s.host.cores;
        let default_slowdown = slowdown(raw.guest_slowdown, "guest_slowdown").map_err(|e| e.under("sim"))?;
        let mut vcpus = Vec::with_capacity(s.guests.len());
        for (i, g) in s.guests.iter().enumerate() {
            if g.tasks.is_empty() {
                return Err(InputError::field(format!("guest[{i}]"), format!("guest \"{}\" has no tasks: expected at least one [[guest.task]] (as `rtvirt plan`; to load a core without tasks, use a [[sim.thread]])", g.name)));
            }
            let at = format!("guest[{i}].vcpu");
            let raw = g.vcpu.clone().unwrap_or_default();
            let mut v = vcpu(&raw, &g.name, i as u32 % cores, cores, default_slowdown).map_err(|e| e.under(&at))?;
            if let Some(p) = plan {
                v.thread = planned(p, &g.name, v.thread.name.clone())?;
            }
            vcpus.push(v);
        }
        let mut extra = Vec::with_capacity(raw.threads.len());
        for (i, t) in raw.threads.iter().enumerate() {
            extra.push(extra_thread(t, cores).map_err(|e| e.under(&format!("sim.thread[{i}]")))?);
        }
        let cfg = SimConfig { settings, vcpus, extra };
        cfg.check_clusters()?;
        cfg.check_deadline_admission()?;
        Ok(cfg)
    }

    /// Every thread's spec, vCPUs first (thread id = index).
    pub fn threads(&self) -> impl Iterator<Item = &ThreadSpec> {
        self.vcpus.iter().map(|v| &v.thread).chain(self.extra.iter().map(|e| &e.thread))
    }

    /// Field path of thread `i` (for errors).
    fn thread_field(&self, i: usize) -> String {
        if i < self.vcpus.len() {
            format!("guest[{i}].vcpu")
        } else {
            format!("sim.thread[{}].sched", i - self.vcpus.len())
        }
    }

    /// The kernel's SCHED_DEADLINE admission control: the reservations of a set of cores may
    /// not exceed m * sched_rt_runtime_us / sched_rt_period_us (m with RT throttling disabled);
    /// beyond it `sched_setattr` fails with EBUSY, so such a host cannot be configured.
    fn check_deadline_admission(&self) -> R<()> {
        let limit = self.settings.rt_throttle.map(|(r, p)| r as f64 / p as f64).unwrap_or(1.0);
        let specs: Vec<&ThreadSpec> = self.threads().collect();
        for (i, a) in specs.iter().enumerate() {
            let bw: f64 = specs
                .iter()
                .take(i + 1)
                .filter(|b| b.cores == a.cores)
                .map(|b| match b.policy {
                    Policy::Deadline { runtime, period, .. } => runtime as f64 / period as f64,
                    _ => 0.0,
                })
                .sum();
            let cap = limit * a.cores.len() as f64;
            if matches!(a.policy, Policy::Deadline { .. }) && bw > cap + 1e-12 {
                return Err(InputError::field(
                    format!("{}.runtime", self.thread_field(i)),
                    format!("SCHED_DEADLINE admission control: reservations on cores {:?} add up to bandwidth {bw:.4} > {cap:.4} (rt_runtime / rt_period per core); the kernel would refuse sched_setattr (EBUSY)", a.cores),
                ));
            }
        }
        Ok(())
    }

    /// Affinities must be equal or disjoint (each set of cores is one scheduling cluster), and
    /// one cluster runs one scheduler family (supply windows may sit above any of them).
    fn check_clusters(&self) -> R<()> {
        let specs: Vec<&ThreadSpec> = self.threads().collect();
        for (i, a) in specs.iter().enumerate() {
            for b in specs.iter().take(i) {
                let overlap = a.cores.iter().any(|c| b.cores.contains(c));
                if overlap && a.cores != b.cores {
                    return Err(InputError::field(
                        format!("{}.cores", self.thread_field(i)),
                        format!("cores {:?} overlap the cores {:?} of \"{}\" without being the same set: affinities must be equal (global scheduling) or disjoint (partitioned)", a.cores, b.cores, b.name),
                    ));
                }
                let (fa, fb) = (a.policy.family(), b.policy.family());
                if overlap && fa != fb && fa != Family::Supply && fb != Family::Supply {
                    return Err(InputError::field(
                        format!("{}.policy", self.thread_field(i)),
                        format!("\"{}\" cannot share cores with \"{}\" ({}): one set of cores runs one host scheduler (Linux, Xen Credit, Xen RTDS or RT-Xen)", a.policy.name(), b.name, b.policy.name()),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn settings(raw: &RawSim, o: Overrides) -> R<Settings> {
    let duration = check_horizon(o.duration.or(raw.duration).unwrap_or(DEFAULT_DURATION), "duration")?;
    let abort_late = match raw.miss_policy.as_deref() {
        None | Some("continue") => false,
        Some("abort") => true,
        Some(o) => {
            return Err(InputError::field("miss_policy", format!("\"{o}\": expected \"continue\" or \"abort\"")))
        }
    };
    let hz = raw.hz.unwrap_or(1000);
    if !(10..=10_000).contains(&hz) {
        return Err(InputError::field("hz", format!("{hz}: expected a tick rate from 10 to 10000")));
    }
    let rt_runtime = raw.rt_runtime.unwrap_or(Nanos::from_ms(950));
    let rt_period = raw.rt_period.unwrap_or(Nanos::from_secs(1));
    if rt_period.0 == 0 || rt_runtime > rt_period {
        return Err(InputError::field(
            "rt_runtime",
            format!("rt_runtime {rt_runtime} / rt_period {rt_period}: expected 0 < period and runtime <= period"),
        ));
    }
    let tslice = raw.credit_tslice.unwrap_or(Nanos::from_ms(30));
    if tslice < Nanos::from_us(100) {
        return Err(InputError::field("credit_tslice", format!("{tslice}: expected at least 100us")));
    }
    Ok(Settings {
        duration: duration.0,
        seed: o.seed.or(raw.seed).unwrap_or(1),
        abort_late,
        tick: 1_000_000_000 / hz as u64,
        hrtick: raw.hrtick.unwrap_or(false),
        rt_throttle: raw.rt_throttling.unwrap_or(true).then_some((rt_runtime.0, rt_period.0)),
        vcpu_switch: raw.vcpu_switch.unwrap_or_default().0,
        credit_tslice: tslice.0,
        credit_ratelimit: raw.credit_ratelimit.unwrap_or_default().0,
        credit_precise: match raw.credit_accounting.as_deref() {
            None | Some("tick") => false,
            Some("precise") => true,
            Some(o) => {
                return Err(InputError::field(
                    "credit_accounting",
                    format!(
                        "\"{o}\": expected \"tick\" (credit1: debit the vCPU running at each 10ms tick) or \"precise\""
                    ),
                ))
            }
        },
    })
}

/// Largest accepted `guest_slowdown` / `slowdown` (a guest ten times slower than bare metal).
pub const MAX_SLOWDOWN: f64 = 10.0;

fn slowdown(given: Option<f64>, field: &str) -> R<f64> {
    match given {
        None => Ok(0.0),
        Some(x) if x.is_finite() && (0.0..=MAX_SLOWDOWN).contains(&x) => Ok(x),
        Some(x) => Err(InputError::field(
            field,
            format!("{x}: expected a fraction from 0 to {MAX_SLOWDOWN} (0.05 = jobs run 5% longer in the guest)"),
        )),
    }
}

fn vcpu(raw: &RawVcpu, guest: &str, default_core: u32, cores: u32, default_slowdown: f64) -> R<VcpuSpec> {
    let idle_poll = match raw.idle.as_deref() {
        None | Some("halt") => false,
        Some("poll") => true,
        Some(o) => return Err(InputError::field("idle", format!("\"{o}\": expected \"halt\" or \"poll\""))),
    };
    let thread = thread_spec(raw, format!("{guest}/vcpu0"), default_core, cores)?;
    let slowdown = match raw.slowdown {
        None => default_slowdown,
        given => slowdown(given, "slowdown")?,
    };
    Ok(VcpuSpec { thread, idle_poll, context_switch: raw.context_switch.unwrap_or_default().0, slowdown })
}

fn extra_thread(t: &RawThread, cores: u32) -> R<ExtraThread> {
    if t.name.trim().is_empty() {
        return Err(InputError::field("name", "empty name: expected a non-empty thread name"));
    }
    for (f, given) in [
        ("idle", t.sched.idle.is_some()),
        ("context_switch", t.sched.context_switch.is_some()),
        ("slowdown", t.sched.slowdown.is_some()),
    ] {
        if given {
            return Err(InputError::field(format!("sched.{f}"), format!("`{f}` applies to guest vCPUs only")));
        }
    }
    let load = match (t.busy.unwrap_or(false), t.period, t.run) {
        (true, None, None) => Load::Busy,
        (true, _, _) => return Err(InputError::field("busy", "a busy thread has no `period`/`run`")),
        (false, Some(p), Some(r)) if p.0 > 0 && r.0 > 0 && r <= p => Load::Periodic {
            period: check_timing(p, "period")?.0,
            run: r.0,
            offset: check_timing(t.offset.unwrap_or_default(), "offset")?.0,
        },
        (false, Some(p), Some(r)) => {
            return Err(InputError::field("run", format!("run {r} every {p}: expected 0 < run <= period")))
        }
        _ => return Err(InputError::field("period", "expected `period` and `run` (a periodic load) or `busy = true`")),
    };
    let thread = thread_spec(&t.sched, t.name.clone(), 0, cores).map_err(|e| e.under("sched"))?;
    Ok(ExtraThread { thread, load })
}

fn thread_spec(raw: &RawVcpu, name: String, default_core: u32, cores: u32) -> R<ThreadSpec> {
    Ok(ThreadSpec { name, cores: affinity(raw, default_core, cores)?, policy: policy(raw)? })
}

fn affinity(raw: &RawVcpu, default_core: u32, cores: u32) -> R<Vec<u32>> {
    let list: Vec<i64> = match (&raw.core, &raw.cores) {
        (Some(_), Some(_)) => return Err(InputError::field("cores", "give either `core` or `cores`, not both")),
        (Some(c), None) => vec![*c],
        (None, Some(l)) if l.is_empty() => {
            return Err(InputError::field("cores", "empty list: expected at least one core"))
        }
        (None, Some(l)) => l.clone(),
        (None, None) => vec![default_core as i64],
    };
    let field = if raw.core.is_some() { "core" } else { "cores" };
    let mut out = Vec::with_capacity(list.len());
    for c in list {
        if c < 0 || c >= cores as i64 {
            return Err(InputError::field(
                field,
                format!("core {c} does not exist: the host has cores 0..{}", cores - 1),
            ));
        }
        if out.contains(&(c as u32)) {
            return Err(InputError::field(field, format!("core {c} is listed twice")));
        }
        out.push(c as u32);
    }
    out.sort_unstable();
    Ok(out)
}

/// Which fields each policy takes (everything else given is an error, so typos do not pass).
const POLICY_FIELDS: &[(&str, &[&str])] = &[
    ("fifo", &["priority"]),
    ("rr", &["priority", "quantum"]),
    ("deadline", &["runtime", "deadline", "period"]),
    ("other", &["nice"]),
    ("credit", &["weight"]),
    ("rtds", &["budget", "period", "extratime"]),
    ("ds", &["priority", "budget", "period"]),
    ("ps", &["priority", "budget", "period"]),
    ("supply", &["budget", "period", "supply"]),
];

fn policy(raw: &RawVcpu) -> R<Policy> {
    let name = raw.policy.as_deref().unwrap_or("other");
    let Some((_, allowed)) = POLICY_FIELDS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = POLICY_FIELDS.iter().map(|(n, _)| *n).collect();
        return Err(InputError::field(
            "policy",
            format!("unknown policy \"{name}\": expected one of {}", names.join(", ")),
        ));
    };
    let given = [
        ("priority", raw.priority.is_some()),
        ("nice", raw.nice.is_some()),
        ("weight", raw.weight.is_some()),
        ("quantum", raw.quantum.is_some()),
        ("runtime", raw.runtime.is_some()),
        ("deadline", raw.deadline.is_some()),
        ("period", raw.period.is_some()),
        ("budget", raw.budget.is_some()),
        ("extratime", raw.extratime.is_some()),
        ("supply", raw.supply.is_some()),
    ];
    if let Some((f, _)) = given.iter().find(|(f, g)| *g && !allowed.contains(f)) {
        return Err(InputError::field(
            *f,
            format!("`{f}` does not apply to policy \"{name}\" (it takes: {})", allowed.join(", ")),
        ));
    }
    let need = |v: Option<Nanos>, f: &str| -> R<u64> {
        match v {
            Some(n) if n.0 > 0 => Ok(check_timing(n, f)?.0),
            Some(_) => Err(InputError::field(f, "zero duration: expected a positive duration")),
            None => Err(InputError::field(f, format!("missing: policy \"{name}\" needs `{f}` (a duration)"))),
        }
    };
    let server = || -> R<(u64, u64)> {
        let (b, p) = (need(raw.budget, "budget")?, need(raw.period, "period")?);
        if b > p {
            return Err(InputError::field(
                "budget",
                format!("budget {} is larger than the period {}", Nanos(b), Nanos(p)),
            ));
        }
        Ok((b, p))
    };
    let server_prio = || -> R<u32> {
        match raw.priority {
            Some(p) if (1..=1_000_000).contains(&p) => Ok(p as u32),
            Some(p) => Err(InputError::field(
                "priority",
                format!("{p}: expected a server priority from 1 to 1000000 (higher = more urgent)"),
            )),
            None => Err(InputError::field("priority", format!("missing: policy \"{name}\" needs a `priority`"))),
        }
    };
    Ok(match name {
        "fifo" | "rr" => {
            let prio = match raw.priority {
                Some(p) if (1..=99).contains(&p) => p as u8,
                Some(p) => {
                    return Err(InputError::field(
                        "priority",
                        format!("priority {p} is out of range: SCHED_FIFO/SCHED_RR priorities are 1..99"),
                    ))
                }
                None => {
                    return Err(InputError::field(
                        "priority",
                        format!("missing: policy \"{name}\" needs a priority 1..99"),
                    ))
                }
            };
            let rr_quantum = (name == "rr").then(|| raw.quantum.map(|q| q.0).unwrap_or(100_000_000));
            if rr_quantum == Some(0) {
                return Err(InputError::field("quantum", "zero quantum: expected a positive duration"));
            }
            rr_quantum.map(|q| check_timing(Nanos(q), "quantum")).transpose()?;
            Policy::Rt { prio, rr_quantum }
        }
        "deadline" => {
            let runtime = need(raw.runtime, "runtime")?;
            let period = need(raw.period, "period")?;
            let deadline = raw.deadline.map(|d| d.0).unwrap_or(period);
            if !(runtime <= deadline && deadline <= period) {
                return Err(InputError::field(
                    "runtime",
                    format!(
                        "expected runtime <= deadline <= period, got {} / {} / {}",
                        Nanos(runtime),
                        Nanos(deadline),
                        Nanos(period)
                    ),
                ));
            }
            if runtime < 1024 {
                return Err(InputError::field("runtime", "SCHED_DEADLINE needs a runtime of at least 1024ns"));
            }
            Policy::Deadline { runtime, deadline, period }
        }
        "other" => match raw.nice.unwrap_or(0) {
            n @ -20..=19 => Policy::Other { nice: n as i8 },
            n => return Err(InputError::field("nice", format!("nice {n} is out of range: expected -20..19"))),
        },
        "credit" => match raw.weight.unwrap_or(256) {
            w @ 1..=65535 => Policy::Credit { weight: w as u32 },
            w => return Err(InputError::field("weight", format!("weight {w} is out of range: expected 1..65535"))),
        },
        "rtds" => {
            let (budget, period) = server()?;
            Policy::Rtds { budget, period, extratime: raw.extratime.unwrap_or(false) }
        }
        "ds" | "ps" => {
            let prio = server_prio()?;
            let (budget, period) = server()?;
            if name == "ds" {
                Policy::Ds { prio, budget, period }
            } else {
                Policy::Ps { prio, budget, period }
            }
        }
        _ => {
            let (budget, period) = server()?;
            let pattern = match raw.supply.as_deref().unwrap_or("early") {
                "early" => SupplyPattern::Early,
                "late" => SupplyPattern::Late,
                "prm-worst" => SupplyPattern::PrmWorst,
                "random" => SupplyPattern::Random,
                o => {
                    return Err(InputError::field(
                        "supply",
                        format!("\"{o}\": expected \"early\", \"late\", \"prm-worst\" or \"random\""),
                    ))
                }
            };
            Policy::Supply { budget, period, pattern }
        }
    })
}

/// The plan's reservation for a guest as a pinned SCHED_DEADLINE thread.
fn planned(p: &Plan, guest: &str, name: String) -> R<ThreadSpec> {
    let at = p.guests.iter().position(|g| g.name == guest);
    let g = at
        .map(|i| &p.guests[i])
        .ok_or_else(|| InputError::field("guests", format!("the plan has no guest \"{guest}\"")))?;
    let i = at.unwrap_or(0);
    let Some(core) = g.core else {
        return Err(InputError::field(
            format!("guests[{i}].core"),
            format!("guest \"{guest}\" was not placed on a core by the plan (infeasible plan): nothing to simulate"),
        ));
    };
    if g.budget_ns < 1024 {
        return Err(InputError::field(
            format!("guests[{i}].budget_ns"),
            format!("budget {} ns: SCHED_DEADLINE needs at least 1024ns", g.budget_ns),
        ));
    }
    Ok(ThreadSpec {
        name,
        cores: vec![core],
        policy: Policy::Deadline { runtime: g.budget_ns, deadline: g.deadline_ns, period: g.period_ns },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(vcpu: &str, sim: &str) -> Scenario {
        let src = format!(
            "[host]\ncores = 2\n{sim}\n[[guest]]\nname = \"vm1\"\nscheduler = \"edf\"\n{vcpu}\n[[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n"
        );
        Scenario::from_toml(&src, None).unwrap()
    }

    fn err(vcpu: &str, sim: &str) -> InputError {
        SimConfig::new(&scenario(vcpu, sim), None, Overrides::default()).unwrap_err()
    }

    #[test]
    fn defaults_and_policies() {
        let c = SimConfig::new(&scenario("", ""), None, Overrides::default()).unwrap();
        assert_eq!(c.vcpus[0].thread.policy, Policy::Other { nice: 0 });
        assert_eq!(c.settings.duration, DEFAULT_DURATION.0);
        assert_eq!(c.settings.rt_throttle, Some((950_000_000, 1_000_000_000)));
        let c = SimConfig::new(
            &scenario("[guest.vcpu]\ncore = 1\npolicy = \"deadline\"\nruntime = \"2ms\"\nperiod = \"10ms\"\n", ""),
            None,
            Overrides { seed: Some(7), ..Default::default() },
        )
        .unwrap();
        assert_eq!(c.vcpus[0].thread.cores, vec![1]);
        assert_eq!(
            c.vcpus[0].thread.policy,
            Policy::Deadline { runtime: 2_000_000, deadline: 10_000_000, period: 10_000_000 }
        );
        assert_eq!(c.settings.seed, 7);
    }

    #[test]
    fn bad_values_name_the_field() {
        let cases = [
            ("[guest.vcpu]\npolicy = \"fifo\"\npriority = 100\n", "", "guest[0].vcpu.priority"),
            ("[guest.vcpu]\npolicy = \"lottery\"\n", "", "guest[0].vcpu.policy"),
            ("[guest.vcpu]\npolicy = \"fifo\"\npriority = 10\nbudget = \"1ms\"\n", "", "guest[0].vcpu.budget"),
            ("[guest.vcpu]\ncore = 2\n", "", "guest[0].vcpu.core"),
            ("[guest.vcpu]\npolicy = \"deadline\"\nruntime = \"20ms\"\nperiod = \"10ms\"\n", "", "guest[0].vcpu.runtime"),
            ("", "[sim]\nmiss_policy = \"drop\"\n", "sim.miss_policy"),
            ("", "[sim]\nduration = \"0s\"\n", "sim.duration"),
            ("", "[sim]\ncredit_accounting = \"sampled\"\n", "sim.credit_accounting"),
            ("", "[[sim.thread]]\nname = \"x\"\nbusy = true\nsched = { policy = \"credit\" }\n", "sim.thread[0].sched.policy"),
            ("[guest.vcpu]\ncores = [0, 1]\n", "[[sim.thread]]\nname = \"x\"\nbusy = true\nsched = { core = 0 }\n", "sim.thread[0].sched.cores"),
            (
                "[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\nruntime = \"6ms\"\nperiod = \"10ms\"\n",
                "[[sim.thread]]\nname = \"x\"\nbusy = true\nsched = { core = 0, policy = \"deadline\", runtime = \"4ms\", period = \"10ms\" }\n",
                "sim.thread[0].sched.runtime",
            ),
        ];
        for (vcpu, sim, field) in cases {
            let e = err(vcpu, sim);
            assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
        }
    }
}
