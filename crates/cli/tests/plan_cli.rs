//! `rtvirt plan` end to end: outputs, exit codes, every bad-input class (exit 2 naming
//! file/line/field), infeasible plans (exit 1 naming the guests), emitted settings.

mod schema_support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run rtvirt")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const GOOD: &str = r#"name = "t"
[host]
cores = 1

[[guest]]
name = "vm1"
scheduler = "edf"
server_periods = ["5ms", "10ms"]
rho = 0.9

[[guest.task]]
name = "a"
period = "10ms"
wcet = "2ms"
exec = { dist = "normal", mean = "1ms", sd = "200us" }

[[guest.task]]
name = "b"
period = "20ms"
wcet = "4ms"
"#;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn plan_json(args: &[&str]) -> (serde_json::Value, Output) {
    let o = rtvirt(&[&["plan", "--format", "json"], args].concat());
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    if !v.is_null() {
        schema_support::assert_valid("plan", &v);
    }
    (v, o)
}

#[test]
fn default_scenario_plans_with_the_issue_json_shape() {
    let (v, o) = plan_json(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(v["schema"], "rtvirt.plan/v1");
    assert_eq!(v["feasible"], true);
    assert!(v["cores_used"].as_u64().unwrap() >= 1);
    assert!(v["max_rho"].as_f64().is_some());
    for g in v["guests"].as_array().unwrap() {
        for k in ["name", "scheduler", "model", "period_ns", "budget_ns", "deadline_ns", "bandwidth", "core", "tasks"] {
            assert!(!g[k].is_null(), "guest field {k} missing");
        }
        let (b, d, p) =
            (g["budget_ns"].as_u64().unwrap(), g["deadline_ns"].as_u64().unwrap(), g["period_ns"].as_u64().unwrap());
        assert!(b > 0 && b <= d && d <= p);
        for t in g["tasks"].as_array().unwrap() {
            assert!(t["budget_ns"].as_u64().unwrap() <= t["wcet_ns"].as_u64().unwrap());
            assert!(["wcet", "cantelli", "quantile"].contains(&t["bound"].as_str().unwrap()));
            assert_eq!(t["rho"], 0.9);
        }
    }
    assert!(!v["cores"].as_array().unwrap().is_empty());
    assert_eq!(v["settings"]["model"], "prm");
    // the JSON is a valid plan for the model crate's reader
    rtvirt_model::plan::Plan::from_json(&stdout(&o)).unwrap();
}

#[test]
fn table_names_guests_tasks_bounds_and_cores() {
    let o = rtvirt(&["plan"]);
    assert_eq!(o.status.code(), Some(0));
    let t = stdout(&o);
    for s in ["vm1", "vm2", "vm3", "bandwidth", "cantelli", "core", "feasible"] {
        assert!(t.contains(s), "table lacks {s}:\n{t}");
    }
}

#[test]
fn flags_change_the_plan_as_documented() {
    let d = tempfile::tempdir().unwrap();
    let f = write(&d, "s.toml", &GOOD.replace("rho = 0.9\n", ""));
    // no rho anywhere: WCET; --rho applies to tasks without their own
    let (v, _) = plan_json(&[&f]);
    assert_eq!(v["guests"][0]["tasks"][0]["bound"], "wcet");
    assert_eq!(v["guests"][0]["tasks"][0]["budget_ns"], 2_000_000);
    let (v, _) = plan_json(&[&f, "--rho", "0.5"]);
    // 1ms + sqrt(0.5 * (200us)^2 / 0.5) = 1.2ms
    assert_eq!(v["guests"][0]["tasks"][0]["budget_ns"], 1_200_000);
    assert_eq!(v["guests"][0]["tasks"][0]["bound"], "cantelli");
    assert_eq!(v["guests"][0]["tasks"][1]["bound"], "wcet");
    let (v, _) = plan_json(&[&f, "--model", "edp", "--heuristic", "ffd", "--cores", "3"]);
    assert_eq!(v["guests"][0]["model"], "edp");
    assert_eq!(v["settings"]["heuristic"], "ffd");
    assert_eq!(v["settings"]["cores"], 3);
    let o = rtvirt(&["plan", &f, "--max-rho"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("max_rho = 1"), "{}", stdout(&o));
}

#[test]
fn samples_scenario_offers_quantile_budgets() {
    let (v, o) = plan_json(&["scenarios/samples.toml", "--budget", "quantile"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(v["guests"][0]["tasks"][0]["bound"], "quantile");
    let (w, _) = plan_json(&["scenarios/samples.toml"]);
    assert_ne!(w["guests"][0]["tasks"][0]["bound"], "quantile");
    let (f, _) = plan_json(&["scenarios/fp-guests.toml"]);
    assert_eq!(f["feasible"], true);
    assert_eq!(f["guests"][0]["scheduler"], "fp");
}

#[test]
fn infeasible_exits_1_and_names_the_guests() {
    let d = tempfile::tempdir().unwrap();
    let mut text = GOOD.to_string();
    for i in 2..=4 {
        text.push_str(&GOOD[GOOD.find("[[guest]]").unwrap()..].replace("\"vm1\"", &format!("\"vm{i}\"")));
    }
    let f = write(&d, "s.toml", &text);
    let (v, o) = plan_json(&[&f]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(v["feasible"], false);
    let e = stderr(&o);
    assert!(e.contains("did not fit") && e.contains("vm"), "{e}");
    let unplaced = v["unplaced"].as_array().unwrap();
    assert!(!unplaced.is_empty());
    for u in unplaced {
        assert!(e.contains(u.as_str().unwrap()), "{e}");
    }
    // emit on an infeasible plan prints nothing and exits 1
    let o = rtvirt(&["plan", &f, "--emit", "chrt"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty());
    // with more cores it fits
    assert_eq!(rtvirt(&["plan", &f, "--cores", "4"]).status.code(), Some(0));
}

#[test]
fn bad_input_exits_2_naming_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("malformed", GOOD.replace("cores = 1", "cores = = 1"), "line 3"),
        ("unknown field", GOOD.replace("cores = 1", "cores = 1\ncolour = 2"), "colour"),
        ("zero duration", GOOD.replace("period = \"10ms\"", "period = \"0ms\""), "period"),
        ("negative duration", GOOD.replace("period = \"10ms\"", "period = \"-10ms\""), "period"),
        ("wcet > deadline", GOOD.replace("wcet = \"2ms\"", "wcet = \"20ms\""), "wcet"),
        ("deadline > period", GOOD.replace("period = \"10ms\"", "period = \"10ms\"\ndeadline = \"11ms\""), "deadline"),
        ("rho outside (0,1)", GOOD.replace("rho = 0.9", "rho = 1.5"), "rho"),
        ("duplicate names", GOOD.replace("name = \"b\"", "name = \"a\""), "name"),
        (
            "missing samples",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"nope.csv\" }",
            ),
            "nope.csv",
        ),
        (
            "empty samples",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"empty.csv\" }",
            ),
            "empty.csv",
        ),
        (
            "unparsable samples",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"bad.csv\" }",
            ),
            "bad.csv:line 2",
        ),
        (
            "samples line without a first value",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"comma.csv\" }",
            ),
            "comma.csv:line 3",
        ),
        (
            "all-zero samples",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"zero.csv\" }",
            ),
            "zero.csv:line 1, column 1: field `guest[0].task[0].exec`",
        ),
        ("wrong unit", GOOD.replace("period = \"10ms\"", "period = \"10 parsecs\""), "unknown unit"),
        ("duration without unit", GOOD.replace("period = \"10ms\"", "period = 10"), "guest[0].task[0].period"),
        ("mean above wcet", GOOD.replace("mean = \"1ms\"", "mean = \"3ms\""), "exec.mean"),
        ("guest without tasks", GOOD[..GOOD.find("[[guest.task]]").unwrap()].to_string(), "has no tasks"),
        ("no guests", "[host]\ncores = 1\n".to_string(), "no [[guest]]"),
        (
            "samples error says where the scenario refers to it",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"bad.csv\" }",
            ),
            "(the samples file of ",
        ),
        (
            "... with the scenario's line",
            GOOD.replace(
                "exec = { dist = \"normal\", mean = \"1ms\", sd = \"200us\" }",
                "exec = { samples = \"bad.csv\" }",
            ),
            "bad.toml:line 15, column",
        ),
        (
            "period beyond an hour",
            GOOD.replace("period = \"20ms\"", "period = \"18446744073709551615ns\""),
            "guest[0].task[1].period",
        ),
        ("offset beyond an hour", GOOD.replace("wcet = \"4ms\"", "wcet = \"4ms\"\noffset = \"2h\""), "task[1].offset"),
        (
            "server period range beyond an hour",
            GOOD.replace(
                "server_periods = [\"5ms\", \"10ms\"]",
                "server_periods = { min = \"1ms\", max = \"18446744073709551615ns\", step = \"18446744073709ms\" }",
            ),
            "server_periods.max",
        ),
    ];
    write(&d, "empty.csv", "# nothing\n");
    write(&d, "bad.csv", "1ms\nbanana\n");
    write(&d, "comma.csv", "exec\n1ms\n,2ms\n");
    write(&d, "zero.csv", "0ns\n0ns\n");
    for (what, text, needle) in cases {
        let f = write(&d, "bad.toml", &text);
        let o = rtvirt(&["plan", &f]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {e}");
        assert!(e.contains(needle), "{what}: error lacks {needle:?}: {e}");
        assert!(e.contains(".toml") || e.contains(".csv"), "{what}: no file named: {e}");
        assert!(!e.contains("panicked"), "{what}: {e}");
    }
    let f = write(&d, "ok.toml", GOOD);
    for (args, needle) in [
        (vec!["--rho", "0"], "--rho"),
        (vec!["--rho", "1"], "--rho"),
        (vec!["--cores", "0"], "--cores"),
        (vec!["--cores", "4294967295"], "--cores"),
        (vec!["--pid", "nobody=12"], "--pid"),
        (vec!["--pid", "vm1=abc"], "--pid"),
        (vec!["--model", "mpr"], "mpr"),
    ] {
        let o = rtvirt(&[&["plan", f.as_str()], args.as_slice()].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let o = rtvirt(&["plan", "/nonexistent/s.toml"]);
    assert_eq!(o.status.code(), Some(2));
}

/// XML comments may not contain "--".
fn assert_valid_comments(xml: &str) {
    for c in xml.split("<!--").skip(1) {
        let body = &c[..c.find("-->").expect("closed comment")];
        assert!(!body.contains("--"), "comment contains --: {body}");
    }
}

#[test]
fn emitted_settings_carry_the_planned_numbers() {
    let (v, _) = plan_json(&["--model", "edp"]);
    let o = rtvirt(&["plan", "--model", "edp", "--emit", "chrt", "--pid", "vm1=4242"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let script = stdout(&o);
    assert!(script.starts_with("#!/bin/sh"));
    for (i, g) in v["guests"].as_array().unwrap().iter().enumerate() {
        let line = format!(
            "deploy \"$TID_{i}\" {} {} {} {} {}",
            g["core"],
            g["budget_ns"],
            g["deadline_ns"],
            g["period_ns"],
            g["name"].as_str().unwrap()
        );
        assert!(script.contains(&line), "missing {line}\n{script}");
        assert!(script.contains(&format!("partition {}\n", g["core"])));
    }
    assert!(script.contains("TID_0=4242\n"));
    assert!(script.contains("VCPU_PID_VM2"));

    let (v, _) = plan_json(&[]);
    let rtds = stdout(&rtvirt(&["plan", "--emit", "rtds"]));
    for g in v["guests"].as_array().unwrap() {
        let (b, p) = (g["budget_ns"].as_u64().unwrap().div_ceil(1000), g["period_ns"].as_u64().unwrap() / 1000);
        assert!(
            rtds.contains(&format!("xl sched-rtds -d {} -v all -p {p} -b {b}", g["name"].as_str().unwrap())),
            "{rtds}"
        );
    }
    assert!(rtds.contains("xl cpupool-create") && rtds.contains("xl cpupool-migrate"));

    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("libvirt");
    let o = rtvirt(&["plan", "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lv = std::fs::read_to_string(out.join("vm1.xml")).unwrap();
    assert!(lv.contains("<vcpupin vcpu=\"0\" cpuset=\"0\"/>") && lv.contains("<emulatorpin cpuset=\"1\"/>"), "{lv}");
    assert!(lv.contains("from the qemu hook (libvirt has no deadline policy)"));
    assert_valid_comments(&lv);
    assert!(std::fs::read_to_string(out.join("qemu")).unwrap().contains("host apply"));

    let carts = stdout(&rtvirt(&["plan", "--emit", "carts"]));
    assert_valid_comments(&carts);
    assert!(carts.contains("<task name=\"t1\" p=\"25\" d=\"25\" e=\"1.905\"/>"), "{carts}");
}

#[test]
fn carts_round_trip_and_import_errors() {
    let d = tempfile::tempdir().unwrap();
    let xml = stdout(&rtvirt(&["plan", "--emit", "carts"]));
    let f = write(&d, "sys.xml", &xml);
    let (v, o) = plan_json(&["--import-carts", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(v["guests"].as_array().unwrap().len(), 3);
    // the imported WCETs are the exported budgets
    assert_eq!(v["guests"][0]["tasks"][0]["wcet_ns"], 1_905_000);
    let (w, _) = plan_json(&["--import-carts", "scenarios/data/carts-example.xml"]);
    assert_eq!(w["feasible"], true);
    let bad = write(&d, "bad.xml", &xml.replace("e=\"1.905\"", "e=\"1.9x\""));
    let o = rtvirt(&["plan", "--import-carts", &bad]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.xml:line 5") && e.contains("@e"), "{e}");
    // fixed-priority guests with explicit priorities and period lists: exported with comments
    // saying what CARTS will see instead, and the export still imports
    let xml = stdout(&rtvirt(&["plan", "scenarios/fp-guests.toml", "--emit", "carts"]));
    assert!(xml.contains("<system os_scheduler=\"EDF\" min_period=\"1\" max_period=\"20\">"), "{xml}");
    assert!(xml.contains("plc: explicit task priorities; CARTS analyses the component as deadline monotonic"), "{xml}");
    assert!(xml.contains("plc: candidate server periods 1, 2, 2.5, 5 ms"), "{xml}");
    assert_valid_comments(&xml);
    let (v, o) = plan_json(&["--import-carts", &write(&d, "fp.xml", &xml)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(v["guests"][0]["scheduler"], "fp");
}

/// A host model's costs all zero (the cap tests look at the admission limits only).
const NO_COSTS: &str = r#""server_overhead_ns":0,"context_switch_ns":0,"cache_reload_ns":0,
    "release_latency_ns":{"p50":0,"p99":0,"max":0},"enforcement":{"kind":"hrtick","overrun_max_ns":0}"#;

/// Issue 16: the per-core cap. Without a host model it is the safe default for current kernels
/// (0.95 less a 0.05 fair server) and the plan says so; with one it is the model's kernel limit
/// less its largest fair server; a scenario cap below it wins; a bad host model is exit 2, located.
#[test]
fn the_per_core_cap_comes_from_the_host_model_and_the_plan_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(&dir, "s.toml", GOOD);
    let (v, o) = plan_json(&[&s]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["settings"]["bandwidth_cap"], 0.9);
    assert!(v["settings"]["bandwidth_cap_source"].as_str().unwrap().contains("less a fair server's 0.05"), "{v}");
    let table = stdout(&rtvirt(&["plan", &s]));
    assert!(table.contains("per-core cap 0.9: default without a host model"), "{table}");

    let no_fair = write(
        &dir,
        "nofair.json",
        &format!(
            concat!(
                r#"{{"schema":"rtvirt.hostmodel/v1",{NO_COSTS},"admission":{{"rt_runtime_us":950000,"#,
                r#""rt_period_us":1000000,"fair_servers":[]}}}}"#
            ),
            NO_COSTS = NO_COSTS
        ),
    );
    let (v, o) = plan_json(&[&s, "--host-model", &no_fair]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["settings"]["bandwidth_cap"], 0.95, "{v}");
    let fair = write(
        &dir,
        "fair.json",
        &format!(
            r#"{{"schema":"rtvirt.hostmodel/v1",{NO_COSTS},"admission":{{"rt_runtime_us":800000,"rt_period_us":1000000,
            "fair_servers":[{{"cpu":3,"runtime_ns":100000000,"period_ns":1000000000}}]}}}}"#
        ),
    );
    let (v, _) = plan_json(&[&s, "--host-model", &fair]);
    assert_eq!(v["settings"]["bandwidth_cap"], 0.7, "{v}");
    assert!(v["settings"]["bandwidth_cap_source"].as_str().unwrap().contains("CPU 3's fair server"), "{v}");
    // the cap is used: a guest needing 0.8 of a core fits under 0.9, not under 0.7
    let heavy = write(&dir, "heavy.toml", &GOOD.replace("wcet = \"4ms\"", "wcet = \"12ms\""));
    assert_eq!(rtvirt(&["plan", &heavy]).status.code(), Some(0));
    let o = rtvirt(&["plan", &heavy, "--host-model", &fair]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("above the per-core cap 0.7"), "{}", stderr(&o));
    // a scenario cap below the kernel's is kept, and named
    let low = write(&dir, "low.toml", &GOOD.replace("cores = 1", "cores = 1\nbandwidth_cap = 0.5"));
    let (v, _) = plan_json(&[&low, "--host-model", &no_fair]);
    assert_eq!(v["settings"]["bandwidth_cap"], 0.5);
    assert!(v["settings"]["bandwidth_cap_source"].as_str().unwrap().starts_with("the scenario's host.bandwidth_cap"));

    for (text, field) in [
        ("{\"schema\":\"rtvirt.plan/v1\"}", "field `schema`"),
        ("{\"schema\":\"rtvirt.hostmodel/v1\",\n\"cache_reload_ns\":-3}", "line 2"),
        (
            "{\"schema\":\"rtvirt.hostmodel/v1\",\"release_latency_ns\":{\"p50\":9,\"p99\":1,\"max\":9}}",
            "release_latency_ns",
        ),
    ] {
        let bad = write(&dir, "bad.json", text);
        let o = rtvirt(&["plan", &s, "--host-model", &bad]);
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("bad.json") && err.contains(field), "{text}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Issue 16: `--host-model` charges the host's overheads: each guest shows its overhead-free and
/// overhead-aware interface, the per-period cost makes a larger server period worth it, EDP is
/// refused (exit 2), and overheads that break a guest name the term (exit 1).
#[test]
fn host_model_overheads_are_charged_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let fine = GOOD.replace(
        r#"server_periods = ["5ms", "10ms"]"#,
        r#"server_periods = { min = "100us", max = "2ms", step = "100us" }"#,
    );
    let s = write(&dir, "s.toml", &fine);
    let (plain, _) = plan_json(&[&s]);
    assert_eq!(plain["guests"][0]["period_ns"], 100_000, "{plain}");
    let hm = write(
        &dir,
        "hm.json",
        r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":40000,"cache_reload_ns":10000,
            "context_switch_ns":1000,"release_latency_ns":{"p50":5000,"p99":20000,"max":50000},
            "enforcement":{"kind":"hrtick","overrun_max_ns":5000}}"#,
    );
    let (v, o) = plan_json(&[&s, "--host-model", &hm, "--hard"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let g = &v["guests"][0];
    assert!(g["period_ns"].as_u64().unwrap() > 100_000, "the per-period cost moves the period up: {g}");
    assert_eq!(g["overhead_free"]["period_ns"], 100_000, "{g}");
    assert!(g["bandwidth"].as_f64().unwrap() > g["overhead_free"]["bandwidth"].as_f64().unwrap(), "{g}");
    assert!(v["settings"]["overheads"].as_str().unwrap().contains("per server period 50000 ns"), "{v}");
    let table = stdout(&rtvirt(&["plan", &s, "--host-model", &hm, "--hard"]));
    let free_row =
        table.lines().skip_while(|l| !l.starts_with("without the host's overheads")).find(|l| l.starts_with("vm1"));
    assert!(free_row.is_some_and(|r| r.contains("100us")) && table.contains("host overheads charged"), "{table}");

    // EDP with the same host model: a deadline within the period, the per-period cost paid too
    let (edp, o) = plan_json(&[&s, "--host-model", &hm, "--hard", "--model", "edp"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = &edp["guests"][0];
    assert_eq!(e["model"], "edp");
    let (budget, deadline, period) =
        (e["budget_ns"].as_u64().unwrap(), e["deadline_ns"].as_u64().unwrap(), e["period_ns"].as_u64().unwrap());
    assert!(budget <= deadline && deadline <= period && period > 100_000, "{e}");
    assert!(edp["settings"]["overheads"].as_str().unwrap().contains("per server period 50000 ns"), "{edp}");

    let late = write(
        &dir,
        "late.json",
        r#"{"schema":"rtvirt.hostmodel/v1","release_latency_ns":{"p50":1000,"p99":2000,"max":10000000}}"#,
    );
    // at the default promise (costs at their p99) the rare 10 ms latency is not charged: the plan
    // fits and says each task may miss with 1 - 0.99
    let (quantile, o) = plan_json(&[&s, "--host-model", &late]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(quantile["settings"]["guarantee"], "quantile 0.99");
    let bounds: Vec<f64> =
        quantile["guests"][0]["tasks"].as_array().unwrap().iter().map(|t| t["miss_bound"].as_f64().unwrap()).collect();
    // task a below its WCET at rho 0.9: 0.1 + 0.01; task b at its WCET: 0.01
    assert_eq!(bounds, vec![0.11, 0.01], "{quantile}");
    let o = rtvirt(&["plan", &s, "--host-model", &late, "--hard"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("vm1")
            && err.contains("the release latency (10000000 ns) is not below the shortest task deadline"),
        "{err}"
    );
}

/// Issue 16: with a per-server-period cost the smallest candidate period is no longer the
/// cheapest for scenarios/default.toml (1..10 ms candidates): every guest moves to a larger
/// period, and the table shows per guest the chosen period, the overhead-free interface (1 ms) and
/// both bandwidths.
#[test]
fn a_server_overhead_moves_the_default_scenario_off_the_smallest_period() {
    let dir = tempfile::tempdir().unwrap();
    let hm = write(
        &dir,
        "hm.json",
        &format!(
            r#"{{"schema":"rtvirt.hostmodel/v1",{}}}"#,
            NO_COSTS.replace(r#""server_overhead_ns":0"#, r#""server_overhead_ns":20000"#)
        ),
    );
    let (plain, o) = plan_json(&["scenarios/default.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (v, o) = plan_json(&["scenarios/default.toml", "--host-model", &hm]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (g, p) in v["guests"].as_array().unwrap().iter().zip(plain["guests"].as_array().unwrap()) {
        assert_eq!(p["period_ns"], 1_000_000, "without overheads the smallest candidate wins: {p}");
        assert_eq!(g["overhead_free"]["period_ns"], 1_000_000, "{g}");
        assert!(g["period_ns"].as_u64().unwrap() > 1_000_000, "the 20 us per period moves it up: {g}");
        assert!(g["bandwidth"].as_f64().unwrap() > g["overhead_free"]["bandwidth"].as_f64().unwrap(), "{g}");
    }
    let table = stdout(&rtvirt(&["plan", "scenarios/default.toml", "--host-model", &hm]));
    let row = |guest: &str| {
        let after = table.lines().skip_while(|l| !l.starts_with("without the host's overheads"));
        after.filter(|l| l.starts_with(guest)).map(|l| l.split_whitespace().collect::<Vec<_>>()).next().unwrap()
    };
    for (i, g) in v["guests"].as_array().unwrap().iter().enumerate() {
        let name = g["name"].as_str().unwrap();
        let cells = row(name);
        assert_eq!(cells[1], "1ms", "{table}");
        assert_eq!(cells[4], format!("{:.4}", g["bandwidth"].as_f64().unwrap()), "guest {i}: {table}");
        let chosen = table.lines().find(|l| l.starts_with(name)).unwrap();
        assert!(!chosen.contains(" 1ms "), "the chosen period is shown: {chosen}");
    }
}

/// Issue 16: a host model whose overheads exceed a period is an input error (exit 2) naming the
/// host model file, the line of its field and the guest; overheads that only make a guest
/// infeasible are exit 1 with the guest and the term.
#[test]
fn overheads_beyond_a_period_are_a_located_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(&dir, "s.toml", GOOD);
    // 10 ms per server period against candidates 5 ms and 10 ms
    let big = write(&dir, "big.json", "{\"schema\":\"rtvirt.hostmodel/v1\",\n  \"server_overhead_ns\":9990000}");
    let o = rtvirt(&["plan", &s, "--host-model", &big, "--hard"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("big.json:line 2") && err.contains("field `server_overhead_ns`"), "{err}");
    assert!(err.contains("guest \"vm1\"'s largest candidate server period (10ms)"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // a per-job cost beyond a task period (10 ms)
    let slow = write(&dir, "slow.json", r#"{"schema":"rtvirt.hostmodel/v1","context_switch_ns":6000000}"#);
    let o = rtvirt(&["plan", &s, "--host-model", &slow, "--hard"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("slow.json:line 1") && err.contains("task \"a\" of guest \"vm1\" (10ms)"), "{err}");
    // below the period but too much for the guest: infeasible, exit 1, guest and term named
    let heavy = write(
        &dir,
        "heavy.json",
        r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":4000000,"cache_reload_ns":0}"#,
    );
    let o = rtvirt(&["plan", &s, "--host-model", &heavy, "--hard"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("vm1: schedulable without the host's overheads, not with them"), "{err}");
    assert!(err.contains("the per-period server cost (4000000 ns, server_overhead_ns + cache_reload_ns)"), "{err}");
    // one term too much: the guest fits without it
    let only = write(
        &dir,
        "only.json",
        &format!(
            r#"{{"schema":"rtvirt.hostmodel/v1",{}}}"#,
            NO_COSTS.replace(r#""server_overhead_ns":0"#, r#""server_overhead_ns":4900000"#)
        ),
    );
    let o = rtvirt(&["plan", &s, "--host-model", &only, "--hard"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the per-period server cost (4900000 ns")
            && err.contains("without it the guest fits (at server period 5ms)"),
        "{err}"
    );
}
