//! `rtvirt demo` end to end: plan, simulation, real timer measurements and the report.

use std::process::Command;

fn rtvirt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
}

#[test]
fn without_measurements_plans_simulates_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtvirt().args(["demo", "--no-measure", "--sim-time", "2s", "--out"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for n in 1..=7 {
        assert!(err.contains(&format!("[{n}/7]")), "progress of step {n}: {err}");
    }
    assert_eq!(err.matches("NOT AVAILABLE").count(), 3, "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = dir.path().join("report.html");
    assert!(stdout.contains("report: ") && stdout.contains("report.html"), "{stdout}");
    let html = std::fs::read_to_string(report).unwrap();
    assert!(html.contains("data-chart=\"bandwidth\"") && html.contains("data-chart=\"dsr-tasks\""));
    assert!(html.contains("Prediction: deadline satisfaction versus rho") && html.contains("data-chart=\"dsr-rho\""), "the simulated rho sweep");
    assert_eq!(std::fs::read_dir(dir.path().join("rho-sweep")).unwrap().count(), 5);
    assert!(dir.path().join("plan.json").is_file() && dir.path().join("simulated.json").is_file());
}

#[test]
fn with_short_measurements_compares_idle_and_loaded_timer() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtvirt().args(["demo", "--measure-time", "1s", "--sim-time", "2s", "--out"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let load: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("timer_load.json")).unwrap()).unwrap();
    assert_eq!(load["kind"], "timer");
    assert_eq!(load["environment"]["load"][0]["kind"], "syscalls", "the load that ran is recorded");
    assert!(load["intervals"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(load["histogram_ns"].as_array().is_some_and(|a| !a.is_empty()));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for kind in ["cdf", "boxplot", "timeseries", "bandwidth"] {
        assert!(html.contains(&format!("data-chart=\"{kind}\"")), "no {kind} chart");
    }
    assert!(html.contains("measured: timer idle") && html.contains("measured: timer + syscall load"));
    let tasks: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("measured_tasks.json")).unwrap()).unwrap();
    assert_eq!(tasks["kind"], "tasks");
    assert_eq!(tasks["tasks"].as_array().map(|t| t.len()), Some(15), "every task of the default scenario");
    assert!(html.contains("measured (plan&#39;s reservations)"), "the task run is compared with the simulation");
    assert!(html.contains("measured vm1") && html.contains("simulated vm1"), "measured DSR drawn on the predicted curve");
}

#[test]
fn bad_values_exit_2() {
    let out = rtvirt().args(["demo", "--measure-time", "0s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = rtvirt().args(["demo", "/nonexistent/scenario.toml", "--no-measure"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scenario.toml"));
}
