//! `rtvirt demo` end to end: plan, simulation, real timer measurements and the report.

mod host_support;
mod schema_support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

/// The root cpuset's `sched_load_balance` (cgroup v1), which the task run switches off.
fn root_load_balance() -> Option<String> {
    std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance").ok()
}

/// cgroups (4 levels under /sys/fs/cgroup) that rtvirt process `pid` created: "rtvirt-...-PID-N".
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: u32, tag: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("rtvirt-") && name.contains(tag) {
                out.push(e.path());
            }
            if depth > 0 {
                walk(&e.path(), depth - 1, tag, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), 3, &format!("-{pid}-"), &mut out);
    out
}

#[test]
fn without_measurements_plans_simulates_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtvirt().args(["demo", "--no-measure", "--sim-time", "2s", "--out"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for n in 1..=8 {
        assert!(err.contains(&format!("[{n}/8]")), "progress of step {n}: {err}");
    }
    assert_eq!(err.matches("skipped: --no-measure").count(), 3, "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = dir.path().join("report.html");
    assert!(stdout.contains("report: ") && stdout.contains("report.html"), "{stdout}");
    let html = std::fs::read_to_string(report).unwrap();
    assert!(html.contains("data-chart=\"bandwidth\"") && html.contains("data-chart=\"dsr-tasks\""));
    assert!(
        html.contains("Prediction: deadline satisfaction versus rho") && html.contains("data-chart=\"dsr-rho\""),
        "the simulated rho sweep"
    );
    assert_eq!(std::fs::read_dir(dir.path().join("rho-sweep")).unwrap().count(), 5);
    assert!(dir.path().join("plan.json").is_file() && dir.path().join("simulated.json").is_file());
}

#[test]
fn with_short_measurements_compares_idle_and_loaded_timer() {
    let _host = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    // the default host: this one, calibrated by the demo (quick) and cached in the state directory
    let out = rtvirt()
        .env_remove("RTVIRT_HOST")
        .env("RTVIRT_STATE_DIR", state.path())
        .args(["demo", "--quick", "--measure-time", "1s", "--sim-time", "2s", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(dir.path().join("host.json").is_file(), "the quick calibration is kept: {err}");
    let cached = std::fs::read_dir(state.path().join("calibration")).unwrap().count();
    assert_eq!(cached, 1, "and cached for the next plan of this host: {err}");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("plan.json")).unwrap()).unwrap();
    let host = plan["settings"]["host"].as_str().unwrap();
    assert!(host.starts_with("this host (calibrated"), "{host}");
    for c in plan["cores"].as_array().unwrap() {
        let why = c["why"].as_str().unwrap();
        assert!(c["id"] != 0 || why.contains("used because"), "CPU 0 only when asked for: {c}");
    }
    let load: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("timer_load.json")).unwrap()).unwrap();
    assert_eq!(load["kind"], "timer");
    assert_eq!(load["environment"]["load"][0]["kind"], "syscalls", "the load that ran is recorded");
    assert!(load["intervals"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(load["histogram_ns"].as_array().is_some_and(|a| !a.is_empty()));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for kind in ["exceedance", "boxplot", "timeseries", "bandwidth"] {
        assert!(html.contains(&format!("data-chart=\"{kind}\"")), "no {kind} chart");
    }
    assert!(html.contains("measured: timer idle") && html.contains("measured: timer + syscall load"));
    let tasks: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("measured_tasks.json")).unwrap()).unwrap();
    assert_eq!(tasks["kind"], "tasks");
    assert_eq!(tasks["tasks"].as_array().map(|t| t.len()), Some(15), "every task of the default scenario");
    assert!(html.contains("measured (plan&#39;s reservations)"), "the task run is compared with the simulation");
    assert!(
        html.contains("measured vm1") && html.contains("simulated vm1"),
        "measured DSR drawn on the predicted curve"
    );
    assert!(html.contains("data-chart=\"response-cdf\""), "predicted and measured response-time CDFs overlaid");
    let verify: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("verify.json")).unwrap()).unwrap();
    schema_support::assert_valid("verify", &verify);
    assert_eq!(verify["tasks"].as_array().map(|t| t.len()), Some(15), "the task run checked task by task");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("prediction vs measurement: "), "the verdict is shown, exit 0 either way: {stdout}");
    assert!(stdout.contains("promise vs measurement: "), "the promise is checked: {stdout}");
    // the task run is traced: each task's longest jobs explained, and each disagreeing task's
    // causes shown
    let explained = tasks["explain"]["samples"].as_array().expect("the task run explained");
    assert!(explained.iter().any(|s| s["task"] == "vm1/t1"), "{}", tasks["explain"]);
    assert!(html.contains("Late wake-ups and long jobs"), "the report draws the jobs' causes");
    for t in verify["tasks"].as_array().unwrap().iter().filter(|t| t["verdict"] == "disagree") {
        let task = format!("{}/{}: longest job", t["guest"].as_str().unwrap(), t["name"].as_str().unwrap());
        assert!(stdout.contains(&task), "a disagreeing task's causes: {task}: {stdout}");
    }
    assert!(html.contains("Planned for: this host (calibrated"), "the report states the host and promise");
}

#[test]
fn bad_values_exit_2() {
    let out = rtvirt().args(["demo", "--measure-time", "0s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = rtvirt().args(["demo", "/nonexistent/scenario.toml", "--no-measure"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scenario.toml"));
}

#[test]
fn ctrl_c_during_the_task_run_restores_the_host_and_still_reports() {
    let _host = rtvirt_testkit::host_lock();
    let balance_before = root_load_balance();
    let dir = tempfile::tempdir().unwrap();
    let mut child = rtvirt()
        .args(["demo", "--measure-time", "3s", "--sim-time", "1s", "--out"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut all, mut buf) = (String::new(), [0u8; 512]);
        while let Ok(n @ 1..) = stderr.read(&mut buf) {
            let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
            all.push_str(&chunk);
            let _ = tx.send(chunk);
        }
        all
    });
    let mut seen = String::new();
    while !seen.contains("[7/8]") {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(chunk) => seen.push_str(&chunk),
            Err(_) => break,
        }
    }
    // The task run is under way once its exclusive cpusets exist and a guest worker's vCPU
    // thread runs under SCHED_DEADLINE (workers take it when the run starts, after calibrating).
    let start = Instant::now();
    let under_way = || !cgroups_of(pid).is_empty() && host_support::deadline_thread_in_a_child_of(pid);
    while !under_way() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let during = cgroups_of(pid);
    // SAFETY: kill has no memory effects; pid is our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = reader.join().unwrap();
    assert!(!during.is_empty(), "the task run had not created its cpusets: {err}");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("stopped by Ctrl-C after") && err.contains("interrupted (Ctrl-C)"), "{err}");
    assert_eq!(cgroups_of(pid), Vec::<PathBuf>::new(), "cpusets left behind");
    assert_eq!(root_load_balance(), balance_before, "root cpuset load balancing not restored");
    let tasks: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("measured_tasks.json")).unwrap()).unwrap();
    assert_eq!(tasks["interrupted"], true, "the partial task run is kept and says so");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("interrupted: shorter than planned"), "the report of what was done marks the partial run");
}
