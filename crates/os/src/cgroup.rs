//! Control groups: the mounted v1/v2 hierarchies and cpuset partitions, one implementation for
//! the journaled `rtvirt host apply` and for the probe's guards that live as long as a measurement.
//!
//! A SCHED_DEADLINE thread may only be pinned to one CPU if that CPU is its own root domain
//! (otherwise the kernel answers EBUSY/EPERM; what rt-tests' cyclicdeadline does too). A partition
//! is a [`Change::Cgroup`] per CPU:
//!
//! - cgroup v1 (`cpuset` mount): a child with `cpuset.cpus=N`, the parent's mems and
//!   `cpuset.cpu_exclusive=1`, plus `sched_load_balance=0` on the root cpuset
//!   ([`Change::LoadBalanceOff`]) so that each load-balanced child is its own root domain
//!   (Documentation/scheduler/sched-deadline.rst, 5.1).
//! - cgroup v2: a threaded child with `cpuset.cpus=N` and `cpuset.cpus.partition=root` (read back:
//!   the kernel reports a refused partition as "root invalid"); threads move through
//!   `cgroup.threads`; `+cpuset` is enabled in the root's `cgroup.subtree_control` when missing
//!   ([`Change::EnableController`]). This machine's cpuset is on v1; the v2 path follows the
//!   kernel's cgroup-v2 documentation and is not exercised by the tests here.
//!   Caveat: the kernel only moves a thread within its own threaded domain, so the v2 path can
//!   only work for threads of a process that lives in the root cgroup (not under a systemd
//!   slice), which includes the workers of `measure tasks` (separate processes).
//!
//! The guards: [`ExclusiveCpus`] (one partition per CPU, under this process's own cpuset, so that
//! it also works inside a container) and [`ContainerCgroup`] (the cpuset and, with RT group
//! scheduling, the RT runtime of a container). Both perform their changes through a [`Restorer`]:
//! everything is put back on drop.

use crate::cpulist::CpuList;
use crate::error::{Op, OsError, Result};
use crate::procfs;
use crate::restore::{read_trimmed, write_file, Change, Restorer};
use std::path::{Path, PathBuf};

/// Where a cgroup controller lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1 mount of the controller (e.g. /sys/fs/cgroup/cpuset).
    V1(PathBuf),
    /// cgroup v2 mount where the controller is available.
    V2(PathBuf),
}

impl Hierarchy {
    /// Find the hierarchy holding `controller` ("cpuset", "cpu") in /proc/mounts.
    pub fn find(controller: &str) -> Option<Hierarchy> {
        procfs::mounts().into_iter().find_map(|m| match m.fstype.as_str() {
            "cgroup" if m.has_option(controller) => Some(Hierarchy::V1(m.path)),
            "cgroup2"
                if procfs::read_opt(m.path.join("cgroup.controllers"))?.split_whitespace().any(|c| c == controller) =>
            {
                Some(Hierarchy::V2(m.path))
            }
            _ => None,
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

    /// The file a thread id is written to, to move one thread into a cpuset partition.
    fn tasks_file(&self) -> &'static str {
        match self {
            Hierarchy::V1(_) => "tasks",
            Hierarchy::V2(_) => "cgroup.threads",
        }
    }

    /// The file a process id is written to, to move a whole process into a cgroup.
    fn procs_file(&self) -> &'static str {
        match self {
            Hierarchy::V1(_) => "tasks",
            Hierarchy::V2(_) => "cgroup.procs",
        }
    }

    /// The cgroup directory (of this hierarchy's controller) a thread is in now.
    pub fn cgroup_of(&self, tid: u32, controller: &str) -> PathBuf {
        let rel = match self {
            Hierarchy::V1(_) => procfs::cgroup_v1(tid, controller),
            Hierarchy::V2(_) => procfs::read_opt(procfs::task_dir(tid).join("cgroup"))
                .and_then(|t| t.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string))),
        };
        self.base().join(rel.unwrap_or_default().trim_start_matches('/'))
    }

    /// The partition directory `rtvirt host apply` uses for `cpu`.
    pub fn partition_dir(&self, cpu: u32) -> PathBuf {
        self.base().join(format!("rtvirt-core{cpu}"))
    }

    /// The journaled changes that make each CPU of `cpus` its own root domain (nothing for a
    /// partition that already exists, so applying twice is harmless).
    pub fn partition_changes(&self, cpus: &CpuList) -> Result<Vec<Change>> {
        let mut out: Vec<Change> = self.enable_cpuset()?.into_iter().collect();
        for cpu in cpus.iter() {
            let dir = self.partition_dir(cpu);
            if !dir.is_dir() {
                out.push(self.partition(self.base(), dir, cpu)?);
            }
        }
        if let Hierarchy::V1(_) = self {
            out.push(self.load_balance_off()?);
        }
        Ok(out)
    }

    /// The change that creates the partition of `cpu` as directory `dir` under `parent`.
    fn partition(&self, parent: &Path, dir: PathBuf, cpu: u32) -> Result<Change> {
        let file = |name: &str, value: String| (name.to_string(), value);
        let files = match self {
            Hierarchy::V1(_) => vec![
                file("cpuset.cpus", cpu.to_string()),
                file("cpuset.mems", read_trimmed(&parent.join("cpuset.mems"))?),
                file("cpuset.cpu_exclusive", "1".into()),
            ],
            Hierarchy::V2(_) => vec![
                file("cgroup.type", "threaded".into()),
                file("cpuset.cpus", cpu.to_string()),
                file("cpuset.cpus.partition", "root".into()),
            ],
        };
        Ok(Change::Cgroup {
            path: dir,
            files,
            tasks_file: self.tasks_file().into(),
            parent_tasks: parent.join(self.tasks_file()),
        })
    }

    /// v2: `+cpuset` in the root's `cgroup.subtree_control`, if it is not there yet.
    fn enable_cpuset(&self) -> Result<Option<Change>> {
        let Hierarchy::V2(base) = self else { return Ok(None) };
        let path = base.join("cgroup.subtree_control");
        let before = read_trimmed(&path)?;
        let enabled = before.split_whitespace().any(|c| c == "cpuset");
        Ok((!enabled).then(|| Change::EnableController { path, controller: "cpuset".into(), before }))
    }

    /// v1: the root cpuset stops balancing, so that each exclusive child is its own root domain.
    fn load_balance_off(&self) -> Result<Change> {
        Change::load_balance_off(self.base())
    }

    /// The change that moves thread `tid` into the partition of `cpu`.
    pub fn move_change(&self, tid: u32, starttime: u64, cpu: u32) -> Change {
        Change::MoveThread {
            tid,
            starttime,
            before_tasks: self.cgroup_of(tid, "cpuset").join(self.tasks_file()),
            after_tasks: self.partition_dir(cpu).join(self.tasks_file()),
        }
    }

    /// The `cpuset.cpus` file of a cgroup given by its path inside the hierarchy.
    pub fn cpus_file(&self, cgroup: &str) -> PathBuf {
        self.base().join(cgroup.trim_start_matches('/')).join("cpuset.cpus")
    }
}

/// Unique cgroup name for this process (and this guard within it).
fn unique_name(kind: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("rtvirt-{kind}-{}-{n}", std::process::id())
}

/// The root cpuset's `sched_load_balance`, switched off while any [`ExclusiveCpus`] of this
/// process is alive (reference counted, so that concurrent guards restore it once, last).
static LOAD_BALANCE: std::sync::Mutex<(usize, Option<Restorer>)> = std::sync::Mutex::new((0, None));

/// Holds one reference on [`LOAD_BALANCE`].
#[derive(Debug)]
struct LoadBalanceOff;

impl LoadBalanceOff {
    /// Take a reference; the first one switches balancing off (journaled under `journal_dir`).
    fn acquire(hierarchy: &Hierarchy, journal_dir: Option<&Path>) -> Result<LoadBalanceOff> {
        let mut lb = LOAD_BALANCE.lock().unwrap_or_else(|e| e.into_inner());
        if lb.0 == 0 {
            let mut restorer = restorer(journal_dir)?;
            restorer.perform(hierarchy.load_balance_off()?)?;
            lb.1 = Some(restorer);
        }
        lb.0 += 1;
        Ok(LoadBalanceOff)
    }
}

impl Drop for LoadBalanceOff {
    fn drop(&mut self) {
        let mut lb = LOAD_BALANCE.lock().unwrap_or_else(|e| e.into_inner());
        lb.0 -= 1;
        if lb.0 == 0 {
            lb.1 = None;
        }
    }
}

/// One exclusive cpuset per CPU (each its own root domain) while alive.
#[derive(Debug)]
pub struct ExclusiveCpus {
    cpus: Vec<(u32, PathBuf)>,
    tasks_file: &'static str,
    // Field order is drop order: the cpusets and the parent's settings go first (in reverse order
    // of their making), then the root's load balancing comes back.
    _changes: Restorer,
    _load_balance: Option<LoadBalanceOff>,
}

/// A restorer, journaled under `journal_dir` when there is one.
fn restorer(journal_dir: Option<&Path>) -> Result<Restorer> {
    match journal_dir {
        Some(dir) => Ok(Restorer::journaled(Box::new(crate::guard_journal::GuardJournal::create(dir)?))),
        None => Ok(Restorer::new()),
    }
}

impl ExclusiveCpus {
    /// The partitions, restored when the guard is dropped (not after a kill -9).
    pub fn create(cpus: &[u32]) -> Result<ExclusiveCpus> {
        Self::create_with(cpus, None)
    }

    /// The partitions, each change journaled (fsynced) under `<state_dir>/guards/` before it is
    /// made: restored on drop, and after a kill -9 by the next journaled guard or `rtvirt host
    /// revert` ([`crate::guard_journal::restore_stale`]).
    pub fn create_journaled(cpus: &[u32], state_dir: &Path) -> Result<ExclusiveCpus> {
        Self::create_with(cpus, Some(state_dir))
    }

    fn create_with(cpus: &[u32], journal_dir: Option<&Path>) -> Result<ExclusiveCpus> {
        let Some(hierarchy) = Hierarchy::find("cpuset") else {
            return Err(OsError::Unsupported(
                "no cpuset controller is mounted; pinned SCHED_DEADLINE threads need one".into(),
            ));
        };
        let mut changes = restorer(journal_dir)?;
        let parent = Self::parent(&hierarchy, &mut changes)?;
        let mut out = Vec::new();
        for &cpu in cpus {
            let dir = parent.join(unique_name(&format!("cpu{cpu}")));
            changes.perform(hierarchy.partition(&parent, dir.clone(), cpu)?)?;
            out.push((cpu, dir));
        }
        let load_balance = match hierarchy {
            Hierarchy::V1(_) => Some(LoadBalanceOff::acquire(&hierarchy, journal_dir)?),
            Hierarchy::V2(_) => None,
        };
        Ok(ExclusiveCpus {
            cpus: out,
            tasks_file: hierarchy.tasks_file(),
            _changes: changes,
            _load_balance: load_balance,
        })
    }

    /// Where the partitions go. v1: under this process's own cpuset (the container's, if it runs
    /// in one); a non-root parent is made exclusive and stops balancing itself, so that each
    /// child becomes its own root domain. v2: under the root, with the cpuset controller enabled.
    fn parent(hierarchy: &Hierarchy, changes: &mut Restorer) -> Result<PathBuf> {
        let base = hierarchy.base();
        if let Some(enable) = hierarchy.enable_cpuset()? {
            changes.perform(enable)?;
        }
        if let Hierarchy::V2(_) = hierarchy {
            return Ok(base.to_path_buf());
        }
        let parent = hierarchy.cgroup_of(std::process::id(), "cpuset");
        if parent != base {
            changes.perform(Change::file(parent.join("cpuset.cpu_exclusive"), "1")?)?;
            changes.perform(Change::file(parent.join("cpuset.sched_load_balance"), "0")?)?;
        }
        Ok(parent)
    }

    /// Move the calling thread into the cpuset of `cpu`.
    pub fn enter(&self, cpu: u32) -> Result<()> {
        enter(&self.join_file(cpu)?)
    }

    /// The file a thread (of this or another process) writes its thread id into to enter the
    /// cpuset of `cpu`.
    pub fn join_file(&self, cpu: u32) -> Result<PathBuf> {
        let dir = self
            .cpus
            .iter()
            .find(|(c, _)| *c == cpu)
            .map(|(_, d)| d)
            .ok_or_else(|| OsError::Unsupported(format!("no exclusive cpuset for CPU {cpu}")))?;
        Ok(dir.join(self.tasks_file))
    }

    /// The cpuset directories (for the record and for tests).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.cpus.iter().map(|(_, d)| d.clone()).collect()
    }
}

/// Move the calling thread into the cgroup whose thread file is `join_file` (e.g. a worker process
/// entering an [`ExclusiveCpus::join_file`] its parent created; the cgroup is removed, and the
/// thread moved back, by the guard that owns it).
pub fn enter(join_file: &Path) -> Result<()> {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::gettid() };
    write_file(join_file, &tid.to_string(), Op::MoveToCgroup)
}

/// The cgroup(s) of a container: a cpuset limited to `cpus`, and RT runtime if the kernel's RT
/// group scheduling needs it for SCHED_FIFO/RR inside.
#[derive(Debug)]
pub struct ContainerCgroup {
    /// Files a process writes "0" into to join the container's cgroups.
    pub join_files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    _changes: Restorer,
}

/// RT runtime (us per parent period) granted to a container group under RT group scheduling.
const CONTAINER_RT_RUNTIME_US: u64 = 500_000;

impl ContainerCgroup {
    pub fn create(cpus: &CpuList) -> Result<ContainerCgroup> {
        let name = unique_name("ctr");
        let Some(cpuset) = Hierarchy::find("cpuset") else {
            return Err(OsError::Unsupported("no cpuset cgroup controller is mounted (checked /proc/mounts)".into()));
        };
        let mut group = ContainerCgroup { join_files: Vec::new(), dirs: Vec::new(), _changes: Restorer::new() };
        if let Some(enable) = cpuset.enable_cpuset()? {
            group._changes.perform(enable)?;
        }
        let mut files = vec![("cpuset.cpus".to_string(), cpus.to_string())];
        if let Hierarchy::V1(base) = &cpuset {
            files.push(("cpuset.mems".to_string(), read_trimmed(&base.join("cpuset.mems"))?));
        }
        group.add(&cpuset, &name, files)?;
        if let Some(cpu @ Hierarchy::V1(_)) = Hierarchy::find("cpu") {
            if cpu.base().join("cpu.rt_runtime_us").exists() {
                group.add(&cpu, &name, vec![("cpu.rt_runtime_us".into(), CONTAINER_RT_RUNTIME_US.to_string())])?;
            }
        }
        Ok(group)
    }

    /// Create cgroup `name` under the root of `hierarchy` with `files` written in it.
    fn add(&mut self, hierarchy: &Hierarchy, name: &str, files: Vec<(String, String)>) -> Result<()> {
        let (dir, procs) = (hierarchy.base().join(name), hierarchy.procs_file());
        self._changes.perform(Change::Cgroup {
            path: dir.clone(),
            files,
            tasks_file: procs.into(),
            parent_tasks: hierarchy.base().join(procs),
        })?;
        self.join_files.push(dir.join(procs));
        self.dirs.push(dir);
        Ok(())
    }

    /// Directories created (for the record and for tests).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.dirs.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{self, SchedAttr};

    fn last_allowed_cpu() -> u32 {
        sched::get_affinity(0).unwrap().iter().last().unwrap()
    }

    #[test]
    fn pinned_deadline_thread_in_exclusive_cpuset_and_everything_restored() {
        rtvirt_testkit::require_root!();
        rtvirt_testkit::skip_unless!(Hierarchy::find("cpuset").is_some(), "needs a cpuset cgroup controller");
        let _serial = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
        let cpu = last_allowed_cpu();
        let g = ExclusiveCpus::create(&[cpu]).unwrap();
        let dirs = g.dirs();
        let gr = &g;
        let ok = std::thread::scope(|s| {
            s.spawn(move || {
                gr.enter(cpu).unwrap();
                sched::set_affinity(0, &CpuList::single(cpu)).unwrap();
                let res = sched::set(0, &SchedAttr::deadline(100_000, 1_000_000, 1_000_000));
                sched::set(0, &SchedAttr::other(0)).unwrap();
                res
            })
            .join()
            .unwrap()
        });
        drop(g);
        ok.unwrap();
        assert!(dirs.iter().all(|d| !d.exists()));
    }

    #[test]
    fn container_cgroup_is_created_and_removed() {
        rtvirt_testkit::require_root!();
        rtvirt_testkit::skip_unless!(Hierarchy::find("cpuset").is_some(), "needs a cpuset cgroup controller");
        let _serial = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
        let g = ContainerCgroup::create(&CpuList::single(0)).unwrap();
        let dirs = g.dirs();
        assert!(dirs.iter().all(|d| d.exists()));
        drop(g);
        assert!(dirs.iter().all(|d| !d.exists()));
    }
}
