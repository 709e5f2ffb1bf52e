//! cpuset partitions for partitioned SCHED_DEADLINE: a deadline thread may only be pinned to one
//! core if that core is its own root domain (otherwise the kernel answers EBUSY/EPERM). This module
//! computes the journaled [`Change`]s that create such a partition per core and move a thread
//! into it:
//!
//! - cgroup v1 (`cpuset` mount): child `rtvirt-core<N>` with `cpuset.cpus=N`, the root's mems,
//!   `cpuset.cpu_exclusive=1`, and `sched_load_balance=0` on the root cpuset, so that each
//!   load-balanced child is its own root domain (Documentation/scheduler/sched-deadline.rst, 5.1).
//! - cgroup v2: child `rtvirt-core<N>` (threaded) with `cpuset.cpus=N` and
//!   `cpuset.cpus.partition=root`; threads move through `cgroup.threads`. The root must already
//!   have `+cpuset` in `cgroup.subtree_control`. (This machine's cpuset is on v1; the v2 path
//!   follows the kernel's cgroup-v2 documentation and is not exercised by the tests here.)

use crate::change::{read_trimmed, Change};
use crate::cpulist::CpuList;
use crate::error::{HostError, Result};
use crate::procfs;
use std::path::{Path, PathBuf};

/// Where the cpuset controller lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    V1(PathBuf),
    V2(PathBuf),
}

impl Hierarchy {
    /// Find the cpuset controller through /proc/mounts.
    pub fn find() -> Option<Hierarchy> {
        let mounts = procfs::read_opt("/proc/mounts")?;
        mounts.lines().find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (path, fstype, opts) = (PathBuf::from(f.get(1)?), *f.get(2)?, *f.get(3)?);
            match fstype {
                "cgroup" if opts.split(',').any(|o| o == "cpuset") => Some(Hierarchy::V1(path)),
                "cgroup2"
                    if procfs::read_opt(path.join("cgroup.controllers"))?.split_whitespace().any(|c| c == "cpuset") =>
                {
                    Some(Hierarchy::V2(path))
                }
                _ => None,
            }
        })
    }

    pub fn base(&self) -> &Path {
        match self {
            Hierarchy::V1(p) | Hierarchy::V2(p) => p,
        }
    }

    /// "v1 (/sys/fs/cgroup/cpuset)".
    pub fn describe(&self) -> String {
        match self {
            Hierarchy::V1(p) => format!("v1 ({})", p.display()),
            Hierarchy::V2(p) => format!("v2 ({})", p.display()),
        }
    }

    /// The file a thread id is written to, to move one thread into a cgroup.
    fn tasks_file(&self) -> &'static str {
        match self {
            Hierarchy::V1(_) => "tasks",
            Hierarchy::V2(_) => "cgroup.threads",
        }
    }

    /// The cpuset cgroup directory a thread is in now.
    pub fn cgroup_of(&self, tid: u32) -> PathBuf {
        let rel = match self {
            Hierarchy::V1(_) => procfs::cgroup_v1(tid, "cpuset"),
            Hierarchy::V2(_) => procfs::read_opt(procfs::task_dir(tid).join("cgroup"))
                .and_then(|t| t.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string))),
        };
        self.base().join(rel.unwrap_or_default().trim_start_matches('/'))
    }

    /// The partition directory rtvirt uses for `cpu`.
    pub fn partition_dir(&self, cpu: u32) -> PathBuf {
        self.base().join(format!("rtvirt-core{cpu}"))
    }

    /// Changes that make each CPU of `cpus` its own root domain (nothing for a partition that
    /// already exists, so applying twice is harmless).
    pub fn partition_changes(&self, cpus: &CpuList) -> Result<Vec<Change>> {
        let mut out = Vec::new();
        let base = self.base();
        let parent_tasks = base.join(self.tasks_file());
        for cpu in cpus.iter() {
            let path = self.partition_dir(cpu);
            if path.is_dir() {
                continue;
            }
            let files = match self {
                Hierarchy::V1(_) => vec![
                    ("cpuset.cpus".to_string(), cpu.to_string()),
                    ("cpuset.mems".to_string(), read_trimmed(&base.join("cpuset.mems"))?),
                    ("cpuset.cpu_exclusive".to_string(), "1".to_string()),
                ],
                Hierarchy::V2(_) => {
                    let sub = read_trimmed(&base.join("cgroup.subtree_control"))?;
                    if !sub.split_whitespace().any(|c| c == "cpuset") {
                        return Err(HostError::input(format!("cgroup v2: the cpuset controller is not enabled for children of {}: run `echo +cpuset > {}/cgroup.subtree_control` first", base.display(), base.display())));
                    }
                    vec![
                        ("cgroup.type".to_string(), "threaded".to_string()),
                        ("cpuset.cpus".to_string(), cpu.to_string()),
                        ("cpuset.cpus.partition".to_string(), "root".to_string()),
                    ]
                }
            };
            out.push(Change::Cgroup {
                path,
                files,
                tasks_file: self.tasks_file().into(),
                parent_tasks: parent_tasks.clone(),
            });
        }
        if let Hierarchy::V1(_) = self {
            let lb = base.join("cpuset.sched_load_balance");
            out.push(Change::LoadBalanceOff {
                before: read_trimmed(&lb)?,
                path: lb,
                foreign_before: foreign_exclusive_cpusets(base),
            });
        }
        Ok(out)
    }

    /// The change that moves thread `tid` into the partition of `cpu`.
    pub fn move_change(&self, tid: u32, starttime: u64, cpu: u32) -> Change {
        Change::MoveThread {
            tid,
            starttime,
            before_tasks: self.cgroup_of(tid).join(self.tasks_file()),
            after_tasks: self.partition_dir(cpu).join(self.tasks_file()),
        }
    }

    /// The `cpuset.cpus` file of a cgroup given by its path inside the hierarchy.
    pub fn cpus_file(&self, cgroup: &str) -> PathBuf {
        self.base().join(cgroup.trim_start_matches('/')).join("cpuset.cpus")
    }
}

/// The exclusive cpusets directly under `base` that are not rtvirt partitions (other tools'),
/// sorted by name.
pub(crate) fn foreign_exclusive_cpusets(base: &Path) -> Vec<String> {
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
