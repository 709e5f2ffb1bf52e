//! `rtvirt host audit`: every value reported is the real value of this machine, read again here
//! independently from the same files.

mod host_support;
mod schema_support;

use host_support::*;
use serde_json::Value;

fn audit() -> (Value, Option<i32>) {
    let o = run(rtvirt(&["host", "audit", "--format", "json"]));
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    schema_support::assert_valid("audit", &v);
    (v, o.status.code())
}

fn check<'a>(a: &'a Value, id: &str) -> &'a Value {
    a["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no check {id}"))
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn none_if_empty(s: String) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        s
    }
}

/// Files under /sys/kernel/debug, read independently of rtvirt: directly when debugfs is mounted,
/// else in a private mount namespace of a child (`unshare --mount`), as the audit does, so that
/// the host's mounts are not changed. None if debugfs cannot be read at all.
fn debugfs(files: &[String]) -> Option<Vec<String>> {
    if std::path::Path::new("/sys/kernel/debug/sched").is_dir() {
        return files.iter().map(|f| read(&format!("/sys/kernel/debug/{f}"))).collect();
    }
    let mut script = String::from("mount -t debugfs none /sys/kernel/debug");
    for f in files {
        script += &format!(" && cat /sys/kernel/debug/{f} && echo ===");
    }
    let o = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    let out = String::from_utf8(o.stdout).ok()?;
    Some(out.split("===").map(|s| s.trim().to_string()).take(files.len()).collect())
}

/// The boot-default preemption mode from /proc/config.gz (CONFIG_PREEMPT_NONE=y -> "none"...).
fn kconfig_preempt_default() -> Option<String> {
    let o = std::process::Command::new("zcat").arg("/proc/config.gz").output().ok()?;
    let cfg = String::from_utf8_lossy(&o.stdout).into_owned();
    [
        ("CONFIG_PREEMPT_NONE=y", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
        ("CONFIG_PREEMPT=y", "full"),
        ("CONFIG_PREEMPT_LAZY=y", "lazy"),
    ]
    .into_iter()
    .find(|(k, _)| cfg.lines().any(|l| l == *k))
    .map(|(_, m)| m.to_string())
}

fn cmdline(key: &str) -> Option<String> {
    read("/proc/cmdline")
        .unwrap()
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(&format!("{key}=")))
        .next_back()
        .map(str::to_string)
}

#[test]
fn schema_ids_and_shape() {
    let (a, code) = audit();
    assert_eq!(a["schema"], "rtvirt.audit/v1");
    for id in [
        "preemption",
        "rt_throttling",
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "governor",
        "cpuidle",
        "thp",
        "irqbalance",
        "fair_server",
    ] {
        let c = check(&a, id);
        assert!(["pass", "warn", "fail", "skip"].contains(&c["status"].as_str().unwrap()), "{c}");
        for f in ["found", "why", "fix", "depends_on", "tuned", "source"] {
            assert!(!c[f].as_str().unwrap().is_empty(), "{id}.{f} empty");
        }
    }
    let fails = a["checks"].as_array().unwrap().iter().filter(|c| c["status"] == "fail").count();
    assert_eq!(code, Some(if fails > 0 { 1 } else { 0 }), "exit 1 iff a check fails");
    assert_eq!(a["summary"]["fail"].as_u64(), Some(fails as u64));
}

#[test]
fn found_values_are_this_machines_files() {
    let (a, _) = audit();
    let found = |id: &str| check(&a, id)["found"].as_str().unwrap().to_string();
    let status = |id: &str| check(&a, id)["status"].as_str().unwrap().to_string();

    assert_eq!(found("rt_throttling"), read("/proc/sys/kernel/sched_rt_runtime_us").unwrap());
    let isolated = none_if_empty(read("/sys/devices/system/cpu/isolated").unwrap_or_default());
    match cmdline("isolcpus") {
        Some(p) => assert_eq!(found("isolcpus"), format!("{isolated} (isolcpus={p})")),
        None => assert_eq!(found("isolcpus"), isolated),
    }
    match read("/sys/devices/system/cpu/nohz_full") {
        Some(v) => assert_eq!(found("nohz_full"), if v == "(null)" { "none".into() } else { none_if_empty(v) }),
        None => assert_eq!(found("nohz_full"), "none"),
    }
    let bare_nocbs = read("/proc/cmdline").unwrap().split_whitespace().any(|w| w == "rcu_nocbs");
    let nocbs = cmdline("rcu_nocbs").or_else(|| bare_nocbs.then(|| "rcu_nocbs (no CPU list)".to_string()));
    assert_eq!(found("rcu_nocbs"), nocbs.unwrap_or_else(|| "none".into()));
    let thp = read("/sys/kernel/mm/transparent_hugepage/enabled").unwrap();
    let selected = thp.split_whitespace().find(|w| w.starts_with('[')).unwrap().trim_matches(['[', ']']);
    assert_eq!(found("thp"), selected);
    match read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") {
        Some(g) => assert!(found("governor").contains(&g)),
        None => assert_eq!((found("governor").as_str(), status("governor").as_str()), ("none", "skip")),
    }
    assert_eq!(
        found("cpuidle"),
        none_if_empty(read("/sys/devices/system/cpu/cpuidle/current_driver").unwrap_or_default())
    );
    let irqbalance = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| read(&format!("{}/comm", e.path().display())).as_deref() == Some("irqbalance"));
    assert_eq!(found("irqbalance") == "not running", !irqbalance);
    assert_eq!(found("timer_migration"), read("/proc/sys/kernel/timer_migration").unwrap_or_else(|| "none".into()));
    assert_eq!(found("hugepages"), read("/proc/sys/vm/nr_hugepages").unwrap());
    if let Some(ksm) = read("/sys/kernel/mm/ksm/run") {
        assert_eq!(found("ksm"), ksm);
    }
    assert_eq!(found("clocksource"), read("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap());

    let version = read("/proc/sys/kernel/version").unwrap();
    let preemption = found("preemption");
    if read("/sys/kernel/realtime").as_deref() == Some("1") {
        assert_eq!(preemption, "PREEMPT_RT");
    } else if version.contains("PREEMPT_DYNAMIC") {
        // debugfs sched/preempt lists the modes with the current one in parentheses; if debugfs
        // cannot be read (e.g. kernel lockdown), the audit falls back to preempt= and then to the
        // Kconfig default, and says so
        let mode = match debugfs(&["sched/preempt".to_string()]) {
            Some(v) => v[0]
                .split_whitespace()
                .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
                .unwrap_or_else(|| panic!("no (mode) in {v:?}"))
                .to_string(),
            None => {
                assert!(
                    check(&a, "preemption")["source"]
                        .as_str()
                        .unwrap()
                        .contains("/sys/kernel/debug/sched/preempt unreadable"),
                    "{}",
                    check(&a, "preemption")
                );
                cmdline("preempt").or_else(kconfig_preempt_default).expect("preempt= or /proc/config.gz")
            }
        };
        assert_eq!(preemption, format!("PREEMPT_DYNAMIC ({mode})"));
    }
    let release = read("/proc/sys/kernel/osrelease").unwrap();
    let mut v =
        release.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse::<u32>().unwrap());
    let has_fair_server = (v.next().unwrap(), v.next().unwrap()) >= (6, 12);
    assert_eq!(status("fair_server") == "skip", !has_fair_server);
    if has_fair_server {
        // every online CPU's runtime/period, as debugfs has them
        let online = cpus(&read("/sys/devices/system/cpu/online").unwrap());
        let files: Vec<String> = online
            .iter()
            .flat_map(|c| [format!("sched/fair_server/cpu{c}/runtime"), format!("sched/fair_server/cpu{c}/period")])
            .collect();
        match debugfs(&files) {
            Some(values) => {
                let expected: Vec<String> =
                    online.iter().zip(values.chunks(2)).map(|(c, rp)| format!("cpu{c}={}/{}", rp[0], rp[1])).collect();
                assert_eq!(found("fair_server"), expected.join(","));
            }
            // unreadable here too (e.g. kernel lockdown restricts debugfs): the audit must not
            // invent values
            None => assert!(
                found("fair_server").starts_with("unreadable (") && status("fair_server") == "warn",
                "{}",
                check(&a, "fair_server")
            ),
        }
    }
    // kernel threads: what chrt says about ksoftirqd/0
    let kt = found("kthread_priorities");
    assert!(kt.contains("ksoftirqd/0="), "{kt}");
}

#[test]
fn audit_changes_nothing_not_even_mounts() {
    let mounts = || read("/proc/self/mounts").unwrap();
    let before = mounts();
    let (a, _) = audit();
    assert_eq!(mounts(), before, "debugfs is only mounted in a private namespace");
    let src = check(&a, "fair_server")["source"].as_str().unwrap().to_string();
    assert!(!src.is_empty());
}

#[test]
fn table_lists_every_check_with_details() {
    let o = run(rtvirt(&["host", "audit"]));
    let t = String::from_utf8_lossy(&o.stdout);
    for id in ["preemption", "rt_throttling", "fair_server", "isolcpus", "thp", "irqbalance", "cpuset_partitions"] {
        assert!(t.contains(id), "{id} missing from\n{t}");
    }
    assert!(t.contains("tuned:") && t.contains("fix:") && t.contains("STATUS"), "{t}");
}

/// `net_dev=threaded` for every device but lo, as the audit lists them.
fn threaded_napi_files() -> String {
    let mut devs: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|d| d != "lo")
        .filter_map(|d| read(&format!("/sys/class/net/{d}/threaded")).map(|v| format!("{d}={v}")))
        .collect();
    devs.sort();
    none_if_empty(devs.join(","))
}

#[test]
fn the_other_checks_report_this_machines_values_too() {
    let napi_before = threaded_napi_files();
    let (a, _) = audit();
    let napi_after = threaded_napi_files();
    let found = |id: &str| check(&a, id)["found"].as_str().unwrap().to_string();
    let status = |id: &str| check(&a, id)["status"].as_str().unwrap().to_string();
    let words: Vec<String> = read("/proc/cmdline").unwrap().split_whitespace().map(str::to_string).collect();

    let poll = words.iter().any(|w| w == "rcu_nocb_poll" || w.starts_with("rcu_nocb_poll="));
    assert_eq!(found("rcu_nocb_poll"), if poll { "set" } else { "none" });
    assert_eq!(found("irqaffinity"), cmdline("irqaffinity").unwrap_or_else(|| "none".into()));
    // another engineer's test may add or remove a device meanwhile: one of the two readings
    let napi = found("threaded_napi");
    assert!(
        napi == napi_before || napi == napi_after || status("threaded_napi") == "skip",
        "{napi} vs {napi_before} / {napi_after}"
    );
    assert_eq!(found("smt"), read("/sys/devices/system/cpu/smt/control").unwrap_or_else(|| "none".into()));

    let isolated = read("/sys/devices/system/cpu/isolated").unwrap_or_default();
    if isolated.is_empty() {
        assert_eq!(
            (found("irq_affinity_isolated").as_str(), status("irq_affinity_isolated").as_str()),
            ("none", "skip")
        );
    } else {
        let iso = cpus(&isolated);
        for irq in
            std::fs::read_dir("/proc/irq").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        {
            let Some(eff) = read(&format!("/proc/irq/{irq}/effective_affinity_list")) else { continue };
            let has_handler = read(&format!("/sys/kernel/irq/{irq}/actions")).is_some_and(|s| !s.is_empty());
            if has_handler && !cpus(&eff).intersection(&iso).is_empty() {
                assert!(
                    found("irq_affinity_isolated").split(',').any(|h| h == format!("{irq}:{eff}")),
                    "IRQ {irq} on {eff}: {}",
                    found("irq_affinity_isolated")
                );
            }
        }
    }

    match std::fs::read_dir("/sys/module/kvm/parameters") {
        Err(_) => assert_eq!(status("kvm"), "skip"),
        Ok(_) => {
            for p in ["halt_poll_ns", "lapic_timer_advance_ns", "lapic_timer_advance", "kvmclock_periodic_sync"] {
                if let Some(v) = read(&format!("/sys/module/kvm/parameters/{p}")) {
                    assert!(
                        found("kvm").split(',').any(|kv| kv == format!("kvm.{p}={v}")),
                        "kvm.{p}={v} missing: {}",
                        found("kvm")
                    );
                }
            }
        }
    }

    // ksoftirqd/0's policy as util-linux chrt reports it
    let pid = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|p| read(&format!("/proc/{p}/comm")).as_deref() == Some("ksoftirqd/0"))
        .unwrap();
    let policy = chrt(pid).lines().find_map(|l| l.split("policy: SCHED_").nth(1).map(str::to_string)).unwrap();
    let kt = found("kthread_priorities");
    let mine = kt.split(',').find_map(|e| e.strip_prefix("ksoftirqd/0=")).unwrap();
    assert!(mine.starts_with(policy.trim()), "chrt says {policy}, audit {mine}");
}

/// `--plan`: the plan's needs become targets, each with this host's checks on it, the same
/// checks the audit lists; a scenario is planned here first (its needs the same as `rtvirt plan`'s).
#[test]
fn a_plans_needs_are_targets_with_this_hosts_checks() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/fp-guests.toml");
    let planned = run(rtvirt(&["plan", scenario, "--host", "stock", "--hard", "--format", "json"]));
    std::fs::write(&plan, &planned.stdout).unwrap();
    let needs: Value = serde_json::from_slice(&planned.stdout).unwrap();
    let needs = needs["needs"].as_array().unwrap().clone();
    assert!(needs.iter().any(|n| n["setting"] == "budget enforcement"), "{needs:?}");
    let o = run(rtvirt(&["host", "audit", "--plan", plan.to_str().unwrap(), "--format", "json"]));
    let a: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    schema_support::assert_valid("audit", &a);
    let targets = a["targets"].as_array().unwrap();
    assert_eq!(targets.len(), needs.len());
    for (t, n) in targets.iter().zip(&needs) {
        for key in ["guest", "setting", "value", "how"] {
            assert_eq!(t[key], n[key], "{key}");
        }
        assert!(!t["checks"].as_array().unwrap().is_empty(), "{t}");
        for c in t["checks"].as_array().unwrap() {
            let listed = check(&a, c["id"].as_str().unwrap());
            assert_eq!((&c["status"], &c["found"]), (&listed["status"], &listed["found"]));
        }
    }
    let hrtick = targets.iter().find(|t| t["setting"] == "budget enforcement").unwrap();
    assert_eq!(hrtick["checks"][0]["id"], "hrtick");
    let table = run(rtvirt(&["host", "audit", "--plan", plan.to_str().unwrap()]));
    assert!(text(&table).contains("What the plan needs to fit"), "{}", text(&table));
    // a scenario is planned for the named host first ($RTVIRT_HOST, as `rtvirt plan`): its needs
    let plc = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/plc_vran_monitor.toml");
    let settings = |v: &Value, key: &str| -> Vec<(Value, Value)> {
        v[key].as_array().unwrap().iter().map(|n| (n["guest"].clone(), n["setting"].clone())).collect()
    };
    for flags in [&["--host", "stock"][..], &["--host", "stock", "--hard"][..]] {
        let planned = run(rtvirt(&[&["plan", plc, "--format", "json"][..], flags].concat()));
        let needs: Value = serde_json::from_slice(&planned.stdout).unwrap();
        assert!(!settings(&needs, "needs").is_empty(), "plc_vran_monitor does not fit a stock host: {needs}");
        let file = dir.path().join("stock.json");
        std::fs::write(&file, &planned.stdout).unwrap();
        let o = run(rtvirt(&["host", "audit", "--plan", file.to_str().unwrap(), "--format", "json"]));
        let a: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(settings(&a, "targets"), settings(&needs, "needs"), "{flags:?}");
    }
    let planned = run(rtvirt(&["plan", plc, "--host", "stock", "--format", "json"]));
    let needs: Value = serde_json::from_slice(&planned.stdout).unwrap();
    let o = run(rtvirt(&["host", "audit", "--plan", plc, "--format", "json"]).env("RTVIRT_HOST", "stock"));
    let a: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(settings(&a, "targets"), settings(&needs, "needs"), "the scenario planned for $RTVIRT_HOST");
}

#[test]
fn the_deadline_period_limits_and_hrtick_are_this_machines() {
    let (a, _) = audit();
    let min = read("/proc/sys/kernel/sched_deadline_period_min_us").expect("kernel >= 6.8 here");
    let max = read("/proc/sys/kernel/sched_deadline_period_max_us").unwrap();
    assert_eq!(check(&a, "deadline_periods")["found"], format!("{min} us .. {max} us"));
    let features = debugfs(&["sched/features".to_string()]);
    let found = check(&a, "hrtick")["found"].as_str().unwrap().to_string();
    match features {
        Some(f) => assert!(f[0].split_whitespace().any(|x| x == found), "{found} not in {f:?}"),
        None => assert_eq!(found, "unknown: tick assumed"),
    }
}
