use super::*;
use crate::rt;
use rtvirt_model::exec::ExecModel;
use rtvirt_model::plan::{CorePlan, GuestPlan, PLAN_SCHEMA};
use std::sync::atomic::{AtomicBool, Ordering};

const SCENARIO: &str = r#"
name = "probe-test"
[host]
cores = 2
[[guest]]
name = "g"
scheduler = "edf"
[[guest.task]]
name = "a"
period = "10ms"
wcet = "2ms"
[[guest.task]]
name = "b"
period = "20ms"
wcet = "4ms"
exec = { dist = "uniform", min = "1ms", max = "4ms" }
"#;

/// A plan giving guest "g" `budget` every 5 ms on the last CPU.
fn plan(budget_ns: u64) -> Plan {
    let core = *crate::cpus::allowed().last().unwrap();
    Plan {
        schema: PLAN_SCHEMA.into(),
        feasible: true,
        cores_used: 1,
        max_rho: None,
        guests: vec![GuestPlan {
            name: "g".into(),
            scheduler: "edf".into(),
            model: "prm".into(),
            period_ns: 5_000_000,
            budget_ns,
            deadline_ns: 5_000_000,
            bandwidth: budget_ns as f64 / 5e6,
            core: Some(core),
            tasks: vec![],
            overhead_free: None,
            placement: Default::default(),
            vcpus: vec![],
        }],
        cores: vec![CorePlan { id: core, guests: vec!["g".into()], bandwidth: budget_ns as f64 / 5e6, why: None }],
        unplaced: vec![],
        settings: Default::default(),
        needs: vec![],
    }
}

/// Environment variable telling this test binary, re-executed, to be a guest worker.
const TEST_WORKER_VAR: &str = "RTVIRT_PROBE_TEST_WORKER";

/// The guest worker when this test binary is started by [`use_this_binary_as_worker`].
#[test]
fn worker_process_entry() {
    if std::env::var_os(TEST_WORKER_VAR).is_some() {
        std::process::exit(worker::worker_main());
    }
}

/// Workers are this test binary running only [`worker_process_entry`].
fn use_this_binary_as_worker() {
    worker::set_worker_command(worker::WorkerCommand {
        program: std::env::current_exe().unwrap(),
        args: ["tasks::tests::worker_process_entry", "--exact", "--nocapture", "--test-threads=1"]
            .map(String::from)
            .to_vec(),
        env: vec![(TEST_WORKER_VAR.into(), "1".into())],
    });
}

fn run_with(budget_ns: u64) -> Results {
    let _g = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
    use_this_binary_as_worker();
    let s = Scenario::from_toml(SCENARIO, None).unwrap();
    let window = Some(Nanos::from_ms(500));
    run(
        &s,
        &plan(budget_ns),
        &TasksConfig { duration: Nanos::from_ms(1500), seed: 3, window, ..TasksConfig::default() },
    )
    .unwrap()
}

#[test]
fn enough_budget_meets_deadlines_and_starvation_misses_them() {
    rtvirt_testkit::require_root!();
    // Utilisation at WCET: 0.2 + 0.2 = 0.4. A 70% reservation leaves room for noise.
    let good = run_with(3_500_000);
    assert_eq!(good.tasks.len(), 2);
    let a = &good.tasks[0];
    assert!((140..=151).contains(&a.jobs), "{a:?}");
    assert!(good.task_totals.as_ref().unwrap().dsr.unwrap() > 0.9, "{:?}", good.tasks);
    assert!(a.response_ns.min >= 1_000_000, "a job of 2 ms of work cannot finish sooner: {:?}", a.response_ns);
    let util = good.guests[0].utilisation;
    assert!(util > 0.2 && util < 0.75, "vCPU used {util}");
    // A 10% reservation cannot carry 25-40% of work: the backlog grows and deadlines are missed.
    let starved = run_with(500_000);
    assert!(starved.task_totals.as_ref().unwrap().dsr.unwrap() < 0.6, "{:?}", starved.tasks);
    assert!(starved.guests[0].utilisation < 0.2, "the reservation caps the vCPU: {}", starved.guests[0].utilisation);
    // Three windows of 500 ms whose jobs and misses add up to the run's, per task.
    for r in [&good, &starved] {
        let windows = r.intervals.as_ref().expect("report windows");
        assert_eq!(windows.len(), 3, "{windows:?}");
        for (i, t) in r.tasks.iter().enumerate() {
            let per: Vec<(u64, u64)> =
                windows.iter().map(|w| w.tasks.as_ref().map(|ts| (ts[i].jobs, ts[i].misses)).unwrap()).collect();
            assert_eq!(per.iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)), (t.jobs, t.misses), "{t:?}: {per:?}");
            assert!(per.iter().all(|&(jobs, _)| jobs > 0), "jobs are released in every window: {per:?}");
        }
    }
    // Every task's work ran on the guest's one planned core.
    assert!(good.tasks.iter().all(|t| t.cpus == Some(vec![good.guests[0].core.unwrap()])), "{:?}", good.tasks);
    // The guest ran in its own process.
    let pid = good.guests[0].worker_pid.unwrap();
    assert_ne!(pid, std::process::id());
}

#[test]
fn guest_spec_carries_every_execution_model() {
    let text = SCENARIO.replace(
        "exec = { dist = \"uniform\", min = \"1ms\", max = \"4ms\" }",
        "exec = { dist = \"normal\", mean = \"2ms\", sd = \"1ms\" }",
    );
    let s = Scenario::from_toml(&text, None).unwrap();
    let spec = protocol::GuestSpec::of(&s.guests[0]);
    let back: protocol::GuestSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
    for (t, b) in s.guests[0].tasks.iter().zip(&back.tasks) {
        assert_eq!(t.exec, b.exec.model());
        assert_eq!(
            (t.period.0, t.deadline.0, t.wcet.0, t.offset.0, t.priority),
            (b.period_ns, b.deadline_ns, b.wcet_ns, b.offset_ns, b.priority)
        );
    }
    assert_eq!(back.scheduler(), s.guests[0].scheduler);
    let samples = ExecModel::Samples(rtvirt_model::exec::Samples {
        path: "x.txt".into(),
        sorted_ns: std::sync::Arc::new(vec![1, 2, 3]),
    });
    let back: protocol::ExecSpec =
        serde_json::from_str(&serde_json::to_string(&protocol::ExecSpec::of(&samples)).unwrap()).unwrap();
    assert_eq!(back.model(), samples);
}

#[test]
fn plan_errors_are_input_errors() {
    let s = Scenario::from_toml(SCENARIO, None).unwrap();
    let mut p = plan(1_000_000);
    p.guests[0].core = Some(999);
    assert!(matches!(run(&s, &p, &TasksConfig::default()), Err(Error::Input(_))));
    p.guests[0].core = None;
    let e = run(&s, &p, &TasksConfig::default()).unwrap_err();
    assert!(e.to_string().contains("not placed"), "{e}");
    p.guests[0].name = "other".into();
    assert!(matches!(run(&s, &p, &TasksConfig::default()), Err(Error::Input(_))));
}

/// A guest idle until a release an hour away (period 1 h) sleeps in bounded stretches: a stop
/// ends its run at once, not at the release or the end.
#[test]
fn an_idle_guest_stops_at_once() {
    let text = SCENARIO
        .replace("period = \"10ms\"\nwcet = \"2ms\"", "period = \"60min\"\noffset = \"30min\"\nwcet = \"2ms\"")
        .replace(
            "period = \"20ms\"\nwcet = \"4ms\"\nexec = { dist = \"uniform\", min = \"1ms\", max = \"4ms\" }",
            "period = \"60min\"\noffset = \"40min\"\nwcet = \"4ms\"",
        );
    let s = Scenario::from_toml(&text, None).unwrap();
    let spec = protocol::GuestSpec::of(&s.guests[0]);
    let stop = AtomicBool::new(false);
    let start = rt::now_ns();
    let run = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(200));
            stop.store(true, Ordering::SeqCst);
        });
        super::guest::run_tasks(&spec, None, 1.0, 1, (start, start + 3_600_000_000_000), &stop)
    });
    let took = rt::now_ns() - start;
    assert!(took < 1_000_000_000, "stopped after {took} ns");
    assert!(run.tasks.iter().all(|o| o.jobs == 0), "nothing was due");
    assert!(run.ran_ns > 0 && run.ran_ns <= took, "{} of {took} ns", run.ran_ns);
    let utilisation = run.utilisation();
    assert!((0.0..=1.0).contains(&utilisation), "an idle guest's vCPU used {utilisation} of a core");
}

/// The names the guest agent receives while `run` runs the first three tasks of a guest "g"
/// (periods 5 ms, 100 us each) for 300 ms, unprivileged (no reservation).
fn agent_names(
    run: impl FnOnce(&protocol::GuestSpec, Option<&crate::agent::jobs::JobReporter>, f64, (u64, u64)),
) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.sock");
    let listener = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut text = "[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\n".to_string();
    for name in ["a", "b", "c"] {
        text += &format!("[[guest.task]]\nname = \"{name}\"\nperiod = \"5ms\"\nwcet = \"100us\"\n");
    }
    let s = Scenario::from_toml(&text, None).unwrap();
    let spec = protocol::GuestSpec::of(&s.guests[0]);
    let agent = crate::agent::jobs::JobReporter::to(&path);
    assert!(agent.is_some());
    let start = rt::now_ns();
    run(&spec, agent.as_ref(), super::work::calibrate(), (start, start + 300_000_000));
    let mut names = vec![];
    let mut buf = [0u8; 512];
    while let Ok(n) = listener.recv(&mut buf) {
        let line = String::from_utf8_lossy(&buf[..n]).into_owned();
        names.push(line.split_whitespace().next().unwrap_or_default().to_string());
    }
    names.sort();
    names.dedup();
    names
}

/// Issue 17: a vCPU of a partitioned guest of several runs a subset of the guest's tasks and
/// reports their jobs to the guest agent under their numbers in the whole guest (`g.t1`, `g.t2`
/// for its tasks 1 and 2; the numbers used to restart at `g.t0` on every vCPU); a global guest's
/// vCPU reports its jobs too, under the same names.
#[test]
fn the_agent_learns_tasks_by_their_number_in_the_whole_guest() {
    let stop = AtomicBool::new(false);
    let subset = agent_names(|spec, agent, per_ns, window| {
        super::guest::run_tasks(&spec.subset(&[1, 2]), agent, per_ns, 1, window, &stop);
    });
    assert_eq!(subset, ["g.t1", "g.t2"]);
    let global = agent_names(|spec, agent, per_ns, window| {
        let shared = super::global::Shared::new(spec.clone(), 1);
        super::global::run_vcpu(&shared, (0, 1), agent, per_ns, window, &stop);
    });
    assert_eq!(global, ["g.t0", "g.t1", "g.t2"]);
}
