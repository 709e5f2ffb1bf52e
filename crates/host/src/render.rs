//! Text tables for people (`--format table`) of audits, thread lists, applies and reverts.

use crate::apply::ApplyReport;
use crate::audit::Audit;
use crate::journal::RevertReport;
use crate::lint::{LintReport, Severity};
use crate::threads::{Role, ThreadInfo};
use std::fmt::Write;

/// Columns padded to their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                let _ = write!(s, "{c:<w$}  ", w = widths[i]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for r in rows {
        out += &line(r.iter().map(String::as_str).collect());
    }
    out
}

pub fn audit(audit: &Audit) -> String {
    let rows: Vec<Vec<String>> = audit
        .checks
        .iter()
        .map(|c| vec![c.status.as_str().to_uppercase(), c.id.to_string(), c.found.clone()])
        .collect();
    let mut out = format!("rtvirt host audit - kernel {}, CPUs {}\n\n", audit.kernel, audit.cpus_online);
    out += &table(&["STATUS", "CHECK", "FOUND"], &rows);
    out += "\nDetails (warn/fail):\n";
    for c in audit.checks.iter().filter(|c| matches!(c.status, crate::audit::Status::Warn | crate::audit::Status::Fail))
    {
        let _ = write!(
            out,
            "\n[{}] {} - {}\n  found:  {}\n  source: {}\n  why:    {}\n  fix:    {}\n  tuned:  {}\n",
            c.status.as_str(),
            c.id,
            c.title,
            c.found,
            c.source,
            c.why,
            c.fix,
            c.tuned
        );
    }
    out += &targets(&audit.targets);
    let s = &audit.summary;
    let _ = write!(out, "\n{} pass, {} warn, {} fail, {} skip\n", s.pass, s.warn, s.fail, s.skip);
    out
}

/// The plan's needs and this host's checks on each (`--plan`); empty without a plan.
fn targets(targets: &[crate::audit::targets::Target]) -> String {
    if targets.is_empty() {
        return String::new();
    }
    let mut out = "\nWhat the plan needs to fit, and this host's checks on each:\n".to_string();
    for t in targets {
        let whom = t.guest.as_deref().map_or("the plan".to_string(), |g| format!("guest \"{g}\""));
        let _ = write!(out, "\n{whom} needs {}: {}\n  how:    {}\n", t.setting, t.value, t.how);
        for c in &t.checks {
            let _ = writeln!(out, "  {:<6} {} = {}", c.status.as_str(), c.id, c.found);
        }
    }
    out
}

fn role_detail(r: &Role) -> String {
    match r {
        Role::Vcpu { index } => format!("vcpu {index}"),
        Role::Iothread { id } => format!("iothread {id}"),
        Role::Vhost { owner } => format!("vhost (qemu {owner})"),
        Role::Irq { irq, name } => format!("irq {irq} {name}"),
        Role::Napi { dev, id } => format!("napi {dev} {id}"),
        Role::Ksoftirqd { cpu } | Role::Ktimers { cpu } | Role::Rcuc { cpu } => format!("{} {cpu}", r.name()),
        Role::Container { cgroup } => format!("container {cgroup}"),
        other => other.name().to_string(),
    }
}

pub fn threads(ts: &[ThreadInfo]) -> String {
    let rows: Vec<Vec<String>> = ts
        .iter()
        .map(|t| {
            vec![
                t.tid.to_string(),
                t.pid.to_string(),
                role_detail(&t.role),
                t.guest.clone().unwrap_or_else(|| "-".into()),
                t.sched.to_string(),
                t.affinity.to_string(),
                t.cpu.to_string(),
                t.comm.clone(),
            ]
        })
        .collect();
    table(&["TID", "PID", "ROLE", "GUEST", "SCHED", "AFFINITY", "CPU", "COMM"], &rows)
}

/// Unchanged fair-class threads shown per CPU before the rest are only counted.
const FAIR_SHOWN: usize = 5;

pub fn lint(l: &LintReport) -> String {
    let mut out = String::from(
        "Per CPU after the change (threads allowed there that are runnable or RT/deadline, per-CPU kthreads, changed \
         threads; * = changed):\n",
    );
    for (cpu, es) in &l.per_cpu {
        let _ = writeln!(out, "  CPU {cpu}:");
        // Unchanged SCHED_OTHER/BATCH/IDLE threads other than the per-CPU kthreads: a few, then a count.
        let minor =
            |e: &&crate::lint::Entity| !e.changed && e.rank == 0 && !matches!(e.role, "ksoftirqd" | "ktimers" | "rcuc");
        let (rest, major): (Vec<_>, Vec<_>) = es.iter().partition(minor);
        for e in major.iter().chain(rest.iter().take(FAIR_SHOWN)) {
            let _ = writeln!(
                out,
                "    {}{:<8} {:<22} {} ({})",
                if e.changed { "* " } else { "  " },
                e.tid,
                e.comm,
                e.sched,
                e.role
            );
        }
        if rest.len() > FAIR_SHOWN {
            let _ = writeln!(
                out,
                "      ... and {} more runnable fair-class threads (--format json lists them)",
                rest.len() - FAIR_SHOWN
            );
        }
    }
    if l.findings.is_empty() {
        out += "Lint: no findings\n";
    }
    for f in &l.findings {
        let _ = writeln!(
            out,
            "Lint {}: {}: {}",
            if f.severity == Severity::Fail { "FAIL" } else { "warn" },
            f.id,
            f.message
        );
    }
    out
}

pub fn apply(r: &ApplyReport) -> String {
    let mut out = lint(&r.lint);
    let verb = if r.dry_run { "Would change" } else { "Changed" };
    let _ = writeln!(out, "\n{verb} ({}):", r.changes.len());
    for c in &r.changes {
        let _ = writeln!(out, "  {c}");
    }
    if r.changes.is_empty() {
        out += "  nothing (already applied)\n";
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(out, "Not bound with --vm/--pid, left untouched: {}", r.skipped.join(", "));
    }
    if !r.dry_run {
        let _ = writeln!(out, "Journal: {} (undo with `rtvirt host revert`)", r.journal.display());
    }
    out
}

pub fn revert(r: &RevertReport) -> String {
    if r.restored.is_empty() && r.threads_gone.is_empty() {
        return format!("Nothing to revert (no journal at {})\n", r.journal.display());
    }
    let mut out = format!("Undone, newest first ({}); each line is the change that was reverted:\n", r.restored.len());
    for c in &r.restored {
        let _ = writeln!(out, "  {c}");
    }
    for c in &r.threads_gone {
        let _ = writeln!(out, "  thread gone, nothing to restore: {c}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}
