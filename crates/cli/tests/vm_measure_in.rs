//! `rtvirt measure ... --in vm`: the measure commands' hook into the guest runner.

mod schema_support;
mod vm_support;
use vm_support::{assert_nothing_left, rtvirt, run, Running, BOUND};

/// Run an `--in vm` command; (exit code, stdout, stderr, the guest name of that process).
fn run_in_vm(args: &[&str]) -> (i32, String, String, String) {
    let child = Running::spawn(rtvirt().args(args));
    let name = format!("rtvirt-measure-{}", child.id());
    let (code, out, err) = child.wait(BOUND);
    (code, out, err, name)
}

/// `measure timer --in vm` in an `nrt` guest for `duration`, with `options`, results as JSON.
fn timer_in_nrt_guest(duration: &str, options: &[&str]) -> (i32, String, String, String) {
    let command =
        ["measure", "timer", "--in", "vm", "--guest-kernel", "nrt", "--duration", duration, "--format", "json"];
    run_in_vm(&[&command[..], options].concat())
}

#[test]
fn measure_timer_in_vm_runs_the_matrix_of_the_given_guest_kernel_and_host_loads() {
    let (code, out, err, name) = run_in_vm(&[
        "measure",
        "timer",
        "--in",
        "vm",
        "--guest-kernel",
        "nrt",
        "--load",
        "host:cpu:1",
        "--duration",
        "1s",
        "--interval",
        "2ms",
        "--format",
        "json",
    ]);
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
    let (code, out, err, name) = run_in_vm(&[
        "measure",
        "net",
        "client",
        "--in",
        "vm",
        "--guest-kernel",
        "nrt",
        "--duration",
        "2s",
        "--arrivals",
        "uniform:1ms-5ms",
        "--format",
        "json",
    ]);
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

/// `measure net client --in vm --explain --trace`: each round trip to the server in a real QEMU
/// guest is split at the guest's tap into the host's segments (`host_receive` up to the request's
/// transmit into the tap, `guest` until the response comes back through it, `host_send`); the
/// server in the guest explains its side with its own trace, and each request it recorded is
/// joined by sequence number: `guest` becomes `virtualization`, `guest_receive`, `guest_server`
/// and `guest_send`, all adding up to the round trip; what the host cannot see under TCG and what
/// could not be joined is said; the Perfetto trace holds the host's and the guest's cores.
#[test]
fn measure_net_client_in_vm_explain_splits_each_round_trip_with_the_guests_own_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("net-vm.json");
    let (code, out, err, name) = run_in_vm(&[
        "measure",
        "net",
        "client",
        "--in",
        "vm",
        "--guest-kernel",
        "nrt",
        "--duration",
        "2s",
        "--arrivals",
        "uniform:2ms-5ms",
        "--explain",
        "--trace",
        trace.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    schema_support::assert_valid("results", &r);
    let e = &r["explain"];
    let responses = r["rtt_ns"]["count"].as_u64().unwrap();
    let summary = |name: &str| e["segments"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned();
    let guest = summary("guest").unwrap_or_else(|| panic!("no guest segment: {e}"));
    assert!(summary("server").is_none(), "the server is not on this host: {e}");
    assert!(
        guest["requests"].as_u64().unwrap() * 2 >= responses,
        "most round trips are joined through the tap ({} of {responses}): {}",
        guest["requests"],
        e["limitations"]
    );
    let limits = e["limitations"].to_string();
    assert!(limits.contains("went to a guest through its tap") && limits.contains("kvm_*"), "{limits}");
    assert!(limits.contains("were joined by sequence number to the guest server's own trace"), "{limits}");
    assert!(limits.contains("clock check of the joins"), "{limits}");
    assert_eq!(e["guest_clock"]["method"], "serial handshake", "{e}");
    let present = e["events_present"].to_string();
    // the guest's kernel (6.1) has no sk_data_ready: its server also traces the packets its
    // receives free, and where virtio-net's driver is handed each response
    for event in ["net/net_dev_xmit", "skb/consume_skb", "net/net_dev_start_xmit"] {
        assert!(present.contains(&format!("\"guest:{event}\"")), "{event}: {present}");
    }
    let samples = e["samples"].as_array().unwrap();
    let names = |s: &serde_json::Value| -> Vec<String> {
        s["segments"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap().to_string()).collect()
    };
    let (mut through_tap, mut split) = (0, 0);
    for s in samples {
        let segments = s["segments"].as_array().unwrap();
        let total: u64 = segments.iter().map(|x| x["duration_ns"].as_u64().unwrap()).sum();
        assert_eq!(total, s["latency_ns"].as_u64().unwrap(), "the segments add up to the round trip: {s}");
        let n = names(s);
        through_tap += n.iter().any(|x| x == "guest" || x == "virtualization") as usize;
        if n.iter().any(|x| x == "virtualization") {
            split += 1;
            let expected = [
                "send_lag",
                "client_send",
                "host_receive",
                "virtualization",
                "guest_receive",
                "guest_server",
                "guest_send",
                "host_send",
                "client_receive",
            ];
            assert_eq!(n, expected, "{s}");
            assert!(segments[3]["via"].to_string().contains("rtvtap"), "{s}");
            assert!(segments[4]["via"].to_string().contains("guest: "), "the guest's own milestones: {s}");
            assert!(segments[6]["via"].to_string().contains("net_dev_start_xmit eth0"), "ends at the driver: {s}");
        }
    }
    // the rest is said: no guest record, or a milestone the guest's trace lacks (docs/measure.md;
    // 535 of 535 were joined in a 3 s run here)
    assert!(
        split > 0 && split * 4 >= through_tap * 3,
        "requests joined to the guest's records ({split} of {through_tap}): {limits}"
    );
    for name in ["virtualization", "guest_receive", "guest_server", "guest_send"] {
        let row = summary(name).unwrap_or_else(|| panic!("no {name} row: {}", e["segments"]));
        assert_eq!(row["requests"].as_u64().unwrap(), split as u64, "{row}");
    }
    let t = json(&std::fs::read_to_string(&trace).unwrap());
    let events = t["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|x| x["name"] == "guest_server"), "the guest's slices in the trace");
    assert!(events.iter().any(|x| x["args"]["name"] == "guest cores"), "the guest's track group");
    assert_nothing_left(&name);
}

/// `--in vm --break`: the guest stops at its first wake-up above LAT and keeps the whole trace
/// there; the file comes back behind the results and is written to `--break-trace` on the host,
/// which the results then name; the whole guest trace as text, the breaking CPU's scheduler
/// events included.
#[test]
fn measure_timer_in_vm_break_brings_the_guests_whole_trace_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("guest-late.trace");
    let (code, out, err, name) =
        timer_in_nrt_guest("20s", &["--break", "1us", "--break-trace", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let rows = json(&out);
    schema_support::assert_valid("results", &rows[0]);
    let e = &rows[0]["explain"];
    assert!(e["stopped_by_break_ns"].as_u64().expect("a TCG guest breaks at 1 us") > 1_000, "{e}");
    assert!(rows[0]["latency_ns"]["count"].as_u64().unwrap() < 20_000 / 2, "stopped early");
    assert_eq!(e["break_trace_file"], file.to_str().unwrap(), "the results name the host's copy");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}: {err}"));
    let events = text.lines().filter(|l| !l.starts_with('#')).count() as u64;
    assert_eq!(Some(events), e["break_trace_events"].as_u64(), "every event the guest kept came back");
    assert!(text.lines().any(|l| l.contains(" sched_switch: prev_comm=")), "{}", &text[..text.len().min(2000)]);
    assert!(err.contains(&format!("vm: wrote {}", file.display())), "{err}");
    assert_nothing_left(&name);
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn measure_tasks_in_vm_carries_scenario_and_plan_into_a_guest_with_one_vcpu_per_planned_core() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/default.toml");
    let (code, plan, err) = run(&["plan", scenario, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    // the user's plan puts vm3 on core 1: the guest needs two vCPUs
    let mut plan = json(&plan);
    assert_eq!(plan["guests"][2]["name"], "vm3");
    plan["guests"][2]["core"] = 1.into();
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let (code, out, err, name) = run_in_vm(&[
        "measure",
        "tasks",
        scenario,
        "--plan",
        plan_file.to_str().unwrap(),
        "--in",
        "vm",
        "--guest-kernel",
        "nrt",
        "--duration",
        "2s",
        "--format",
        "json",
    ]);
    assert!(code == 0 || code == 1, "{err}");
    let rows = json(&out);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!((r["kind"].as_str(), r["label"].as_str()), (Some("tasks"), Some("vm/nrt/none")));
    assert_eq!(r["environment"]["in"], "vm");
    assert_eq!(r["environment"]["vcpus"], 2);
    assert!(r["environment"]["kernel"].as_str().unwrap().contains("cloud-amd64"), "measured in the guest");
    assert_eq!(r["tasks"].as_array().unwrap().len(), 15);
    let cores: Vec<(String, u64)> = r["guests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap().to_string(), g["core"].as_u64().unwrap()))
        .collect();
    assert_eq!(cores, [("vm1".to_string(), 0), ("vm2".into(), 0), ("vm3".into(), 1)], "the plan's cores in the guest");
    assert!(r["tasks"].as_array().unwrap().iter().all(|t| t["jobs"].as_u64().unwrap() > 0), "{}", r["tasks"]);
    assert!(err.contains("rtvirt measure tasks files/scenario.toml --plan files/plan.json --duration 2s"), "{err}");
    // the array is one input per element for `rtvirt report`
    let file = dir.path().join("tasks-in-vm.json");
    std::fs::write(&file, &out).unwrap();
    let (code, md, err) = run(&["report", file.to_str().unwrap(), "--format", "md", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("vm/nrt/none") && md.contains("vm3"), "{md}");
    assert_nothing_left(&name);
}

#[test]
fn measure_timer_in_vm_keeps_interval_reports_and_the_report_draws_them() {
    let (code, out, err, name) = run_in_vm(&[
        "measure",
        "timer",
        "--in",
        "vm",
        "--guest-kernel",
        "rt",
        "--duration",
        "2s",
        "--interval-report",
        "500ms",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows = json(&out);
    let r = &rows.as_array().unwrap()[0];
    let intervals = r["intervals"].as_array().unwrap_or_else(|| panic!("no intervals: {r}"));
    assert!(intervals.len() >= 3, "{intervals:?}");
    assert!(
        intervals.iter().all(|i| i["type"] == "interval" && i["cpus"][0]["max_ns"].as_u64().is_some()),
        "{intervals:?}"
    );
    assert!(err.contains("job (bound 122s)"), "the job bound follows --duration: {err}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("timer-in-vm.json");
    std::fs::write(&file, &out).unwrap();
    let html = dir.path().join("r.html");
    let (code, _, err) = run(&["report", file.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains("data-chart=\"timeseries\"") && html.contains("vm/rt/none"),
        "per-interval maxima of the guest drawn"
    );
    assert_nothing_left(&name);
}

/// `rtvirt measure net server --in vm` in an nrt guest, started; the process and its guest's name.
fn net_server_in_vm(listen: &str, duration: &str, rest: &[&str]) -> (Running, String) {
    let args = ["measure", "net", "server", "--in", "vm", "--guest-kernel", "nrt", "--listen", listen];
    let server = Running::spawn(rtvirt().args(args).args(["--duration", duration]).args(rest));
    let name = format!("rtvirt-measure-{}", server.id());
    (server, name)
}

#[test]
fn measure_net_server_in_vm_serves_from_a_guest_until_its_duration_ends() {
    let (mut server, name) = net_server_in_vm("127.0.0.1:9100", "10s", &["--format", "json"]);
    // "listening on 10.213.N.2:9100 (udp) in guest ..." (a status line: stderr)
    let first = server.stderr_line("listening on");
    let mut stdout = server.child.stdout.take().unwrap();
    let addr = first
        .strip_prefix("listening on ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{first}"));
    assert!(addr.starts_with("10.213.") && addr.ends_with(":9100"), "{first}");
    let (code, client, err) = run(&[
        "measure",
        "net",
        "client",
        "--connect",
        addr,
        "--duration",
        "2s",
        "--arrivals",
        "fixed:200",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let responses = json(&client)["responses"].as_u64().unwrap();
    assert!(responses > 0, "{client}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let (code, _, err) = server.wait(BOUND);
    assert_eq!(code, 0, "{err}");
    let served = json(&rest);
    assert_eq!(served["kind"], "net-server");
    assert_eq!(
        served["server"]["responses"].as_u64(),
        Some(responses),
        "the guest answered every request the client counted"
    );
    assert_eq!(served["environment"]["in"], "vm");
    assert_eq!(served["environment"]["guest_ip"].as_str(), addr.split(':').next());
    assert_nothing_left(&name);
}

#[test]
fn measure_net_server_in_vm_is_torn_down_on_ctrl_c() {
    let (mut server, name) = net_server_in_vm("127.0.0.1:9101", "120s", &[]);
    let first = server.stderr_line("listening on");
    assert!(first.starts_with("listening on 10.213."), "{first}");
    assert!(std::process::Command::new("kill").args(["-INT", &server.id().to_string()]).status().unwrap().success());
    let (code, _, err) = server.wait(BOUND);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("stopped by signal") && err.contains("torn down"), "{err}");
    assert_nothing_left(&name);
}

/// `--in vm --explain` end to end in a real QEMU guest: the guest traces itself, relates its clock
/// to the host's over the serial clock line, the host traces the vCPU thread meanwhile, and one
/// merged explanation comes back (guest causes adding up to each latency, host-side causes of the
/// vCPU thread beside them; no kvm_* events under TCG, said); `--trace` is written on the host
/// with guest and host tracks; nothing is left behind (no instance, guest or record).
#[test]
fn measure_timer_in_vm_explain_merges_guest_and_host_traces() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("vm.json");
    let (code, out, err, name) = timer_in_nrt_guest("2s", &["--explain", "--trace", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let e = &rows[0]["explain"];
    let clock = &e["guest_clock"];
    assert_eq!(clock["method"], "serial handshake", "{e}");
    assert!(clock["precision_ns"].as_u64().unwrap() > 0 && clock["rounds"].as_u64().unwrap() >= 16);
    let present = e["events_present"].to_string();
    assert!(present.contains("\"sched/sched_switch\"") && present.contains("\"host:sched/sched_switch\""), "{present}");
    let limits = e["limitations"].to_string();
    if rows[0]["environment"]["accel"] == "tcg" {
        assert!(limits.contains("no kvm_* events"), "{limits}");
    }
    let samples = e["samples"].as_array().unwrap();
    assert!(!samples.is_empty(), "a TCG guest has late wake-ups: {e}");
    let host_side = |c: &serde_json::Value| {
        let k = c["kind"].as_str().unwrap();
        k.starts_with("host_") || k.starts_with("vcpu_")
    };
    for s in samples {
        let guest: u64 = s["causes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| !host_side(c))
            .map(|c| c["duration_ns"].as_u64().unwrap())
            .sum();
        assert_eq!(guest, s["latency_ns"].as_u64().unwrap(), "guest causes add up: {s}");
    }
    let with_host = samples.iter().filter(|s| s["causes"].as_array().unwrap().iter().any(host_side)).count();
    assert!(with_host > 0, "the vCPU thread's host side is beside the guest's causes: {e}");
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let names: Vec<String> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["args"]["name"].as_str().map(String::from))
        .collect();
    assert!(names.iter().any(|n| n == "guest cores") && names.iter().any(|n| n == "host (vCPU threads)"), "{names:?}");
    assert_nothing_left(&name);
}

/// A partitioned guest of two vCPUs (one task bound to each, one placed by the planner) and a
/// global-EDF guest of two vCPUs, planned on two cores: the QEMU guest gets two vCPUs.
const TWO_VCPUS: &str = r#"name = "two-vcpus-in-vm"
[host]
cores = 2

[[guest]]
name = "duo"
scheduler = "edf"
vcpus = 2
server_periods = ["5ms"]
[[guest.task]]
name = "a"
period = "10ms"
wcet = "1ms"
vcpu = 0
[[guest.task]]
name = "b"
period = "20ms"
wcet = "2ms"
vcpu = 1
[[guest.task]]
name = "c"
period = "10ms"
wcet = "1ms"

[[guest]]
name = "glob"
scheduler = "edf"
vcpus = 2
placement = "global"
server_periods = ["5ms"]
[[guest.task]]
name = "x"
period = "10ms"
wcet = "1ms"
[[guest.task]]
name = "y"
period = "10ms"
wcet = "1ms"
[[guest.task]]
name = "z"
period = "10ms"
wcet = "1ms"
"#;

/// The CPUs a task's work ran on, from the results.
fn ran_on(task: &serde_json::Value) -> Vec<u64> {
    let cpus = task["cpus"].as_array().unwrap_or_else(|| panic!("no cpus: {task}"));
    cpus.iter().map(|c| c.as_u64().unwrap()).collect()
}

/// `measure tasks --in vm` of guests of two vCPUs, in a QEMU guest of two vCPUs: each vCPU
/// thread of the partitioned guest runs its planned tasks on the guest CPU the plan puts it on,
/// the global guest's tasks run on both; per-vCPU results and per-window counts as on the host.
/// No DSR or latency is asserted (TCG on a loaded machine).
#[test]
fn measure_tasks_in_vm_runs_guests_of_two_vcpus_on_the_guest_cpus_the_plan_gives_them() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.toml");
    std::fs::write(&scenario, TWO_VCPUS).unwrap();
    let (code, plan_text, err) = run(&["plan", scenario.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let plan = json(&plan_text);
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, &plan_text).unwrap();
    let (code, out, err, name) = run_in_vm(&[
        "measure",
        "tasks",
        scenario.to_str().unwrap(),
        "--plan",
        plan_file.to_str().unwrap(),
        "--in",
        "vm",
        "--guest-kernel",
        "nrt",
        "--duration",
        "3s",
        "--interval-report",
        "1s",
        "--format",
        "json",
    ]);
    assert!(code == 0 || code == 1, "{err}");
    let r = &json(&out)[0];
    assert_eq!(r["environment"]["in"], "vm");
    assert_eq!(r["environment"]["vcpus"], 2, "a QEMU guest of two vCPUs");
    assert!(err.contains("--interval-report 1s"), "the option reached the guest: {err}");
    let tasks = r["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 6);
    assert!(tasks.iter().all(|t| t["jobs"].as_u64().unwrap() > 0), "every task ran jobs: {tasks:?}");

    // partitioned: each task on the guest CPU of the vCPU the plan lists it on, and only there
    let planned = plan["guests"][0]["vcpus"].as_array().unwrap();
    let cores: Vec<u64> = planned.iter().map(|v| v["core"].as_u64().unwrap()).collect();
    assert_ne!(cores[0], cores[1], "{planned:?}");
    for t in tasks.iter().filter(|t| t["guest"] == "duo") {
        let on = planned.iter().find(|v| v["tasks"].as_array().unwrap().contains(&t["name"])).unwrap();
        assert_eq!(ran_on(t), [on["core"].as_u64().unwrap()], "{t}");
    }
    assert_eq!(ran_on(&tasks[1]), [cores[1]], "b, bound to vCPU 1, ran on its guest CPU");
    let guests = r["guests"].as_array().unwrap();
    let duo = guests[0]["vcpus"].as_array().expect("per-vCPU results");
    for (v, p) in duo.iter().zip(planned) {
        assert_eq!((&v["id"], &v["core"], &v["tasks"]), (&p["id"], &p["core"], &p["tasks"]));
        assert_eq!(v["reservation"]["runtime_ns"], p["budget_ns"]);
        assert!(v["cpu_time_ns"].as_u64().unwrap() > 0, "{v}");
    }

    // global: the guest's tasks share both vCPUs, on both guest CPUs
    let glob: Vec<&serde_json::Value> = tasks.iter().filter(|t| t["guest"] == "glob").collect();
    let mut union: Vec<u64> = glob.iter().flat_map(|t| ran_on(t)).collect();
    union.sort_unstable();
    union.dedup();
    assert_eq!(union, [0, 1], "a global guest's tasks ran on both guest CPUs: {glob:?}");
    let vcpus = guests[1]["vcpus"].as_array().expect("per-vCPU results");
    assert_eq!(vcpus.len(), 2);
    assert!(vcpus.iter().all(|v| v["cpu_time_ns"].as_u64().unwrap() > 0), "both vCPUs ran jobs: {vcpus:?}");

    // three windows of 1 s, adding up to the run's jobs and misses task by task
    let windows = r["intervals"].as_array().unwrap_or_else(|| panic!("no windows: {r}"));
    assert_eq!(windows.len(), 3, "{windows:?}");
    for (i, t) in tasks.iter().enumerate() {
        let sum = |key: &str| windows.iter().map(|w| w["tasks"][i][key].as_u64().unwrap()).sum::<u64>();
        assert_eq!((sum("jobs"), sum("misses")), (t["jobs"].as_u64().unwrap(), t["misses"].as_u64().unwrap()));
    }
    let file = dir.path().join("tasks.json");
    std::fs::write(&file, &out).unwrap();
    let html = dir.path().join("r.html");
    let (code, _, err) = run(&["report", file.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("data-chart=\"dsr-windows\"") && html.contains("DSR per window: vm/nrt/none"));
    assert_nothing_left(&name);
}
