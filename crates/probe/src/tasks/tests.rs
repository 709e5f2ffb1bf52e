use super::*;
use rtvirt_model::plan::{CorePlan, GuestPlan, PLAN_SCHEMA};

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
        }],
        cores: vec![CorePlan { id: core, guests: vec!["g".into()], bandwidth: budget_ns as f64 / 5e6 }],
        unplaced: vec![],
        settings: Default::default(),
    }
}

fn run_with(budget_ns: u64) -> Results {
    let _g = crate::TEST_CPUSETS.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scenario::from_toml(SCENARIO, None).unwrap();
    run(&s, &plan(budget_ns), &TasksConfig { duration: Nanos::from_ms(1500), seed: 3, force: false }).unwrap()
}

#[test]
fn enough_budget_meets_deadlines_and_starvation_misses_them() {
    if !rt::is_root() {
        return;
    }
    // Utilisation at WCET: 0.2 + 0.2 = 0.4. A 70% reservation leaves room for noise.
    let good = run_with(3_500_000);
    assert_eq!(good.tasks.len(), 2);
    let a = &good.tasks[0];
    assert!((140..=151).contains(&a.jobs), "{a:?}");
    assert!(good.extra["dsr"].as_f64().unwrap() > 0.9, "{:?}", good.tasks);
    assert!(a.response_ns.min >= 1_000_000, "a job of 2 ms of work cannot finish sooner: {:?}", a.response_ns);
    let util = good.guests[0].utilisation;
    assert!(util > 0.2 && util < 0.75, "vCPU used {util}");
    // A 10% reservation cannot carry 25-40% of work: the backlog grows and deadlines are missed.
    let starved = run_with(500_000);
    assert!(starved.extra["dsr"].as_f64().unwrap() < 0.6, "{:?}", starved.tasks);
    assert!(starved.guests[0].utilisation < 0.2, "the reservation caps the vCPU: {}", starved.guests[0].utilisation);
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
