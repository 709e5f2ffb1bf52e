//! `rtvirt load` end to end: real workers, achieved load reported.

mod schema_support;
use std::process::Command;

fn rtvirt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).args(args).output().expect("run rtvirt")
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
