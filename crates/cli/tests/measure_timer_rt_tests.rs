//! rt-tests' habits: `measure timer --json FILE` has every key a real `cyclictest --json` run
//! writes (rt-tests installed by scripts/setup.sh), with values that agree with rtvirt's own
//! results and that `rtvirt import` reads back; cyclictest's `-n`, `-S` and `-l` get a mapping,
//! not "unexpected argument"; durations take `m` for minutes on every command; `--format json` is
//! accepted by the commands whose output is always a JSON document.

mod host_support;
mod schema_support;

use host_support::text;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Output};

/// `rtvirt ARGS` run to its end (host_support's command: the ideal host).
fn rtvirt(args: &[&str]) -> Output {
    host_support::run(host_support::rtvirt(args))
}

/// Every key path of a JSON value, thread numbers and histogram rows written as `N` (they depend
/// on the run), e.g. `thread.N.histogram`, `sysinfo.release`.
fn key_paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    let Value::Object(map) = v else { return };
    for (k, child) in map {
        let key = if k.bytes().all(|b| b.is_ascii_digit()) { "N" } else { k.as_str() };
        let path = if at.is_empty() { key.to_string() } else { format!("{at}.{key}") };
        if !at.ends_with("histogram") {
            key_paths(child, &path, out);
        }
        out.insert(path);
    }
}

fn keys(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    key_paths(v, "", &mut out);
    out
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn json_has_every_key_of_a_real_cyclictest_json_and_the_runs_values() {
    rtvirt_testkit::require_root!();
    rtvirt_testkit::require_tool!("cyclictest");
    let _host = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("cyclictest.json");
    let o = Command::new("cyclictest")
        .args(["-q", "-m", "-t", "1", "-a", "1", "-i", "1000", "-l", "200", "-h", "2000"])
        .arg(format!("--json={}", theirs.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "cyclictest: {}", text(&o));
    let ours = dir.path().join("rtvirt.json");
    let o = rtvirt(&[
        "measure",
        "timer",
        "-n",
        "-S",
        "-a",
        "1",
        "-i",
        "1000",
        "-D",
        "200ms",
        "-h",
        "2000",
        "--format",
        "json",
        "--json",
        ours.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("-n: rtvirt always sleeps with clock_nanosleep") && stderr.contains("-S:"), "{stderr}");
    let (theirs, ours_json) = (read_json(&theirs), read_json(&ours));
    assert_eq!(keys(&ours_json), keys(&theirs), "ours:\n{ours_json:#}\ncyclictest's:\n{theirs:#}");
    schema_support::assert_valid("cyclictest", &ours_json);
    assert_eq!(ours_json["sysinfo"], theirs["sysinfo"], "the same host's uname");
    // the values are the run's: rtvirt's own results of the same run, in whole microseconds
    let results: Value = serde_json::from_slice(&o.stdout).unwrap();
    let (t, cpu) = (&ours_json["thread"]["0"], &results["cpus"][0]);
    assert_eq!(t["cpu"], 1);
    assert_eq!(t["cycles"], cpu["latency_ns"]["count"]);
    assert_eq!(t["min"].as_u64().unwrap(), cpu["latency_ns"]["min"].as_u64().unwrap() / 1000);
    assert_eq!(t["max"].as_u64().unwrap(), cpu["latency_ns"]["max"].as_u64().unwrap() / 1000);
    let rows: u64 = t["histogram"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    let beyond = cpu["latency_ns"]["max"].as_u64().unwrap() >= 2_000_000;
    assert!(rows == t["cycles"].as_u64().unwrap() || beyond, "every wake-up below 2 ms is in a row: {t}");
    // and rtvirt import, which reads cyclictest's JSON, reads it as the same run
    let o = rtvirt(&["import", "--format", "json", ours.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let imported: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(imported["latency_ns"]["count"], t["cycles"], "{imported:#}");
}

#[test]
fn cyclictest_loops_are_mapped_to_a_duration() {
    let o = rtvirt(&["measure", "timer", "-l", "5000", "-i", "200"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("-D 1s") && err.contains("5000 wake-ups"), "{err}");
    let o = rtvirt(&["measure", "timer", "-l", "many"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected a number of loops"), "{}", text(&o));
}

#[test]
fn every_duration_takes_m_for_minutes() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(
        &s,
        "[host]\ncores = 1\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nserver_periods = [\"10ms\"]\n[[guest.task]]\n\
         name = \"t\"\nperiod = \"100ms\"\nwcet = \"1ms\"\n",
    )
    .unwrap();
    let o = rtvirt(&["simulate", s.to_str().unwrap(), "--duration", "1m", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["duration_ns"], 60_000_000_000u64);
    assert_eq!(v["tasks"][0]["jobs"], 600, "a 100 ms task released for a minute");
}

#[test]
fn json_only_commands_take_format_json() {
    // the format is taken; what fails is the bad --step, named
    let o = rtvirt(&["host", "calibrate", "--format", "json", "--step", "5 parsecs", "--no-cache"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--step"), "{}", text(&o));
    let o = rtvirt(&["host", "calibrate", "--format", "table"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../import/tests/fuzz/cyclictest.json");
    let plain = rtvirt(&["import", file]);
    let json = rtvirt(&["import", "--format", "json", file]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    assert_eq!(plain.stdout, json.stdout);
}

/// rtla's actions: `--on-threshold` runs only when `--stop-at` (= `--break`) stopped the run,
/// `--on-end` always.
#[test]
fn rtla_actions_run_at_the_threshold_and_at_the_end() {
    rtvirt_testkit::require_root!();
    let _host = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    for (limit, stops) in [("1ns", true), ("1s", false)] {
        let (hit, end, trace) = (dir.path().join("hit"), dir.path().join("end"), dir.path().join("break.trace"));
        for f in [&hit, &end, &trace] {
            let _ = std::fs::remove_file(f);
        }
        let on_threshold = format!("shell,command=echo hit > '{}'", hit.display());
        let on_end = format!("shell,command=echo end > '{}'", end.display());
        let o = rtvirt(&[
            "measure",
            "timer",
            "-q",
            "-a",
            "1",
            "-i",
            "1ms",
            "-D",
            "300ms",
            "--stop-at",
            limit,
            "--break-trace",
            trace.to_str().unwrap(),
            "--on-threshold",
            &on_threshold,
            "--on-end",
            &on_end,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(hit.exists(), stops, "--stop-at {limit}: {}", text(&o));
        assert!(end.exists(), "--on-end runs at every end: {}", text(&o));
    }
}

#[test]
fn bad_actions_are_refused_before_measuring() {
    for (flag, action, says) in [
        ("--on-end", "stop", "unknown action"),
        ("--on-end", "signal,num=2", "signal,num=N,pid=PID"),
        ("--on-end", "trace", "--on-threshold trace"),
        ("--on-threshold", "continue", "nothing to continue"),
    ] {
        let o = rtvirt(&["measure", "timer", "--stop-at", "1ms", flag, action]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag) && err.contains(says), "{action}: {err}");
    }
}
