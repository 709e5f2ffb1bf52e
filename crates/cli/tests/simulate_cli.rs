//! `rtvirt simulate` end to end: JSON shape, determinism, traces, plans, sweeps whose results do
//! not depend on the thread count, and bad input -> exit code 2 with a located message.

mod schema_support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(args)
        .current_dir(root())
        .output()
        .expect("run rtvirt")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn stdout_json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    schema_support::assert_valid("results", &v);
    v
}

#[test]
fn json_has_the_issue_shape_and_is_deterministic() {
    let args = ["simulate", "scenarios/sim_policies.toml", "--duration", "2s", "--seed", "3", "--format", "json"];
    let a = rtvirt(&args);
    let v = stdout_json(&a);
    assert_eq!(v["schema"], "rtvirt.results/v1");
    assert_eq!(v["kind"], "simulation");
    assert_eq!(v["seed"], 3);
    assert_eq!(v["duration_ns"], 2_000_000_000u64);
    let t = &v["tasks"][0];
    for k in ["guest", "name", "jobs", "misses", "dsr"] {
        assert!(!t[k].is_null(), "task field {k} missing");
    }
    for k in ["mean", "sd", "p50", "p99", "p999", "max"] {
        assert!(t["response_ns"][k].is_number(), "response_ns.{k} missing");
    }
    assert!(v["cores"][0]["utilisation"].as_f64().unwrap() > 0.0);
    assert!(v["guests"][0]["cpu_time_ns"].as_u64().unwrap() > 0);
    assert_eq!(rtvirt(&args).stdout, a.stdout, "same seed must give byte-identical results");
    let other =
        rtvirt(&["simulate", "scenarios/sim_policies.toml", "--duration", "2s", "--seed", "4", "--format", "json"]);
    assert_ne!(other.stdout, a.stdout, "another seed draws other execution times");
}

#[test]
fn table_output_lists_tasks_guests_and_cores() {
    let o = rtvirt(&["simulate", "scenarios/sim_policies.toml", "--duration", "1s"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in ["DSR", "p999_us", "core 0", "cpu_time", "deadline", "noise"] {
        assert!(text.contains(needle), "{needle} not in table:\n{text}");
    }
}

#[test]
fn a_long_guest_name_keeps_the_table_columns_aligned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.toml");
    let long = "industrial-controller-line-3";
    std::fs::write(&path, GOOD.replace("\"vm1\"", &format!("\"{long}\""))).unwrap();
    let o = rtvirt(&["simulate", path.to_str().unwrap(), "--duration", "200ms"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("guest") && l.contains("max_us")).expect("task table");
    let row = lines[header + 1];
    assert!(row.starts_with(long), "{text}");
    // every column ends where its header ends (numbers right-aligned), whatever the name's length
    let ends = |line: &str| -> Vec<usize> {
        let b = line.as_bytes();
        (0..b.len()).filter(|&i| b[i] != b' ' && b.get(i + 1).is_none_or(|c| *c == b' ')).map(|i| i + 1).collect()
    };
    let (header_ends, row_ends) = (ends(lines[header]), ends(row));
    assert_eq!(header_ends.len(), 11, "{text}");
    assert_eq!(header_ends[2..], row_ends[2..], "number columns out of line:\n{text}");
    assert!(lines[header].find("task").unwrap() > long.len(), "{text}");
    // the guest table below it too
    let guests = lines.iter().position(|l| l.starts_with("guest") && l.contains("cpu_time")).expect("guest table");
    let last_two = |line: &str| ends(line)[ends(line).len() - 2..].to_vec();
    assert_eq!(last_two(lines[guests]), last_two(lines[guests + 1]), "{text}");
}

#[test]
fn trace_has_core_and_guest_tracks_and_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let o = rtvirt(&[
        "simulate",
        "scenarios/sim_policies.toml",
        "--duration",
        "2s",
        "--trace",
        path.to_str().unwrap(),
        "--trace-window",
        "100ms",
        "--trace-max-events",
        "500",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = evs.iter().filter(|e| e["ph"] == "M").filter_map(|e| e["args"]["name"].as_str()).collect();
    assert!(names.contains(&"core 0") && names.iter().any(|n| n.starts_with("guest ")), "{names:?}");
    let slices: Vec<&serde_json::Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
    assert!(!slices.is_empty() && slices.len() <= 500);
    assert!(slices.iter().all(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap() <= 100_000.0 + 1e-6));
}

#[test]
fn plan_becomes_deadline_reservations() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let p = rtvirt(&["plan", "scenarios/sim_seeds5.toml", "--format", "json"]);
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    std::fs::write(&plan, &p.stdout).unwrap();
    let v = stdout_json(&rtvirt(&[
        "simulate",
        "scenarios/sim_seeds5.toml",
        "--plan",
        plan.to_str().unwrap(),
        "--duration",
        "2s",
        "--format",
        "json",
    ]));
    assert!(v["guests"].as_array().unwrap().iter().all(|g| g["policy"] == "deadline"));
    // WCET budgets (no rho in the file): no deadline misses
    assert!(v["tasks"].as_array().unwrap().iter().all(|t| t["misses"] == 0), "{v}");
}

#[test]
fn sweep_results_do_not_depend_on_thread_count() {
    let one = rtvirt(&[
        "simulate",
        "--sweep",
        "experiments/seeds5_dsr_vs_rho.sweep.toml",
        "--duration",
        "2s",
        "--threads",
        "1",
        "--format",
        "json",
    ]);
    let two = rtvirt(&[
        "simulate",
        "--sweep",
        "experiments/seeds5_dsr_vs_rho.sweep.toml",
        "--duration",
        "2s",
        "--threads",
        "2",
        "--format",
        "json",
    ]);
    let v = stdout_json(&one);
    assert_eq!(v.as_array().unwrap().len(), 27);
    assert_eq!(one.stdout, two.stdout);
}

fn fails_with(scenario_text: &str, extra: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, scenario_text).unwrap();
    let mut args = vec!["simulate", path.to_str().unwrap()];
    if !extra.contains(&"--duration") {
        args.extend_from_slice(&["--duration", "100ms"]);
    }
    args.extend_from_slice(extra);
    let o = rtvirt(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "expected exit 2 for {needle}: {err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

const GOOD: &str = "[host]\ncores = 1\n[[guest]]\nname = \"vm1\"\nscheduler = \"edf\"\n[guest.vcpu]\npolicy = \
                    \"fifo\"\npriority = 50\n[[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n";

#[test]
fn bad_input_exits_2_with_located_errors() {
    assert!(rtvirt(&["simulate", "--duration", "100ms"]).status.success());
    fails_with(&GOOD.replace("\"fifo\"", "\"lottery\""), &[], "line 7");
    fails_with(&GOOD.replace("priority = 50", "priority = 150"), &[], "priority 150 is out of range");
    fails_with(&GOOD.replace("priority = 50", "priority = 50\nruntime = \"1ms\""), &[], "guest[0].vcpu.runtime");
    fails_with(&GOOD.replace("[guest.vcpu]", "[guest.vcpu]\ncore = 3"), &[], "core 3 does not exist");
    fails_with(GOOD, &["--trace", "/tmp/x.json", "--trace-max-events", "999999999"], "would not fit in memory");
    fails_with(&GOOD.replace("[host]", "[sim]\nduration = \"1000x\"\n[host]"), &[], "unknown unit");
    // days are a unit (cyclictest's habits), but 1000 of them exceed the 30-day horizon
    fails_with(
        &GOOD.replace("[host]", "[sim]\nduration = \"1000d\"\n[host]"),
        &[],
        "86400000s: expected a positive horizon",
    );
    fails_with(GOOD, &["--duration", "45000min"], "field `--duration`: 2700000s");
    // the file is checked when it is read, whatever the command line overrides
    fails_with(
        &GOOD.replace("[host]", "[sim]\nduration = \"45000min\"\n[host]"),
        &["--duration", "1s"],
        "line 2, column 1: field `sim.duration`: 2700000s",
    );
    fails_with("[host]\ncores = 1\n", &[], "nothing to simulate");
    fails_with(&GOOD.replace("period = \"10ms\"", "period = \"-10ms\""), &[], "guest[0].task[0].period");
    // a trace path that cannot be written fails before the run
    fails_with(GOOD, &["--trace", "/nonexistent-dir/t.json"], "field `--trace`: cannot write /nonexistent-dir/t.json");
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    std::fs::write(
        &plan,
        concat!(
            r#"{"schema":"rtvirt.plan/v1","feasible":true,"cores_used":1,"max_rho":null,"guests":[{"name":"other","#,
            r#""scheduler":"edf","model":"prm","period_ns":1000000,"budget_ns":500000,"deadline_ns":1000000,"#,
            r#""bandwidth":0.5,"core":0,"tasks":[]}],"cores":[]}"#,
        ),
    )
    .unwrap();
    fails_with(GOOD, &["--plan", plan.to_str().unwrap()], "the plan has no guest \"vm1\"");
    // a plan's reservation that SCHED_DEADLINE could not take
    let bad = plan.with_file_name("bad-plan.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&plan)
            .unwrap()
            .replace("\"other\"", "\"vm1\"")
            .replace("\"deadline_ns\":1000000", "\"deadline_ns\":2000000"),
    )
    .unwrap();
    fails_with(GOOD, &["--plan", bad.to_str().unwrap()], "expected budget <= deadline <= period");
    // what the planner refuses: a guest without tasks
    fails_with(&GOOD[..GOOD.find("[[guest.task]]").unwrap()], &[], "guest \"vm1\" has no tasks");
    // a network-path scenario takes no plan, and no horizon beyond 30 days
    let net = root().join("scenarios/seeds1_outsourcing.toml");
    let net_text = std::fs::read_to_string(&net).unwrap();
    fails_with(&net_text, &["--plan", plan.to_str().unwrap()], "field `--plan`: the scenario has a [net] section");
    fails_with(&net_text, &["--duration", "45000min"], "field `--duration`: 2700000s");
    // sweeps run the CPU model only
    let sweep = dir.path().join("net.sweep.toml");
    std::fs::write(&sweep, format!("scenarios = [\"{}\"]\nseeds = [1]\n", net.display())).unwrap();
    let o = rtvirt(&["simulate", "--sweep", sweep.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("seeds1_outsourcing.toml") && err.contains("[net] section"), "{err}");
}

/// A sweep cell that cannot run (no feasible plan at its rho) does not lose the others: every
/// cell is in the JSON and the table, the failed one with its error; the exit code is 2.
#[test]
fn a_failed_sweep_cell_is_reported_beside_the_cells_that_ran() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"cellfail\"\n[host]\ncores = 1\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n[[guest.task]]\nname = \
         \"a\"\nperiod = \"10ms\"\nwcet = \"10ms\"\nexec = { dist = \"normal\", mean = \"2ms\", sd = \"3ms\" }\n",
    )
    .unwrap();
    let sweep = dir.path().join("s.sweep.toml");
    std::fs::write(&sweep, "scenarios = [\"s.toml\"]\nrho = [0.1, 0.99]\nseeds = [1]\nduration = \"1s\"\n").unwrap();
    let o = rtvirt(&["simulate", "--sweep", sweep.to_str().unwrap(), "--format", "json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("1 of 2 sweep cells failed"), "{err}");
    let cells: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    schema_support::assert_valid("results", &cells);
    let cells = cells.as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0]["rho"], 0.1);
    assert!(cells[0].get("error").is_none() && !cells[0]["tasks"].as_array().unwrap().is_empty(), "{}", cells[0]);
    assert_eq!((&cells[1]["rho"], &cells[1]["seed"]), (&0.99.into(), &1.into()));
    assert!(cells[1]["error"].as_str().unwrap().contains("infeasible"), "{}", cells[1]);
    let o = rtvirt(&["simulate", "--sweep", sweep.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.lines().any(|l| l.contains("0.10") && !l.contains("FAILED")), "{table}");
    assert!(table.lines().any(|l| l.contains("0.99") && l.contains("FAILED") && l.contains("infeasible")), "{table}");
}

/// `simulate s.toml --trace s.toml` and `simulate s.toml --plan p.json --trace p.json` would
/// overwrite their own inputs: refused before any work, the inputs untouched.
#[test]
fn a_trace_that_is_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::copy(root().join("scenarios/sim_seeds5.toml"), &scenario).unwrap();
    let plan = dir.path().join("p.json");
    let o = rtvirt(&["plan", scenario.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&plan, &o.stdout).unwrap();
    let (s, p) = (scenario.to_str().unwrap(), plan.to_str().unwrap());
    let before = [std::fs::read(&scenario).unwrap(), std::fs::read(&plan).unwrap()];
    for args in [vec![s, "--trace", s], vec![s, "--plan", p, "--trace", p]] {
        let o = rtvirt(&[&["simulate", "--duration", "10ms"][..], &args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--trace") && err.contains("is an input"), "{args:?}: {err}");
        assert_eq!([std::fs::read(&scenario).unwrap(), std::fs::read(&plan).unwrap()], before, "{args:?}");
    }
}

/// Issue 16: `--host-model` charges a host model's costs (results say which), deterministically;
/// a bad host model, or one given with a [net] scenario or a sweep, is exit 2, located.
#[test]
fn a_host_model_is_charged_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let hm = dir.path().join("hm.json");
    std::fs::write(
        &hm,
        r#"{"schema":"rtvirt.hostmodel/v1","release_latency_ns":{"p50":20000,"p99":300000,"max":900000}}"#,
    )
    .unwrap();
    let hm = hm.to_str().unwrap();
    let base = ["simulate", "scenarios/default.toml", "--duration", "2s", "--format", "json"];
    let plain = rtvirt(&base);
    let with: Vec<&str> = base.iter().copied().chain(["--host-model", hm]).collect();
    let a = rtvirt(&with);
    let v = stdout_json(&a);
    assert!(v["host_costs"].as_str().unwrap().contains("p50 20000 / p99 300000 / max 900000"), "{v}");
    assert!(stdout_json(&plain)["host_costs"].is_null());
    assert_eq!(rtvirt(&with).stdout, a.stdout, "same seed, same bytes");
    // every job reaches its guest later: the response times grow
    let p50 = |v: &serde_json::Value| v["tasks"][0]["response_ns"]["p50"].as_u64().unwrap();
    assert!(p50(&v) > p50(&stdout_json(&plain)), "{} vs {}", p50(&v), p50(&stdout_json(&plain)));

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\":\"rtvirt.hostmodel/v1\",\n\"cache_reload_ns\":\"lots\"}").unwrap();
    let o = rtvirt(&["simulate", "scenarios/default.toml", "--host-model", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.json") && err.contains("line 2") && err.contains("cache_reload_ns"), "{err}");
    let o = rtvirt(&["simulate", "scenarios/seeds1_vanilla_hr.toml", "--host-model", hm]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[net]"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = rtvirt(&["simulate", "--sweep", "experiments/seeds5_dsr_vs_rho.sweep.toml", "--host-model", hm]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--host-model"));
}

/// A scenario's multi-vCPU guests run from their own `[guest.vcpu]` threads (one per vCPU); a plan
/// that gives such a guest a single reservation is refused, located in the plan (exit 2), rather
/// than simulated as one vCPU.
#[test]
fn multi_vcpu_guests_run_their_own_threads_and_refuse_a_single_reservation_plan() {
    let scenario = "scenarios/multi_vcpu_rt_vm.toml";
    let v = stdout_json(&rtvirt(&["simulate", scenario, "--duration", "2s", "--format", "json"]));
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 7);
    assert!(tasks.iter().all(|t| t["jobs"].as_u64().unwrap() > 0), "{v}");
    let guests = v["guests"].as_array().unwrap();
    // rt-vm: vCPUs 0, 1, 2 on cores 0, 1, 2 (the housekeeping one included); logger: cores 1, 2
    assert_eq!(guests[0]["cores"], serde_json::json!([0, 1, 2]));
    assert_eq!(guests[1]["cores"], serde_json::json!([1, 2]));
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("single.plan.json");
    std::fs::write(
        &plan,
        concat!(
            r#"{"schema":"rtvirt.plan/v1","feasible":true,"cores_used":1,"max_rho":null,"guests":[{"name":"g","#,
            r#""scheduler":"edf","model":"prm","period_ns":1000000,"budget_ns":500000,"deadline_ns":1000000,"#,
            r#""bandwidth":0.5,"core":0,"tasks":[]}],"cores":[]}"#,
        ),
    )
    .unwrap();
    let two = "[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\n[[guest.task]]\nname = \
               \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n";
    fails_with(
        two,
        &["--plan", plan.to_str().unwrap()],
        &format!(
            "{}: field `guests[0]`: guest \"g\" has 2 vCPUs in the scenario but the plan gives it a single reservation",
            plan.display()
        ),
    );
}
