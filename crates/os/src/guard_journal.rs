//! Journals of the guards' changes, so that a guard's host changes survive a kill -9 as records:
//! a [`crate::restore::Restorer`] made with [`GuardJournal`] (e.g. `rtvirt host calibrate`'s
//! exclusive cpuset, [`crate::cgroup::ExclusiveCpus::create_journaled`]) appends each change,
//! fsynced, to a file of its own, `<state dir>/guards/<pid>-<starttime>-<n>.jsonl`, before making
//! it, and removes the file once it has undone them all. A process killed before that leaves
//! its file: [`restore_stale`] (called by the next journaled guard and by `rtvirt host revert`)
//! undoes what the files of ended processes record, last change first, and removes them.
//!
//! The same scheme as the tracing instance's record (`crate::tracefs`): one file per owner named
//! by (pid, starttime), so that a live process's changes are never undone by another.

use crate::error::{OsError, Result};
use crate::procfs;
use crate::restore::{Change, ChangeLog, Undone};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory under the state directory that holds the guards' journals.
pub const JOURNAL_DIR: &str = "guards";

/// One guard's journal file, open for appending.
#[derive(Debug)]
pub struct GuardJournal {
    path: PathBuf,
    file: File,
}

impl GuardJournal {
    /// A new, empty journal file under `<state_dir>/guards/` (the directory is created and
    /// fsynced). The stale journals of ended processes are restored first; what that did is
    /// written to stderr.
    pub fn create(state_dir: &Path) -> Result<GuardJournal> {
        for said in restore_stale(state_dir) {
            eprintln!("rtvirt: {said}");
        }
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = state_dir.join(JOURNAL_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| OsError::io(&dir, e))?;
        let me = procfs::stat(std::process::id())?;
        let path = dir.join(format!("{}-{}-{n}.jsonl", std::process::id(), me.starttime));
        let file = OpenOptions::new().create_new(true).append(true).open(&path).map_err(|e| OsError::io(&path, e))?;
        File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| OsError::io(&dir, e))?;
        Ok(GuardJournal { path, file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl ChangeLog for GuardJournal {
    fn record(&mut self, change: &Change) -> Result<()> {
        let line = serde_json::to_string(change).expect("changes serialize") + "\n";
        self.file.write_all(line.as_bytes()).and_then(|_| self.file.sync_all()).map_err(|e| OsError::io(&self.path, e))
    }

    fn finished(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Undo the changes recorded by guards of processes that no longer run, newest journal and newest
/// change first, and remove their journals. One line per journal restored (or a "warning: ..."
/// line for one that could not be, which is kept to try again).
pub fn restore_stale(state_dir: &Path) -> Vec<String> {
    let dir = state_dir.join(JOURNAL_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut stale: Vec<(u32, u64, u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let (pid, starttime, n) = owner(&e.path())?;
            let alive = procfs::stat(pid).is_ok_and(|s| s.starttime == starttime);
            (!alive).then(|| (pid, starttime, n, e.path()))
        })
        .collect();
    stale.sort_by_key(|s| std::cmp::Reverse((s.1, s.0, s.2)));
    stale.into_iter().map(|(pid, _, _, path)| restore_file(pid, &path)).collect()
}

fn restore_file(pid: u32, path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // a torn last line: the process died while recording it, before making that change
    let changes: Vec<Change> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let roots = crate::restore::change_roots();
    if let Some(why) = changes.iter().find_map(|c| c.check_paths(&roots).err()) {
        return format!("warning: refusing to restore what process {pid} recorded in {}: {why}", path.display());
    }
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    for change in changes.iter().rev() {
        match change.undo() {
            Ok(Undone::RestoredWithWarning(w)) => failed.push(format!("{} (restored; {w})", change.describe())),
            Ok(_) => restored.push(change.describe()),
            Err(e) => failed.push(format!("{}: {e}", change.describe())),
        }
    }
    if failed.iter().any(|f| !f.contains("(restored;")) {
        return format!(
            "warning: could not restore everything process {pid} changed (kept {} to try again): {}",
            path.display(),
            failed.join("; ")
        );
    }
    let _ = std::fs::remove_file(path);
    let mut said = format!("restored what ended process {pid} changed and did not restore: {}", restored.join("; "));
    for w in failed {
        said.push_str(&format!("; {w}"));
    }
    said
}

/// `<pid>-<starttime>-<n>.jsonl` -> (pid, starttime, n).
fn owner(path: &Path) -> Option<(u32, u64, u32)> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let mut parts = stem.splitn(3, '-');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::restore::Restorer;

    /// A file change recorded by a "process" that has ended (pid 0 never runs a user process).
    #[test]
    fn a_record_of_a_change_outside_rtvirts_files_is_refused_and_kept() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join(JOURNAL_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let planted = Change::File { path: "/etc/rtvirt-no-such-file".into(), before: "x".into(), after: "y".into() };
        let record = dir.join("0-1-0.jsonl");
        std::fs::write(&record, serde_json::to_string(&planted).unwrap() + "\n").unwrap();
        let said = restore_stale(state.path());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with("warning: refusing to restore"), "{said:?}");
        assert!(said[0].contains("/etc/rtvirt-no-such-file is not a file rtvirt changes"), "{said:?}");
        assert!(record.exists() && !Path::new("/etc/rtvirt-no-such-file").exists());
    }

    #[test]
    fn a_dead_owners_changes_are_undone_and_a_live_owners_are_not() {
        let state = tempfile::tempdir().unwrap();
        let target = state.path().join("setting");
        std::fs::write(&target, "original").unwrap();
        let change = Change::file(&target, "changed").unwrap();
        change.perform().unwrap();
        let dir = state.path().join(JOURNAL_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let line = serde_json::to_string(&change).unwrap();
        // a torn second line is ignored
        std::fs::write(dir.join("0-1-0.jsonl"), format!("{line}\n{{\"kind\":\"fi")).unwrap();
        let me = procfs::stat(std::process::id()).unwrap();
        let live = dir.join(format!("{}-{}-99.jsonl", std::process::id(), me.starttime));
        std::fs::write(&live, format!("{line}\n")).unwrap();
        let said = restore_stale(state.path());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("ended process 0"), "{said:?}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "original");
        assert!(!dir.join("0-1-0.jsonl").exists() && live.exists(), "only the dead owner's journal goes");
    }

    #[test]
    fn a_journaled_restorer_records_before_changing_and_removes_its_journal_when_done() {
        let state = tempfile::tempdir().unwrap();
        let target = state.path().join("setting");
        std::fs::write(&target, "original").unwrap();
        let journal = GuardJournal::create(state.path()).unwrap();
        let path = journal.path().to_path_buf();
        let mut restorer = Restorer::journaled(Box::new(journal));
        restorer.perform(Change::file(&target, "changed").unwrap()).unwrap();
        let recorded = std::fs::read_to_string(&path).unwrap();
        assert!(recorded.contains("\"before\":\"original\"") && recorded.ends_with('\n'), "{recorded}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "changed");
        drop(restorer);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "original");
        assert!(!path.exists(), "the journal is removed once everything is restored");
    }
}
