//! Shared by the `host_*` integration tests: run the real binary, real processes to act on
//! (killed on drop), and a snapshot of everything `rtvirt host apply` may change, to compare
//! bit for bit after `revert`.
#![allow(dead_code)]

use rtvirt_os::cpulist::CpuList;
use rtvirt_os::{procfs, sched, sysinfo};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Tests of one binary that change the host run one at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    rtvirt_testkit::host_lock()
}

/// Whether a child process of `pid` has a thread under SCHED_DEADLINE: `measure tasks` (and the
/// demo's task step) is under way once a guest worker's vCPU thread took its reservation, which
/// workers do only after calibrating.
pub fn deadline_thread_in_a_child_of(pid: u32) -> bool {
    let children = procfs::pids().into_iter().filter(|&c| procfs::stat(c).is_ok_and(|s| s.ppid == pid));
    children.flat_map(procfs::tids).any(|t| sched::get(t).is_ok_and(|a| a.is_deadline()))
}

pub fn rtvirt(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c.args(args);
    c
}

/// `rtvirt host apply FILE --state-dir STATE`; further arguments with `.args(...)`.
pub fn apply(file: &Path, state: &Path) -> Command {
    rtvirt(&["host", "apply", file.to_str().unwrap(), "--state-dir", state.to_str().unwrap()])
}

/// Run and return the output, with stdout/stderr printed on failure of the caller's assertions.
pub fn run<C: std::borrow::BorrowMut<Command>>(mut c: C) -> Output {
    c.borrow_mut().output().expect("run rtvirt")
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A real process (`sleep`), killed and reaped on drop.
pub struct Sleeper(pub Child);

impl Sleeper {
    pub fn start() -> Sleeper {
        Sleeper(Command::new("sleep").arg("600").stdin(Stdio::null()).spawn().expect("spawn sleep"))
    }
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The highest online CPU (tests put reservations there).
pub fn last_cpu() -> u32 {
    sysinfo::online_cpus().iter().last().expect("an online CPU")
}

/// Everything a plan apply may change for these threads, plus the cpuset hierarchy's state.
pub fn snapshot(tids: &[u32]) -> String {
    thread_snapshot(tids) + &cpuset_state()
}

/// Scheduling attributes, affinity and cgroups of these threads.
pub fn thread_snapshot(tids: &[u32]) -> String {
    let mut out = String::new();
    for &tid in tids {
        let attr = sched::get(tid).expect("sched_getattr");
        let aff = sched::get_affinity(tid).expect("affinity");
        let cgroup = procfs::read_opt(format!("/proc/{tid}/cgroup")).unwrap_or_default();
        out += &format!("{tid}: {attr:?} affinity={aff} cgroup={cgroup:?}\n");
    }
    out
}

/// Root cpuset settings and rtvirt's partitions.
pub fn cpuset_state() -> String {
    let Some(h) = rtvirt_os::cgroup::Hierarchy::find("cpuset") else { return "no cpuset\n".into() };
    let base = h.base().to_path_buf();
    let lb = procfs::read_opt(base.join("cpuset.sched_load_balance")).unwrap_or_default();
    let mut dirs: Vec<String> = std::fs::read_dir(&base)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("rtvirt-core"))
        .collect();
    dirs.sort();
    format!("load_balance={lb} partitions={dirs:?}\n")
}

/// A plan with guests (name, budget, deadline, period, core).
pub fn plan_json(guests: &[(&str, u64, u64, u64, u32)]) -> String {
    let gs: Vec<String> = guests
        .iter()
        .map(|(n, b, d, p, c)| {
            let bandwidth = *b as f64 / *p as f64;
            let reservation = format!(r#""period_ns":{p},"budget_ns":{b},"deadline_ns":{d},"bandwidth":{bandwidth}"#);
            format!(r#"{{"name":"{n}","scheduler":"edf","model":"prm",{reservation},"core":{c},"tasks":[]}}"#)
        })
        .collect();
    let cores: std::collections::BTreeSet<u32> = guests.iter().map(|g| g.4).collect();
    let cs: Vec<String> = cores
        .iter()
        .map(|c| {
            let names: Vec<String> = guests.iter().filter(|g| g.4 == *c).map(|g| format!("\"{}\"", g.0)).collect();
            format!(r#"{{"id":{c},"guests":[{}],"bandwidth":0.1}}"#, names.join(","))
        })
        .collect();
    format!(
        r#"{{"schema":"rtvirt.plan/v1","feasible":true,"cores_used":{},"max_rho":null,"guests":[{}],"cores":[{}]}}"#,
        cores.len(),
        gs.join(","),
        cs.join(",")
    )
}

pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

pub fn journal_exists(state: &Path) -> bool {
    state.join(rtvirt_host::journal::JOURNAL_FILE).exists()
}

pub fn cpus(s: &str) -> CpuList {
    CpuList::parse(s).unwrap()
}

/// `chrt -p TID` as the util-linux tool prints it.
pub fn chrt(tid: u32) -> String {
    let o = Command::new("chrt").arg("-p").arg(tid.to_string()).output().expect("chrt");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The journal's number of changes.
pub fn journal_len(state: &Path) -> usize {
    rtvirt_host::journal::read_entries(&state.join(rtvirt_host::journal::JOURNAL_FILE)).unwrap().len()
}

/// A temporary directory with `plan.json` and the path of a state directory; the state is
/// reverted when this is dropped (before the directory goes), so a failing test leaves the host
/// as it was.
pub struct PlanFiles {
    _revert: RevertGuard,
    pub plan: PathBuf,
    pub state: PathBuf,
    pub dir: tempfile::TempDir,
}

impl PlanFiles {
    /// A plan of `guests` (as [`plan_json`]).
    pub fn new(guests: &[(&str, u64, u64, u64, u32)]) -> PlanFiles {
        let dir = tempfile::tempdir().unwrap();
        let plan = write(dir.path(), "plan.json", &plan_json(guests));
        let state = dir.path().join("state");
        PlanFiles { _revert: RevertGuard(state.clone()), plan, state, dir }
    }
}

/// Reverts a state directory when dropped, so that a failing test leaves the host as it was.
pub struct RevertGuard(pub PathBuf);

impl Drop for RevertGuard {
    fn drop(&mut self) {
        if journal_exists(&self.0) {
            let _ = rtvirt(&["host", "revert", "--state-dir", self.0.to_str().unwrap()]).output();
        }
    }
}
