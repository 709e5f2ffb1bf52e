//! The one restore primitive. [`Change`]: one reversible change to the host, carrying the original
//! value it replaces beside the new one (as rtla keeps its `orig_*` values). `undo` puts the
//! original back and is idempotent (undoing a change that was never performed is harmless).
//!
//! Two users: `rtvirt host apply` records each change in its journal before performing it, which
//! is what lets `revert` finish the work of a process killed halfway; the probe's guards hold a
//! [`Restorer`], which records each change before performing it and undoes them all, last first,
//! when dropped (and, made with a [`ChangeLog`], journals them for `revert` after a kill -9).
//!
//! A change read back from a record (a journal) is undone only if [`Change::check_paths`] finds
//! every path it writes under [`change_roots`]: where rtvirt makes changes, never `/etc` or `/tmp`.

use crate::cpulist::CpuList;
use crate::error::{KernelError, Op, OsError, Result};
use crate::procfs;
use crate::sched::{self, SchedAttr};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// sched_setattr on a thread; (tid, starttime) identifies it so that a reused TID is never touched.
    Sched { tid: u32, starttime: u64, before: SchedAttr, after: SchedAttr },
    /// sched_setaffinity on a thread.
    Affinity { tid: u32, starttime: u64, before: CpuList, after: CpuList },
    /// A sysfs/procfs/cgroup file's content.
    File { path: PathBuf, before: String, after: String },
    /// A cgroup directory rtvirt creates, with the files it writes in it (in order). Undo moves
    /// any thread left in it to `parent_tasks` and removes it.
    Cgroup { path: PathBuf, files: Vec<(String, String)>, tasks_file: String, parent_tasks: PathBuf },
    /// The root cpuset's `sched_load_balance` switched off so that each partition is its own root
    /// domain (cgroup v1). Undo restores exactly `before`; if another tool created an exclusive
    /// cpuset since (`foreign_before` lists those that existed at apply time), it may rely on
    /// balancing staying off, and the undo says so in a warning.
    LoadBalanceOff {
        path: PathBuf,
        before: String,
        #[serde(default)]
        foreign_before: Vec<String>,
    },
    /// A controller enabled for the children of a cgroup v2 directory (`+cpuset` written to
    /// `cgroup.subtree_control`, whose content was `before`); undo disables it again.
    EnableController { path: PathBuf, controller: String, before: String },
    /// Move a thread to another cgroup by writing its TID into `after_tasks` (v1 `tasks`, v2
    /// `cgroup.threads`); undo writes it into `before_tasks`.
    MoveThread { tid: u32, starttime: u64, before_tasks: PathBuf, after_tasks: PathBuf },
    /// A tracing instance rtvirt creates (`<tracefs>/instances/rtvirt-<pid>`); `mounted` is the
    /// tracefs mount point rtvirt mounted for it (None: tracefs was mounted already). Undo removes
    /// the instance with everything enabled in it, then unmounts what rtvirt mounted.
    TraceInstance { path: PathBuf, mounted: Option<PathBuf> },
}

/// What undoing one change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Undone {
    Restored,
    /// Restored, with something the user should know (e.g. another tool's cpuset partition).
    RestoredWithWarning(String),
    /// The thread exited (or its TID was reused): nothing to restore.
    ThreadGone,
}

impl Change {
    /// Set file `path` to `after`, keeping its current (trimmed) content to restore.
    pub fn file(path: impl Into<PathBuf>, after: &str) -> Result<Change> {
        let path = path.into();
        Ok(Change::File { before: read_trimmed(&path)?, after: after.to_string(), path })
    }

    /// Switch off the `sched_load_balance` of the cgroup v1 cpuset root `root`, keeping its value
    /// and the other tools' exclusive cpusets that exist now.
    pub fn load_balance_off(root: &Path) -> Result<Change> {
        let path = root.join("cpuset.sched_load_balance");
        Ok(Change::LoadBalanceOff {
            before: read_trimmed(&path)?,
            foreign_before: foreign_exclusive_cpusets(root),
            path,
        })
    }

    /// One line for people: "thread 1234: OTHER nice 0 -> DEADLINE 1000000/10000000/10000000ns".
    pub fn describe(&self) -> String {
        match self {
            Change::Sched { tid, before, after, .. } => format!("thread {tid}: {before} -> {after}"),
            Change::Affinity { tid, before, after, .. } => format!("thread {tid}: affinity {before} -> {after}"),
            Change::File { path, before, after } => format!("{}: {:?} -> {:?}", path.display(), before, after),
            Change::Cgroup { path, files, .. } => {
                let f: Vec<String> = files.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("create cgroup {} ({})", path.display(), f.join(", "))
            }
            Change::MoveThread { tid, after_tasks, .. } => {
                format!("thread {tid}: move to cgroup {}", parent_dir(after_tasks).display())
            }
            Change::LoadBalanceOff { path, before, .. } => format!("{}: {before:?} -> \"0\"", path.display()),
            Change::EnableController { path, controller, .. } => format!("{}: +{controller}", path.display()),
            Change::TraceInstance { path, .. } => format!("create tracing instance {}", path.display()),
        }
    }

    /// Make the change.
    pub fn perform(&self) -> Result<()> {
        match self {
            Change::Sched { tid, starttime, after, .. } => {
                check_same_thread(*tid, *starttime)?;
                if after.is_deadline() {
                    crate::migrate::settle(*tid)?;
                }
                Ok(sched::set(*tid, after)?)
            }
            Change::Affinity { tid, starttime, after, .. } => {
                check_same_thread(*tid, *starttime)?;
                Ok(sched::set_affinity(*tid, after)?)
            }
            Change::File { path, after, .. } => write_file(path, after, Op::WriteFile),
            Change::Cgroup { path, files, .. } => {
                if !path.is_dir() {
                    std::fs::create_dir(path)
                        .map_err(|e| kernel_io(Op::CreateCgroup, format!("mkdir {}", path.display()), e))?;
                }
                files.iter().try_for_each(|(name, value)| write_file(&path.join(name), value, Op::CreateCgroup))?;
                check_partition(path, files)
            }
            Change::MoveThread { tid, starttime, after_tasks, .. } => {
                check_same_thread(*tid, *starttime)?;
                write_file(after_tasks, &tid.to_string(), Op::MoveToCgroup)
            }
            Change::LoadBalanceOff { path, .. } => write_file(path, "0", Op::WriteFile),
            Change::EnableController { path, controller, .. } => {
                write_file(path, &format!("+{controller}"), Op::WriteFile)
            }
            Change::TraceInstance { path, mounted } => crate::trace_mount::create_instance(path, mounted.as_deref()),
        }
    }

    /// Put the original back (idempotent).
    pub fn undo(&self) -> Result<Undone> {
        match self {
            Change::Sched { tid, starttime, before, .. } => {
                on_thread(*tid, *starttime, || Ok(sched::set(*tid, before)?))
            }
            Change::Affinity { tid, starttime, before, .. } => {
                on_thread(*tid, *starttime, || Ok(sched::set_affinity(*tid, before)?))
            }
            Change::File { path, before, .. } => {
                // A file that does not exist was never changed.
                if path.exists() && read_trimmed(path)? != *before {
                    write_file(path, before, Op::WriteFile)?;
                }
                Ok(Undone::Restored)
            }
            Change::Cgroup { path, tasks_file, parent_tasks, .. } => {
                remove_cgroup(path, tasks_file, parent_tasks).map(|_| Undone::Restored)
            }
            Change::MoveThread { tid, starttime, before_tasks, .. } => {
                on_thread(*tid, *starttime, || write_file(before_tasks, &tid.to_string(), Op::MoveToCgroup))
            }
            Change::LoadBalanceOff { path, before, foreign_before } => {
                if before == "0" {
                    return Ok(Undone::Restored); // rtvirt did not change it
                }
                if read_trimmed(path)? != *before {
                    write_file(path, before, Op::WriteFile)?;
                }
                let new: Vec<String> = foreign_exclusive_cpusets(parent_dir(path))
                    .into_iter()
                    .filter(|n| !foreign_before.contains(n))
                    .collect();
                if new.is_empty() {
                    return Ok(Undone::Restored);
                }
                Ok(Undone::RestoredWithWarning(format!(
                    "{} restored to {before:?} as it was before the apply, but exclusive cpuset(s) {} were created by \
                     another tool since: if they are meant to be separate root domains (e.g. for SCHED_DEADLINE), that \
                     tool needs {} set to \"0\" again",
                    path.display(),
                    new.join(", "),
                    path.display()
                )))
            }
            Change::EnableController { path, controller, before } => {
                if !lists(before, controller) && path.exists() && lists(&read_trimmed(path)?, controller) {
                    write_file(path, &format!("-{controller}"), Op::WriteFile)?;
                }
                Ok(Undone::Restored)
            }
            Change::TraceInstance { path, mounted } => {
                crate::trace_mount::remove_instance(path, mounted.as_deref()).map(|_| Undone::Restored)
            }
        }
    }

    /// What the change targets: two changes with the same key set the same thing.
    pub fn key(&self) -> String {
        match self {
            Change::Sched { tid, .. } => format!("sched:{tid}"),
            Change::Affinity { tid, .. } => format!("affinity:{tid}"),
            Change::File { path, .. } | Change::LoadBalanceOff { path, .. } => format!("file:{}", path.display()),
            Change::EnableController { path, controller, .. } => format!("controller:{controller}:{}", path.display()),
            Change::Cgroup { path, .. } => format!("cgroup:{}", path.display()),
            Change::MoveThread { tid, .. } => format!("cgroup-of:{tid}"),
            Change::TraceInstance { path, .. } => format!("trace-instance:{}", path.display()),
        }
    }

    /// Would performing this change leave the host as it is (already applied)?
    pub fn is_noop(&self) -> bool {
        match self {
            Change::Sched { before, after, .. } => before.normalized() == after.normalized(),
            Change::Affinity { before, after, .. } => before == after,
            Change::File { before, after, .. } => before == after,
            Change::Cgroup { .. } => false,
            Change::MoveThread { before_tasks, after_tasks, .. } => before_tasks == after_tasks,
            Change::LoadBalanceOff { before, .. } => before == "0",
            Change::EnableController { controller, before, .. } => lists(before, controller),
            Change::TraceInstance { .. } => false,
        }
    }
}

/// Where rtvirt makes the changes it records: device attributes under `/sys/devices` (a NIC's
/// threaded NAPI), IRQ affinities under `/proc/irq`, the cgroup and tracefs mounts, and
/// `/sys/kernel/tracing` (where rtvirt mounts tracefs). (The unit tests add the temporary
/// directory, whose files stand in for sysfs files.)
pub fn change_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> =
        ["/sys/devices", "/proc/irq", crate::trace_mount::MOUNT_POINT].map(PathBuf::from).to_vec();
    let mounts = procfs::mounts().into_iter();
    roots.extend(mounts.filter(|m| matches!(m.fstype.as_str(), "cgroup" | "cgroup2" | "tracefs")).map(|m| m.path));
    #[cfg(test)]
    roots.extend(std::env::temp_dir().canonicalize());
    roots
}

impl Change {
    /// Whether every path this change's undo writes, removes or unmounts lies under one of
    /// `roots` ([`change_roots`]), symlinks resolved; why not.
    pub fn check_paths(&self, roots: &[PathBuf]) -> std::result::Result<(), String> {
        let paths: Vec<&Path> = match self {
            Change::Sched { .. } | Change::Affinity { .. } => Vec::new(),
            Change::File { path, .. } | Change::LoadBalanceOff { path, .. } | Change::EnableController { path, .. } => {
                vec![path]
            }
            Change::Cgroup { path, tasks_file, parent_tasks, .. } => {
                if Path::new(tasks_file).components().count() != 1 || tasks_file.starts_with('.') {
                    return Err(format!("cgroup tasks file {tasks_file:?} is not a file name"));
                }
                vec![path, parent_tasks]
            }
            Change::MoveThread { before_tasks, after_tasks, .. } => vec![before_tasks, after_tasks],
            Change::TraceInstance { path, mounted } => {
                std::iter::once(path.as_path()).chain(mounted.as_deref()).collect()
            }
        };
        for p in paths {
            match resolve(p) {
                Some(real) if roots.iter().any(|r| real.starts_with(r)) => {}
                resolved => {
                    let shown = resolved.filter(|r| r != p).map(|r| format!(" (resolved: {})", r.display()));
                    return Err(format!(
                        "{}{} is not a file rtvirt changes (only under /sys/devices, /proc/irq, the cgroup and \
                         tracefs mounts)",
                        p.display(),
                        shown.unwrap_or_default()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `path` with symlinks resolved (its missing tail, if any, appended to its deepest existing
/// ancestor); None if it is relative or has `.`/`..` components.
fn resolve(path: &Path) -> Option<PathBuf> {
    let plain = path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !path.is_absolute() || !plain {
        return None;
    }
    let mut missing = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            return Some(missing.iter().rev().fold(real, |p, name| p.join(name)));
        }
        missing.push(at.file_name()?);
        at = at.parent()?;
    }
}

/// The changes of a batch that must be made: a no-op is skipped unless an earlier change of the
/// batch set the same thing (then it sets it back).
pub fn needed(changes: &[Change]) -> Vec<&Change> {
    changes
        .iter()
        .enumerate()
        .filter(|(i, c)| !c.is_noop() || changes[..*i].iter().any(|e| e.key() == c.key()))
        .map(|(_, c)| c)
        .collect()
}

/// Where a [`Restorer`] records each change before performing it, to outlive the process (a
/// kill -9): `crate::guard_journal::GuardJournal`.
pub trait ChangeLog: std::fmt::Debug + Send + Sync {
    /// Record `change` durably (fsynced) before it is performed.
    fn record(&mut self, change: &Change) -> Result<()>;
    /// Every recorded change has been undone: the record may go.
    fn finished(&mut self);
}

/// Changes made for the length of a scope: each is recorded before it is performed (so that a
/// change that failed halfway, e.g. a cgroup created but refused its CPU, is undone too), and all
/// are undone, last first, on drop. Failures to restore are reported on stderr as warnings. A
/// journaled restorer also writes each change to its [`ChangeLog`] first, and lets the log go only
/// when every undo succeeded.
#[derive(Debug, Default)]
pub struct Restorer {
    changes: Vec<Change>,
    log: Option<Box<dyn ChangeLog>>,
}

impl Restorer {
    pub fn new() -> Restorer {
        Restorer::default()
    }

    /// A restorer that records every change in `log` before performing it.
    pub fn journaled(log: Box<dyn ChangeLog>) -> Restorer {
        Restorer { changes: Vec::new(), log: Some(log) }
    }

    /// Perform `change`; it is undone when the restorer is dropped.
    pub fn perform(&mut self, change: Change) -> Result<()> {
        if let Some(log) = &mut self.log {
            log.record(&change)?;
        }
        self.changes.push(change);
        self.changes.last().expect("just pushed").perform()
    }
}

impl Drop for Restorer {
    fn drop(&mut self) {
        let mut all_restored = true;
        for change in self.changes.drain(..).rev() {
            match change.undo() {
                Ok(Undone::RestoredWithWarning(w)) => eprintln!("rtvirt: warning: {w}"),
                Ok(_) => {}
                Err(e) => {
                    all_restored = false;
                    eprintln!("rtvirt: warning: could not restore {}: {e}", change.describe())
                }
            }
        }
        if let Some(log) = self.log.as_mut().filter(|_| all_restored) {
            log.finished();
        }
    }
}

/// Is (tid, starttime) still the same thread? A stale TID is an error when changing.
fn check_same_thread(tid: u32, starttime: u64) -> Result<()> {
    match procfs::stat(tid) {
        Ok(st) if st.starttime == starttime => Ok(()),
        _ => Err(KernelError::new(Op::GetSched, format!("thread {tid}"), libc::ESRCH).into()),
    }
}

/// Run `f` if the thread still exists (same start time), else report it gone.
fn on_thread(tid: u32, starttime: u64, f: impl FnOnce() -> Result<()>) -> Result<Undone> {
    if check_same_thread(tid, starttime).is_err() {
        return Ok(Undone::ThreadGone);
    }
    match f() {
        Err(OsError::Kernel(k)) if k.errno == libc::ESRCH => Ok(Undone::ThreadGone),
        other => other.map(|_| Undone::Restored),
    }
}

fn parent_dir(p: &Path) -> &Path {
    p.parent().unwrap_or(p)
}

/// Whether a space-separated controller list (`cgroup.subtree_control`) holds `controller`.
fn lists(controllers: &str, controller: &str) -> bool {
    controllers.split_whitespace().any(|c| c == controller)
}

/// cgroup v2 accepts any `cpuset.cpus.partition` write and reports a refused partition when read
/// ("root invalid (...)"): read it back.
fn check_partition(dir: &Path, files: &[(String, String)]) -> Result<()> {
    let Some((name, wanted)) = files.iter().find(|(name, _)| name == "cpuset.cpus.partition") else { return Ok(()) };
    let state = read_trimmed(&dir.join(name))?;
    if state == *wanted {
        return Ok(());
    }
    Err(OsError::Unsupported(format!(
        "{} cannot become a partition ({state}); on cgroup v2 the host must keep other CPUs for its own tasks",
        dir.display()
    )))
}

/// The exclusive cpusets directly under `base` that are not rtvirt host partitions (other
/// tools'), sorted by name.
fn foreign_exclusive_cpusets(base: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(base)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with("rtvirt-core"))
                .filter(|e| procfs::read_opt(e.path().join("cpuset.cpu_exclusive")).as_deref() == Some("1"))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub(crate) fn read_trimmed(path: &Path) -> Result<String> {
    procfs::read(path).map(|s| s.trim().to_string())
}

fn kernel_io(op: Op, what: String, e: std::io::Error) -> OsError {
    KernelError::new(op, what, e.raw_os_error().unwrap_or(libc::EIO)).into()
}

/// Write a sysfs/procfs/cgroup value in one write(2), mapping errno into words.
pub(crate) fn write_file(path: &Path, value: &str, op: Op) -> Result<()> {
    std::fs::write(path, value).map_err(|e| kernel_io(op, format!("writing {value:?} to {}", path.display()), e))
}

/// Move every thread still in the cgroup to the parent, then remove it (retrying while the kernel
/// finishes the moves).
fn remove_cgroup(path: &Path, tasks_file: &str, parent_tasks: &Path) -> Result<()> {
    for _ in 0..100 {
        if !path.exists() {
            return Ok(());
        }
        for tid in procfs::read_opt(path.join(tasks_file)).unwrap_or_default().split_whitespace() {
            let _ = std::fs::write(parent_tasks, tid);
        }
        if std::fs::remove_dir(path).is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::fs::remove_dir(path).map_err(|e| kernel_io(Op::CreateCgroup, format!("rmdir {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_under_the_roots_are_revertable_symlinks_resolved() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap().join("sys");
        std::fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        let roots = [root.clone()];
        let file = |p: PathBuf| Change::File { path: p, before: String::new(), after: String::new() };
        let ok = |p: PathBuf| file(p).check_paths(&roots);
        assert_eq!(ok(root.join("a")), Ok(()));
        assert_eq!(ok(root.join("missing/dir/a")), Ok(()), "a path that no longer exists resolves by its parent");
        for bad in [root.join("out/passwd"), root.join("../x"), PathBuf::from("/etc/x"), PathBuf::from("sys/a")] {
            assert!(ok(bad.clone()).unwrap_err().contains("is not a file rtvirt changes"), "{}", bad.display());
        }
        assert!(ok(root.join("out/passwd")).unwrap_err().contains("(resolved: /etc/passwd)"));
        let cgroup = |tasks_file: &str| Change::Cgroup {
            path: root.join("g"),
            files: Vec::new(),
            tasks_file: tasks_file.into(),
            parent_tasks: root.join("tasks"),
        };
        assert_eq!(cgroup("tasks").check_paths(&roots), Ok(()));
        assert!(cgroup("../../etc/shadow").check_paths(&roots).is_err());
    }

    /// A fake cgroup v1 cpuset root in a temporary directory: the root's sched_load_balance and
    /// child cpusets with their cpu_exclusive flag.
    fn fake_root(load_balance: &str, children: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("cpuset.sched_load_balance"), load_balance).unwrap();
        for (name, exclusive) in children {
            std::fs::create_dir(d.path().join(name)).unwrap();
            std::fs::write(d.path().join(name).join("cpuset.cpu_exclusive"), exclusive).unwrap();
        }
        d
    }

    fn load_balance_off(d: &tempfile::TempDir) -> Change {
        Change::load_balance_off(d.path()).unwrap()
    }

    fn value(d: &tempfile::TempDir) -> String {
        read_trimmed(&d.path().join("cpuset.sched_load_balance")).unwrap()
    }

    #[test]
    fn load_balance_is_restored_exactly_even_with_a_foreign_partition_from_before() {
        let d = fake_root("1", &[("other-tool", "1"), ("rtvirt-core1", "1"), ("shared", "0")]);
        let c = load_balance_off(&d);
        assert_eq!(
            c,
            Change::LoadBalanceOff {
                path: d.path().join("cpuset.sched_load_balance"),
                before: "1".into(),
                foreign_before: vec!["other-tool".into()]
            }
        );
        c.perform().unwrap();
        assert_eq!(value(&d), "0");
        assert_eq!(c.undo().unwrap(), Undone::Restored, "the foreign partition existed before: nothing to warn about");
        assert_eq!(value(&d), "1");
        assert_eq!(c.undo().unwrap(), Undone::Restored, "idempotent");
        assert_eq!(value(&d), "1");
    }

    #[test]
    fn a_foreign_partition_created_after_the_apply_is_warned_about_not_silently_kept() {
        let d = fake_root("1", &[]);
        let c = load_balance_off(&d);
        c.perform().unwrap();
        std::fs::create_dir(d.path().join("late-tool")).unwrap();
        std::fs::write(d.path().join("late-tool/cpuset.cpu_exclusive"), "1").unwrap();
        match c.undo().unwrap() {
            Undone::RestoredWithWarning(w) => {
                assert!(w.contains("late-tool") && w.contains("restored to \"1\""), "{w}")
            }
            other => panic!("expected a warning, got {other:?}"),
        }
        assert_eq!(value(&d), "1", "restored exactly");
    }

    #[test]
    fn load_balance_already_off_is_left_alone() {
        let d = fake_root("0", &[]);
        let c = load_balance_off(&d);
        assert!(c.is_noop());
        std::fs::write(d.path().join("cpuset.sched_load_balance"), "1").unwrap(); // someone else's change since
        assert_eq!(c.undo().unwrap(), Undone::Restored);
        assert_eq!(value(&d), "1", "rtvirt did not change it, so revert does not touch it");
    }

    #[test]
    fn journals_without_foreign_before_still_parse() {
        let old =
            r#"{"kind":"load_balance_off","path":"/sys/fs/cgroup/cpuset/cpuset.sched_load_balance","before":"1"}"#;
        let c: Change = serde_json::from_str(old).unwrap();
        assert!(matches!(c, Change::LoadBalanceOff { ref foreign_before, .. } if foreign_before.is_empty()));
    }
}
