//! `rtvirt verify` end to end: a real task run under real reservations against the simulation of
//! the same plan and seed. Exit 0 when they agree within the stated tolerance, 1 when they do not
//! (an impossible tolerance), 2 on bad input with the place named; the JSON output validates
//! against docs/schema/verify.schema.json, and `--keep` writes the files `rtvirt report` overlays.
//! The runs that measure need root and the host lock (`flock /tmp/rtvirt-host.lock`).

mod host_support;
mod schema_support;

use host_support::{rtvirt, run, serial, text, write};

/// One guest, one light task (1 ms every 50 ms, constant): little for a host to disturb.
const LIGHT: &str = r#"name = "light"
[host]
cores = 1
[[guest]]
name = "g"
scheduler = "edf"
[[guest.task]]
name = "t"
period = "50ms"
wcet = "1ms"
"#;

fn plan(dir: &std::path::Path, scenario: &std::path::Path) -> std::path::PathBuf {
    let o = run(rtvirt(&["plan", scenario.to_str().unwrap(), "--format", "json"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    write(dir, "plan.json", &String::from_utf8_lossy(&o.stdout))
}

/// The agree path: a tolerance that accepts any measurement (DSR within 100 pp, p99 within a
/// factor of a million or an hour) must give "agree" and exit 0 on any host. How close a real run
/// comes depends on the machine (a CI run here once measured DSR 0.74 with 123 ms responses for
/// this 1 ms task, on a host that stole its CPUs), so closeness is not judged here; the
/// disagree path is `an_impossible_tolerance_disagrees_with_exit_1_and_says_why`.
#[test]
fn a_tolerance_any_run_meets_agrees_with_exit_0_and_the_json_is_valid() {
    rtvirt_testkit::require_root!();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "light.toml", LIGHT);
    let plan = plan(dir.path(), &scenario);
    let keep = dir.path().join("kept");
    // the documented default model of a host never calibrated: its costs are simulated too
    let host = write(dir.path(), "host.json", r#"{"schema":"rtvirt.hostmodel/v1"}"#);
    let o = run(rtvirt(&[
        "verify",
        scenario.to_str().unwrap(),
        "--plan",
        plan.to_str().unwrap(),
        "--host-model",
        host.to_str().unwrap(),
        "--duration",
        "2s",
        "--tolerance",
        "dsr=100,p99=1000000,slack=1h",
        "--format",
        "json",
        "--keep",
        keep.to_str().unwrap(),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    schema_support::assert_valid("verify", &v);
    assert_eq!(v["schema"], "rtvirt.verify/v1");
    assert_eq!(v["verdict"], "agree");
    assert!(v["host_model"].as_str().is_some_and(|p| p.ends_with("host.json")), "{v}");
    let task = &v["tasks"][0];
    assert_eq!((task["guest"].as_str(), task["name"].as_str()), (Some("g"), Some("t")));
    // 2 s of a 50 ms task: 40 jobs on both sides (same plan, same horizon)
    assert_eq!(task["predicted"]["jobs"], 40);
    // measured: the jobs released in the run; one still running at its end may be left out
    let measured_jobs = task["measured"]["jobs"].as_u64().unwrap();
    assert!((30..=40).contains(&measured_jobs), "{measured_jobs} measured jobs of 40 released");
    assert_eq!(v["tolerance"]["dsr_points"], 100.0);
    assert_eq!(task["p99_judged"], false, "40 jobs are fewer than the 100 a p99 is judged from");
    assert!(task["measured"]["response_ns"]["p50"].as_u64().unwrap() >= 1_000_000, "a 1 ms job takes 1 ms");
    for name in ["simulated.json", "measured.json", "verify.json"] {
        assert!(keep.join(name).is_file(), "--keep wrote {name}");
    }
    let measured: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(keep.join("measured.json")).unwrap()).unwrap();
    schema_support::assert_valid("results", &measured);
    assert_eq!(measured["kind"], "tasks");
}

#[test]
fn an_impossible_tolerance_disagrees_with_exit_1_and_says_why() {
    rtvirt_testkit::require_root!();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "light.toml", LIGHT);
    let plan = plan(dir.path(), &scenario);
    // p99 exactly equal (ratio 1, no slack) from 1 job on: a real run never matches to the ns
    let o = run(rtvirt(&[
        "verify",
        scenario.to_str().unwrap(),
        "--plan",
        plan.to_str().unwrap(),
        "--duration",
        "1s",
        "--tolerance",
        "p99=1,slack=0s,jobs=1",
    ]));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("DISAGREE") && out.contains("g/t: p99 response time"), "{out}");
    assert!(out.contains("tolerance: DSR within 3 pp; p99 response time within x1"), "{out}");
}

#[test]
fn bad_input_is_located_and_exits_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "light.toml", LIGHT);
    let sc = scenario.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--tolerance", "dsr=200"], "--tolerance dsr"),
        (vec!["--tolerance", "speed=2"], "--tolerance speed"),
        (vec!["--rho", "1.5"], "--rho"),
        (vec!["--duration", "0s"], "--duration"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["verify", sc];
        args.extend(extra.iter());
        let o = run(rtvirt(&args));
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(expected), "{extra:?}: {}", text(&o));
    }
    // a host model of another schema: the file and the field
    let wrong = write(dir.path(), "wrong.json", r#"{"schema":"rtvirt.plan/v1"}"#);
    let o = run(rtvirt(&["verify", sc, "--host-model", wrong.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("wrong.json") && err.contains("schema") && err.contains("rtvirt.hostmodel/v1"), "{err}");
    // a plan that is not JSON: the file and its line
    let bad = write(dir.path(), "bad.json", "{\n  \"schema\": \"rtvirt.plan/v1\",\n  oops\n}\n");
    let o = run(rtvirt(&["verify", sc, "--plan", bad.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.json:line 3"), "{err}");
    // a plan made for another scenario: names the guest it lacks
    let other = write(dir.path(), "other.toml", &LIGHT.replace("name = \"g\"", "name = \"h\""));
    let other_plan = plan(dir.path(), &other);
    let o = run(rtvirt(&["verify", sc, "--plan", other_plan.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("plan.json") && err.contains('g'), "{err}");
    // a scenario with an error: its line
    let broken = write(dir.path(), "broken.toml", &LIGHT.replace("period = \"50ms\"", "period = \"fast\""));
    let o = run(rtvirt(&["verify", broken.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("broken.toml:line 9"), "{}", text(&o));
}

/// Ctrl-C in the middle: exit 130, the part that ran compared with the simulation of as long a
/// horizon (same job counts), marked interrupted, and the host's cpusets restored.
#[test]
fn ctrl_c_compares_the_part_that_ran_and_restores_the_host() {
    rtvirt_testkit::require_root!();
    let _g = serial();
    let before = host_support::cpuset_state();
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "light.toml", LIGHT);
    let plan = plan(dir.path(), &scenario);
    let child = rtvirt(&[
        "verify",
        scenario.to_str().unwrap(),
        "--plan",
        plan.to_str().unwrap(),
        "--duration",
        "20s",
        "--format",
        "json",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let start = std::time::Instant::now();
    while !host_support::deadline_thread_in_a_child_of(child.id()) && start.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    schema_support::assert_valid("verify", &v);
    assert_eq!(v["interrupted"], true);
    assert!(v["measured_duration_ns"].as_u64().unwrap() < 20_000_000_000, "{v}");
    let task = &v["tasks"][0];
    let (predicted, measured) =
        (task["predicted"]["jobs"].as_u64().unwrap(), task["measured"]["jobs"].as_u64().unwrap());
    // over the same ~1.5 s (about 30 jobs of 50 ms; the whole 20 s would be 400): a job in flight
    // at the stop is not measured, and the driver notices the interrupt up to a 20 ms poll later
    // than the workers stop releasing (a fresh-clone run under load measured 28 against 30)
    assert!(predicted.abs_diff(measured) <= 2, "compared over the same time: {predicted} and {measured} jobs");
    assert!((10..=200).contains(&predicted), "about 1.5 s of 50 ms jobs, not the whole 20 s: {predicted}");
    assert_eq!(host_support::cpuset_state(), before, "cpusets restored");
}
