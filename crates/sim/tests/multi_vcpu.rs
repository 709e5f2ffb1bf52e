//! Partitioned multi-vCPU guests: each vCPU is a uniprocessor with its own scheduler, so a guest
//! whose tasks are split over N vCPUs gives, task by task, what N single-vCPU guests holding the
//! same pieces give (same jobs, misses and response times), whatever the host policy.

use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_sim::config::{GuestThreads, ThreadSpec};
use rtvirt_sim::engine::rng::SimRng;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};

const PERIODS_US: [u64; 5] = [2_000, 4_000, 5_000, 8_000, 10_000];

struct Task {
    period: u64,
    wcet: u64,
    vcpu: u32,
    /// Unique over the guest (fixed-priority guests).
    prio: u32,
}

fn guest(name: &str, sched: &str, vcpu: &str, tasks: &[&Task]) -> String {
    let mut s = format!("[[guest]]\nname = \"{name}\"\nscheduler = \"{sched}\"\n{vcpu}\n");
    for (i, t) in tasks.iter().enumerate() {
        s += &format!("[[guest.task]]\nname = \"t{i}\"\nperiod = \"{}us\"\nwcet = \"{}us\"\n", t.period, t.wcet);
        if sched == "fp" {
            s += &format!("priority = {}\n", t.prio);
        }
    }
    s
}

fn vcpu_section(core: u32, policy: &str) -> String {
    format!("[guest.vcpu]\ncore = {core}\n{policy}\n")
}

fn config(s: &Scenario) -> SimConfig {
    SimConfig::new(s, None, Overrides { duration: Some(Nanos::from_secs(1)), seed: Some(3), ..Default::default() })
        .unwrap()
}

/// (jobs, misses, max response) per task, in task order.
fn per_task(s: &Scenario, cfg: &SimConfig) -> Vec<(u64, u64, u64)> {
    let r = simulate(s, cfg, &RunOptions::default()).results;
    r.tasks.iter().map(|t| (t.jobs, t.misses, t.response_ns.max)).collect()
}

#[test]
fn a_partitioned_guest_equals_its_single_vcpu_pieces() {
    let mut rng = SimRng::new(1818, 0);
    let policies = [
        "policy = \"deadline\"\nruntime = \"1ms\"\nperiod = \"2ms\"",
        "policy = \"supply\"\nbudget = \"3ms\"\nperiod = \"5ms\"\nsupply = \"prm-worst\"",
        "policy = \"fifo\"\npriority = 50",
    ];
    for case in 0..12 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let vcpus = 2 + case % 2;
        let tasks: Vec<Task> = (0..rng.uniform(3, 6))
            .map(|i| {
                let period = PERIODS_US[rng.uniform(0, 4) as usize];
                let vcpu = rng.uniform(0, vcpus as u64 - 1) as u32;
                Task { period, wcet: rng.uniform(50, period / 4), vcpu, prio: 100 - i as u32 }
            })
            .collect();
        // the pieces: one single-vCPU guest per used vCPU, each on its own core and policy
        let mut pieces = format!("[host]\ncores = {vcpus}\n");
        let mut order: Vec<(u32, &Task)> = Vec::new();
        for k in 0..vcpus as u32 {
            let mine: Vec<&Task> = tasks.iter().filter(|t| t.vcpu == k).collect();
            if mine.is_empty() {
                continue;
            }
            let policy = policies[(case + k as usize) % policies.len()];
            let slot = pieces.matches("[[guest]]").count() as u32;
            pieces += &guest(&format!("p{k}"), sched, &vcpu_section(k, policy), &mine);
            order.extend(mine.into_iter().map(|t| (slot, t)));
        }
        let pieces = Scenario::from_toml(&pieces, None).unwrap();
        // the whole: one guest with every task (in piece order), its vCPU k on piece k's thread
        let all: Vec<&Task> = order.iter().map(|o| o.1).collect();
        let whole =
            Scenario::from_toml(&format!("[host]\ncores = {vcpus}\n{}", guest("g", sched, "", &all)), None).unwrap();
        let piece_cfg = config(&pieces);
        let mut cfg = config(&whole);
        let threads: Vec<ThreadSpec> = piece_cfg.guest_vcpus.iter().map(|g| g.threads[0].clone()).collect();
        let task_vcpu = Some(order.iter().map(|o| o.0).collect());
        cfg.guest_vcpus = vec![GuestThreads { rt: vec![true; threads.len()], threads, task_vcpu }];
        let want = per_task(&pieces, &piece_cfg);
        assert!(want.iter().map(|w| w.0).sum::<u64>() > 0);
        assert_eq!(per_task(&whole, &cfg), want, "case {case} ({sched}, {vcpus} vCPUs)");
    }
}

const DEADLINE_VCPU: &str = "[guest.vcpu]\npolicy = \"deadline\"\nruntime = \"1ms\"\nperiod = \"2ms\"\n";

fn named_task(name: &str, period_ms: u64, vcpu: Option<u32>) -> String {
    let bound = vcpu.map(|v| format!("vcpu = {v}\n")).unwrap_or_default();
    format!("[[guest.task]]\nname = \"{name}\"\nperiod = \"{period_ms}ms\"\nwcet = \"1ms\"\n{bound}")
}

/// Per task name: (jobs, misses, max response).
fn by_name(s: &Scenario) -> std::collections::BTreeMap<String, (u64, u64, u64)> {
    let r = simulate(s, &config(s), &RunOptions::default()).results;
    r.tasks.iter().map(|t| (t.name.clone(), (t.jobs, t.misses, t.response_ns.max))).collect()
}

/// `rtvirt simulate` without a plan runs a scenario's multi-vCPU guest from its own settings:
/// one thread per vCPU from `[guest.vcpu]` (vCPU k on core k by default), a bound task on its
/// vCPU, an unbound one on the real-time vCPU with the least WCET utilisation so far, nothing on
/// the housekeeping vCPU. The result equals single-vCPU guests holding those pieces.
#[test]
fn a_scenario_guest_runs_its_tasks_on_its_own_vcpu_threads() {
    // a (0.25) bound to vCPU 1; b (0.2) -> vCPU 0; c (0.1) -> vCPU 0 (0.2 < 0.25); d -> vCPU 1
    let tasks = [("a", 4, Some(1)), ("b", 5, None), ("c", 10, None), ("d", 8, None)];
    let mut whole = format!("[host]\ncores = 3\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 3\nhousekeeping = [2]\n{DEADLINE_VCPU}");
    for (name, period, vcpu) in tasks {
        whole += &named_task(name, period, vcpu);
    }
    let whole = Scenario::from_toml(&whole, None).unwrap();
    let cfg = config(&whole);
    assert_eq!(cfg.guest_vcpus[0].task_vcpu, Some(vec![1, 0, 0, 1]));
    assert_eq!(cfg.guest_vcpus[0].rt, vec![true, true, false]);
    let cores: Vec<Vec<u32>> = cfg.guest_vcpus[0].threads.iter().map(|t| t.cores.clone()).collect();
    assert_eq!(cores, vec![vec![0], vec![1], vec![2]]);
    let mut pieces = "[host]\ncores = 3\n".to_string();
    for (k, names) in [(0, ["b", "c"]), (1, ["a", "d"])] {
        pieces += &format!("[[guest]]\nname = \"p{k}\"\nscheduler = \"edf\"\n{}core = {k}\n", DEADLINE_VCPU);
        for (name, period, _) in tasks.iter().filter(|t| names.contains(&t.0)) {
            pieces += &named_task(name, *period, None);
        }
    }
    let pieces = Scenario::from_toml(&pieces, None).unwrap();
    let want = by_name(&pieces);
    assert!(want.values().all(|w| w.0 > 0));
    assert_eq!(by_name(&whole), want);
    let (w, p) = (
        simulate(&whole, &cfg, &RunOptions::default()).results,
        simulate(&pieces, &config(&pieces), &RunOptions::default()).results,
    );
    let guest = &w.guests[0];
    let piece_cpu: u64 = p.guests.iter().map(|g| g.cpu_time_ns).sum();
    assert_eq!(guest.cpu_time_ns, piece_cpu, "the housekeeping vCPU runs nothing");
    assert_eq!(guest.cores, Some(vec![0, 1, 2]));
}

/// A global guest gets one thread per vCPU and no task binding: the guest scheduler places jobs.
#[test]
fn a_global_scenario_guest_dispatches_over_its_vcpu_threads() {
    let mut src =
        "[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\nplacement = \"global\"\n"
            .to_string();
    src += "[guest.vcpu]\npolicy = \"fifo\"\npriority = 10\n";
    // three tasks of 6 ms every 10 ms: 1.8 cores, schedulable only over both vCPUs
    for name in ["x", "y", "z"] {
        src += &format!("[[guest.task]]\nname = \"{name}\"\nperiod = \"10ms\"\nwcet = \"6ms\"\n");
    }
    let s = Scenario::from_toml(&src, None).unwrap();
    let cfg = config(&s);
    assert_eq!((cfg.guest_vcpus[0].threads.len(), cfg.guest_vcpus[0].task_vcpu.clone()), (2, None));
    let r = simulate(&s, &cfg, &RunOptions::default()).results;
    let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
    assert_eq!(jobs, 300);
    // two dedicated vCPUs run 1.8 cores of work: more than one core's worth of CPU time
    let cpu = r.guests[0].cpu_time_ns;
    assert!(cpu > 1_700_000_000 && cpu <= 2_000_000_000, "{cpu}");
}

/// Plan consistency of planned partitioned guests: random tasks bound to 2-3 vCPUs, each vCPU's
/// tasks given their exact PRM interface by the planner (WCET execution, as a single-vCPU guest),
/// the guest's plan listing those servers as its `vcpus`: simulated under SCHED_DEADLINE with
/// exact enforcement (hrtick, as in `plan_consistency.rs`) no job misses its deadline.
#[test]
fn planned_vcpu_servers_meet_every_deadline_with_exact_enforcement() {
    use rtvirt_analysis::planner::{plan_at, PlanOptions};
    use rtvirt_model::plan::VcpuPlan;
    let mut rng = SimRng::new(1819, 0);
    let mut checked = 0;
    for case in 0..16 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let vcpus = 2 + case % 2;
        let tasks: Vec<(String, u64, u64, u32)> = (0..rng.uniform(vcpus as u64, 6))
            .map(|i| {
                let period = PERIODS_US[rng.uniform(0, 4) as usize];
                (format!("t{i}"), period, rng.uniform(50, period * 3 / 10), (i % vcpus as u64) as u32)
            })
            .collect();
        let task_text = |(name, period, wcet, _): &(String, u64, u64, u32), bound: Option<u32>| {
            let bound = bound.map(|v| format!("vcpu = {v}\n")).unwrap_or_default();
            format!("[[guest.task]]\nname = \"{name}\"\nperiod = \"{period}us\"\nwcet = \"{wcet}us\"\n{bound}")
        };
        let head = format!("[host]\ncores = {vcpus}\nbandwidth_cap = 1.0\n[sim]\nhrtick = true\n");
        let mut pieces = head.clone();
        for k in 0..vcpus as u32 {
            pieces += &format!("[[guest]]\nname = \"p{k}\"\nscheduler = \"{sched}\"\n");
            tasks.iter().filter(|t| t.3 == k).for_each(|t| pieces += &task_text(t, None));
        }
        let mut whole = format!("{head}[[guest]]\nname = \"g\"\nscheduler = \"{sched}\"\nvcpus = {vcpus}\n");
        tasks.iter().for_each(|t| whole += &task_text(t, Some(t.3)));
        let (pieces, whole) = (Scenario::from_toml(&pieces, None).unwrap(), Scenario::from_toml(&whole, None).unwrap());
        let piece_plan = plan_at(&pieces, &PlanOptions::default(), None).plan;
        if piece_plan.guests.iter().any(|g| g.core.is_none()) {
            continue;
        }
        let mut plan = plan_at(&whole, &PlanOptions::default(), None).plan;
        plan.guests[0].vcpus = piece_plan
            .guests
            .iter()
            .enumerate()
            .map(|(k, p)| VcpuPlan { id: k as u32, ..p.vcpu_plans().remove(0) })
            .collect();
        let cfg = SimConfig::new(
            &whole,
            Some(&plan),
            Overrides { duration: Some(Nanos::from_secs(2)), seed: Some(1), ..Default::default() },
        )
        .unwrap();
        assert_eq!(cfg.guest_vcpus[0].task_vcpu, Some(tasks.iter().map(|t| t.3).collect()));
        let r = simulate(&whole, &cfg, &RunOptions::default()).results;
        assert!(r.tasks.iter().all(|t| t.jobs > 0));
        let misses: u64 = r.tasks.iter().map(|t| t.misses).sum();
        assert_eq!(misses, 0, "case {case} ({sched}): {:?}", plan.guests[0].vcpus);
        checked += 1;
    }
    assert!(checked >= 8, "too few schedulable cases ({checked})");
}

/// A planned multi-vCPU guest's plan errors name the plan's field: a task on no planned vCPU, a
/// task on a vCPU without reservation, a vCPU not placed on a core.
#[test]
fn bad_vcpu_plans_are_located() {
    use rtvirt_analysis::planner::{plan_at, PlanOptions};
    use rtvirt_model::plan::VcpuPlan;
    let src = "[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\n[[guest.task]]\nname = \
               \"a\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n[[guest.task]]\nname = \"b\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n";
    let s = Scenario::from_toml(src, None).unwrap();
    let mut plan = plan_at(&s, &PlanOptions::default(), None).plan;
    let server = |id: u32, tasks: &[&str]| VcpuPlan {
        id,
        core: Some(id),
        model: "prm".into(),
        period_ns: 10_000_000,
        budget_ns: 2_000_000,
        deadline_ns: 10_000_000,
        bandwidth: 0.2,
        tasks: tasks.iter().map(|t| t.to_string()).collect(),
    };
    let error = |plan: &rtvirt_model::plan::Plan| {
        let e = SimConfig::new(&s, Some(plan), Overrides::default()).unwrap_err();
        (e.at.field.clone().unwrap_or_default(), e.to_string())
    };
    plan.guests[0].vcpus = vec![server(0, &["a", "b"]), server(1, &[])];
    assert!(SimConfig::new(&s, Some(&plan), Overrides::default()).is_ok());
    plan.guests[0].vcpus = vec![server(0, &["a"]), server(1, &[])];
    let (field, e) = error(&plan);
    assert_eq!(field, "guests[0].vcpus", "{e}");
    assert!(e.contains("task \"b\""), "{e}");
    plan.guests[0].vcpus = vec![server(0, &["a"]), VcpuPlan { model: "none".into(), ..server(1, &["b"]) }];
    assert_eq!(error(&plan).0, "guests[0].vcpus[1].tasks");
    plan.guests[0].vcpus = vec![server(0, &["a", "b"]), VcpuPlan { core: None, ..server(1, &[]) }];
    assert_eq!(error(&plan).0, "guests[0].vcpus[1].core");
    plan.guests[0].vcpus = vec![];
    assert!(error(&plan).1.contains("gives it a single reservation"));
}
