//! Raw scenario -> typed [`Scenario`]: every rule with a message that says what was expected.

use super::limits::{check_timing, DEFAULT_BANDWIDTH_CAP, MAX_CORES};
use super::raw::*;
use super::types::*;
use super::{sim, validate_sim, validate_vcpus};
use crate::duration::Nanos;
use crate::error::shown;
use crate::error::InputError;
use crate::exec::ExecModel;
use crate::exec::Samples;
use crate::source::Source;
use std::collections::HashSet;
use std::path::Path;

type R<T> = Result<T, InputError>;

pub(super) fn scenario(raw: RawScenario, base: &Path, source: Source) -> R<Scenario> {
    let host = host(&raw.host).map_err(|e| e.under("host"))?;
    let sim = validate_sim::section(&raw.sim.unwrap_or_default(), host.cores)?;
    let mut names = HashSet::new();
    let mut guests = Vec::with_capacity(raw.guests.len());
    for (i, g) in raw.guests.into_iter().enumerate() {
        let at = format!("guest[{i}]");
        if !names.insert(g.name.clone()) {
            return Err(InputError::field(
                format!("{at}.name"),
                format!("duplicate guest name \"{}\" (guest names must be unique)", g.name),
            ));
        }
        guests.push(guest(g, i, &host, &sim, base).map_err(|e| e.under(&at))?);
    }
    let threads: Vec<(&sim::ThreadSpec, String)> = guests
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.vcpus.iter().map(move |v| (&v.sim.thread, format!("guest[{i}].vcpu"))))
        .chain(sim.threads.iter().enumerate().map(|(i, t)| (&t.thread, format!("sim.thread[{i}].sched"))))
        .collect();
    sim::check_threads(&threads, sim.settings.rt_throttle)?;
    let net = raw.net.map(|n| n.validate(host.cores)).transpose()?;
    let names: Vec<&str> = guests.iter().map(|g: &Guest| g.name.as_str()).collect();
    let adapt = raw.adapt.map(|a| a.validate(&names)).transpose()?;
    let name = raw.name.unwrap_or_else(|| {
        source
            .path
            .as_deref()
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "default".into())
    });
    Ok(Scenario { name, description: raw.description, host, guests, sim, net, adapt, source })
}

fn host(host: &RawHost) -> R<HostSection> {
    if host.cores < 1 || host.cores > MAX_CORES as i64 {
        return Err(InputError::field(
            "cores",
            format!("{} cores: expected a whole number from 1 to {MAX_CORES}", host.cores),
        ));
    }
    let cap = host.bandwidth_cap.unwrap_or(DEFAULT_BANDWIDTH_CAP);
    if !(cap > 0.0 && cap <= 1.0) {
        return Err(InputError::field("bandwidth_cap", format!("{}: expected a fraction in (0, 1]", shown(cap))));
    }
    Ok(HostSection { cores: host.cores as u32, bandwidth_cap: cap })
}

/// A probability strictly between 0 and 1.
pub fn check_rho(rho: Option<f64>, field: &str) -> R<Option<f64>> {
    match rho {
        Some(r) if !(r > 0.0 && r < 1.0) => {
            Err(InputError::field(field, format!("{}: expected a probability strictly between 0 and 1", shown(r))))
        }
        r => Ok(r),
    }
}

fn guest(guest: RawGuest, index: usize, host: &HostSection, sim: &sim::SimSection, base: &Path) -> R<Guest> {
    if guest.name.trim().is_empty() {
        return Err(InputError::field("name", "empty name: expected a non-empty guest name"));
    }
    let scheduler = match guest.scheduler.as_str() {
        "edf" => GuestScheduler::Edf,
        "fp" => GuestScheduler::Fp,
        other => return Err(InputError::field("scheduler", format!("\"{other}\": expected \"edf\" or \"fp\""))),
    };
    let rho = check_rho(guest.rho, "rho")?;
    let shape = validate_vcpus::guest_vcpus(&guest, host)?;
    let server_periods = periods(guest.server_periods).map_err(|e| e.under("server_periods"))?;
    let mut names = HashSet::new();
    let mut tasks = Vec::with_capacity(guest.tasks.len());
    for (i, t) in guest.tasks.into_iter().enumerate() {
        let at = format!("task[{i}]");
        if !names.insert(t.name.clone()) {
            return Err(InputError::field(
                format!("{at}.name"),
                format!("duplicate task name \"{}\" in this guest", t.name),
            ));
        }
        let vcpu = validate_vcpus::task_vcpu(t.vcpu, &shape).map_err(|e| e.under(&at))?;
        tasks.push(Task { vcpu, ..task(t, scheduler, base).map_err(|e| e.under(&at))? });
    }
    assign_priorities(&mut tasks, scheduler)?;
    let threads = validate_sim::guest_vcpus(guest.vcpu.as_ref(), &guest.name, index, shape.count, host.cores, sim)?;
    let vcpus = threads
        .into_iter()
        .zip(&shape.housekeeping)
        .enumerate()
        .map(|(id, (sim, &housekeeping))| Vcpu { id: id as u32, housekeeping, sim })
        .collect();
    Ok(Guest {
        name: guest.name,
        scheduler,
        server_periods,
        rho,
        tasks,
        placement: shape.placement,
        spread: shape.spread,
        vcpus,
    })
}

fn periods(periods: Option<RawPeriods>) -> R<PeriodChoice> {
    match periods {
        None => Ok(PeriodChoice::Default),
        Some(RawPeriods::List(l)) => {
            if l.is_empty() {
                return Err(InputError::new("empty list: expected at least one candidate period"));
            }
            for (i, periods) in l.iter().enumerate() {
                if periods.0 == 0 {
                    return Err(InputError::field(format!("[{i}]"), "zero period: expected a positive duration"));
                }
                check_timing(*periods, &format!("[{i}]"))?;
            }
            Ok(PeriodChoice::List(l))
        }
        Some(RawPeriods::Range(r)) => {
            if r.min.0 == 0 || r.step.0 == 0 {
                return Err(InputError::new("min and step must be positive durations"));
            }
            if r.min > r.max {
                return Err(InputError::field("max", format!("max {} is below min {}", r.max, r.min)));
            }
            check_timing(r.max, "max")?;
            if (r.max.0 - r.min.0) / r.step.0 > 100_000 {
                return Err(InputError::field("step", "more than 100000 candidate periods: expected a larger step"));
            }
            Ok(PeriodChoice::Range { min: r.min, max: r.max, step: r.step })
        }
    }
}

fn task(task: RawTask, scheduler: GuestScheduler, base: &Path) -> R<Task> {
    if task.name.trim().is_empty() {
        return Err(InputError::field("name", "empty name: expected a non-empty task name"));
    }
    if task.period.0 == 0 {
        return Err(InputError::field("period", "zero period: expected a positive duration"));
    }
    check_timing(task.period, "period")?;
    let offset = check_timing(task.offset.unwrap_or_default(), "offset")?;
    let deadline = task.deadline.unwrap_or(task.period);
    if deadline.0 == 0 {
        return Err(InputError::field("deadline", "zero deadline: expected a positive duration"));
    }
    if deadline > task.period {
        return Err(InputError::field(
            "deadline",
            format!("deadline {deadline} is larger than the period {}: expected deadline <= period", task.period),
        ));
    }
    let exec = exec(task.exec, base).map_err(|e| e.under("exec"))?;
    let wcet = wcet(&task.wcet, &exec).map_err(|e| e.under("wcet"))?;
    if wcet > deadline {
        return Err(InputError::field(
            "wcet",
            format!("WCET {wcet} is larger than the deadline {deadline}: the task can never meet it"),
        ));
    }
    check_exec_within_wcet(&exec, wcet).map_err(|e| e.under("exec"))?;
    let phases = phases(task.phases, wcet, base)?;
    let priority = match (task.priority, scheduler) {
        (Some(_), GuestScheduler::Edf) => {
            return Err(InputError::field(
                "priority",
                "priority is only for fixed-priority guests (scheduler = \"fp\")",
            ))
        }
        (Some(p), _) if !(1..=1_000_000).contains(&p) => {
            return Err(InputError::field(
                "priority",
                format!("{p}: expected a whole number from 1 to 1000000 (higher = more urgent)"),
            ))
        }
        (Some(p), _) => Some(p as u32),
        (None, _) => None,
    };
    Ok(Task {
        name: task.name,
        period: task.period,
        deadline,
        wcet,
        priority: priority.unwrap_or(0),
        priority_given: priority.is_some(),
        rho: check_rho(task.rho, "rho")?,
        offset,
        exec,
        vcpu: None,
        phases,
    })
}

/// `[[guest.task.phase]]`: positive, strictly increasing start times within the longest horizon,
/// each with an execution-time model within the task's WCET.
fn phases(raw: Vec<RawPhase>, wcet: Nanos, base: &Path) -> R<Vec<Phase>> {
    let mut out: Vec<Phase> = Vec::with_capacity(raw.len());
    for (i, p) in raw.into_iter().enumerate() {
        let under = |e: InputError| e.under(&format!("phase[{i}]"));
        if p.at.0 == 0 {
            return Err(under(InputError::field(
                "at",
                "zero: expected a positive time (the task's `exec` applies from the start)",
            )));
        }
        super::limits::check_horizon(p.at, "at").map_err(under)?;
        if let Some(prev) = out.last().filter(|prev| prev.at >= p.at) {
            return Err(under(InputError::field(
                "at",
                format!("{} is not after the previous phase's {}: expected phases in increasing time", p.at, prev.at),
            )));
        }
        let model = exec(Some(p.exec), base).map_err(|e| under(e.under("exec")))?;
        check_exec_within_wcet(&model, wcet).map_err(|e| under(e.under("exec")))?;
        out.push(Phase { at: p.at, exec: model });
    }
    Ok(out)
}

fn exec(exec: Option<RawExec>, base: &Path) -> R<ExecModel> {
    let Some(exec) = exec else { return Ok(ExecModel::Constant) };
    let only = |allowed: &[&str]| -> R<()> {
        let given = [
            ("mean", exec.mean.is_some()),
            ("sd", exec.sd.is_some()),
            ("min", exec.min.is_some()),
            ("max", exec.max.is_some()),
            ("samples", exec.samples.is_some()),
        ];
        match given.iter().find(|(n, g)| *g && !allowed.contains(n)) {
            Some((n, _)) => Err(InputError::field(
                *n,
                format!(
                    "`{n}` does not belong to this execution-time model (allowed here: {})",
                    if allowed.is_empty() { "none".into() } else { allowed.join(", ") }
                ),
            )),
            None => Ok(()),
        }
    };
    let need = |v: Option<Nanos>, n: &str| v.ok_or_else(|| InputError::field(n, format!("missing `{n}` (a duration)")));
    match (exec.dist.as_deref(), &exec.samples) {
        (Some(_), Some(_)) => Err(InputError::field("samples", "give either `dist` or `samples`, not both")),
        (None, Some(path)) if path.trim().is_empty() => Err(InputError::field(
            "samples",
            "empty file name: expected the path of a samples file (one duration per line), relative to the scenario",
        )),
        (None, Some(path)) => {
            only(&["samples"])?;
            let p = base.join(path);
            Ok(ExecModel::Samples(Samples::load(&p)?))
        }
        (None, None) => Err(InputError::field(
            "dist",
            "missing: expected dist = \"constant\" | \"normal\" | \"uniform\", or samples = \"file.csv\"",
        )),
        (Some("constant"), None) => {
            only(&[])?;
            Ok(ExecModel::Constant)
        }
        (Some("normal"), None) => {
            only(&["mean", "sd"])?;
            Ok(ExecModel::Normal { mean: need(exec.mean, "mean")?, sd: need(exec.sd, "sd")? })
        }
        (Some("uniform"), None) => {
            only(&["min", "max"])?;
            let (min, max) = (need(exec.min, "min")?, need(exec.max, "max")?);
            if min > max {
                return Err(InputError::field("max", format!("max {max} is below min {min}")));
            }
            Ok(ExecModel::Uniform { min, max })
        }
        (Some(other), None) => {
            Err(InputError::field("dist", format!("\"{other}\": expected \"constant\", \"normal\" or \"uniform\"")))
        }
    }
}

/// WCET as a duration, or "max" / "pNN" of the samples.
fn wcet(text: &str, exec: &ExecModel) -> R<Nanos> {
    let t = text.trim();
    let from_samples = |what: &str| -> R<&Samples> {
        exec.samples().ok_or_else(|| {
            InputError::new(format!("\"{what}\" needs execution-time samples (exec = {{ samples = \"file.csv\" }})"))
        })
    };
    let w = if t == "max" {
        from_samples(t)?.max()
    } else if let Some(p) = t.strip_prefix('p').and_then(|p| p.parse::<f64>().ok()) {
        if !(p > 0.0 && p <= 100.0) {
            return Err(InputError::new(format!("\"{t}\": a percentile must be in (0, 100]")));
        }
        from_samples(t)?.quantile(p / 100.0)
    } else {
        Nanos::parse(t).map_err(|e| InputError::new(format!("{e}; or \"max\" / \"p99\" with samples")))?
    };
    if w.0 == 0 {
        return Err(InputError::new("zero WCET: expected a positive duration"));
    }
    Ok(w)
}

fn check_exec_within_wcet(exec: &ExecModel, wcet: Nanos) -> R<()> {
    match exec {
        ExecModel::Normal { mean, .. } if *mean > wcet => {
            Err(InputError::field("mean", format!("mean {mean} is larger than the WCET {wcet}")))
        }
        ExecModel::Normal { mean, .. } if mean.0 == 0 => {
            Err(InputError::field("mean", "zero mean: expected a positive duration"))
        }
        ExecModel::Uniform { max, .. } if max.0 == 0 => {
            Err(InputError::field("max", "zero max: expected a positive duration (as a normal `mean`)"))
        }
        ExecModel::Uniform { max, .. } if *max > wcet => {
            Err(InputError::field("max", format!("max {max} is larger than the WCET {wcet}")))
        }
        _ => Ok(()),
    }
}

/// Fixed priorities: given ones must be unique; missing ones are deadline monotonic (shorter
/// deadline = higher number; ties by period, then file order). All or none must be given.
pub(super) fn assign_priorities(tasks: &mut [Task], scheduler: GuestScheduler) -> R<()> {
    let given = tasks.iter().filter(|t| t.priority_given).count();
    if given > 0 && given < tasks.len() {
        let i = tasks.iter().position(|t| !t.priority_given).unwrap_or(0);
        return Err(InputError::field(
            format!("task[{i}].priority"),
            "missing: give a priority to every task of this guest or to none (deadline monotonic)",
        ));
    }
    if given == tasks.len() && given > 0 && scheduler == GuestScheduler::Fp {
        let mut seen = HashSet::new();
        for (i, t) in tasks.iter().enumerate() {
            if !seen.insert(t.priority) {
                return Err(InputError::field(
                    format!("task[{i}].priority"),
                    format!("priority {} is used twice: expected unique priorities", t.priority),
                ));
            }
        }
        return Ok(());
    }
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by_key(|&i| (tasks[i].deadline, tasks[i].period, i));
    let n = tasks.len() as u32;
    for (rank, &i) in order.iter().enumerate() {
        tasks[i].priority = n - rank as u32;
    }
    Ok(())
}
