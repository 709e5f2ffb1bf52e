//! `rtvirt load` end to end: real workers, achieved load reported.

mod schema_support;
use std::process::Command;

fn rtvirt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

#[test]
fn each_kind_reports_what_it_achieved() {
    for kind in ["cpu", "syscalls", "cache", "net", "net-udp"] {
        let out = rtvirt(&["load", kind, "--cpus", "0", "--duration", "300ms", "--format", "json"]);
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        schema_support::assert_valid("results", &v);
        assert_eq!(v["kind"], "load");
        let l = &v["environment"]["load"][0];
        assert_eq!(l["kind"], kind);
        assert_eq!(l["cpus_ran_on"], "0", "{kind}: {l}");
        assert!(l["ops_per_s"].as_f64().unwrap() > 0.0, "{kind}: {l}");
    }
}

#[test]
fn rate_and_bad_input() {
    let out = rtvirt(&["load", "cpu", "--rate", "1000000", "--duration", "300ms", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = v["environment"]["load"][0]["ops_per_s"].as_f64().unwrap();
    assert!(r < 1.5e6, "rate limited to 1e6 ops/s, got {r}");
    for args in [
        vec!["disk"],
        vec!["cpu", "--cpus", "77"],
        vec!["cpu", "--workers", "1000"],
        vec!["cpu", "--rate", "-1"],
        vec!["cpu", "--duration", "2h"],
    ] {
        let mut a = vec!["load"];
        a.extend(&args);
        assert_eq!(rtvirt(&a).status.code(), Some(2), "{args:?}");
    }
}

/// Rates so low that one unit of work is due only after minutes (cache and net count bytes:
/// a 64 KiB chunk at 1 byte/s is 18 hours): the run still ends at --duration.
#[test]
fn a_low_rate_ends_at_the_duration() {
    for kind in ["cpu", "syscalls", "cache", "net", "net-udp"] {
        let t0 = std::time::Instant::now();
        let out = rtvirt(&["load", kind, "--rate", "1", "--duration", "500ms", "--format", "json"]);
        let took = t0.elapsed();
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(took < std::time::Duration::from_secs(3), "{kind}: --duration 500ms took {took:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["duration_ns"].as_u64().unwrap() < 1_000_000_000, "{kind}: {v}");
    }
}

/// Ctrl-C and SIGTERM stop a long, slowly paced load at once; it still reports.
#[test]
fn a_low_rate_load_stops_on_ctrl_c_and_sigterm() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let child = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
            .env("RTVIRT_HOST", "ideal")
            .args(["load", "cache", "--rate", "1", "--duration", "60s", "--format", "json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let t0 = std::time::Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let out = child.wait_with_output().unwrap();
        let took = t0.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "signal {signal}: stopped after {took:?}");
        assert!(out.status.success(), "signal {signal}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["duration_ns"].as_u64().unwrap() < 5_000_000_000, "{v}");
    }
}
