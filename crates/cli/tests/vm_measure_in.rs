//! `rtvirt measure ... --in vm`: the measure commands' hook into the guest runner.

mod vm_support;
use vm_support::{assert_nothing_left, run};

#[test]
fn measure_timer_in_vm_runs_the_matrix_of_the_given_guest_kernel_and_host_loads() {
    let (code, out, err) = run(&["measure", "timer", "--in", "vm", "--guest-kernel", "nrt", "--load", "host:cpu:1", "--duration", "1s", "--interval", "2ms", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "one kernel x (no load, host cpu load)");
    assert_eq!(rows[0]["label"], "vm/nrt/none");
    assert_eq!(rows[1]["label"], "vm/nrt/cpu:1");
    assert_eq!(rows[1]["environment"]["load"][0]["kind"], "cpu");
    for r in rows {
        assert_eq!(r["environment"]["in"], "vm");
        // the guest ran the same measurement: 1 s at 2 ms = 500 samples per guest CPU
        assert_eq!(r["latency_ns"]["count"], 500, "{}", r["latency_ns"]);
    }
    assert!(err.contains("rtvirt measure timer --duration 1s --interval 2ms"), "{err}");
    assert_nothing_left("rtvirt-guest");
}

#[test]
fn net_in_vm_needs_one_guest_kernel() {
    let (code, _, err) = run(&["measure", "net", "client", "--in", "vm", "--duration", "1s"]);
    assert_eq!(code, 2);
    assert!(err.contains("--guest-kernel rt or --guest-kernel nrt"), "{err}");
    let (code, _, err) = run(&["measure", "timer", "--in", "vm", "--guest-kernel", "xen"]);
    assert_eq!(code, 2);
    assert!(err.contains("--guest-kernel") && err.contains("xen"), "{err}");
}
