//! `rtvirt host audit` knows its host: whether it is a VM (checked against /proc/cpuinfo's
//! hypervisor flag, read here), the KVM advice of this CPU's vendor only, and the checks of the
//! deadline period limits, watchdogs, vmstat interval, skew_tick and KubeVirt's realtime node
//! condition, each with the value read again here from the same file.

mod schema_support;

use serde_json::Value;
use std::process::Command;

fn audit() -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_rtvirt")).args(["host", "audit", "--format", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    schema_support::assert_valid("audit", &v);
    v
}

fn check<'a>(a: &'a Value, id: &str) -> &'a Value {
    a["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no check {id}"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "absent".into())
}

/// The first value of a /proc/cpuinfo field.
fn cpuinfo(field: &str) -> String {
    let info = read("/proc/cpuinfo");
    let line = info.lines().find(|l| l.split(':').next().is_some_and(|k| k.trim() == field)).unwrap_or("");
    line.split_once(':').map_or(String::new(), |(_, v)| v.trim().to_string())
}

#[test]
fn the_audit_says_whether_this_host_is_a_vm() {
    rtvirt_testkit::require_root!();
    let a = audit();
    let c = check(&a, "host_is_vm");
    let flagged = cpuinfo("flags").split_whitespace().any(|f| f == "hypervisor");
    let found = c["found"].as_str().unwrap();
    if flagged {
        assert_eq!(c["status"], "warn", "{c}");
        assert!(found.starts_with("virtual machine") && found.contains("hypervisor flag"), "{c}");
    } else {
        assert!(!found.contains("hypervisor flag"), "{c}");
    }
    assert!(c["why"].as_str().unwrap().contains("every figure"), "{c}");
}

#[test]
fn kvm_advice_is_this_vendors_only() {
    rtvirt_testkit::require_root!();
    let a = audit();
    let c = check(&a, "kvm");
    if c["status"] == "skip" {
        assert!(!std::path::Path::new("/sys/module/kvm").exists(), "{c}");
        return;
    }
    let fix = c["fix"].as_str().unwrap();
    match cpuinfo("vendor_id").as_str() {
        "AuthenticAMD" => assert!(fix.contains("kvm_amd.pause_filter_count=0") && !fix.contains("kvm_intel"), "{fix}"),
        "GenuineIntel" => assert!(fix.contains("kvm_intel.ple_gap=0") && !fix.contains("kvm_amd"), "{fix}"),
        other => assert!(fix.contains(other), "{fix}"),
    }
}

#[test]
fn the_new_checks_report_the_values_of_this_host() {
    rtvirt_testkit::require_root!();
    let a = audit();
    let (lo, hi) =
        (read("/proc/sys/kernel/sched_deadline_period_min_us"), read("/proc/sys/kernel/sched_deadline_period_max_us"));
    assert_eq!(check(&a, "deadline_periods")["found"], format!("{lo} us .. {hi} us"));
    let watchdogs = format!(
        "nmi_watchdog={} watchdog={}",
        read("/proc/sys/kernel/nmi_watchdog"),
        read("/proc/sys/kernel/watchdog")
    );
    assert_eq!(check(&a, "watchdogs")["found"], watchdogs);
    let interval = read("/proc/sys/vm/stat_interval");
    let c = check(&a, "stat_interval");
    assert_eq!(c["found"], interval.as_str());
    assert_eq!(c["status"], if interval.parse::<u64>().unwrap() >= 10 { "pass" } else { "warn" });
    let cmdline = read("/proc/cmdline");
    let skew = cmdline.split_whitespace().find_map(|w| w.strip_prefix("skew_tick=")).unwrap_or("none");
    assert_eq!(check(&a, "skew_tick")["found"], skew);
    let runtime = read("/proc/sys/kernel/sched_rt_runtime_us");
    let c = check(&a, "kubevirt_realtime");
    assert!(c["found"].as_str().unwrap().starts_with(&format!("{runtime}:")), "{c}");
    assert_eq!(c["status"], if runtime == "-1" { "warn" } else { "pass" });
    let config = Command::new("sh")
        .args(["-c", "zcat /proc/config.gz | grep -E '^(# )?CONFIG_RT_GROUP_SCHED[= ]'"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&config.stdout).lines().next().unwrap_or("").to_string();
    let built = line.strip_prefix("CONFIG_RT_GROUP_SCHED=").unwrap_or(if line.is_empty() { "unknown" } else { "n" });
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let want = format!("cgroup {}, CONFIG_RT_GROUP_SCHED={built}", if v2 { "v2" } else { "v1" });
    let found = check(&a, "container_rt")["found"].as_str().unwrap().to_string();
    assert!(found.starts_with(&want), "{found} vs {want}");
    // the cpuidle check lists the command line's haltpoll settings
    let source = check(&a, "cpuidle")["source"].as_str().unwrap().to_string();
    for w in cmdline.split_whitespace().filter(|w| w.starts_with("cpuidle_haltpoll.") || w.starts_with("haltpoll.")) {
        assert!(source.contains(w), "{w} not in {source}");
    }
}
