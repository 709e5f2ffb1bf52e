//! `rtvirt measure tasks` of a guest of several vCPUs from a per-vCPU plan: one worker thread per
//! reserved vCPU, each under its planned SCHED_DEADLINE reservation on its planned core in its own
//! exclusive cpuset (read back while the run is under way), every task producing jobs on the vCPU
//! the plan lists it on, or, in a global guest, on the vCPU threads sharing them; plans without
//! per-vCPU servers refused (exit 2).

mod host_support;
mod schema_support;

use rtvirt_os::{procfs, sched};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

/// A two-vCPU partitioned guest (one task bound to each vCPU, one placed by the planner) beside a
/// guest of one vCPU, on two cores.
const PARTITIONED: &str = r#"name = "two-vcpus"
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
name = "solo"
scheduler = "fp"
server_periods = ["5ms"]
[[guest.task]]
name = "t"
period = "20ms"
wcet = "1ms"
"#;

/// The scenario and its plan (JSON) written into `dir`; the plan parsed.
fn planned(dir: &Path, scenario: &str) -> (String, String, Value) {
    let sc = dir.join("scenario.toml");
    std::fs::write(&sc, scenario).unwrap();
    let out = rtvirt(&["plan", sc.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan = dir.join("plan.json");
    std::fs::write(&plan, &out.stdout).unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap();
    (sc.to_str().unwrap().into(), plan.to_str().unwrap().into(), v)
}

/// (runtime, deadline, period, core) of every reserved vCPU of the plan, sorted.
fn planned_reservations(plan: &Value) -> Vec<(u64, u64, u64, u32)> {
    let mut out = Vec::new();
    for g in plan["guests"].as_array().unwrap() {
        let one = vec![g.clone()];
        let vcpus = g["vcpus"].as_array().unwrap_or(&one);
        for v in vcpus.iter().filter(|v| v["model"] != "none") {
            let n = |k: &str| v[k].as_u64().unwrap();
            out.push((n("budget_ns"), n("deadline_ns"), n("period_ns"), n("core") as u32));
        }
    }
    out.sort();
    out
}

/// The SCHED_DEADLINE threads of the children of `parent`: (runtime, deadline, period, the one
/// CPU they may run on, their cpuset cgroup), sorted.
fn deadline_threads_of_children(parent: u32) -> Vec<(u64, u64, u64, u32, String)> {
    let children = procfs::pids().into_iter().filter(|&c| procfs::stat(c).is_ok_and(|s| s.ppid == parent));
    let mut out: Vec<_> = children
        .flat_map(procfs::tids)
        .filter_map(|t| {
            let a = sched::get(t).ok().filter(|a| a.is_deadline())?;
            let cpus = sched::get_affinity(t).ok()?;
            let cgroup = procfs::read_opt(format!("/proc/{t}/cgroup")).unwrap_or_default();
            let cpuset =
                cgroup.lines().find(|l| l.contains("cpuset") || l.starts_with("0::")).unwrap_or("").to_string();
            (cpus.len() == 1).then(|| (a.runtime_ns, a.deadline_ns, a.period_ns, cpus.iter().next().unwrap(), cpuset))
        })
        .collect();
    out.sort();
    out
}

/// Run `measure tasks` for 3 s; while it runs, its worker threads under SCHED_DEADLINE must be
/// `want` (parameters and core), each core's in a cpuset of its own. The results document.
fn run_reading_back(sc: &str, plan_file: &str, want: &[(u64, u64, u64, u32)]) -> Value {
    let child = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["measure", "tasks", sc, "--plan", plan_file, "--duration", "3s", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < Duration::from_secs(40) {
        seen = deadline_threads_of_children(child.id());
        if seen.len() == want.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let got: Vec<(u64, u64, u64, u32)> = seen.iter().map(|s| (s.0, s.1, s.2, s.3)).collect();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(got, want, "worker threads while running (stderr: {stderr})");
    let cores: std::collections::BTreeSet<u32> = seen.iter().map(|s| s.3).collect();
    let cpusets: std::collections::BTreeSet<&str> = seen.iter().map(|s| s.4.as_str()).collect();
    assert_eq!(cpusets.len(), cores.len(), "one exclusive cpuset per core: {seen:?}");
    // exit 1: a deadline missed under WCET budgets - the machine is noisy, so not asserted here
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("results", &r);
    r
}

#[test]
fn each_vcpu_runs_its_tasks_under_its_planned_reservation_on_its_core() {
    rtvirt_testkit::require_root!();
    rtvirt_testkit::skip_unless!(host_support::last_cpu() >= 1, "needs a second CPU");
    let _serial = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    let (sc, plan_file, plan) = planned(dir.path(), PARTITIONED);
    let duo = &plan["guests"][0];
    let cores: Vec<u64> = duo["vcpus"].as_array().unwrap().iter().map(|v| v["core"].as_u64().unwrap()).collect();
    assert_eq!(cores.len(), 2, "{duo}");
    assert_ne!(cores[0], cores[1], "a guest's vCPUs on distinct cores: {duo}");
    let want = planned_reservations(&plan);
    assert_eq!(want.len(), 3, "two vCPU servers and one guest server: {plan}");
    let before = host_support::cpuset_state();
    let r = run_reading_back(&sc, &plan_file, &want);
    let tasks = r["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    for t in tasks {
        assert!(t["jobs"].as_u64().unwrap() > 0, "every task ran jobs: {t}");
    }
    let guests = r["guests"].as_array().unwrap();
    let vcpus = guests[0]["vcpus"].as_array().expect("per-vCPU results of the two-vCPU guest");
    assert!(guests[1].get("vcpus").is_none(), "a guest of one vCPU reports as before: {}", guests[1]);
    let planned_vcpus = duo["vcpus"].as_array().unwrap();
    for (v, p) in vcpus.iter().zip(planned_vcpus) {
        assert_eq!((&v["id"], &v["core"]), (&p["id"], &p["core"]));
        assert_eq!(v["reservation"]["runtime_ns"], p["budget_ns"]);
        assert_eq!(v["reservation"]["period_ns"], p["period_ns"]);
        assert_eq!(v["tasks"], p["tasks"], "each vCPU ran the tasks the plan lists on it");
        assert!(v["cpu_time_ns"].as_u64().unwrap() > 0, "{v}");
        let u = v["utilisation"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&u), "{v}");
    }
    assert_eq!(host_support::cpuset_state(), before, "no cpuset of the run is left");
}

#[test]
fn single_reservation_plans_and_unlisted_tasks_are_refused_naming_the_guest() {
    let dir = tempfile::tempdir().unwrap();
    // a plan giving the two-vCPU guest one reservation (no `vcpus`)
    let (sc, plan, mut v) = planned(dir.path(), PARTITIONED);
    v["guests"][0].as_object_mut().unwrap().remove("vcpus");
    std::fs::write(&plan, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = rtvirt(&["measure", "tasks", &sc, "--plan", &plan, "--duration", "1s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("\"duo\"") && stderr.contains("one server per vCPU"), "{stderr}");

    // a task the plan lists on no vCPU
    let (sc, plan, mut v) = planned(dir.path(), PARTITIONED);
    let listed = v["guests"][0]["vcpus"][0]["tasks"].as_array_mut().unwrap();
    listed.retain(|t| t != "a");
    std::fs::write(&plan, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = rtvirt(&["measure", "tasks", &sc, "--plan", &plan, "--duration", "1s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("plan.guests[0].vcpus") && stderr.contains("task \"a\""), "{stderr}");
}

/// A global-EDF guest of two vCPUs: its MPR interface's two servers are two worker threads on two
/// cores sharing the guest's tasks; both run jobs (all three tasks are released together at the
/// start and every 10 ms, so both vCPUs take work).
#[test]
fn a_global_guest_runs_its_tasks_on_vcpu_threads_sharing_them() {
    rtvirt_testkit::require_root!();
    rtvirt_testkit::skip_unless!(host_support::last_cpu() >= 1, "needs a second CPU");
    let _serial = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    let global = PARTITIONED
        .replace("vcpus = 2\n", "vcpus = 2\nplacement = \"global\"\n")
        .replace("vcpu = 0\n", "")
        .replace("vcpu = 1\n", "");
    let (sc, plan_file, plan) = planned(dir.path(), &global);
    assert_eq!(plan["guests"][0]["placement"], "global", "{plan}");
    let want = planned_reservations(&plan);
    assert_eq!(want.len(), 3, "two vCPU servers and one guest server: {plan}");
    let before = host_support::cpuset_state();
    let r = run_reading_back(&sc, &plan_file, &want);
    for t in r["tasks"].as_array().unwrap() {
        assert!(t["jobs"].as_u64().unwrap() > 0, "every task ran jobs: {t}");
    }
    let vcpus = r["guests"][0]["vcpus"].as_array().expect("per-vCPU results");
    assert_eq!(vcpus.len(), 2);
    for v in vcpus {
        assert_eq!(v["tasks"], serde_json::json!(["a", "b", "c"]), "a global guest's vCPUs share every task");
        assert!(v["cpu_time_ns"].as_u64().unwrap() > 10_000_000, "each vCPU ran jobs: {v}");
    }
    assert_eq!(host_support::cpuset_state(), before, "no cpuset of the run is left");
}
