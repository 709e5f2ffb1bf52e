//! `[sim]`, `[[sim.thread]]` and `[guest.vcpu]` as written -> the checked types of [`super::sim`]:
//! every value, every policy's fields, affinities, scheduler families per cluster and
//! SCHED_DEADLINE admission, each error naming its field (`guest[1].vcpu.priority`,
//! `sim.thread[0].sched.policy`).

use super::limits::{check_horizon, check_timing};
use super::raw::{RawSim, RawThread, RawVcpu};
use super::sim::*;
use crate::duration::Nanos;
use crate::error::shown;
use crate::error::InputError;

type R<T> = Result<T, InputError>;

impl Default for SimSection {
    fn default() -> Self {
        section(&Default::default(), 1).expect("the default [sim] section is valid")
    }
}

/// The `[sim]` section of a host with `cores` cores (its fields under `sim.`).
pub(super) fn section(raw: &RawSim, cores: u32) -> R<SimSection> {
    let settings = settings(raw).map_err(|e| e.under("sim"))?;
    let guest_slowdown = slowdown(raw.guest_slowdown, "guest_slowdown").map_err(|e| e.under("sim"))?;
    let mut threads = Vec::with_capacity(raw.threads.len());
    for (i, t) in raw.threads.iter().enumerate() {
        threads.push(extra_thread(t, cores).map_err(|e| e.under(&format!("sim.thread[{i}]")))?);
    }
    Ok(SimSection { settings, guest_slowdown, threads })
}

/// `[guest.vcpu]` of guest `index` as the threads of its `count` vCPUs (default: SCHED_OTHER nice
/// 0, vCPU k on core `(index + k) % cores`; a given `core`/`cores` holds for every vCPU), with
/// `[sim] guest_slowdown` as the default slowdown. Field paths are relative to the guest.
pub(super) fn guest_vcpus(
    raw: Option<&RawVcpu>,
    guest: &str,
    index: usize,
    count: u32,
    cores: u32,
    sim: &SimSection,
) -> R<Vec<VcpuSpec>> {
    let raw = raw.cloned().unwrap_or_default();
    let default_core = |id: u32| ((index as u64 + id as u64) % cores as u64) as u32;
    let first = vcpu(&raw, guest, default_core(0), cores, sim.guest_slowdown).map_err(|e| e.under("vcpu"))?;
    let affinity_given = raw.core.is_some() || raw.cores.is_some();
    let other = |id: u32| {
        let mut spec = first.clone();
        spec.thread.name = vcpu_thread_name(guest, id);
        if !affinity_given {
            spec.thread.cores = vec![default_core(id)];
        }
        spec
    };
    Ok(std::iter::once(first.clone()).chain((1..count).map(other)).collect())
}

/// The tick at the lowest `hz` accepted.
const MAX_TICK: Nanos = Nanos::from_ms(100);

fn settings(raw: &RawSim) -> R<Settings> {
    let duration = check_horizon(raw.duration.unwrap_or(DEFAULT_DURATION), "duration")?;
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
    let tick = 1_000_000_000 / hz as u64;
    let tick_phase = raw.tick_phase.unwrap_or_default().0;
    // the tick may be a host model's, not `hz`'s: the phase is taken modulo whichever applies
    if tick_phase >= MAX_TICK.0 {
        return Err(InputError::field(
            "tick_phase",
            format!("{}: expected less than {MAX_TICK} (the longest tick, at hz = 10)", Nanos(tick_phase)),
        ));
    }
    let rt_runtime = raw.rt_runtime.unwrap_or(Nanos::from_ms(950));
    let rt_period = raw.rt_period.unwrap_or(Nanos::from_secs(1));
    check_sim_timing(rt_period, "rt_period")?;
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
        seed: raw.seed.unwrap_or(1),
        abort_late,
        tick,
        tick_phase,
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

fn slowdown(given: Option<f64>, field: &str) -> R<f64> {
    match given {
        None => Ok(0.0),
        Some(x) if x.is_finite() && (0.0..=MAX_SLOWDOWN).contains(&x) => Ok(x),
        Some(x) => Err(InputError::field(
            field,
            format!(
                "{}: expected a fraction from 0 to {MAX_SLOWDOWN} (0.05 = jobs run 5% longer in the guest)",
                shown(x)
            ),
        )),
    }
}

fn vcpu(raw: &RawVcpu, guest: &str, default_core: u32, cores: u32, default_slowdown: f64) -> R<VcpuSpec> {
    let idle_poll = match raw.idle.as_deref() {
        None | Some("halt") => false,
        Some("poll") => true,
        Some(o) => return Err(InputError::field("idle", format!("\"{o}\": expected \"halt\" or \"poll\""))),
    };
    let thread = thread_spec(raw, vcpu_thread_name(guest, 0), default_core, cores)?;
    let slowdown = match raw.slowdown {
        None => default_slowdown,
        given => slowdown(given, "slowdown")?,
    };
    Ok(VcpuSpec { thread, idle_poll, context_switch: raw.context_switch.unwrap_or_default().0, slowdown })
}

fn extra_thread(raw: &RawThread, cores: u32) -> R<ExtraThread> {
    if raw.name.trim().is_empty() {
        return Err(InputError::field("name", "empty name: expected a non-empty thread name"));
    }
    for (f, given) in [
        ("idle", raw.sched.idle.is_some()),
        ("context_switch", raw.sched.context_switch.is_some()),
        ("slowdown", raw.sched.slowdown.is_some()),
    ] {
        if given {
            return Err(InputError::field(format!("sched.{f}"), format!("`{f}` applies to guest vCPUs only")));
        }
    }
    let load = match (raw.busy.unwrap_or(false), raw.period, raw.run) {
        (true, None, None) => Load::Busy,
        (true, _, _) => return Err(InputError::field("busy", "a busy thread has no `period`/`run`")),
        (false, Some(p), Some(r)) if p.0 > 0 && r.0 > 0 && r <= p => Load::Periodic {
            period: check_sim_timing(check_timing(p, "period")?, "period")?.0,
            run: r.0,
            offset: check_timing(raw.offset.unwrap_or_default(), "offset")?.0,
        },
        (false, Some(p), Some(r)) => {
            return Err(InputError::field("run", format!("run {r} every {p}: expected 0 < run <= period")))
        }
        _ => return Err(InputError::field("period", "expected `period` and `run` (a periodic load) or `busy = true`")),
    };
    let thread = thread_spec(&raw.sched, raw.name.clone(), 0, cores).map_err(|e| e.under("sched"))?;
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
        check_sim_timing(Nanos(b), "budget")?;
        check_sim_timing(Nanos(p), "period")?;
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
            rr_quantum.map(|q| check_sim_timing(Nanos(q), "quantum")).transpose()?;
            Policy::Rt { prio, rr_quantum }
        }
        "deadline" => {
            let runtime = need(raw.runtime, "runtime")?;
            let period = need(raw.period, "period")?;
            check_sim_timing(Nanos(period), "period")?;
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
