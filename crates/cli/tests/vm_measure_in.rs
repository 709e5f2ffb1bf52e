//! `rtvirt measure ... --in vm`: the measure commands' hook into the guest runner.

mod vm_support;
use vm_support::{assert_nothing_left, output, rtvirt, run};

/// Run an `--in vm` command; (exit code, stdout, stderr, the guest name of that process).
fn run_in_vm(args: &[&str]) -> (i32, String, String, String) {
    let child = rtvirt().args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let name = format!("rtvirt-measure-{}", child.id());
    let (code, out, err) = output(child.wait_with_output().unwrap());
    (code, out, err, name)
}

#[test]
fn measure_timer_in_vm_runs_the_matrix_of_the_given_guest_kernel_and_host_loads() {
    let (code, out, err, name) = run_in_vm(&["measure", "timer", "--in", "vm", "--guest-kernel", "nrt", "--load", "host:cpu:1", "--duration", "1s", "--interval", "2ms", "--format", "json"]);
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
    assert!(err.contains(&format!("booting {name} ")), "{err}");
    assert_nothing_left(&name);
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

#[test]
fn measure_net_client_in_vm_reaches_a_server_in_the_guest_over_tap_and_bridge() {
    let (code, out, err, name) = run_in_vm(&["measure", "net", "client", "--in", "vm", "--guest-kernel", "nrt", "--duration", "2s", "--arrivals", "uniform:1ms-5ms", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["kind"], "net");
    assert!(r["rtt_ns"]["count"].as_u64().unwrap() > 0, "{out}");
    let env = &r["environment"];
    assert_eq!(env["in"], "vm");
    assert_eq!(env["accel"], "tcg", "this machine's KVM cannot boot guests: {err}");
    assert!(env["warning"].as_str().unwrap().contains("NOT representative"));
    assert!(env["guest_ip"].as_str().unwrap().starts_with("10.213."), "{env}");
    assert!(env.get("vhost_net").is_some(), "{env}");
    // the extra client options reached the host's client
    assert!(r["arrivals"].as_str().unwrap().contains("uniform"), "{}", r["arrivals"]);
    assert!(err.contains("virtio-net") && err.contains("guest serving at 10.213."), "{err}");
    assert!(err.contains(&format!("booting {name} ")), "{err}");
    assert_nothing_left(&name);
}
