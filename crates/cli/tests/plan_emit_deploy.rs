//! `rtvirt plan --emit chrt` deployed for real (root, under the host lock): the emitted script runs
//! with `sh` on real threads of a stand-in process (threads that sleep 2 ms in a loop, as an idle
//! vCPU wakes for its guest's timer), the reservations are read back with sched_getattr and the
//! cpusets from /sys and /proc, and the undo script the deployment wrote puts the host back
//! exactly as it was. A run the kernel refuses (EINVAL: a period below its minimum; EBUSY:
//! admission; EPERM: a thread that sleeps on its old core) or that is interrupted (SIGINT,
//! SIGTERM, SIGHUP) names the errno and rolls itself back: the host as before, no undo script
//! left. Guest names carry shell code that must not run. A [`Cleanup`] guard runs the
//! undo script and removes any partition left behind even when an assertion fails. The
//! `--emit libvirt` hook runs against a QEMU started as libvirt starts one: `started` reserves its
//! vCPU through `rtvirt host apply`, `release` reverts it.

mod host_support;

use host_support::{cpuset_state, snapshot, text};
use rtvirt_os::cgroup::Hierarchy;
use rtvirt_os::{procfs, sched, sysinfo};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Guest names that create a file in the working directory if a script ever evaluates them.
const NAMES: [&str; 6] = [
    "a$(touch dollar)",
    "vm\ntouch newline\n#",
    "b; touch semicolon; `touch backtick`",
    "c'$(touch quote)'\"",
    "d $HOME * \\ {x,y} ~ & | > out",
    "e\r\ttouch\u{1b}[0m ü",
];

/// These tests need root and a mounted cpuset controller: a host without them fails them.
fn supported() {
    assert!(rtvirt_testkit::is_root(), "run as root: the scripts make cpusets and SCHED_DEADLINE reservations");
    assert!(Hierarchy::find("cpuset").is_some(), "no cpuset controller is mounted");
}

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap().replace("\\u001b", "\\u001B")
}

/// Guests with the given names, on as many cores as the host has (at most 2).
fn scenario(names: &[&str]) -> String {
    let cores = sysinfo::online_cpus().iter().count().min(2);
    let mut s = format!("[host]\ncores = {cores}\n");
    for (i, n) in names.iter().enumerate() {
        let period = 10 * (i + 1);
        s += &format!(
            "[[guest]]\nname = {}\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n[[guest.task]]\nname = \"t\"\nperiod = \
             \"{period}ms\"\nwcet = \"1ms\"\n",
            toml_string(n)
        );
    }
    s
}

/// A process whose `n` threads stand in for vCPU threads; killed on drop.
struct StandIn {
    child: Child,
    tids: Vec<u32>,
}

impl StandIn {
    fn start(n: usize) -> StandIn {
        // one write per line under a lock: print() from threads can interleave two ids on a line
        let program = "import sys, threading, time\n\
                       lock = threading.Lock()\n\
                       def vcpu():\n    \
                       with lock: sys.stdout.write('%d\\n' % threading.get_native_id()); sys.stdout.flush()\n    \
                       while True: time.sleep(0.002)\n\
                       for _ in range(int(sys.argv[1])): threading.Thread(target=vcpu, daemon=True).start()\n\
                       time.sleep(300)\n";
        let mut child = Command::new("python3")
            .args(["-c", program, &n.to_string()])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 (the stand-in for vCPU threads)");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let tids: Vec<u32> = lines.take(n).map(|l| l.unwrap().trim().parse().unwrap()).collect();
        assert_eq!(tids.len(), n, "the stand-in printed its thread ids");
        StandIn { child, tids }
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Puts the host back whatever happens: runs the undo script if it is still there, stops the
/// stand-in threads, then removes any `rtvirt-core*` partition that was not there before and
/// restores the root cpuset's load balancing.
struct Cleanup {
    undo: PathBuf,
    stand_in: Option<StandIn>,
    partitions_before: Vec<PathBuf>,
    load_balance_before: Option<String>,
}

impl Cleanup {
    fn new(undo: PathBuf, stand_in: Option<StandIn>) -> Cleanup {
        Cleanup {
            undo,
            stand_in,
            partitions_before: partitions(),
            load_balance_before: load_balance_file().and_then(procfs::read_opt),
        }
    }
    fn tids(&self) -> Vec<u32> {
        self.stand_in.as_ref().map(|s| s.tids.clone()).unwrap_or_default()
    }
}

fn cpuset_base() -> PathBuf {
    Hierarchy::find("cpuset").expect("cpuset").base().to_path_buf()
}

fn partitions() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cpuset_base())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rtvirt-core")))
        .collect();
    dirs.sort();
    dirs
}

fn load_balance_file() -> Option<PathBuf> {
    matches!(Hierarchy::find("cpuset"), Some(Hierarchy::V1(_))).then(|| cpuset_base().join("cpuset.sched_load_balance"))
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.undo.exists() {
            let _ = Command::new("timeout").args(["60", "sh"]).arg(&self.undo).output();
        }
        self.stand_in = None;
        let tasks = if load_balance_file().is_some() { "tasks" } else { "cgroup.threads" };
        for dir in partitions().into_iter().filter(|d| !self.partitions_before.contains(d)) {
            for tid in procfs::read_opt(dir.join(tasks)).unwrap_or_default().lines() {
                let _ = std::fs::write(cpuset_base().join(tasks), tid);
            }
            let _ = std::fs::remove_dir(&dir);
        }
        if let (Some(file), Some(before)) = (load_balance_file(), &self.load_balance_before) {
            let _ = std::fs::write(file, before);
        }
    }
}

/// `sh SCRIPT` in `dir` with a time bound and extra environment.
fn sh(dir: &Path, script: &Path, env: &[(String, String)]) -> Output {
    Command::new("timeout")
        .args(["60", "sh"])
        .arg(script)
        .current_dir(dir)
        .envs(env.iter().cloned())
        .output()
        .expect("run sh")
}

/// The emitted script for `names`: the first guest's thread by --pid, the others from
/// VCPU_PID_<GUEST>; and the plan it deploys.
fn emit(dir: &Path, names: &[&str], tids: &[u32]) -> (PathBuf, serde_json::Value, Vec<(String, String)>) {
    let file = dir.join("s.toml");
    std::fs::write(&file, scenario(names)).unwrap();
    let f = file.to_str().unwrap();
    let plan = rtvirt(&["plan", f, "--format", "json"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let pid = format!("{}={}", names[0], tids[0]);
    let o = rtvirt(&["plan", f, "--emit", "chrt", "--pid", &pid]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let script = dir.join("deploy.sh");
    std::fs::write(&script, &o.stdout).unwrap();
    let env = names[1..]
        .iter()
        .zip(&tids[1..])
        .map(|(n, t)| (rtvirt_analysis::emit::pid_variable(n), t.to_string()))
        .collect();
    (script, plan, env)
}

/// Only the scenario, the script and (while deployed) its undo script are in the working
/// directory: no guest name ran a command there.
fn no_injected_file(dir: &Path) {
    let mut files: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    files.retain(|f| f != "deploy-undo.sh");
    assert_eq!(files, ["deploy.sh", "s.toml"], "a guest name ran a command");
}

/// Each thread holds its guest's planned reservation, inside the exclusive cpuset of its core.
fn check_deployed(plan: &serde_json::Value, tids: &[u32]) {
    let v1 = load_balance_file().is_some();
    if let Some(file) = load_balance_file() {
        assert_eq!(procfs::read_opt(file).unwrap().trim(), "0", "v1: the root cpuset stopped balancing");
    }
    for (guest, &tid) in plan["guests"].as_array().unwrap().iter().zip(tids) {
        let core = guest["core"].as_u64().unwrap() as u32;
        let attr = sched::get(tid).unwrap();
        assert!(attr.is_deadline(), "thread {tid}: {attr:?}");
        let planned = ["budget_ns", "deadline_ns", "period_ns"].map(|k| guest[k].as_u64().unwrap());
        assert_eq!([attr.runtime_ns, attr.deadline_ns, attr.period_ns], planned, "guest {}", guest["name"]);
        assert_eq!(sched::get_affinity(tid).unwrap().iter().collect::<Vec<_>>(), vec![core]);
        let partition = cpuset_base().join(format!("rtvirt-core{core}"));
        assert_eq!(procfs::read_opt(partition.join("cpuset.cpus")).unwrap().trim(), core.to_string());
        let tasks = procfs::read_opt(partition.join(if v1 { "tasks" } else { "cgroup.threads" })).unwrap();
        assert!(tasks.lines().any(|l| l == tid.to_string()), "thread {tid} in {}", partition.display());
        if v1 {
            assert_eq!(procfs::read_opt(partition.join("cpuset.cpu_exclusive")).unwrap().trim(), "1");
        } else {
            assert_eq!(procfs::read_opt(partition.join("cpuset.cpus.partition")).unwrap().trim(), "root");
        }
    }
}

#[test]
fn emitted_chrt_script_deploys_on_real_threads_and_its_undo_restores_the_host() {
    supported();
    let _serial = host_support::serial();
    let dir = tempfile::tempdir().unwrap();
    let guard = Cleanup::new(dir.path().join("deploy-undo.sh"), Some(StandIn::start(NAMES.len())));
    let tids = guard.tids();
    let before = snapshot(&tids);
    let (script, plan, env) = emit(dir.path(), &NAMES, &tids);

    let o = sh(dir.path(), &script, &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    no_injected_file(dir.path());
    check_deployed(&plan, &tids);
    assert!(guard.undo.exists(), "the undo script is written next to the script");
    for name in NAMES {
        assert!(String::from_utf8_lossy(&o.stderr).contains(name), "the messages name {name:?}");
    }

    // deployed already: a second run refuses and changes nothing
    let deployed = snapshot(&tids);
    let again = sh(dir.path(), &script, &env);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("deployed already"), "{}", text(&again));
    assert_eq!(snapshot(&tids), deployed);

    let undo = sh(dir.path(), &guard.undo, &[]);
    assert_eq!(undo.status.code(), Some(0), "{}", text(&undo));
    assert!(!guard.undo.exists(), "the undo script removes itself when everything is restored");
    assert_eq!(snapshot(&tids), before, "the host is as it was");
    no_injected_file(dir.path());
}

#[test]
fn a_deployment_refused_halfway_names_ebusy_and_rolls_itself_back() {
    supported();
    let _serial = host_support::serial();
    let dir = tempfile::tempdir().unwrap();
    let guard = Cleanup::new(dir.path().join("deploy-undo.sh"), Some(StandIn::start(2)));
    let tids = guard.tids();
    let before = snapshot(&tids);
    let (script, plan, env) = emit(dir.path(), &NAMES[..2], &tids);
    // the second guest asks for its whole period: the kernel refuses it (EBUSY) after the first
    // guest's thread was deployed
    let second = &plan["guests"][1];
    let line = format!("{} {} {} ", second["budget_ns"], second["deadline_ns"], second["period_ns"]);
    let whole = format!("{0} {0} {0} ", second["period_ns"]);
    let text_before = std::fs::read_to_string(&script).unwrap();
    assert!(text_before.contains(&line), "the deploy line of the second guest");
    std::fs::write(&script, text_before.replace(&line, &whole)).unwrap();

    let o = sh(dir.path(), &script, &env);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("EBUSY: admission") && err.contains("sched_rt_runtime_us"), "{}", text(&o));
    assert!(err.contains("rolled back"), "{}", text(&o));
    assert!(!guard.undo.exists(), "the rollback restored everything and removed the undo script");
    assert_eq!(snapshot(&tids), before, "the first guest's deployment was rolled back too");
    no_injected_file(dir.path());
}

/// The `--emit chrt` script of a plan of one guest with this reservation on `core`, for `tid`.
fn script_for(dir: &Path, tid: u32, (runtime, deadline, period): (u64, u64, u64), core: u32) -> PathBuf {
    let plan = rtvirt_model::plan::Plan::from_json(&host_support::plan_json(&[("g", runtime, deadline, period, core)]))
        .unwrap();
    let pids = std::collections::BTreeMap::from([("g".to_string(), tid)]);
    let script = dir.join("deploy.sh");
    std::fs::write(&script, rtvirt_analysis::emit::chrt::script(&plan, &pids).unwrap()).unwrap();
    script
}

#[test]
fn a_period_below_the_kernel_minimum_is_named_einval_and_rolled_back() {
    supported();
    let _serial = host_support::serial();
    let dir = tempfile::tempdir().unwrap();
    let sleeper = host_support::Sleeper::start();
    let tid = sleeper.pid();
    let before = snapshot(&[tid]);
    let min = procfs::read_opt("/proc/sys/kernel/sched_deadline_period_min_us").unwrap();
    let max = procfs::read_opt("/proc/sys/kernel/sched_deadline_period_max_us").unwrap();
    assert!(min.trim().parse::<u64>().unwrap() > 50, "the kernel's minimum period is above the plan's 50 us");
    let script = script_for(dir.path(), tid, (10_000, 50_000, 50_000), host_support::last_cpu());
    let _guard = Cleanup::new(dir.path().join("deploy-undo.sh"), None);

    let o = sh(dir.path(), &script, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for part in ["EINVAL", "period 50000 ns", &format!("{} us (sched_deadline_period_min_us)", min.trim())] {
        assert!(err.contains(part), "{part:?} in {}", text(&o));
    }
    assert!(err.contains(&format!("{} us (sched_deadline_period_max_us)", max.trim())), "{}", text(&o));
    assert!(err.contains("rolled back"), "{}", text(&o));
    assert!(!dir.path().join("deploy-undo.sh").exists(), "the rollback removed the undo script");
    assert_eq!(snapshot(&[tid]), before, "policy, affinity, cpuset and the partitions as before");
}

/// A thread that sleeps on CPU 0 and a script that puts it on another core: `chrt -d` answers
/// EPERM until the thread wakes, which it does not, so the script retries for 5 s.
#[test]
fn a_deployment_refused_with_eperm_or_interrupted_rolls_itself_back() {
    supported();
    assert!(host_support::last_cpu() > 0, "two online CPUs");
    let _serial = host_support::serial();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new("taskset").args(["-c", "0", "sleep", "600"]).stdin(Stdio::null()).spawn().unwrap();
    let sleeper = host_support::Sleeper(child);
    let tid = sleeper.pid();
    // taskset has exec'd sleep, which sleeps on CPU 0
    while procfs::read_opt(format!("/proc/{tid}/comm")).is_none_or(|c| c.trim() != "sleep") {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let before = snapshot(&[tid]);
    let core = host_support::last_cpu();
    let script = script_for(dir.path(), tid, (1_000_000, 10_000_000, 10_000_000), core);
    let undo = dir.path().join("deploy-undo.sh");
    let _guard = Cleanup::new(undo.clone(), None);

    let o = sh(dir.path(), &script, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("for 5 s: EPERM") && err.contains("root domain"), "{}", text(&o));
    assert!(err.contains("rolled back") && !undo.exists(), "{}", text(&o));
    assert_eq!(snapshot(&[tid]), before);

    for (signal, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let mut command = Command::new("sh");
        command.arg(&script).current_dir(dir.path()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // as from a terminal: a shell cannot trap a signal ignored on entry, and a test run
        // started in the background of a non-interactive shell (`make test &`) ignores SIGINT
        // and SIGQUIT, nohup SIGHUP
        // SAFETY: signal() with SIG_DFL is async-signal-safe, between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::signal(signal, libc::SIG_DFL);
                Ok(())
            });
        }
        let run = command.spawn().unwrap();
        // mid-way: the thread is in its partition, chrt is being retried
        let start = std::time::Instant::now();
        while !procfs::read_opt(format!("/proc/{tid}/cgroup")).unwrap().contains("rtvirt-core") {
            assert!(start.elapsed() < std::time::Duration::from_secs(4), "the script moved the thread");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: kill on the id of a child of this process, not yet waited for.
        assert_eq!(unsafe { libc::kill(run.id() as i32, signal) }, 0);
        let o = run.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(status), "signal {signal}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("stopped (exit {status})")) && err.contains("rolled back"), "{}", text(&o));
        assert!(!undo.exists(), "signal {signal}: the undo script is gone");
        assert_eq!(snapshot(&[tid]), before, "signal {signal}: the host is as it was");
    }
}

#[test]
fn a_missing_thread_stops_the_script_before_any_change() {
    supported();
    let _serial = host_support::serial();
    let dir = tempfile::tempdir().unwrap();
    let guard = Cleanup::new(dir.path().join("deploy-undo.sh"), Some(StandIn::start(1)));
    let tids = guard.tids();
    let state = cpuset_state();
    // the second thread id is above pid_max: no such thread
    let (script, _, env) = emit(dir.path(), &NAMES[..2], &[tids[0], 4_194_305]);
    let o = sh(dir.path(), &script, &env);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no thread 4194305"), "{}", text(&o));
    assert!(!guard.undo.exists(), "nothing changed, nothing to undo");
    assert_eq!(cpuset_state(), state);
    assert!(!sched::get(tids[0]).unwrap().is_deadline());
    no_injected_file(dir.path());
    // without the variable of a guest the script stops as early
    let o = sh(dir.path(), &script, &[]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("set it to the thread id"), "{}", text(&o));
    assert!(!guard.undo.exists());
}

/// A QEMU started the way libvirt starts one (`-name guest=NAME,debug-threads=on`, no QMP socket
/// on its command line: libvirt passes the monitor as a file descriptor), TCG, paused; killed on
/// drop.
struct LibvirtLikeQemu {
    child: Child,
}

impl LibvirtLikeQemu {
    fn start(name: &str) -> (LibvirtLikeQemu, u32) {
        let child = Command::new("qemu-system-x86_64")
            .args(["-M", "pc", "-accel", "tcg", "-smp", "1", "-m", "64", "-nodefaults", "-display", "none", "-S"])
            .args(["-name", &format!("guest={name},debug-threads=on")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("qemu-system-x86_64 (installed by scripts/setup.sh)");
        let pid = child.id();
        let qemu = LibvirtLikeQemu { child };
        let start = std::time::Instant::now();
        loop {
            let vcpu = procfs::tids(pid).into_iter().find(|&t| {
                procfs::read_opt(format!("/proc/{pid}/task/{t}/comm")).is_some_and(|c| c.trim() == "CPU 0/TCG")
            });
            if let Some(tid) = vcpu {
                return (qemu, tid);
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "QEMU started no vCPU thread");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for LibvirtLikeQemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reverts the hook's journal of guest 0 when dropped (a failing test leaves nothing behind).
struct HookStateGuard(PathBuf);

impl Drop for HookStateGuard {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
                .env("RTVIRT_HOST", "ideal")
                .args(["host", "revert", "--state-dir"])
                .arg(&self.0)
                .output();
        }
    }
}

#[test]
fn the_libvirt_hook_reserves_the_vcpu_of_a_started_domain_and_reverts_on_release() {
    supported();
    let _serial = host_support::serial();
    let dir = tempfile::tempdir().unwrap();
    let name = format!("rtvirt-hook-{}", std::process::id());
    let file = dir.path().join("s.toml");
    std::fs::write(&file, scenario(&[&name])).unwrap();
    let f = file.to_str().unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&rtvirt(&["plan", f, "--format", "json"]).stdout).unwrap();
    let out = dir.path().join("libvirt");
    let o = rtvirt(&["plan", f, "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let state = dir.path().join("state");
    let _revert = HookStateGuard(state.join("guest0"));
    let (_qemu, vcpu) = LibvirtLikeQemu::start(&name);
    let before = snapshot(&[vcpu]);
    let hook = |operation: &str| {
        let o = Command::new("timeout")
            .args(["120", "sh"])
            .arg(out.join("qemu"))
            .args([name.as_str(), operation, "begin", "-"])
            .env("RTVIRT", env!("CARGO_BIN_EXE_rtvirt"))
            .env("RTVIRT_HOOK_STATE", &state)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "hook {operation}: {}", text(&o));
    };

    hook("prepare");
    assert_eq!(snapshot(&[vcpu]), before, "prepare changes nothing");
    hook("started");
    check_deployed(&plan, &[vcpu]);
    hook("release");
    assert_eq!(snapshot(&[vcpu]), before, "the host is as it was");
}
