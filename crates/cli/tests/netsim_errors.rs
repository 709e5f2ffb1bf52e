//! `rtvirt simulate` with an inconsistent `[net]` topology: exit code 2 and a message naming
//! the file, line and field.

use std::path::Path;
use std::process::Command;

fn simulate(toml: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, toml).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["simulate", path.to_str().unwrap(), "--duration", "10ms"])
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn seeds1() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seeds1_threaded_hr.toml"))
        .unwrap()
}

fn seeds2() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/seeds2_rtca64_light.toml"))
        .unwrap()
}

fn assert_located(code: i32, err: &str, field: &str, words: &str) {
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.toml:line "), "names file and line: {err}");
    assert!(err.contains(&format!("field `{field}`")), "names field {field}: {err}");
    assert!(err.contains(words), "says {words:?}: {err}");
}

#[test]
fn flow_to_vm_without_nic_path() {
    let s = seeds1().replacen("nic = \"hr0\"\n", "", 1);
    let (code, err) = simulate(&s);
    assert_located(code, &err, "net.flow[1].to", "no NIC path");
}

#[test]
fn irq_affinity_to_missing_core() {
    let s = seeds1().replacen("irq_cores = [1]", "irq_cores = [7]", 1);
    let (code, err) = simulate(&s);
    assert_located(code, &err, "net.nic[2].irq_cores[0]", "core 7 does not exist");
}

#[test]
fn batch_size_zero() {
    let s = seeds1().replacen(
        "vhost = { prio = 48, cores = [0, 1] }",
        "vhost = { prio = 48, cores = [0, 1], batch = 0 }",
        1,
    );
    let (code, err) = simulate(&s);
    assert_located(code, &err, "net.vm[0].vhost.batch", "0: expected a whole number");
    let s = seeds2().replacen("batch = 64", "batch = 0", 1);
    let (code, err) = simulate(&s);
    assert_located(code, &err, "net.xen.queue[0].batch", "0: expected a whole number");
}

#[test]
fn priority_class_without_queue() {
    let s = seeds2().replacen("priority = 4\nrole = \"echo\"", "priority = 9\nrole = \"echo\"", 1);
    let (code, err) = simulate(&s);
    assert_located(code, &err, "net.xen.domain[1].priority", "priority class 9 has no [[net.xen.queue]]");
}

#[test]
fn unknown_field_and_bad_mode() {
    let (code, err) = simulate(&seeds1().replacen("rtnet_prio = 47", "rtnet_prio = 47\nsoftirq_mode = 1", 1));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("softirq_mode"), "{err}");
    let (code, err) = simulate(&seeds1().replacen("irq = \"threaded\"", "irq = \"polled\"", 1));
    assert_located(code, &err, "net.irq", "expected \"hardirq\"");
}

fn simulate_for(toml: &str, duration: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, toml).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["simulate", path.to_str().unwrap(), "--duration", duration])
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// One rule for KVM and Xen: the duration includes the warm-up, both are bounded, and a run that
/// would measure nothing is an error.
#[test]
fn warmup_and_duration_are_bounded_and_must_leave_something_to_measure() {
    let (code, err) = simulate(&seeds2().replace("warmup = \"300ms\"", "warmup = \"18446744073709551615ns\""));
    assert_located(code, &err, "net.warmup", "expected at most 3600s");
    let (code, err) = simulate(&seeds2().replace("period = \"10ms\"", "period = \"120min\""));
    assert_located(code, &err, "net.xen.period", "expected at most 3600s");
    let (code, err) = simulate(&seeds1().replace("duration = \"2s\"", "duration = \"400ms\""));
    assert_located(code, &err, "net.duration", "nothing would be measured");
    // the command line's duration follows the same rule (the docs' old `--duration 300ms`)
    let (code, err) = simulate_for(&seeds1(), "300ms");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("field `--duration`: 300ms with a warm-up of 500ms: nothing would be measured"), "{err}");
    let (code, err) = simulate_for(&seeds2(), "305ms");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at least one ping period of 10ms"), "{err}");
    // Xen: --duration bounds the whole run, warm-up included
    let (code, err) = simulate_for(&seeds2(), "400ms");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("simulated 400ms"), "{err}");
}
