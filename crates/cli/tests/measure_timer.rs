//! `rtvirt measure timer` end to end: real threads, real sleeps, real files; only shapes asserted.

mod schema_support;
use std::process::Command;

fn rtvirt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    schema_support::assert_valid("results", &v);
    v
}

/// `measure timer` for 300 ms on CPU 1 in a container, with `extra` options; its results (one
/// such test at a time).
fn timer_in_a_container_on_cpu_1(extra: &[&str]) -> serde_json::Value {
    let _serial = rtvirt_testkit::host_lock();
    let args = ["measure", "timer", "--cpus", "1", "--duration", "300ms", "--in", "container", "--format", "json"];
    json(&rtvirt(&[&args[..], extra].concat()))
}

const KEYS: &[&str] = &["count", "min", "mean", "sd", "p50", "p90", "p99", "p999", "p9999", "max"];

#[test]
fn json_has_the_documented_shape_and_counts_every_period() {
    rtvirt_testkit::require_root!();
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("hist.txt");
    let out = rtvirt(&[
        "measure",
        "timer",
        "--cpus",
        "0-1",
        "--interval",
        "1ms",
        "--duration",
        "500ms",
        "--format",
        "json",
        "--histogram",
        hist.to_str().unwrap(),
    ]);
    let v = json(&out);
    assert_eq!(v["schema"], "rtvirt.results/v1");
    assert_eq!(v["kind"], "timer");
    assert_eq!(v["interval_ns"], 1_000_000);
    for k in KEYS {
        assert!(v["latency_ns"][k].is_number(), "latency_ns.{k}");
    }
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 2);
    for c in cpus {
        // 500 activations per CPU are due in 500 ms; a late wake-up still accounts every one.
        let n = c["latency_ns"]["count"].as_u64().unwrap();
        assert!((495..=500).contains(&n), "{c}");
        assert!(c["latency_ns"]["min"].as_u64().unwrap() > 0);
    }
    assert!(v["missed_periods"].is_u64());
    // Lossless buckets, overall and per CPU: the counts add up, and the per-CPU buckets merged
    // are the overall ones (what `rtvirt report` merges across runs).
    let buckets = |h: &serde_json::Value| -> std::collections::BTreeMap<u64, u64> {
        let mut m = std::collections::BTreeMap::new();
        for b in h.as_array().expect("histogram_ns is an array") {
            *m.entry(b[0].as_u64().unwrap()).or_default() += b[1].as_u64().unwrap();
        }
        m
    };
    let overall = buckets(&v["histogram_ns"]);
    assert_eq!(overall.values().sum::<u64>(), v["latency_ns"]["count"].as_u64().unwrap());
    let mut merged = std::collections::BTreeMap::new();
    for c in cpus {
        let b = buckets(&c["histogram_ns"]);
        assert_eq!(b.values().sum::<u64>(), c["latency_ns"]["count"].as_u64().unwrap());
        for (k, n) in b {
            *merged.entry(k).or_default() += n;
        }
    }
    assert_eq!(merged, overall);
    assert!(v["cpu_ns_per_wakeup"].as_f64().unwrap() >= v["cpu_ns_per_sample"].as_f64().unwrap());
    let env = &v["environment"];
    for k in ["kernel", "preemption", "cmdline", "clocksource", "rtvirt_version"] {
        assert!(env[k].is_string(), "environment.{k}");
    }
    assert_eq!(env["in"], "host");
    // The run held /dev/cpu_dma_latency at 0 (recorded while it was held).
    assert_eq!(env["cpu_dma_latency_us"], 0);
    let text = std::fs::read_to_string(&hist).unwrap();
    assert!(text.starts_with("# Histogram\n000000 "), "{}", &text[..100.min(text.len())]);
    let total = text.lines().find(|l| l.starts_with("# Total:")).unwrap();
    assert_eq!(total.split_whitespace().count(), 4, "{total}");
}

#[test]
fn table_shows_sd_and_p9999_and_flags_every_thin_percentile() {
    rtvirt_testkit::require_root!();
    // 300 samples: fewer than 10 beyond p99, p99.9 and p99.99 (flagged), enough beyond p90.
    let out = rtvirt(&["measure", "timer", "--cpus", "0", "--duration", "300ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(header, ["count", "min", "mean", "sd", "p50", "p90", "p99", "p99.9", "p99.99", "max"], "{text}");
    let row: Vec<&str> = text.lines().find(|l| l.starts_with("cpu 0")).unwrap().split_whitespace().skip(2).collect();
    let flagged: Vec<bool> = row.iter().map(|c| c.ends_with('*')).collect();
    assert_eq!(flagged, [false, false, false, false, false, false, true, true, true, false], "{text}");
    assert!(text.contains("* too few samples"), "{text}");
}

#[test]
fn interval_reports_stream_as_json_lines() {
    rtvirt_testkit::require_root!();
    let out = rtvirt(&[
        "measure",
        "timer",
        "--cpus",
        "0",
        "--duration",
        "600ms",
        "--interval-report",
        "200ms",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let intervals: Vec<_> = lines.iter().filter(|l| l["type"] == "interval").collect();
    assert_eq!(intervals.len(), 3);
    assert!(intervals
        .iter()
        .all(|i| i["count"].as_u64().unwrap() >= 150 && i["stalled_cpus"].as_array().unwrap().is_empty()));
    assert_eq!(lines.last().unwrap()["kind"], "timer");
}

#[test]
fn deadline_policy_runs_and_restores_the_cpuset_setup() {
    rtvirt_testkit::require_root!();
    let _serial = rtvirt_testkit::host_lock();
    let lb = "/sys/fs/cgroup/cpuset/cpuset.sched_load_balance";
    let before = std::fs::read_to_string(lb).ok();
    let v = json(&rtvirt(&[
        "measure",
        "timer",
        "--cpus",
        "1",
        "--policy",
        "deadline",
        "--duration",
        "300ms",
        "--format",
        "json",
    ]));
    assert_eq!(v["policy"], "deadline");
    assert_eq!(v["reservation"]["period_ns"], 1_000_000);
    assert!(v["latency_ns"]["count"].as_u64().unwrap() >= 290);
    assert_eq!(std::fs::read_to_string(lb).ok(), before);
}

#[test]
fn priority_99_runs_with_force() {
    rtvirt_testkit::require_root!();
    let v = json(&rtvirt(&[
        "measure",
        "timer",
        "--cpus",
        "0",
        "--priority",
        "99",
        "--force",
        "--duration",
        "200ms",
        "--format",
        "json",
    ]));
    assert_eq!(v["priority"], 99);
    assert!(v["latency_ns"]["count"].as_u64().unwrap() >= 190);
}

#[test]
fn bad_input_is_exit_2_with_the_option_named() {
    for (args, needle) in [
        (vec!["--cpus", "999"], "--cpus"),
        (vec!["--priority", "99"], "--force"),
        (vec!["--interval", "5us"], "--interval"),
        (vec!["--policy", "edf"], "policy"),
        // a bare number is seconds, as cyclictest -D; an unknown unit is refused
        (vec!["--duration", "10parsecs"], "unit"),
        (vec!["--load", "disk"], "load kind"),
    ] {
        let mut a = vec!["measure", "timer"];
        a.extend(args);
        let out = rtvirt(&a);
        assert_eq!(out.status.code(), Some(2), "{a:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{a:?}: {err}");
    }
}

#[test]
fn in_container_records_it_and_leaves_nothing_behind() {
    rtvirt_testkit::require_root!();
    let v = timer_in_a_container_on_cpu_1(&["--load", "cpu@1"]);
    assert_eq!(v["environment"]["in"], "container");
    let c = &v["environment"]["container"];
    assert_eq!(c["cpuset"], "1");
    let load = &v["environment"]["load"][0];
    assert_eq!((load["kind"].as_str(), load["cpus_ran_on"].as_str()), (Some("cpu"), Some("1")));
    assert!(load["ops"].as_u64().unwrap() > 0);
    let bridge = c["bridge"].as_str().unwrap();
    assert!(!std::path::Path::new("/sys/class/net").join(bridge).exists());
    assert!(!std::path::Path::new("/run/netns").join(c["netns"].as_str().unwrap()).exists());
    for d in c["cgroups"].as_array().unwrap() {
        assert!(!std::path::Path::new(d.as_str().unwrap()).exists());
    }
}

#[test]
fn ctrl_c_stops_early_and_removes_the_container() {
    rtvirt_testkit::require_root!();
    let _serial = rtvirt_testkit::host_lock();
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["measure", "timer", "--cpus", "0", "--duration", "30s", "--in", "container", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Keep draining stderr (a closed pipe would break the processes writing to it).
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let line = rx.recv().unwrap();
    assert!(line.contains("bridge"), "{line}");
    let bridge = line.split("bridge ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    assert!(std::path::Path::new("/sys/class/net").join(&bridge).exists());
    std::thread::sleep(std::time::Duration::from_millis(700));
    let t0 = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc_kill(child.id() as i32, 2) };
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "stopped early");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["latency_ns"]["count"].as_u64().unwrap() > 0);
    assert!(!std::path::Path::new("/sys/class/net").join(&bridge).exists(), "bridge {bridge} removed");
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn without_root_every_measurement_is_a_clear_exit_2() {
    rtvirt_testkit::require_root!();
    rtvirt_testkit::require_tool!("/usr/bin/setpriv");
    for args in [
        vec!["measure", "timer", "--duration", "1s"],
        vec!["measure", "timer", "--duration", "1s", "--in", "container"],
        vec!["measure", "tasks", "--duration", "1s"],
    ] {
        let out = Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", env!("CARGO_BIN_EXE_rtvirt")])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("root"), "{args:?}: {err}");
    }
}

#[test]
fn deadline_policy_inside_a_container() {
    rtvirt_testkit::require_root!();
    let v = timer_in_a_container_on_cpu_1(&["--policy", "deadline"]);
    assert_eq!((v["environment"]["in"].as_str(), v["policy"].as_str()), (Some("container"), Some("deadline")));
    assert!(v["latency_ns"]["count"].as_u64().unwrap() >= 290);
    // The per-CPU exclusive cpusets lived inside the container's cpuset, which is gone.
    for d in v["environment"]["container"]["cgroups"].as_array().unwrap() {
        assert!(!std::path::Path::new(d.as_str().unwrap()).exists(), "{d}");
    }
}

/// An output path that cannot be written is refused before measuring (at once, exit 2); a
/// histogram that cannot be written after measuring (/dev/full) loses nothing: the results and
/// the histogram are on stdout, and the exit code is 2.
#[test]
fn a_bad_histogram_path_never_loses_a_measurement() {
    let t0 = std::time::Instant::now();
    let o = rtvirt(&["measure", "timer", "--duration", "20s", "--histogram", "/nonexistent/h.txt"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--histogram") && err.contains("/nonexistent/h.txt"), "{err}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(5), "refused after {:?}", t0.elapsed());
    rtvirt_testkit::require_root!();
    let args = ["measure", "timer", "--cpus", "0", "--duration", "300ms", "--histogram", "/dev/full"];
    let o = rtvirt(&args);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write histogram /dev/full"), "{err}");
    assert!(out.contains("timer latency") && out.contains("# Histogram"), "{out}");
    let o = rtvirt(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the results, as JSON, on stdout");
    assert!(v["histogram_ns"].as_array().is_some_and(|b| !b.is_empty()), "{v}");
}
