//! Global scheduling inside a multi-vCPU guest, checked against a brute-force schedule: random
//! EDF and FP task sets on 2-3 vCPUs, each vCPU a static supply (always, early or late windows),
//! simulated with `placement = "global"`; a unit-step oracle runs the most urgent jobs on the
//! vCPUs in their windows at every microsecond. Every job must complete at the same instant in
//! both (same priority order: deadline, then time ready, then task order; FP by priority).

use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_sim::config::{GuestThreads, Policy, SupplyPattern, ThreadSpec};
use rtvirt_sim::engine::rng::SimRng;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Task {
    period: u64,
    deadline: u64,
    wcet: u64,
    offset: u64,
    prio: u32,
}

/// A vCPU's supply: budget every period, early or late in the period (budget = period: always).
#[derive(Debug, Clone, Copy)]
struct Supply {
    budget: u64,
    period: u64,
    late: bool,
}

impl Supply {
    fn has(&self, t: u64) -> bool {
        let x = t % self.period;
        if self.late {
            x >= self.period - self.budget
        } else {
            x < self.budget
        }
    }
}

fn scenario(sched: &str, tasks: &[Task], cores: usize) -> String {
    let mut s = format!("[host]\ncores = {cores}\n[[guest]]\nname = \"g\"\nscheduler = \"{sched}\"\n");
    for (i, t) in tasks.iter().enumerate() {
        s += &format!(
            "[[guest.task]]\nname = \"t{i}\"\nperiod = \"{}us\"\ndeadline = \"{}us\"\nwcet = \"{}us\"\noffset = \
             \"{}us\"\n",
            t.period, t.deadline, t.wcet, t.offset
        );
        if sched == "fp" {
            s += &format!("priority = {}\n", t.prio);
        }
    }
    s
}

/// Completion time (us) of every job (task, index) finished by `horizon` (us), simulated.
fn simulated(sched: &str, tasks: &[Task], supplies: &[Supply], horizon: u64) -> BTreeMap<(u32, u64), u64> {
    let s = Scenario::from_toml(&scenario(sched, tasks, supplies.len()), None).unwrap();
    let mut cfg = SimConfig::new(
        &s,
        None,
        Overrides { duration: Some(Nanos(horizon * 1000)), seed: Some(1), ..Default::default() },
    )
    .unwrap();
    // the guest's vCPUs: one supply thread each on its own core, tasks dispatched globally
    let threads = supplies.iter().enumerate().map(|(k, sup)| ThreadSpec {
        name: format!("g/vcpu{k}"),
        cores: vec![k as u32],
        policy: Policy::Supply {
            budget: sup.budget * 1000,
            period: sup.period * 1000,
            pattern: if sup.late { SupplyPattern::Late } else { SupplyPattern::Early },
        },
    });
    cfg.guest_vcpus[0] = GuestThreads { threads: threads.collect(), rt: vec![true; supplies.len()], task_vcpu: None };
    let out = simulate(&s, &cfg, &RunOptions { job_log: true, ..Default::default() });
    out.job_log.iter().filter_map(|j| j.end.map(|e| ((j.task, j.index), e / 1000))).collect()
}

/// The brute-force oracle: at every microsecond, the vCPUs in their supply windows run the most
/// urgent head jobs (a task's jobs run in release order; a job is ready from its release or its
/// predecessor's completion, whichever is later).
fn oracle(edf: bool, tasks: &[Task], supplies: &[Supply], horizon: u64) -> BTreeMap<(u32, u64), u64> {
    struct Head {
        index: u64,
        released: u64,
        remaining: u64,
        ready: u64,
    }
    let mut heads: Vec<Head> = tasks.iter().map(|_| Head { index: 0, released: 0, remaining: 0, ready: 0 }).collect();
    let mut done = BTreeMap::new();
    for t in 0..horizon {
        for (h, task) in heads.iter_mut().zip(tasks) {
            if t >= task.offset && (t - task.offset) % task.period == 0 {
                if h.index == h.released {
                    h.remaining = task.wcet;
                    h.ready = t;
                }
                h.released += 1;
            }
        }
        let available = supplies.iter().filter(|s| s.has(t)).count();
        let mut ready: Vec<((u64, u64, u32), usize)> = (0..tasks.len())
            .filter(|&i| heads[i].index < heads[i].released)
            .map(|i| {
                let task = &tasks[i];
                let key = if edf {
                    (task.offset + heads[i].index * task.period + task.deadline, heads[i].ready, i as u32)
                } else {
                    (u32::MAX as u64 - task.prio as u64, 0, i as u32)
                };
                (key, i)
            })
            .collect();
        ready.sort_unstable();
        for &(_, i) in ready.iter().take(available) {
            let h = &mut heads[i];
            h.remaining -= 1;
            if h.remaining == 0 {
                done.insert((i as u32, h.index), t + 1);
                h.index += 1;
                if h.index < h.released {
                    h.remaining = tasks[i].wcet;
                    h.ready = t + 1;
                }
            }
        }
    }
    done
}

fn random_tasks(rng: &mut SimRng, vcpus: u64) -> Vec<Task> {
    let n = rng.uniform(vcpus, vcpus + 4) as usize;
    (0..n)
        .map(|i| {
            let period = [200, 300, 400, 500, 600][rng.uniform(0, 4) as usize];
            let wcet = rng.uniform(10, period * 6 / 10);
            let deadline = rng.uniform(wcet, period);
            Task {
                period,
                deadline,
                wcet,
                offset: rng.uniform(0, 3) * 50,
                prio: (n - i) as u32 * 10 + rng.uniform(0, 5) as u32,
            }
        })
        .collect()
}

fn random_supply(rng: &mut SimRng) -> Supply {
    let period = [100, 150, 250][rng.uniform(0, 2) as usize];
    match rng.uniform(0, 2) {
        0 => Supply { budget: period, period, late: false },
        n => Supply { budget: rng.uniform(period / 4, period), period, late: n == 2 },
    }
}

#[test]
fn global_guests_follow_the_brute_force_schedule() {
    let mut rng = SimRng::new(18, 0);
    let horizon = 6_000;
    let mut compared = 0;
    for case in 0..40 {
        let edf = case % 2 == 0;
        let vcpus = rng.uniform(2, 3);
        let tasks = random_tasks(&mut rng, vcpus);
        let supplies: Vec<Supply> = (0..vcpus).map(|_| random_supply(&mut rng)).collect();
        let sim = simulated(if edf { "edf" } else { "fp" }, &tasks, &supplies, horizon);
        let want = oracle(edf, &tasks, &supplies, horizon);
        assert!(!want.is_empty());
        assert_eq!(sim, want, "case {case} (edf {edf}): {tasks:?} on {supplies:?}");
        compared += want.len();
    }
    eprintln!("{compared} job completions compared");
}

/// A hand-checked schedule: three tasks (10 ms period, 6 ms WCET) under global EDF on two
/// dedicated vCPUs. t0 and t1 run 0-6; t2 runs 6-12 and misses; then t2 keeps running late.
#[test]
fn global_edf_three_heavy_tasks_on_two_vcpus() {
    let tasks: Vec<Task> =
        (0..3).map(|_| Task { period: 10_000, deadline: 10_000, wcet: 6_000, offset: 0, prio: 1 }).collect();
    let full = Supply { budget: 1000, period: 1000, late: false };
    let done = simulated("edf", &tasks, &[full, full], 30_000);
    let ms = |task: u32, index: u64| done.get(&(task, index)).map(|us| us / 1000);
    assert_eq!((ms(0, 0), ms(1, 0), ms(2, 0)), (Some(6), Some(6), Some(12)));
    // at 12, t2's second job and the second jobs of t0 (running 10-16) and t1 compete:
    // t1 (ready at 10) takes the freed vCPU 12-18, t2 (ready at 12) runs 16-22
    assert_eq!((ms(0, 1), ms(1, 1), ms(2, 1)), (Some(16), Some(18), Some(22)));
}

/// Plan consistency for global guests: the least MPR interface of a random task set (global EDF
/// test of `rtvirt_analysis::gedf`, Easwaran, Shin & Lee 2009's supply bound), deployed as its
/// `m'` periodic servers (Shin, Easwaran & Lee 2008, Sec. 5), each a vCPU with a static supply
/// in its worst phase (prm-worst: the 2(Pi - Theta_i) blackout right after the first window), or
/// early, or late: at WCET no job misses its deadline.
#[test]
fn least_mpr_interfaces_meet_every_deadline_under_worst_case_supply() {
    use rtvirt_analysis::dbf::Sporadic;
    use rtvirt_analysis::mpr_interface::best_interface;
    let mut rng = SimRng::new(2018, 0);
    let (mut checked, mut report) = (0, Vec::new());
    for case in 0..30 {
        let n = rng.uniform(3, 6) as usize;
        let tasks: Vec<Task> = (0..n)
            .map(|_| {
                let period = [2_000, 4_000, 5_000, 10_000][rng.uniform(0, 3) as usize];
                let wcet = rng.uniform(period / 20, period * 6 / 10);
                let deadline = if rng.uniform(0, 1) == 0 { period } else { rng.uniform(wcet.max(period / 2), period) };
                Task { period, deadline, wcet, offset: 0, prio: 1 }
            })
            .collect();
        let sporadic: Vec<Sporadic> =
            tasks.iter().map(|t| Sporadic { c: t.wcet, d: t.deadline, t: t.period }).collect();
        let Ok(Some(mpr)) = best_interface(&sporadic, &[500, 1_000, 2_000], 3) else { continue };
        let servers: Vec<_> = mpr.servers().into_iter().filter(|s| s.budget > 0).collect();
        for (pattern, late) in
            [(SupplyPattern::PrmWorst, false), (SupplyPattern::Early, false), (SupplyPattern::Late, true)]
        {
            for offset in [0, servers.iter().map(|s| s.budget).max().unwrap_or(0)] {
                let shifted: Vec<Task> = tasks.iter().map(|t| Task { offset, ..t.clone() }).collect();
                let s = Scenario::from_toml(&scenario("edf", &shifted, servers.len()), None).unwrap();
                let mut cfg = SimConfig::new(
                    &s,
                    None,
                    Overrides { duration: Some(Nanos::from_secs(1)), seed: Some(1), ..Default::default() },
                )
                .unwrap();
                let threads = servers.iter().enumerate().map(|(k, e)| ThreadSpec {
                    name: format!("g/vcpu{k}"),
                    cores: vec![k as u32],
                    policy: Policy::Supply { budget: e.budget * 1000, period: e.period * 1000, pattern },
                });
                cfg.guest_vcpus[0] =
                    GuestThreads { threads: threads.collect(), rt: vec![true; servers.len()], task_vcpu: None };
                let r = simulate(&s, &cfg, &RunOptions::default()).results;
                let (jobs, misses): (u64, u64) =
                    (r.tasks.iter().map(|t| t.jobs).sum(), r.tasks.iter().map(|t| t.misses).sum());
                assert!(jobs > 0);
                assert_eq!(
                    misses, 0,
                    "case {case}: {mpr:?} servers {servers:?}, {pattern:?} (late {late}), offset {offset}: {tasks:?}"
                );
            }
        }
        report.push(format!("case {case}: {n} tasks, {mpr:?}: 0 misses"));
        checked += 1;
    }
    eprintln!("{}", report.join("\n"));
    assert!(checked >= 10, "too few schedulable random sets ({checked})");
}

/// A random global guest of `vcpus` vCPUs (scenario text): 3-6 tasks, periods 2-10 ms, up to
/// `most`% of a period each, half with a deadline below the period; FP priorities deadline
/// monotonic.
fn planned_global_guest(rng: &mut SimRng, sched: &str, vcpus: u64, most: u64, sim: &str) -> String {
    let mut s = format!(
        "[host]\ncores = {vcpus}\nbandwidth_cap = 1.0\n{sim}\n[[guest]]\nname = \"g\"\nscheduler = \"{sched}\"\n\
         vcpus = {vcpus}\nplacement = \"global\"\n"
    );
    for i in 0..rng.uniform(3, 6) {
        let period = [2_000, 4_000, 5_000, 10_000][rng.uniform(0, 3) as usize];
        let wcet = rng.uniform(period / 20, period * most / 100);
        let deadline = if rng.uniform(0, 1) == 0 { period } else { rng.uniform(wcet.max(period / 2), period) };
        s += &format!(
            "[[guest.task]]\nname = \"t{i}\"\nperiod = \"{period}us\"\ndeadline = \"{deadline}us\"\nwcet = \"{wcet}us\"\n"
        );
    }
    s
}

/// Jobs and misses of a planned scenario, simulated for 2 s with the costs `costs` charged.
fn planned_misses(
    s: &Scenario,
    plan: &rtvirt_model::plan::Plan,
    seed: u64,
    costs: Option<&rtvirt_sim::HostCosts>,
) -> (u64, u64) {
    let cfg = SimConfig::new(
        s,
        Some(plan),
        Overrides { duration: Some(Nanos::from_secs(2)), seed: Some(seed), ..Default::default() },
    )
    .unwrap();
    assert_eq!(cfg.guest_vcpus[0].task_vcpu, None, "a global guest binds no task");
    let r = rtvirt_sim::simulate_with_costs(s, &cfg, &RunOptions::default(), costs).results;
    (r.tasks.iter().map(|t| t.jobs).sum(), r.tasks.iter().map(|t| t.misses).sum())
}

/// Plan consistency of planned global guests (issue 18): random global EDF and FP guests on 2-3
/// vCPUs planned by `rtvirt_analysis::planner` (least MPR interface, WCET budgets), their `vcpus`
/// turned by the simulator into SCHED_DEADLINE servers on distinct cores with exact enforcement
/// (hrtick): no job misses its deadline, each vCPU a constant bandwidth server released on its own.
#[test]
fn planned_global_guests_meet_every_deadline_under_their_deadline_servers() {
    use rtvirt_analysis::planner::{plan_at, PlanOptions};
    let mut rng = SimRng::new(1820, 0);
    let (mut checked, mut report) = (0, Vec::new());
    for case in 0..24 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let vcpus = 2 + (case / 2) % 2;
        let s = Scenario::from_toml(&planned_global_guest(&mut rng, sched, vcpus, 55, "[sim]\nhrtick = true"), None)
            .unwrap();
        let cap = rtvirt_model::hostmodel::BandwidthCap { value: 0.95, why: "the simulator's admission".into() };
        let plan = plan_at(&s, &PlanOptions { bandwidth_cap: Some(cap), ..Default::default() }, None).plan;
        if !plan.feasible {
            continue;
        }
        let servers: Vec<(u64, u64)> = plan.guests[0].vcpus.iter().map(|v| (v.budget_ns, v.period_ns)).collect();
        for seed in [1, 2] {
            let (jobs, missed) = planned_misses(&s, &plan, seed, None);
            assert!(jobs > 0);
            assert_eq!(missed, 0, "case {case} ({sched}) seed {seed}: servers {servers:?}\n{:?}", s.guests[0].tasks);
        }
        report.push(format!("case {case} {sched} on {vcpus} vCPUs: servers {servers:?}, 0 misses"));
        checked += 1;
    }
    eprintln!("{}", report.join("\n"));
    assert!(checked >= 10, "too few schedulable random guests ({checked})");
}

/// The same planned with a host model's costs (`plan --host-model`, issue 18): each vCPU server
/// pays the per-period cost, jobs the per-job cost, the release latency is a jitter and the
/// enforcement overrun's pay-back delays the supply; simulated under the model's worst case
/// (every cost at its largest) no job misses.
#[test]
fn overhead_aware_global_plans_meet_every_deadline_under_the_models_worst_case() {
    use rtvirt_analysis::overhead::Overheads;
    use rtvirt_analysis::planner::{plan_at, PlanOptions};
    use rtvirt_model::hostmodel::{BandwidthCap, HostModel};
    let mut rng = SimRng::new(1821, 0);
    let (mut checked, mut report) = (0, Vec::new());
    for case in 0..24 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let vcpus = 2 + (case / 2) % 2;
        let (kind, overrun) = if case % 3 == 2 { ("tick", 1_000_000) } else { ("hrtick", rng.uniform(0, 50) * 1000) };
        let max = rng.uniform(0, 100) * 1000;
        let model = HostModel::from_json(&format!(
            r#"{{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":{},"context_switch_ns":{},"cache_reload_ns":{},
                "release_latency_ns":{{"p50":{},"p99":{},"max":{max}}},
                "enforcement":{{"kind":"{kind}","overrun_max_ns":{overrun}}}}}"#,
            rng.uniform(0, 40_000),
            rng.uniform(0, 3_000),
            rng.uniform(0, 20_000),
            max / 4,
            max / 2,
        ))
        .unwrap();
        let s = Scenario::from_toml(&planned_global_guest(&mut rng, sched, vcpus, 30, ""), None).unwrap();
        let cap = BandwidthCap { value: 0.95, why: "the simulator's rt_runtime / rt_period".into() };
        let o = Overheads::of(&model);
        let plan =
            plan_at(&s, &PlanOptions { overheads: Some(o), bandwidth_cap: Some(cap), ..Default::default() }, None).plan;
        if !plan.feasible {
            report.push(format!("case {case} {sched}: infeasible with {o:?}"));
            continue;
        }
        let servers: Vec<(u64, u64)> = plan.guests[0].vcpus.iter().map(|v| (v.budget_ns, v.period_ns)).collect();
        let worst = rtvirt_sim::HostCosts::of(&model).worst_case();
        for seed in [1, 2] {
            let (jobs, missed) = planned_misses(&s, &plan, seed, Some(&worst));
            assert!(jobs > 0);
            assert_eq!(
                missed, 0,
                "case {case} ({sched}) seed {seed}: servers {servers:?}, {o:?}\n{:?}",
                s.guests[0].tasks
            );
        }
        report.push(format!("case {case} {sched} on {vcpus} vCPUs, {o:?}: servers {servers:?}, 0 misses"));
        checked += 1;
    }
    eprintln!("{}", report.join("\n"));
    assert!(checked >= 8, "too few schedulable random guests ({checked})");
}

/// Regression (issue 18): two vCPUs of one global guest on one core, each a server that holds
/// the core while idle (a supply window late in each 4 ms, a polling server of equal priority).
/// When the window opens, the idle vCPU that gets the core takes the waiting job; woken by it,
/// it kept re-queueing behind its idle peer, the host handed the core back and forth until the
/// re-decision gave up with the core's timer armed for the idle vCPU: the 300 us job then ran
/// for the whole 1 ms window ("a job ran past its completion" in debug builds, a job completed
/// 700 us late in release builds). Each job must complete 300 us after the window opens.
#[test]
fn a_job_given_to_an_idle_server_holding_the_core_completes_on_time() {
    let servers = [
        ("supply", "budget = \"1ms\"\nperiod = \"4ms\"\nsupply = \"late\"", 3_000_000),
        ("ps", "priority = 10\nbudget = \"1ms\"\nperiod = \"4ms\"", 0),
    ];
    for (policy, fields, window) in servers {
        let src = format!(
            "[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\nplacement = \"global\"\n\
             [guest.vcpu]\ncore = 0\npolicy = \"{policy}\"\n{fields}\n\
             [[guest.task]]\nname = \"t\"\nperiod = \"4ms\"\nwcet = \"300us\"\n"
        );
        let s = Scenario::from_toml(&src, None).unwrap();
        let cfg = SimConfig::new(
            &s,
            None,
            Overrides { duration: Some(Nanos::from_ms(40)), seed: Some(1), ..Default::default() },
        )
        .unwrap();
        let out = simulate(&s, &cfg, &RunOptions { job_log: true, ..Default::default() });
        let ends: Vec<u64> = out.job_log.iter().filter_map(|j| j.end.map(|e| e - j.release)).collect();
        assert_eq!(ends, vec![window + 300_000; 10], "{policy}: response times");
    }
}
