//! Cross-check against SimSo 0.8.5 (the venv made by scripts/setup.sh): random task sets with
//! integer-microsecond parameters (half of the tasks with a constrained deadline and an offset)
//! and constant execution times, EDF and RM, one guest alone on a dedicated core under
//! SCHED_FIFO 99 without RT throttling (the host never preempts it), with and without
//! abort-on-miss. Every job's release and completion (or abort) must be equal, and so must the
//! reported per-task jobs, misses and response times (mean and max).

use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn simso_runs(seed: u64, sets: u32, horizon_ms: u64) -> Vec<Value> {
    let root = workspace_root();
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "SimSo venv missing: {} does not exist. Run `scripts/setup.sh test` (creates .venv with SimPy 2.3.1 + simso \
         0.8.5).",
        python.display()
    );
    let out = Command::new(&python)
        .arg(root.join("experiments/simso_crosscheck.py"))
        .args(["check", &seed.to_string(), &sets.to_string(), &horizon_ms.to_string()])
        .output()
        .expect("run experiments/simso_crosscheck.py");
    assert!(out.status.success(), "SimSo script failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("SimSo script prints JSON")
}

fn scenario(run: &Value) -> String {
    let mut s = format!(
        "[host]\ncores = 1\n[sim]\nrt_throttling = false\nmiss_policy = \"{}\"\n[[guest]]\nname = \"vm1\"\nscheduler = \
         \"{}\"\n[guest.vcpu]\ncore = 0\npolicy = \"fifo\"\npriority = 99\n",
        if run["abort"].as_bool().unwrap() { "abort" } else { "continue" },
        run["scheduler"].as_str().unwrap()
    );
    let tasks = run["tasks"].as_array().unwrap();
    let fp = run["scheduler"] == "fp";
    for (i, t) in tasks.iter().enumerate() {
        s += &format!(
            "[[guest.task]]\nname = \"t{i}\"\nperiod = \"{}us\"\ndeadline = \"{}us\"\nwcet = \"{}us\"\noffset = \
             \"{}us\"\n",
            t["period_us"], t["deadline_us"], t["wcet_us"], t["offset_us"]
        );
        if fp {
            // SimSo's RM_mono: rate monotonic (shorter period = more urgent; periods are distinct).
            let longer = tasks.iter().filter(|u| u["period_us"].as_u64() > t["period_us"].as_u64()).count();
            s += &format!("priority = {}\n", longer + 1);
        }
    }
    s
}

/// (task, release_us, Some(end_us) | None for aborted) of every finished or aborted job.
type Job = (u64, u64, Option<u64>);

fn simso_jobs(run: &Value, horizon_us: u64) -> BTreeSet<Job> {
    run["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| {
            let (task, release) = (j[0].as_u64().unwrap(), j[1].as_u64().unwrap());
            let aborted = j[3].as_bool().unwrap();
            match j[2].as_u64() {
                _ if aborted => Some((task, release, None)),
                Some(end) if end <= horizon_us => Some((task, release, Some(end))),
                _ => None,
            }
        })
        .filter(|j| j.1 < horizon_us)
        .collect()
}

fn rtvirt_run(src: &str, horizon_us: u64) -> (BTreeSet<Job>, Results) {
    let s = Scenario::from_toml(src, None).unwrap();
    let cfg = SimConfig::new(
        &s,
        None,
        Overrides { duration: Some(rtvirt_model::Nanos::from_us(horizon_us)), seed: Some(1), ..Default::default() },
    )
    .unwrap();
    let out = simulate(&s, &cfg, &RunOptions { job_log: true, ..Default::default() });
    let jobs = out
        .job_log
        .iter()
        .map(|j| (j.task as u64, j.release / 1000, j.end.map(|e| e / 1000)))
        .filter(|j| j.1 < horizon_us)
        .collect();
    (jobs, out.results)
}

/// What rtvirt must report per task, derived from SimSo's job list by rtvirt's counting rule
/// (docs/simulate.md): a job counts when it completes (a miss if late), is aborted (a miss), or
/// is still pending at the end with its deadline passed (a miss without a response time).
/// Returns (jobs, misses, sum and max of the response times in us).
fn expected_report(run: &Value, task: u64) -> (u64, u64, u64, u64) {
    let horizon = run["horizon_us"].as_u64().unwrap();
    let d = run["tasks"][task as usize]["deadline_us"].as_u64().unwrap();
    let (mut jobs, mut misses, mut sum, mut max) = (0, 0, 0, 0);
    for j in run["jobs"].as_array().unwrap().iter().filter(|j| j[0].as_u64() == Some(task)) {
        let release = j[1].as_u64().unwrap();
        match (j[2].as_u64().filter(|&e| e <= horizon), j[3].as_bool().unwrap()) {
            (_, true) => (jobs, misses) = (jobs + 1, misses + 1),
            (Some(end), false) => {
                let r = end - release;
                (jobs, misses, sum, max) = (jobs + 1, misses + (r > d) as u64, sum + r, max.max(r));
            }
            (None, false) if release + d <= horizon => (jobs, misses) = (jobs + 1, misses + 1),
            (None, false) => {}
        }
    }
    (jobs, misses, sum, max)
}

#[test]
fn jobs_equal_simso_edf_and_rm() {
    let runs = simso_runs(20261122, 8, 1000);
    let mut misses_seen = 0;
    for run in &runs {
        let horizon = run["horizon_us"].as_u64().unwrap();
        let src = scenario(run);
        let expected = simso_jobs(run, horizon);
        let (got, results) = rtvirt_run(&src, horizon);
        // the reported statistics, not only the job log
        for (i, t) in results.tasks.iter().enumerate() {
            let (jobs, misses, sum, max) = expected_report(run, i as u64);
            let completed = t.response_ns.count;
            let got = (
                t.jobs,
                t.misses,
                (t.response_ns.mean * completed as f64 / 1000.0).round() as u64,
                t.response_ns.max / 1000,
            );
            assert_eq!(
                got,
                (jobs, misses, sum, max),
                "set {} {} abort={} task {i}: (jobs, misses, sum and max of responses in us)\n{src}",
                run["set"],
                run["scheduler"],
                run["abort"]
            );
        }
        let missed = expected.iter().filter(|(t, r, e)| {
            let d = run["tasks"][*t as usize]["deadline_us"].as_u64().unwrap();
            e.is_none_or(|e| e - r > d)
        });
        misses_seen += missed.count();
        let only_simso: Vec<_> = expected.difference(&got).take(5).collect();
        let only_rtvirt: Vec<_> = got.difference(&expected).take(5).collect();
        assert!(
            only_simso.is_empty() && only_rtvirt.is_empty(),
            "set {} {} abort={}: {} jobs in SimSo, {} in rtvirt; only SimSo: {only_simso:?}; only rtvirt: \
             {only_rtvirt:?}\n{src}",
            run["set"],
            run["scheduler"],
            run["abort"],
            expected.len(),
            got.len()
        );
    }
    assert!(misses_seen > 0, "the random sets should include overloads with deadline misses");
}
