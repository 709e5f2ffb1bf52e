//! A real QEMU guest (TCG, paused in firmware with -S, two vCPUs, an iothread, a QMP socket):
//! discover its threads through QMP and by name, apply and revert a plan and a profile on them.

mod host_support;

use host_support::*;
use rtvirt_os::qmp::Qmp;
use rtvirt_os::sched::{self, SCHED_DEADLINE, SCHED_FIFO};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A QEMU process, killed and reaped on drop.
struct Qemu {
    child: Child,
    socket: PathBuf,
    name: String,
}

impl Qemu {
    fn start(dir: &Path) -> Qemu {
        Qemu::start_with(dir, true)
    }

    /// With `debug_threads` off, QEMU's threads all keep the process name: only QMP tells which
    /// thread is which.
    fn start_with(dir: &Path, debug_threads: bool) -> Qemu {
        let socket = dir.join("qmp.sock");
        let name = format!("rtvirt-test-{}", std::process::id());
        let name_opt = if debug_threads { format!("{name},debug-threads=on") } else { name.clone() };
        let child = Command::new("qemu-system-x86_64")
            .args(["-M", "pc", "-accel", "tcg", "-smp", "2", "-m", "64", "-nodefaults", "-display", "none", "-S"])
            .args(["-name", &name_opt, "-object", "iothread,id=io1"])
            .arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("qemu-system-x86_64 (installed by scripts/setup.sh)");
        let q = Qemu { child, socket, name };
        let start = Instant::now();
        while Qmp::connect(&q.socket).is_err() {
            assert!(start.elapsed() < Duration::from_secs(20), "QEMU did not open its QMP socket");
            std::thread::sleep(Duration::from_millis(50));
        }
        q
    }

    /// vCPU index -> thread id, straight from QMP.
    fn vcpus(&self) -> Vec<(u32, u32)> {
        Qmp::connect(&self.socket).unwrap().vcpus().unwrap().into_iter().map(|v| (v.index, v.thread_id)).collect()
    }

    fn sock(&self) -> &str {
        self.socket.to_str().unwrap()
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn threads_json(args: &[&str]) -> Vec<serde_json::Value> {
    let o = run(rtvirt(&[&["host", "threads", "--format", "json"], args].concat()));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list["schema"], "rtvirt.threads/v1");
    list["threads"].as_array().unwrap().clone()
}

fn vcpu_tids(ts: &[serde_json::Value]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = ts
        .iter()
        .filter(|t| t["role"]["kind"] == "vcpu")
        .map(|t| (t["role"]["index"].as_u64().unwrap(), t["tid"].as_u64().unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn discovers_vcpus_and_iothreads_via_qmp_and_by_name() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let q = Qemu::start(dir.path());
    let expected: Vec<(u64, u64)> = q.vcpus().into_iter().map(|(i, t)| (i as u64, t as u64)).collect();
    assert_eq!(expected.len(), 2);

    let via_qmp = threads_json(&["--qmp", q.sock()]);
    assert_eq!(vcpu_tids(&via_qmp), expected);
    assert!(via_qmp.iter().any(|t| t["role"]["kind"] == "iothread" && t["role"]["id"] == "io1"), "{via_qmp:?}");
    assert!(via_qmp.iter().all(|t| t["guest"] == q.name.as_str()));
    for t in &via_qmp {
        assert!(t["policy"].is_string() && t["affinity"].is_string() && t["cpu"].is_u64());
    }
    // by -name (QMP socket found on its command line), by pid (thread names), and system-wide
    assert_eq!(vcpu_tids(&threads_json(&["--vm", &q.name])), expected);
    assert_eq!(vcpu_tids(&threads_json(&["--pid", &q.child.id().to_string()])), expected);
    let all = threads_json(&[]);
    assert!(expected
        .iter()
        .all(|(_, tid)| all.iter().any(|t| t["tid"].as_u64() == Some(*tid) && t["role"]["kind"] == "vcpu")));
    assert!(all.iter().any(|t| t["role"]["kind"] == "ksoftirqd"));
    // the table names the columns
    let o = run(rtvirt(&["host", "threads", "--qmp", q.sock()]));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("vcpu 1") && table.contains("SCHED") && table.contains("AFFINITY"), "{table}");

    let o = run(rtvirt(&["host", "threads", "--vm", "no-such-vm"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no running QEMU"));
}

#[test]
fn a_qemu_found_by_pid_or_scan_is_labelled_through_the_qmp_socket_of_its_command_line() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let q = Qemu::start_with(dir.path(), false);
    let expected: Vec<(u64, u64)> = q.vcpus().into_iter().map(|(i, t)| (i as u64, t as u64)).collect();
    assert_eq!(expected.len(), 2);
    let pid = q.child.id();
    // without debug-threads no thread is named "CPU n/TCG": the names alone label nothing
    let comms: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path().join("comm")).unwrap().trim().to_string())
        .collect();
    assert!(!comms.iter().any(|c| c.starts_with("CPU ")), "{comms:?}");

    let by_pid = threads_json(&["--pid", &pid.to_string()]);
    assert_eq!(vcpu_tids(&by_pid), expected, "{by_pid:?}");
    assert!(by_pid.iter().any(|t| t["role"]["kind"] == "iothread" && t["role"]["id"] == "io1"), "{by_pid:?}");
    assert!(by_pid.iter().all(|t| t["guest"] == q.name.as_str() && t["pid"] == pid), "{by_pid:?}");
    let all = threads_json(&[]);
    let mine: Vec<serde_json::Value> = all.into_iter().filter(|t| t["pid"] == pid).collect();
    assert_eq!(vcpu_tids(&mine), expected, "system scan: {mine:?}");
}

#[test]
fn plan_on_qemu_vcpus_applies_and_reverts() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let q = Qemu::start(dir.path());
    let tids: Vec<u32> = q.vcpus().into_iter().map(|(_, t)| t).collect();
    let before = snapshot(&tids);
    let core = last_cpu();
    let plan = write(
        dir.path(),
        "plan.json",
        &plan_json(&[("a", 1_000_000, 10_000_000, 10_000_000, core), ("b", 1_000_000, 10_000_000, 10_000_000, core)]),
    );
    let state = dir.path().join("state");
    let _revert_state = RevertGuard(state.clone());
    let (va, vb) = (format!("a={},vcpu=0", q.sock()), format!("b={},vcpu=1", q.sock()));

    // a two-vCPU VM needs the vCPU named
    let o = run(apply(&plan, &state).args(["--vm", &format!("a={}", q.sock())]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has 2 vCPUs"), "{}", text(&o));
    assert_eq!(snapshot(&tids), before);

    let o = run(apply(&plan, &state).args(["--vm", &va, "--vm", &vb]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for tid in &tids {
        let s = sched::get(*tid).unwrap();
        assert_eq!((s.policy, s.runtime_ns, s.period_ns), (SCHED_DEADLINE, 1_000_000, 10_000_000), "vCPU thread {tid}");
        assert_eq!(sched::get_affinity(*tid).unwrap(), cpus(&core.to_string()));
    }
    let o = run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(snapshot(&tids), before);
}

#[test]
fn profile_on_qemu_threads_applies_and_reverts() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let q = Qemu::start(dir.path());
    let vcpus = q.vcpus();
    let io = Qmp::connect(&q.socket).unwrap().iothreads().unwrap();
    let mut tids: Vec<u32> = vcpus.iter().map(|v| v.1).collect();
    tids.push(io[0].thread_id);
    let before = thread_snapshot(&tids);
    let cpu = last_cpu();
    let profile = format!(
        "schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"iothread\"\nguest = \"rt\"\nid = \"io1\"\ncpus = \"{cpu}\"\n\
         policy = \"fifo\"\npriority = 48\n[[set]]\nrole = \"vcpu\"\nguest = \"rt\"\nvcpu = 1\ncpus = \"{cpu}\"\n\
         policy = \"fifo\"\npriority = 47\n[[set]]\nrole = \"vcpu\"\nguest = \"rt\"\nvcpu = 0\ncpus = \"0\"\npolicy = \
         \"other\"\n"
    );
    let p = write(dir.path(), "p.toml", &profile);
    let state = dir.path().join("state");
    let _revert_state = RevertGuard(state.clone());
    // the guest named by its QEMU -name (its QMP socket is found on the command line)
    let o = run(apply(&p, &state).args(["--vm", &q.name]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("guest \"rt\" is not bound"), "{}", text(&o));
    let p_named =
        write(dir.path(), "named.toml", &profile.replace("guest = \"rt\"", &format!("guest = \"{}\"", q.name)));
    let o = run(apply(&p_named, &state).args(["--vm", &q.name, "--dry-run"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Would change"));
    let o = run(apply(&p, &state).args(["--vm", &format!("rt={}", q.sock())]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v1 = vcpus.iter().find(|v| v.0 == 1).unwrap().1;
    assert_eq!((sched::get(v1).unwrap().policy, sched::get(v1).unwrap().priority), (SCHED_FIFO, 47));
    assert_eq!(sched::get(io[0].thread_id).unwrap().priority, 48);
    assert_eq!(sched::get_affinity(vcpus.iter().find(|v| v.0 == 0).unwrap().1).unwrap(), cpus("0"));
    let o = run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(thread_snapshot(&tids), before);
}

/// A plan whose guest `vm` has one server per vCPU: (vCPU id, budget, deadline, period, core);
/// a budget of 0 is a housekeeping vCPU (no reservation, a core only). The guest's own fields are
/// its first reserved vCPU's, as `rtvirt plan` writes them.
fn vcpus_plan(vcpus: &[(u32, u64, u64, u64, u32)]) -> String {
    let list: Vec<serde_json::Value> = vcpus
        .iter()
        .map(|&(id, b, d, p, core)| {
            let model = if b == 0 { "none" } else { "prm" };
            let bandwidth = if p == 0 { 0.0 } else { b as f64 / p as f64 };
            serde_json::json!({"id": id, "core": core, "model": model, "period_ns": p, "budget_ns": b,
                "deadline_ns": d, "bandwidth": bandwidth, "tasks": []})
        })
        .collect();
    let first = *vcpus.iter().find(|v| v.1 > 0).expect("a reserved vCPU");
    let cores: std::collections::BTreeSet<u32> = vcpus.iter().map(|v| v.4).collect();
    let plan = serde_json::json!({
        "schema": "rtvirt.plan/v1", "feasible": true, "cores_used": cores.len(), "max_rho": null,
        "guests": [{"name": "vm", "scheduler": "edf", "model": "prm", "period_ns": first.3, "budget_ns": first.1,
            "deadline_ns": first.2, "bandwidth": 0.1, "core": first.4, "tasks": [], "vcpus": list}],
        "cores": cores.iter().map(|c| serde_json::json!({"id": c, "guests": ["vm"], "bandwidth": 0.1})).collect::<Vec<_>>(),
    });
    plan.to_string()
}

#[test]
fn a_plan_of_several_vcpus_reserves_each_vcpu_thread_on_its_core_and_reverts() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let q = Qemu::start(dir.path());
    let vcpus = q.vcpus();
    assert_eq!(vcpus.len(), 2);
    let tids: Vec<u32> = vcpus.iter().map(|v| v.1).collect();
    let tid_of = |index: u32| vcpus.iter().find(|v| v.0 == index).unwrap().1;
    let before = snapshot(&tids);
    let (c0, c1) = (0, last_cpu());
    let servers = [(0, 1_000_000, 10_000_000, 10_000_000, c0), (1, 2_000_000, 8_000_000, 20_000_000, c1)];
    let plan = write(dir.path(), "plan.json", &vcpus_plan(&servers));
    let state = dir.path().join("state");
    let _revert_state = RevertGuard(state.clone());
    let revert = || {
        let o = run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()]));
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    };

    // one binding, no vcpu=: every vCPU thread (found through QMP) gets its own server and core
    let o = run(apply(&plan, &state).args(["--vm", &format!("vm={}", q.sock())]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for &(id, b, d, p, core) in &servers {
        let s = sched::get(tid_of(id)).unwrap();
        assert_eq!((s.policy, s.runtime_ns, s.deadline_ns, s.period_ns), (SCHED_DEADLINE, b, d, p), "vCPU {id}");
        assert_eq!(sched::get_affinity(tid_of(id)).unwrap(), cpus(&core.to_string()), "vCPU {id}");
    }
    revert();
    assert_eq!(snapshot(&tids), before);

    // vcpu=1: that vCPU only
    let o = run(apply(&plan, &state).args(["--vm", &format!("vm={},vcpu=1", q.sock())]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(sched::get(tid_of(1)).unwrap().runtime_ns, 2_000_000);
    assert!(!sched::get(tid_of(0)).unwrap().is_deadline(), "vCPU 0 is not bound");
    revert();
    assert_eq!(snapshot(&tids), before);

    // a housekeeping vCPU (no reservation) is left as it is
    let hk = write(dir.path(), "hk.json", &vcpus_plan(&[(0, 0, 0, 0, c0), (1, 2_000_000, 8_000_000, 20_000_000, c1)]));
    let o = run(apply(&hk, &state).args(["--vm", &format!("vm={}", q.sock())]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(sched::get(tid_of(1)).unwrap().is_deadline() && !sched::get(tid_of(0)).unwrap().is_deadline());
    revert();
    assert_eq!(snapshot(&tids), before);

    // a plan of three vCPUs for a QEMU of two: exit 2, nothing changed
    let three = write(
        dir.path(),
        "three.json",
        &vcpus_plan(&[servers[0], servers[1], (2, 1_000_000, 10_000_000, 10_000_000, c1)]),
    );
    let o = run(apply(&three, &state).args(["--vm", &format!("vm={}", q.sock())]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 vCPU threads, the plan 3 vCPUs"), "{}", text(&o));
    assert_eq!(snapshot(&tids), before);
}
