//! What applying a plan and a profile share: the guest bindings, the options and report, the
//! lint on the state an apply would produce, then the journaled changes (rolled back on failure).

use crate::error::{HostError, Result};
use crate::journal::Journal;
use crate::lint::{self, LintInput, LintReport, Planned};
use crate::threads::{self, Role, ThreadInfo};
use rtvirt_model::InputError;
use rtvirt_os::cpulist::CpuList;
use rtvirt_os::restore::Change;
use rtvirt_os::sysinfo;
use serde::Serialize;
use std::path::PathBuf;

pub const APPLY_SCHEMA: &str = "rtvirt.apply/v1";

/// Why an apply did not finish: the lint refused it (nothing was changed; the report says why),
/// or it failed (see [`HostError`]).
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The lint found problems and --force was not given; nothing was changed.
    #[error("lint failed ({} problem(s)); nothing was changed (use --force to apply anyway)", .0.failures())]
    LintFailed(Box<LintReport>),
    #[error(transparent)]
    Host(#[from] HostError),
}

/// Where a guest's threads are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestSource {
    /// A running QEMU's QMP socket (`--vm GUEST=SOCKET`).
    Qmp(PathBuf),
    /// One thread standing for the guest's vCPU (`--pid GUEST=TID`).
    Thread(u32),
    /// The running QEMU started with `-name GUEST` (`--vm GUEST`, no socket given).
    VmName,
}

/// `--vm GUEST=SOCKET[,vcpu=N]` or `--pid GUEST=TID[,vcpu=N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub guest: String,
    pub source: GuestSource,
    /// Which vCPU carries the plan's reservation (QMP), or which vCPU index the thread stands for.
    pub vcpu: Option<u32>,
}

impl Binding {
    /// Parse `GUEST=SOCKET[,vcpu=N]` or `GUEST[,vcpu=N]` (the QEMU started with `-name GUEST`).
    pub fn parse_vm(spec: &str) -> Result<Binding, InputError> {
        if !spec.contains('=') || spec.split_once('=').is_some_and(|(g, _)| g.ends_with(",vcpu")) {
            let (guest, vcpu) = match spec.rsplit_once(",vcpu=") {
                Some((g, n)) => (
                    g,
                    Some(
                        n.parse::<u32>()
                            .map_err(|_| InputError::field("--vm", format!("\"{spec}\": vcpu must be a number")))?,
                    ),
                ),
                None => (spec, None),
            };
            return Ok(Binding { guest: guest.to_string(), source: GuestSource::VmName, vcpu });
        }
        let (guest, rest, vcpu) = split_spec(spec, "--vm", "GUEST=QMP_SOCKET[,vcpu=N]")?;
        Ok(Binding { guest, source: GuestSource::Qmp(PathBuf::from(rest)), vcpu })
    }

    /// Parse `GUEST=TID[,vcpu=N]`.
    pub fn parse_pid(spec: &str) -> Result<Binding, InputError> {
        let (guest, rest, vcpu) = split_spec(spec, "--pid", "GUEST=TID[,vcpu=N]")?;
        let tid = rest.parse().map_err(|_| {
            InputError::field(
                "--pid",
                format!("\"{spec}\": \"{rest}\" is not a thread id (expected GUEST=TID[,vcpu=N])"),
            )
        })?;
        Ok(Binding { guest, source: GuestSource::Thread(tid), vcpu })
    }

    /// The guest's threads, labelled (a `--pid` thread is labelled as vCPU `vcpu` (default 0)).
    pub fn threads(&self) -> Result<Vec<ThreadInfo>> {
        let mut v = match &self.source {
            GuestSource::Qmp(socket) => threads::discover(&threads::Target::Qmp(socket.clone()))?,
            GuestSource::VmName => threads::discover(&threads::Target::Vm(self.guest.clone()))?,
            GuestSource::Thread(tid) => {
                let role = Role::Vcpu { index: self.vcpu.unwrap_or(0) };
                vec![threads::read_thread(*tid, role, Some(self.guest.clone())).ok_or_else(|| {
                    HostError::input(format!("--pid {}={tid}: thread {tid} does not exist (stale PID?)", self.guest))
                })?]
            }
        };
        for t in &mut v {
            t.guest = Some(self.guest.clone());
        }
        Ok(v)
    }
}

fn split_spec(spec: &str, flag: &str, form: &str) -> Result<(String, String, Option<u32>), InputError> {
    let bad = |why: &str| InputError::field(flag, format!("\"{spec}\": {why} (expected {form})"));
    let (guest, rest) = spec.split_once('=').ok_or_else(|| bad("no '='"))?;
    if guest.is_empty() || rest.is_empty() {
        return Err(bad("empty guest name or value"));
    }
    let (value, vcpu) = match rest.rsplit_once(",vcpu=") {
        Some((v, n)) => (v, Some(n.parse::<u32>().map_err(|_| bad("vcpu must be a number"))?)),
        None => (rest, None),
    };
    Ok((guest.to_string(), value.to_string(), vcpu))
}

/// Options shared by plan and profile applies.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub state_dir: PathBuf,
    /// Apply even if the lint fails.
    pub force: bool,
    /// Resolve, validate and lint only.
    pub dry_run: bool,
}

/// What an apply did (or would do, with --dry-run).
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub schema: &'static str,
    pub journal: PathBuf,
    pub dry_run: bool,
    pub forced: bool,
    pub lint: LintReport,
    /// Threads and settings the apply targets, with their state afterwards.
    pub planned: Vec<Planned>,
    /// Changes made, in order (already-applied settings are skipped).
    pub changes: Vec<String>,
    /// Plan guests not bound with --vm/--pid (left untouched).
    pub skipped: Vec<String>,
}

/// A validated apply, ready to lint and run.
#[derive(Default)]
pub(crate) struct Prepared {
    pub changes: Vec<Change>,
    pub planned: Vec<Planned>,
    pub partitions: CpuList,
    pub placed_irqs: Vec<u32>,
    pub skipped: Vec<String>,
    /// Lint findings known while resolving (e.g. a policy for an IRQ that has no IRQ thread).
    pub findings: Vec<lint::Finding>,
    /// This host's fair servers, read once (debugfs, perhaps through a private mount) for the
    /// admission tests and the lint.
    pub fair_server: sysinfo::FairServers,
}

/// Lint the resulting state; unless blocked (or a dry run), journal and perform the changes,
/// then the follow-up changes (which can only be computed once the first ones are in effect,
/// e.g. the NAPI threads that appear when threaded NAPI is switched on).
pub(crate) fn lint_and_run(
    p: Prepared,
    opts: &ApplyOptions,
    followup: &mut dyn FnMut() -> Result<Vec<Change>>,
    progress: &mut dyn FnMut(&Change),
) -> Result<ApplyReport, ApplyError> {
    let existing = threads::all_threads();
    let irqs_after = irqs_after(&p.changes);
    let mut lint = lint::lint(&LintInput {
        planned: &p.planned,
        existing: &existing,
        irqs: &irqs_after,
        placed_irqs: &p.placed_irqs,
        isolated: sysinfo::isolated_cpus(),
        online: sysinfo::online_cpus(),
        partitions: p.partitions.clone(),
        rt_runtime_us: sysinfo::rt_runtime_us(),
        fair_server: &p.fair_server,
    });
    lint.findings.extend(p.findings);
    let mut report = ApplyReport {
        schema: APPLY_SCHEMA,
        journal: opts.state_dir.join(crate::journal::JOURNAL_FILE),
        dry_run: opts.dry_run,
        forced: opts.force && lint.failures() > 0,
        planned: p.planned,
        changes: Vec::new(),
        skipped: p.skipped,
        lint,
    };
    if report.lint.failures() > 0 && !opts.force {
        return Err(ApplyError::LintFailed(Box::new(report.lint)));
    }
    if opts.dry_run {
        report.changes = rtvirt_os::restore::needed(&p.changes).into_iter().map(Change::describe).collect();
        return Ok(report);
    }
    let mut journal = Journal::open(&opts.state_dir)?;
    let mut done = journal.apply_all(&p.changes, progress)?;
    let more = match followup() {
        Ok(more) => more,
        Err(cause) => {
            let undone = journal.rollback()?;
            return Err(HostError::RolledBack { cause: Box::new(cause), undone }.into());
        }
    };
    done.extend(journal.apply_all(&more, progress)?);
    report.changes = done.iter().map(Change::describe).collect();
    Ok(report)
}

/// The IRQs with the affinities the changes will give them (for the lint).
fn irqs_after(changes: &[Change]) -> Vec<sysinfo::Irq> {
    let mut irqs = sysinfo::irqs();
    for c in changes {
        if let Change::File { path, after, .. } = c {
            let num = path.strip_prefix("/proc/irq").ok().and_then(|r| r.iter().next()?.to_str()?.parse::<u32>().ok());
            if let (Some(n), Ok(cpus)) = (num, CpuList::parse(after)) {
                if let Some(i) = irqs.iter_mut().find(|i| i.number == n) {
                    i.effective = cpus.clone();
                    i.affinity = cpus;
                }
            }
        }
    }
    irqs
}

/// The change to a thread's scheduling attributes (no-op if already so).
pub(crate) fn sched_change(t: &ThreadInfo, after: rtvirt_os::sched::SchedAttr) -> Change {
    Change::Sched { tid: t.tid, starttime: t.starttime, before: t.sched, after }
}

/// The change to a thread's affinity (no-op if already so).
pub(crate) fn affinity_change(t: &ThreadInfo, after: CpuList) -> Change {
    Change::Affinity { tid: t.tid, starttime: t.starttime, before: t.affinity.clone(), after }
}

/// Check that `cpus` are online CPUs of this host.
pub(crate) fn check_online(cpus: &CpuList, field: &str) -> Result<(), InputError> {
    let online = sysinfo::online_cpus();
    let missing = cpus.difference(&online);
    if !missing.is_empty() {
        return Err(InputError::field(field, format!("CPU {missing} is not online on this host (online: {online})")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bindings() {
        let b = Binding::parse_vm("rt0=/run/q.sock,vcpu=1").unwrap();
        assert_eq!((b.guest.as_str(), b.vcpu), ("rt0", Some(1)));
        assert_eq!(b.source, GuestSource::Qmp("/run/q.sock".into()));
        assert_eq!(Binding::parse_pid("g=42").unwrap().source, GuestSource::Thread(42));
        assert!(Binding::parse_pid("g=abc").unwrap_err().to_string().contains("not a thread id"));
        let by_name = Binding::parse_vm("rt0,vcpu=1").unwrap();
        assert_eq!((by_name.guest.as_str(), by_name.source, by_name.vcpu), ("rt0", GuestSource::VmName, Some(1)));
        assert!(Binding::parse_vm("=x").is_err());
    }
}
