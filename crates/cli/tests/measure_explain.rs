//! `rtvirt measure timer --explain` end to end, as root under the host lock: the results carry a
//! valid `explain` section, the table and the Perfetto trace show it, nothing stays enabled or
//! mounted, and the tracing instance of a run killed with SIGKILL is removed by `rtvirt host
//! revert` and by the next run.

mod schema_support;
mod tracefs_support;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tracefs_support::rtvirt_instances;

fn rtvirt(state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .env("RTVIRT_STATE_DIR", state)
        .args(args)
        .output()
        .expect("run rtvirt")
}

fn instance_dir(pid: u32) -> Option<PathBuf> {
    rtvirt_os::tracefs::mounted_at().map(|root| root.join("instances").join(format!("rtvirt-{pid}")))
}

#[test]
fn explain_json_table_and_trace_and_nothing_left_enabled() {
    rtvirt_testkit::require_root!();
    let _one = rtvirt_testkit::host_lock();
    let mounted_before = rtvirt_os::tracefs::mounted_at();
    let state = tempfile::tempdir().unwrap();
    let trace = state.path().join("late.json");
    let args = ["measure", "timer", "--cpus", "1", "--duration", "500ms", "--explain-above", "30us", "--trace"];
    let mut json_args = args.to_vec();
    json_args.extend([trace.to_str().unwrap(), "--format", "json"]);
    let out = rtvirt(state.path(), &json_args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("results", &v);
    let e = &v["explain"];
    assert_eq!(e["threshold_ns"], 30_000);
    let present: Vec<&str> = e["events_present"].as_array().unwrap().iter().filter_map(|x| x.as_str()).collect();
    assert!(present.contains(&"sched/sched_switch") && present.contains(&"timer/hrtimer_expire_entry"), "{present:?}");
    let absent: Vec<&str> = e["events_absent"].as_array().unwrap().iter().filter_map(|x| x.as_str()).collect();
    let syscall_events = |list: &[&str]| list.iter().filter(|x| x.starts_with("syscalls/")).count();
    assert_eq!(syscall_events(&present) + syscall_events(&absent), 0, "syscalls only with --explain-syscalls");
    let limits = e["limitations"].to_string();
    if absent.contains(&"preemptirq/irq_disable") {
        assert!(limits.contains("no preemptirq events"), "{limits}");
    }
    for s in e["samples"].as_array().unwrap() {
        let sum: u64 = s["causes"].as_array().unwrap().iter().map(|c| c["duration_ns"].as_u64().unwrap()).sum();
        assert_eq!(sum, s["latency_ns"].as_u64().unwrap(), "{s}");
        assert!(s["latency_ns"].as_u64().unwrap() > 30_000);
    }
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    assert!(
        events.iter().any(|x| x["name"] == "process_name" && x["args"]["name"] == "cores"),
        "simulate's track layout"
    );
    assert!(events.iter().any(|x| x["args"]["name"] == "thread rtvirt-timer1"));
    let late = events.iter().filter(|x| x["name"] == "late sample").count();
    assert_eq!(late, e["samples"].as_array().unwrap().len(), "one marker per explained sample");
    let table = rtvirt(state.path(), &["measure", "timer", "--cpus", "1", "--duration", "300ms", "--explain"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success() && text.contains("late wake-ups explained:"), "{text}");
    let with_syscalls =
        ["measure", "timer", "--cpus", "1", "--duration", "300ms", "--explain-syscalls", "--format", "json"];
    let out = rtvirt(state.path(), &with_syscalls);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = |key: &str| {
        v["explain"][key].as_array().unwrap().iter().filter_map(|x| x.as_str()).map(String::from).collect::<Vec<_>>()
    };
    let recorded = [listed("events_present"), listed("events_absent")].concat();
    assert!(
        recorded.iter().any(|x| x == "syscalls/sys_exit_clock_nanosleep"),
        "implies --explain, asks for them: {recorded:?}"
    );
    assert!(rtvirt_instances().is_empty(), "left: {:?}", rtvirt_instances());
    assert_eq!(rtvirt_os::tracefs::mounted_at(), mounted_before, "tracefs mounted as before");
}

/// Start an explaining run, wait for its instance, kill it with SIGKILL; the instance stays.
fn killed_run(state: &Path) -> PathBuf {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .env("RTVIRT_STATE_DIR", state)
        .args(["measure", "timer", "--cpus", "1", "--duration", "20s", "--explain"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let dir = loop {
        if let Some(d) = instance_dir(child.id()).filter(|d| d.is_dir()) {
            break d;
        }
        assert!(Instant::now() < deadline, "no instance appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    assert!(dir.is_dir(), "a killed run cannot remove its instance itself");
    dir
}

#[test]
fn a_killed_runs_instance_is_removed_by_host_revert_and_by_the_next_run() {
    rtvirt_testkit::require_root!();
    let _one = rtvirt_testkit::host_lock();
    let mounted_before = rtvirt_os::tracefs::mounted_at();
    let state = tempfile::tempdir().unwrap();
    let dir = killed_run(state.path());
    let out = rtvirt(state.path(), &["host", "revert", "--state-dir", state.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.exists(), "host revert removed {}", dir.display());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("tracing instance"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let dir = killed_run(state.path());
    let next = rtvirt(state.path(), &["measure", "timer", "--cpus", "1", "--duration", "200ms", "--explain"]);
    assert!(next.status.success(), "{}", String::from_utf8_lossy(&next.stderr));
    assert!(!dir.exists(), "the next run removed {}", dir.display());
    assert!(rtvirt_instances().is_empty(), "left: {:?}", rtvirt_instances());
    assert_eq!(rtvirt_os::tracefs::mounted_at(), mounted_before, "tracefs mounted as before");
    assert_eq!(std::fs::read_dir(state.path().join("tracing")).unwrap().count(), 0, "no record left");
}

/// `--break` with a tiny LAT: the first wake-up above it stops a 20-second run at once (a few of
/// its 20,000 samples), tracing stops there and the whole trace is in the named file as text,
/// scheduler events of the measured CPU included; nothing stays enabled.
#[test]
fn break_stops_the_run_and_keeps_the_whole_trace() {
    rtvirt_testkit::require_root!();
    let _one = rtvirt_testkit::host_lock();
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("late.trace");
    let args = ["measure", "timer", "--cpus", "1", "--duration", "20s", "--break", "1us", "--break-trace"];
    let mut args = args.to_vec();
    args.extend([file.to_str().unwrap(), "--format", "json"]);
    let out = rtvirt(state.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("results", &v);
    let e = &v["explain"];
    let broke = e["stopped_by_break_ns"].as_u64().expect("a wake-up above 1 us broke the run");
    assert!(broke > 1_000);
    let samples = v["latency_ns"]["count"].as_u64().unwrap();
    assert!(samples < 20_000 / 2, "stopped early: {samples} samples of 20000");
    assert!(
        e["samples"].as_array().unwrap().iter().any(|s| s["latency_ns"] == broke),
        "the breaking sample is explained"
    );
    assert_eq!(e["break_trace_file"], file.to_str().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    let events = text.lines().filter(|l| !l.starts_with('#')).count() as u64;
    assert_eq!(Some(events), e["break_trace_events"].as_u64());
    assert!(
        text.lines().any(|l| l.contains("[001]") && l.contains(" sched_switch: prev_comm=")),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(rtvirt_instances().is_empty(), "left: {:?}", rtvirt_instances());
    // The table names the file; --break-trace needs --break.
    let bad = rtvirt(state.path(), &["measure", "timer", "--break-trace", "x.trace"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// `rtvirt measure timer ARGS` in a private mount namespace prepared by `setup` (shell), as root.
fn in_mount_namespace(state: &Path, setup: &str, args: &str) -> std::process::Output {
    let script = format!("{setup} && exec {} measure timer {args}", env!("CARGO_BIN_EXE_rtvirt"));
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("RTVIRT_STATE_DIR", state)
        .output()
        .expect("run unshare")
}

/// tracefs locked down (mounted read-only, as /sys in many containers) or missing (nothing to
/// mount it on, or its mount hidden under another): the measurement runs with the exit code it has without --explain, the results say
/// why nothing was explained, and no instance or journal record is left. The mounts live in a
/// private mount namespace: the host's tracefs is untouched.
#[test]
fn tracefs_read_only_or_missing_the_run_goes_on_and_says_why() {
    rtvirt_testkit::require_root!();
    let _one = rtvirt_testkit::host_lock();
    let cases = [
        // (tracefs may already be mounted on the host: then only the namespace's copy is remounted)
        (
            "(mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing) && \
             mount -o remount,bind,ro /sys/kernel/tracing",
            "Read-only",
        ),
        ("mount -t tmpfs -o ro,size=64k none /sys/kernel", "cannot mount tracefs"),
        // tracefs mounted but hidden under a later mount: listed in /proc/self/mounts, not there
        (
            "(mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing) && \
             mount -t tmpfs -o ro,size=64k none /sys/kernel",
            "cannot mount tracefs",
        ),
    ];
    for (setup, why) in cases {
        // a host with debugfs mounted (systemd mounts it) has tracefs under it too: gone in the
        // namespace, or the run would trace through it
        let setup = format!("(umount -l /sys/kernel/debug 2>/dev/null; true) && {setup}");
        let setup = setup.as_str();
        let state = tempfile::tempdir().unwrap();
        let plain = in_mount_namespace(state.path(), setup, "--cpus 1 --duration 200ms --format json");
        let explained = in_mount_namespace(state.path(), setup, "--cpus 1 --duration 200ms --explain --format json");
        assert_eq!(explained.status.code(), plain.status.code(), "{}", String::from_utf8_lossy(&explained.stderr));
        assert!(explained.status.success(), "{}", String::from_utf8_lossy(&explained.stderr));
        let v: serde_json::Value = serde_json::from_slice(&explained.stdout).unwrap();
        schema_support::assert_valid("results", &v);
        assert!(v["latency_ns"]["count"].as_u64().unwrap() > 50, "measured anyway");
        let limits = v["explain"]["limitations"].to_string();
        assert!(limits.contains("kernel tracing unavailable") && limits.contains(why), "{setup}: {limits}");
        assert_eq!(v["explain"]["samples"].as_array().unwrap().len(), 0);
        let records = std::fs::read_dir(state.path().join("tracing")).map(|d| d.count()).unwrap_or(0);
        assert_eq!(records, 0, "no journal record left");
    }
    assert!(rtvirt_instances().is_empty(), "left: {:?}", rtvirt_instances());
}
