//! The mark a `host adapt` run leaves in the state directory while it runs (`adapt-run.json`:
//! its process and the first journal session it writes). Everything the run changes (the plan's
//! apply, every reservation change) is journaled in sessions from that one on, so the run's end
//! undoes exactly those ([`crate::journal::revert_from`]) and leaves earlier applies in force.
//! A run killed with -9 leaves its mark behind: the next run finds the process gone and restores
//! what it changed before starting (`rtvirt host revert` restores it as well).

use crate::error::{HostError, Result};
use crate::journal;
use rtvirt_os::procfs;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const MARKER_FILE: &str = "adapt-run.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Mark {
    pid: u32,
    /// The process's start time (clock ticks since boot): a reused pid is not the run.
    starttime: u64,
    first_session: u64,
}

/// A running `host adapt`'s mark; [`RunMarker::finish`] restores and removes it.
#[derive(Debug)]
pub struct RunMarker {
    dir: PathBuf,
    first_session: u64,
}

/// What a killed run left, restored: the changes undone, in words (None: no killed run).
pub fn recover_killed(dir: &Path) -> Result<Option<Vec<String>>> {
    let path = dir.join(MARKER_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let mark: Option<Mark> = serde_json::from_str(&text).ok();
    if let Some(m) = mark.filter(is_running) {
        return Err(HostError::input(format!(
            "another `rtvirt host adapt` (pid {}) adapts with the state directory {}",
            m.pid,
            dir.display()
        )));
    }
    // An unreadable mark (torn write) names no session: the run had journaled nothing yet.
    let restored = match mark {
        Some(m) => journal::revert_from(dir, m.first_session)?,
        None => Vec::new(),
    };
    std::fs::remove_file(&path).map_err(|e| HostError::io(&path, e))?;
    Ok(Some(restored))
}

fn is_running(m: &Mark) -> bool {
    procfs::stat(m.pid).is_ok_and(|s| s.starttime == m.starttime)
}

impl RunMarker {
    /// Mark the start of a run in `dir` (after [`recover_killed`]).
    pub fn begin(dir: &Path) -> Result<RunMarker> {
        std::fs::create_dir_all(dir).map_err(|e| HostError::io(dir, e))?;
        let pid = std::process::id();
        let starttime = procfs::stat(pid).map_err(HostError::from)?.starttime;
        let first_session = journal::next_session(dir)?;
        let path = dir.join(MARKER_FILE);
        let tmp = dir.join(format!("{MARKER_FILE}.tmp"));
        let text = serde_json::to_string(&Mark { pid, starttime, first_session }).expect("marks serialise");
        let write = || -> std::io::Result<()> {
            let f = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut &f, text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::File::open(dir)?.sync_all()
        };
        write().map_err(|e| HostError::io(&path, e))?;
        Ok(RunMarker { dir: dir.to_path_buf(), first_session })
    }

    /// Undo everything the run journaled and remove the mark; the changes undone, in words.
    pub fn finish(self) -> Result<Vec<String>> {
        let restored = journal::revert_from(&self.dir, self.first_session)?;
        let path = self.dir.join(MARKER_FILE);
        std::fs::remove_file(&path).map_err(|e| HostError::io(&path, e))?;
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_os::restore::Change;

    #[test]
    fn a_run_restores_its_sessions_and_a_dead_runs_mark_is_recovered() {
        let d = tempfile::tempdir().unwrap();
        let (state, target) = (d.path().join("state"), d.path().join("value"));
        std::fs::write(&target, "orig").unwrap();
        let change = |before: &str, after: &str| Change::File {
            path: target.clone(),
            before: before.into(),
            after: after.into(),
        };
        // An earlier apply stays in force.
        journal::Journal::open(&state).unwrap().apply_all(&[change("orig", "applied")], &mut |_| {}).unwrap();
        assert_eq!(recover_killed(&state).unwrap(), None);
        let run = RunMarker::begin(&state).unwrap();
        assert!(recover_killed(&state).is_err(), "this process is the run: still running");
        journal::Journal::open(&state).unwrap().apply_all(&[change("applied", "adapted")], &mut |_| {}).unwrap();
        assert_eq!(run.finish().unwrap().len(), 1);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "applied");

        // A run whose process is gone (a pid that cannot exist): the next run restores it.
        journal::Journal::open(&state).unwrap().apply_all(&[change("applied", "adapted")], &mut |_| {}).unwrap();
        let dead = Mark { pid: u32::MAX, starttime: 0, first_session: 2 };
        std::fs::write(state.join(MARKER_FILE), serde_json::to_string(&dead).unwrap()).unwrap();
        assert_eq!(recover_killed(&state).unwrap().map(|r| r.len()), Some(1));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "applied");
        assert!(!state.join(MARKER_FILE).exists());
    }
}
