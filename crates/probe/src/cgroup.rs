//! Control groups the probe creates for the length of a run, and removes on drop:
//!
//! - [`ExclusiveCpus`]: one exclusive cpuset per CPU, so that each CPU is its own scheduling root
//!   domain. SCHED_DEADLINE admission control only accepts a thread whose affinity covers its whole
//!   root domain; a deadline thread pinned to one CPU therefore needs such a cpuset (what rt-tests'
//!   cyclicdeadline and the SEEDS 5 study do).
//! - [`ContainerCgroup`]: the cpuset (and, with RT group scheduling, the RT runtime) of a container.
//!
//! Both cgroup v2 (unified, `/sys/fs/cgroup/cgroup.controllers`) and v1 hierarchies (a `cpuset` /
//! `cpu` mount) are found through /proc/mounts. Every file changed is restored on drop.

use crate::error::{Context, Error, Result};
use std::path::{Path, PathBuf};

/// A mounted cgroup hierarchy that has the controller we need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1 mount of one controller (e.g. /sys/fs/cgroup/cpuset).
    V1(PathBuf),
    /// cgroup v2 mount where the controller is available.
    V2(PathBuf),
}

/// Find the hierarchy holding `controller` ("cpuset", "cpu").
pub fn find(controller: &str) -> Option<Hierarchy> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (path, fstype, opts) = (PathBuf::from(f[1]), f[2], f[3]);
        if fstype == "cgroup" && opts.split(',').any(|o| o == controller) {
            return Some(Hierarchy::V1(path));
        }
        if fstype == "cgroup2" {
            let ctrls = std::fs::read_to_string(path.join("cgroup.controllers")).unwrap_or_default();
            if ctrls.split_whitespace().any(|c| c == controller) {
                return Some(Hierarchy::V2(path));
            }
        }
    }
    None
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).context(|| format!("cannot read {}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).context(|| {
        let hint = if path.ends_with("cpuset.cpus") {
            " (is the CPU held by another exclusive cpuset, e.g. a running SCHED_DEADLINE measurement?)"
        } else {
            ""
        };
        format!("cannot write \"{value}\" to {}{hint}", path.display())
    })
}

/// This process's cgroup path (relative to the hierarchy root) of a v1 controller.
fn own_cgroup_v1(controller: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        ctrls.split(',').any(|c| c == controller).then(|| path.to_string())
    })
}

/// A cgroup directory we created: on drop, its tasks go back to the parent and it is removed.
#[derive(Debug)]
struct OwnedDir {
    dir: PathBuf,
    parent_procs: PathBuf,
    procs_file: &'static str,
}

impl OwnedDir {
    fn create(parent: &Path, name: &str, procs_file: &'static str) -> Result<OwnedDir> {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).context(|| format!("cannot create cgroup {}", dir.display()))?;
        Ok(OwnedDir { dir, parent_procs: parent.join(procs_file), procs_file })
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        for _ in 0..50 {
            for id in std::fs::read_to_string(self.dir.join(self.procs_file)).unwrap_or_default().split_whitespace() {
                let _ = std::fs::write(&self.parent_procs, id);
            }
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("rtvirt: warning: could not remove cgroup {}", self.dir.display());
    }
}

/// A file whose old content is written back on drop.
#[derive(Debug)]
struct Restore {
    path: PathBuf,
    old: String,
}

impl Restore {
    fn set(path: &Path, value: &str) -> Result<Restore> {
        let old = read(path)?;
        write(path, value)?;
        Ok(Restore { path: path.to_path_buf(), old })
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = write(&self.path, &self.old) {
            eprintln!("rtvirt: warning: could not restore {}: {e}", self.path.display());
        }
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
static LOAD_BALANCE: std::sync::Mutex<(usize, Option<Restore>)> = std::sync::Mutex::new((0, None));

/// Holds one reference on [`LOAD_BALANCE`].
#[derive(Debug)]
struct LoadBalanceOff;

impl LoadBalanceOff {
    fn acquire(base: &Path) -> Result<LoadBalanceOff> {
        let mut lb = LOAD_BALANCE.lock().unwrap_or_else(|e| e.into_inner());
        if lb.0 == 0 {
            lb.1 = Some(Restore::set(&base.join("cpuset.sched_load_balance"), "0")?);
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
    procs_file: &'static str,
    // Field order is drop order: the cpusets go first, then the parent's settings come back.
    _dirs: Vec<OwnedDir>,
    _restore: Vec<Restore>,
    _load_balance: Option<LoadBalanceOff>,
}

impl ExclusiveCpus {
    pub fn create(cpus: &[u32]) -> Result<ExclusiveCpus> {
        match find("cpuset") {
            Some(Hierarchy::V1(base)) => Self::create_v1(&base, cpus),
            Some(Hierarchy::V2(base)) => Self::create_v2(&base, cpus),
            None => {
                Err(Error::Failed("no cpuset controller is mounted; pinned SCHED_DEADLINE threads need one".into()))
            }
        }
    }

    /// v1: the per-CPU cpusets go under this process's own cpuset (the container's, if it runs
    /// in one). A non-root parent is made exclusive and stops balancing itself, so that each
    /// child becomes its own root domain; both settings are restored on drop.
    fn create_v1(base: &Path, cpus: &[u32]) -> Result<ExclusiveCpus> {
        let parent = own_cgroup_v1("cpuset")
            .map(|rel| base.join(rel.trim_start_matches('/')))
            .unwrap_or_else(|| base.to_path_buf());
        let mut restore = Vec::new();
        if parent != base {
            restore.push(Restore::set(&parent.join("cpuset.cpu_exclusive"), "1")?);
            restore.push(Restore::set(&parent.join("cpuset.sched_load_balance"), "0")?);
        }
        let mems = read(&parent.join("cpuset.mems"))?;
        let (mut dirs, mut out) = (Vec::new(), Vec::new());
        for &cpu in cpus {
            let d = OwnedDir::create(&parent, &unique_name(&format!("cpu{cpu}")), "tasks")?;
            write(&d.dir.join("cpuset.cpus"), &cpu.to_string())?;
            write(&d.dir.join("cpuset.mems"), &mems)?;
            write(&d.dir.join("cpuset.cpu_exclusive"), "1")?;
            out.push((cpu, d.dir.clone()));
            dirs.push(d);
        }
        let lb = LoadBalanceOff::acquire(base)?;
        Ok(ExclusiveCpus { cpus: out, procs_file: "tasks", _dirs: dirs, _restore: restore, _load_balance: Some(lb) })
    }

    fn create_v2(base: &Path, cpus: &[u32]) -> Result<ExclusiveCpus> {
        let mut restore = Vec::new();
        let sub = base.join("cgroup.subtree_control");
        if !read(&sub)?.split_whitespace().any(|c| c == "cpuset") {
            write(&sub, "+cpuset")?;
            restore.push(Restore { path: sub, old: "-cpuset".into() });
        }
        let (mut dirs, mut out) = (Vec::new(), Vec::new());
        for &cpu in cpus {
            let d = OwnedDir::create(base, &unique_name(&format!("cpu{cpu}")), "cgroup.procs")?;
            write(&d.dir.join("cgroup.type"), "threaded").ok();
            write(&d.dir.join("cpuset.cpus"), &cpu.to_string())?;
            write(&d.dir.join("cpuset.cpus.partition"), "root")?;
            let state = read(&d.dir.join("cpuset.cpus.partition"))?;
            if state != "root" {
                return Err(Error::Failed(format!("CPU {cpu} cannot become its own partition ({state}); on cgroup v2 the host must keep other CPUs for its own tasks")));
            }
            out.push((cpu, d.dir.clone()));
            dirs.push(d);
        }
        Ok(ExclusiveCpus {
            cpus: out,
            procs_file: "cgroup.threads",
            _dirs: dirs,
            _restore: restore,
            _load_balance: None,
        })
    }

    /// Move the calling thread into the cpuset of `cpu`.
    pub fn enter(&self, cpu: u32) -> Result<()> {
        write(&self.join_file(cpu)?, &crate::rt::gettid().to_string())
    }

    /// The file a thread (of this or another process) writes its thread id into to enter the
    /// cpuset of `cpu`.
    pub fn join_file(&self, cpu: u32) -> Result<PathBuf> {
        let dir = self
            .cpus
            .iter()
            .find(|(c, _)| *c == cpu)
            .map(|(_, d)| d)
            .ok_or_else(|| Error::Failed(format!("no exclusive cpuset for CPU {cpu}")))?;
        Ok(dir.join(self.procs_file))
    }

    /// The cpuset directories (for the record and for tests).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.cpus.iter().map(|(_, d)| d.clone()).collect()
    }
}

/// The cgroup(s) of a container: a cpuset limited to `cpus`, and RT runtime if the kernel's RT
/// group scheduling needs it for SCHED_FIFO/RR inside.
#[derive(Debug)]
pub struct ContainerCgroup {
    /// Files a process writes "0" into to join the container's cgroups.
    pub join_files: Vec<PathBuf>,
    _dirs: Vec<OwnedDir>,
    _restore: Vec<Restore>,
}

/// RT runtime (us per parent period) granted to a container group under RT group scheduling.
const CONTAINER_RT_RUNTIME_US: u64 = 500_000;

impl ContainerCgroup {
    pub fn create(cpus: &[u32]) -> Result<ContainerCgroup> {
        let name = unique_name("ctr");
        let list = crate::cpus::format_list(cpus);
        let (mut dirs, mut restore, mut join_files) = (Vec::new(), Vec::new(), Vec::new());
        match find("cpuset") {
            Some(Hierarchy::V1(base)) => {
                let d = OwnedDir::create(&base, &name, "tasks")?;
                write(&d.dir.join("cpuset.cpus"), &list)?;
                write(&d.dir.join("cpuset.mems"), &read(&base.join("cpuset.mems"))?)?;
                join_files.push(d.dir.join("tasks"));
                dirs.push(d);
            }
            Some(Hierarchy::V2(base)) => {
                let sub = base.join("cgroup.subtree_control");
                if !read(&sub)?.split_whitespace().any(|c| c == "cpuset") {
                    write(&sub, "+cpuset")?;
                    restore.push(Restore { path: sub, old: "-cpuset".into() });
                }
                let d = OwnedDir::create(&base, &name, "cgroup.procs")?;
                write(&d.dir.join("cpuset.cpus"), &list)?;
                join_files.push(d.dir.join("cgroup.procs"));
                dirs.push(d);
            }
            None => return Err(Error::Failed("no cpuset cgroup controller is mounted (checked /proc/mounts)".into())),
        }
        if let Some(Hierarchy::V1(cpu_base)) = find("cpu") {
            if cpu_base.join("cpu.rt_runtime_us").exists() {
                let d = OwnedDir::create(&cpu_base, &name, "tasks")?;
                write(&d.dir.join("cpu.rt_runtime_us"), &CONTAINER_RT_RUNTIME_US.to_string())?;
                join_files.push(d.dir.join("tasks"));
                dirs.push(d);
            }
        }
        Ok(ContainerCgroup { join_files, _dirs: dirs, _restore: restore })
    }

    /// Directories created (for the record and for tests).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self._dirs.iter().map(|d| d.dir.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt;

    #[test]
    fn pinned_deadline_thread_in_exclusive_cpuset_and_everything_restored() {
        if !rt::is_root() || find("cpuset").is_none() {
            return;
        }
        let _serial = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
        let cpu = *crate::cpus::allowed().last().unwrap();
        let g = ExclusiveCpus::create(&[cpu]).unwrap();
        let dirs = g.dirs();
        let gr = &g;
        let ok = std::thread::scope(|s| {
            s.spawn(move || {
                gr.enter(cpu).unwrap();
                rt::pin_current_thread(cpu).unwrap();
                let r = rt::Reservation { runtime_ns: 100_000, deadline_ns: 1_000_000, period_ns: 1_000_000 };
                let res = rt::set_sched(0, rt::Sched::Deadline(r));
                rt::set_sched(0, rt::Sched::Other).unwrap();
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
        if !rt::is_root() || find("cpuset").is_none() {
            return;
        }
        let _serial = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
        let g = ContainerCgroup::create(&[0]).unwrap();
        let dirs = g.dirs();
        assert!(dirs.iter().all(|d| d.exists()));
        drop(g);
        assert!(dirs.iter().all(|d| !d.exists()));
    }
}
