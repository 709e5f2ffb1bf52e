//! The journal of host changes, in a state directory (default `/var/lib/rtvirt`, or
//! `$RTVIRT_STATE_DIR`): one JSON line per change, holding the original value, appended and
//! fsynced *before* the change is made. `revert` undoes every recorded change in reverse order and
//! removes the journal (and the tracing instances that killed `--explain` runs left, and the
//! cpusets of killed calibrations: `rtvirt_os::guard_journal`); a failure
//! halfway through an apply rolls back that apply's changes; a process killed halfway leaves a
//! journal that `revert` completes (undo is idempotent).
//!
//! Applying again on top of an applied state appends a new session: reverse-order undo restores
//! the values recorded by the first session last, so `revert` still yields the original host.
//!
//! Trust: a journal is root's instructions to itself (a `file` entry is written back as root, a
//! `sched` entry sets any thread's policy, a `trace_instance` entry unmounts), so a journal is
//! read, and written, only in a state directory no one else can have written: the directory and
//! every directory above it owned by root or by this process's user and writable by no group or
//! other user (a sticky directory above it, like `/tmp`, may be: there no one renames or removes
//! what is not theirs), and the journal, `guards/` and `tracing/` in it likewise (and not
//! symlinks). rtvirt creates state directories with mode 0755 whatever the umask. Anything else is
//! refused before anything is read or changed, naming the directory and why ([`check_trusted`]).
//! And a revert writes only where rtvirt makes changes: every path of an entry, symlinks resolved,
//! must lie under `/sys/devices` (device attributes: a NIC's threaded NAPI), `/proc/irq` (IRQ
//! affinities), a cgroup or cgroup2 mount, a tracefs mount or `/sys/kernel/tracing` (where rtvirt
//! mounts tracefs). An entry with any other path (`/etc/...`, `/tmp/...`, `/proc/sys/...`,
//! `/proc/1/root/...`) refuses the whole revert, naming its line, before anything is undone
//! (`rtvirt_os::restore::change_roots`; the guards' and tracing records are held to it too).
//!
//! Test hook (documented, used by the crash tests): `RTVIRT_TEST_CRASH_AFTER=N` makes the
//! applying process abort (no unwinding, no cleanup, like SIGKILL) right after the N-th change of
//! this run has been journaled and before it is performed.

use crate::error::{HostError, Result};
use rtvirt_os::restore::{Change, Undone};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub const JOURNAL_FILE: &str = "journal.jsonl";
const LOCK_FILE: &str = "lock";
pub const STATE_DIR_ENV: &str = "RTVIRT_STATE_DIR";
pub const DEFAULT_STATE_DIR: &str = "/var/lib/rtvirt";
pub const CRASH_HOOK_ENV: &str = "RTVIRT_TEST_CRASH_AFTER";

/// `$RTVIRT_STATE_DIR`, else `/var/lib/rtvirt`.
pub fn default_state_dir() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Which apply run recorded it (1, 2, ...).
    pub session: u64,
    pub seq: u64,
    pub change: Change,
}

/// An open journal, holding the state directory's lock.
pub struct Journal {
    path: PathBuf,
    file: File,
    _lock: File,
    session: u64,
    seq: u64,
    recorded_this_session: Vec<Change>,
    crash_after: Option<u64>,
}

impl Journal {
    /// Open (creating) the journal in `dir` and start a new session.
    pub fn open(dir: &Path) -> Result<Journal> {
        let lock = lock_dir(dir)?;
        let path = dir.join(JOURNAL_FILE);
        let previous = read_entries(&path)?;
        let torn = std::fs::read(&path).is_ok_and(|b| b.last().is_some_and(|&c| c != b'\n'));
        if torn {
            // A process killed mid-write left a partial last line: drop it before appending.
            rewrite(&path, &previous)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .open(&path)
            .map_err(|e| HostError::io(&path, e))?;
        fsync_dir(dir)?;
        let crash_after = std::env::var(CRASH_HOOK_ENV).ok().and_then(|v| v.parse().ok());
        Ok(Journal {
            session: previous.iter().map(|e| e.session).max().unwrap_or(0) + 1,
            path,
            file,
            _lock: lock,
            seq: 0,
            recorded_this_session: Vec::new(),
            crash_after,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one change and fsync, before it is performed.
    fn record(&mut self, change: &Change) -> Result<()> {
        self.seq += 1;
        let line = serde_json::to_string(&Entry { session: self.session, seq: self.seq, change: change.clone() })
            .expect("journal entries serialize");
        let err = |e: std::io::Error| HostError::io(&self.path, e);
        self.file.write_all(format!("{line}\n").as_bytes()).map_err(err)?;
        self.file.sync_all().map_err(err)?;
        self.recorded_this_session.push(change.clone());
        Ok(())
    }

    /// Journal and perform each change in order, skipping those already in effect. On the first
    /// failure, everything this session changed is rolled back and the error says so.
    /// Returns the changes made.
    pub fn apply_all(&mut self, changes: &[Change], progress: &mut dyn FnMut(&Change)) -> Result<Vec<Change>> {
        let mut done = Vec::new();
        for change in rtvirt_os::restore::needed(changes) {
            let result = self.record(change).and_then(|_| {
                self.crash_hook();
                Ok(change.perform()?)
            });
            if let Err(cause) = result {
                let undone = self.rollback()?;
                return Err(HostError::RolledBack { cause: Box::new(cause), undone });
            }
            progress(change);
            done.push(change.clone());
        }
        Ok(done)
    }

    fn crash_hook(&self) {
        if self.crash_after == Some(self.seq) {
            eprintln!(
                "rtvirt: {CRASH_HOOK_ENV}={}: aborting after journaling change {} (test hook)",
                self.seq, self.seq
            );
            std::process::abort();
        }
    }

    /// Undo this session's changes (reverse order) and drop them from the journal.
    pub fn rollback(&mut self) -> Result<usize> {
        let changes = std::mem::take(&mut self.recorded_this_session);
        let failures = undo_all(changes.iter().rev());
        if !failures.is_empty() {
            return Err(HostError::Journal {
                path: self.path.clone(),
                message: format!("rollback incomplete, run `rtvirt host revert`: {}", failures.join("; ")),
            });
        }
        let keep: Vec<Entry> = read_entries(&self.path)?.into_iter().filter(|e| e.session != self.session).collect();
        rewrite(&self.path, &keep)?;
        Ok(changes.len())
    }
}

/// Undo changes in the order given; return the failures in words.
fn undo_all<'a>(changes: impl Iterator<Item = &'a Change>) -> Vec<String> {
    changes.filter_map(|c| c.undo().err().map(|e| format!("{}: {e}", c.describe()))).collect()
}

/// What `revert` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RevertReport {
    /// "rtvirt.revert/v1"
    pub schema: &'static str,
    pub journal: PathBuf,
    /// The changes undone, newest first.
    pub restored: Vec<String>,
    /// Changes on threads that have exited since: nothing to restore.
    pub threads_gone: Vec<String>,
    /// What the user should know about the restored state (e.g. another tool's cpuset partition).
    pub warnings: Vec<String>,
}

/// Undo every journaled change (newest first) and remove the journal. With no journal, nothing
/// to do. If any undo fails the journal is kept (undo is idempotent, so revert can be re-run).
pub fn revert(dir: &Path) -> Result<RevertReport> {
    let path = dir.join(JOURNAL_FILE);
    let mut report = RevertReport { schema: "rtvirt.revert/v1", journal: path.clone(), ..Default::default() };
    if !dir.exists() {
        return Ok(report);
    }
    check_trusted(dir)?;
    // Tracing instances of measurements killed before they could remove them (`--explain`), and
    // the cpusets of guards killed before they could restore them (`host calibrate`).
    let stale = rtvirt_os::tracefs::remove_stale(dir).into_iter().chain(rtvirt_os::guard_journal::restore_stale(dir));
    for said in stale {
        match said.strip_prefix("warning: ") {
            Some(w) => report.warnings.push(w.to_string()),
            None => report.restored.push(said),
        }
    }
    if !path.exists() {
        return Ok(report);
    }
    let _lock = lock_dir(dir)?;
    let entries = revertable_entries(&path)?;
    let mut failures = Vec::new();
    for e in entries.iter().rev() {
        match e.change.undo() {
            Ok(Undone::Restored) => report.restored.push(e.change.describe()),
            Ok(Undone::RestoredWithWarning(w)) => {
                report.restored.push(e.change.describe());
                report.warnings.push(w);
            }
            Ok(Undone::ThreadGone) => report.threads_gone.push(e.change.describe()),
            Err(err) => failures.push(format!("{}: {err}", e.change.describe())),
        }
    }
    if !failures.is_empty() {
        return Err(HostError::Journal {
            path,
            message: format!("could not restore {} change(s), journal kept: {}", failures.len(), failures.join("; ")),
        });
    }
    std::fs::remove_file(&path).map_err(|e| HostError::io(&path, e))?;
    fsync_dir(dir)?;
    Ok(report)
}

/// Undo the journaled changes of sessions `first_session` and later (newest first) and drop them
/// from the journal, keeping earlier sessions (another apply's): what a `host adapt` run changed,
/// undone at its end or, after it was killed, at the next run. Returns the changes undone, in
/// words. If any undo fails the journal is kept whole (undo is idempotent: run it again).
pub fn revert_from(dir: &Path, first_session: u64) -> Result<Vec<String>> {
    let path = dir.join(JOURNAL_FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let _lock = lock_dir(dir)?;
    let (undo, keep): (Vec<Entry>, Vec<Entry>) =
        revertable_entries(&path)?.into_iter().partition(|e| e.session >= first_session);
    let failures = undo_all(undo.iter().rev().map(|e| &e.change));
    if !failures.is_empty() {
        return Err(HostError::Journal {
            path,
            message: format!("could not restore {} change(s), journal kept: {}", failures.len(), failures.join("; ")),
        });
    }
    rewrite(&path, &keep)?;
    Ok(undo.iter().rev().map(|e| e.change.describe()).collect())
}

/// The session the next [`Journal::open`] in `dir` starts.
pub fn next_session(dir: &Path) -> Result<u64> {
    Ok(read_entries(&dir.join(JOURNAL_FILE))?.iter().map(|e| e.session).max().unwrap_or(0) + 1)
}

/// The journal's entries; a torn last line (process killed mid-write) is ignored, since that
/// change had not been performed.
pub fn read_entries(path: &Path) -> Result<Vec<Entry>> {
    Ok(read_lines(path)?.into_iter().map(|(_, e)| e).collect())
}

/// The journal's entries with their line numbers (1-based), as [`read_entries`].
fn read_lines(path: &Path) -> Result<Vec<(usize, Entry)>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HostError::io(path, e)),
    };
    let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    for (i, &(n, line)) in lines.iter().enumerate() {
        match serde_json::from_str::<Entry>(line) {
            Ok(e) => out.push((n + 1, e)),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => return Err(HostError::Journal { path: path.into(), message: format!("line {}: {e}", n + 1) }),
        }
    }
    Ok(out)
}

/// The journal's entries, once every path they would write is one rtvirt changes (module doc);
/// else the first entry that is not, by its line.
fn revertable_entries(path: &Path) -> Result<Vec<Entry>> {
    let roots = rtvirt_os::restore::change_roots();
    #[cfg(test)] // the unit tests' file changes stand in for sysfs files with temporary files
    let roots = [roots, std::env::temp_dir().canonicalize().into_iter().collect()].concat();
    let lines = read_lines(path)?;
    for (n, e) in &lines {
        if let Err(why) = e.change.check_paths(&roots) {
            return Err(HostError::Journal {
                path: path.into(),
                message: format!("line {n}: refusing to revert, nothing was undone: {why}"),
            });
        }
    }
    Ok(lines.into_iter().map(|(_, e)| e).collect())
}

/// Refuse a state directory someone else may have written (module doc): it and every directory
/// above it owned by root or this user, not writable by group or others (sticky ones above it
/// may be); its journal, `guards/` and `tracing/` likewise, and no symlinks.
pub fn check_trusted(dir: &Path) -> Result<()> {
    use rtvirt_os::trust;
    let refuse = |what: &Path, why: String| HostError::Journal {
        path: dir.join(JOURNAL_FILE),
        message: format!(
            "not trusted, nothing done: {} {why}; rtvirt uses a journal only in a state directory owned by uid {}, \
             with every directory above it, none writable by group or others (sticky ones like /tmp above it \
             excepted)",
            what.display(),
            trust::trusted_users().iter().map(u32::to_string).collect::<Vec<_>>().join(" or ")
        ),
    };
    if let Some((d, why)) = trust::untrusted_dir(dir).map_err(|e| HostError::io(dir, e))? {
        return Err(refuse(&d, why));
    }
    let real = dir.canonicalize().map_err(|e| HostError::io(dir, e))?;
    for name in [JOURNAL_FILE, rtvirt_os::guard_journal::JOURNAL_DIR, rtvirt_os::tracefs::JOURNAL_DIR] {
        let p = real.join(name);
        if let Some(why) = trust::untrusted_entry(&p).map_err(|e| HostError::io(&p, e))? {
            return Err(refuse(&p, why));
        }
    }
    Ok(())
}

/// Replace the journal atomically with `entries` (removing it when empty).
fn rewrite(path: &Path, entries: &[Entry]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if entries.is_empty() {
        std::fs::remove_file(path).map_err(|e| HostError::io(path, e))?;
        return fsync_dir(dir);
    }
    let tmp = path.with_extension("jsonl.tmp");
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o644)
        .open(&tmp)
        .map_err(|e| HostError::io(&tmp, e))?;
    for e in entries {
        writeln!(f, "{}", serde_json::to_string(e).expect("journal entries serialize"))
            .map_err(|e| HostError::io(&tmp, e))?;
    }
    f.sync_all().map_err(|e| HostError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| HostError::io(path, e))?;
    fsync_dir(dir)
}

/// Create the state directory if needed (mode 0755), check that it is trusted
/// ([`check_trusted`]) and take its exclusive lock (one apply/revert at a time).
fn lock_dir(dir: &Path) -> Result<File> {
    create_dir(dir)?;
    check_trusted(dir)?;
    let path = dir.join(LOCK_FILE);
    let f =
        OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| HostError::io(&path, e))?;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(HostError::Journal {
            path: dir.into(),
            message: "another `rtvirt host apply/revert` holds the state directory's lock".into(),
        });
    }
    Ok(f)
}

/// Create `dir` and its missing parents with mode 0755 whatever the umask (a group-writable state
/// directory would not be trusted).
pub fn create_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir).map_err(|e| HostError::io(dir, e))?;
    Ok(())
}

fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| HostError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_change(path: &Path, before: &str, after: &str) -> Change {
        Change::File { path: path.into(), before: before.into(), after: after.into() }
    }

    #[test]
    fn revert_from_undoes_later_sessions_only_and_keeps_earlier_ones() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("value");
        std::fs::write(&target, "orig").unwrap();
        let state = d.path().join("state");
        assert_eq!(next_session(&state).unwrap(), 1);
        Journal::open(&state).unwrap().apply_all(&[file_change(&target, "orig", "one")], &mut |_| {}).unwrap();
        let first = next_session(&state).unwrap();
        assert_eq!(first, 2);
        for (before, after) in [("one", "two"), ("two", "three")] {
            Journal::open(&state).unwrap().apply_all(&[file_change(&target, before, after)], &mut |_| {}).unwrap();
        }
        assert_eq!(revert_from(&state, first).unwrap().len(), 2);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "one", "the earlier session stays in force");
        assert_eq!(read_entries(&state.join(JOURNAL_FILE)).unwrap().len(), 1);
        assert!(revert_from(&state, first).unwrap().is_empty(), "nothing left of those sessions");
        assert_eq!(revert_from(&state, 1).unwrap().len(), 1);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "orig");
        assert!(!state.join(JOURNAL_FILE).exists());
    }

    #[test]
    fn apply_then_revert_restores_files_in_reverse_order() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("value");
        std::fs::write(&target, "orig").unwrap();
        let state = d.path().join("state");
        {
            let mut j = Journal::open(&state).unwrap();
            j.apply_all(&[file_change(&target, "orig", "one")], &mut |_| {}).unwrap();
        }
        {
            // applying on top: the second session records "one" as before, revert still ends at "orig"
            let mut j = Journal::open(&state).unwrap();
            j.apply_all(&[file_change(&target, "one", "two")], &mut |_| {}).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "two");
        let r = revert(&state).unwrap();
        assert_eq!(r.restored.len(), 2);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "orig");
        assert!(!state.join(JOURNAL_FILE).exists());
    }

    #[test]
    fn a_later_change_back_to_the_original_is_not_skipped() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "a").unwrap();
        let mut j = Journal::open(&d.path().join("state")).unwrap();
        j.apply_all(&[file_change(&f, "a", "b"), file_change(&f, "a", "a")], &mut |_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a");
    }

    #[test]
    fn failure_halfway_rolls_back_this_session_only() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, "a0").unwrap();
        std::fs::write(&b, "b0").unwrap();
        let state = d.path().join("state");
        Journal::open(&state).unwrap().apply_all(&[file_change(&b, "b0", "b1")], &mut |_| {}).unwrap();
        let missing = d.path().join("no/such/dir/file");
        let mut j = Journal::open(&state).unwrap();
        let e = j.apply_all(&[file_change(&a, "a0", "a1"), file_change(&missing, "", "x")], &mut |_| {}).unwrap_err();
        assert!(matches!(e, HostError::RolledBack { undone: 2, .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "a0");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b1", "the earlier session stays applied");
        assert_eq!(read_entries(&state.join(JOURNAL_FILE)).unwrap().len(), 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
        /// Oracle: whatever sequence of applies (each possibly failing halfway on a missing file)
        /// runs, revert brings every file back to its original content and removes the journal.
        #[test]
        fn any_sequence_of_applies_reverts_to_the_original(
            sessions in proptest::collection::vec(
                proptest::collection::vec((0usize..3, 0u8..4, proptest::bool::weighted(0.1)), 1..5),
                1..4
            )
        ) {
            let d = tempfile::tempdir().unwrap();
            let files: Vec<PathBuf> = (0..3).map(|i| d.path().join(format!("f{i}"))).collect();
            for (i, f) in files.iter().enumerate() {
                std::fs::write(f, format!("orig{i}")).unwrap();
            }
            let state = d.path().join("state");
            for steps in &sessions {
                let changes: Vec<Change> = steps.iter().map(|(i, v, broken)| {
                    let path = if *broken { d.path().join("missing/x") } else { files[*i].clone() };
                    let before = std::fs::read_to_string(&path).unwrap_or_default();
                    file_change(&path, &before, &format!("v{v}"))
                }).collect();
                // Sequential semantics: each change's "before" is what the file holds when the
                // apply is prepared, as apply does; a broken step makes the session roll back.
                let mut j = Journal::open(&state).unwrap();
                let _ = j.apply_all(&changes, &mut |_| {});
            }
            revert(&state).unwrap();
            for (i, f) in files.iter().enumerate() {
                proptest::prop_assert_eq!(std::fs::read_to_string(f).unwrap(), format!("orig{i}"));
            }
            proptest::prop_assert!(!state.join(JOURNAL_FILE).exists());
        }
    }

    #[test]
    fn only_owners_root_and_us_and_sticky_directories_above_are_trusted() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("sys");
        std::fs::create_dir(&root).unwrap();
        use rtvirt_os::trust::{trusted_users, untrusted};
        let users = trusted_users();
        std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
        let m = std::fs::metadata(&root).unwrap();
        assert_eq!(untrusted(&m, &users, true), None, "a sticky directory above the state directory");
        assert!(untrusted(&m, &users, false).unwrap().contains("mode 1777"));
        assert!(untrusted(&m, &[12345], true).unwrap().contains("is owned by uid"));
    }

    #[test]
    fn torn_last_line_is_ignored_and_lock_is_exclusive() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(JOURNAL_FILE);
        let good =
            serde_json::to_string(&Entry { session: 1, seq: 1, change: file_change(&d.path().join("x"), "0", "1") })
                .unwrap();
        std::fs::write(&p, format!("{good}\n{{\"session\":1,\"se")).unwrap();
        assert_eq!(read_entries(&p).unwrap().len(), 1);
        {
            let _held = Journal::open(d.path()).unwrap();
            assert!(Journal::open(d.path()).is_err());
        }
        // appending after a torn line keeps the journal readable
        let f = d.path().join("x");
        std::fs::write(&f, "1").unwrap();
        Journal::open(d.path()).unwrap().apply_all(&[file_change(&f, "1", "2")], &mut |_| {}).unwrap();
        assert_eq!(read_entries(&p).unwrap().len(), 2);
        revert(d.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "0");
    }
}
