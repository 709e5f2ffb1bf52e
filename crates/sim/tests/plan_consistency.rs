//! Plan-to-simulation consistency: budgets from the planner (exact PRM interface, WCET
//! execution) given as a periodic supply of Theta every Pi - early, late, random and the PRM
//! worst-case pattern (early then late: the 2(Pi - Theta) blackout) - give zero deadline misses,
//! for random EDF and FP task sets. The same plans under the SCHED_DEADLINE model are run too and
//! with exact enforcement (hrtick) they also give zero misses; with enforcement at the tick the
//! overruns paid back later cause misses, which are reported (docs/sim-deadline-consistency.md).
//! Plans made with a host model meet every deadline under that model's worst case (issue 16).

use rtvirt_analysis::overhead::Overheads;
use rtvirt_analysis::planner::{plan_at, PlanOptions};
use rtvirt_model::hostmodel::{BandwidthCap, HostModel};
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_sim::engine::rng::SimRng;
use rtvirt_sim::{simulate, simulate_with_costs, HostCosts, Overrides, RunOptions, SimConfig};

struct TaskSpec {
    period_us: u64,
    deadline_us: u64,
    wcet_us: u64,
    offset_us: u64,
}

const PERIODS_MS: [u64; 6] = [5, 10, 20, 25, 40, 50];

fn random_tasks(rng: &mut SimRng) -> Vec<TaskSpec> {
    let n = rng.uniform(2, 5) as usize;
    (0..n)
        .map(|_| {
            let period_us = PERIODS_MS[rng.uniform(0, PERIODS_MS.len() as u64 - 1) as usize] * 1000;
            let wcet_us = rng.uniform(50, period_us * 12 / 100);
            let deadline_us = if rng.uniform(0, 2) == 0 { rng.uniform(wcet_us * 2, period_us) } else { period_us };
            TaskSpec { period_us, deadline_us, wcet_us, offset_us: 0 }
        })
        .collect()
}

fn scenario_text(sched: &str, tasks: &[TaskSpec], vcpu: &str) -> String {
    scenario_with(sched, tasks, vcpu, "")
}

fn scenario_with(sched: &str, tasks: &[TaskSpec], vcpu: &str, sim: &str) -> String {
    let mut s = format!(
        "[host]\ncores = 1\nbandwidth_cap = 1.0\n{sim}\n[[guest]]\nname = \"vm1\"\nscheduler = \"{sched}\"\n{vcpu}\n"
    );
    for (i, t) in tasks.iter().enumerate() {
        s += &format!(
            "[[guest.task]]\nname = \"t{i}\"\nperiod = \"{}us\"\ndeadline = \"{}us\"\nwcet = \"{}us\"\noffset = \
             \"{}us\"\n",
            t.period_us, t.deadline_us, t.wcet_us, t.offset_us
        );
    }
    s
}

fn misses(src: &str, plan: Option<&Plan>) -> (u64, u64) {
    let s = Scenario::from_toml(src, None).unwrap();
    let cfg = SimConfig::new(&s, plan, Overrides { duration: Some(rtvirt_model::Nanos::from_secs(2)), seed: Some(1) })
        .unwrap();
    let r = simulate(&s, &cfg, &RunOptions::default()).results;
    (r.tasks.iter().map(|t| t.jobs).sum(), r.tasks.iter().map(|t| t.misses).sum())
}

#[test]
fn exact_prm_budgets_meet_every_deadline_under_any_periodic_supply() {
    let mut rng = SimRng::new(2026, 0);
    let mut dl_report = Vec::new();
    let mut checked = 0;
    for case in 0..24 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let mut tasks = random_tasks(&mut rng);
        let plain = Scenario::from_toml(&scenario_text(sched, &tasks, ""), None).unwrap();
        let plan = plan_at(&plain, &PlanOptions::default(), None).plan;
        let g = &plan.guests[0];
        if g.core.is_none() {
            continue; // not schedulable on one core: nothing to check
        }
        let (budget, period) = (g.budget_ns, g.period_ns);
        for pattern in ["early", "late", "random", "prm-worst"] {
            // Releases right after the first window expose the worst-case blackout.
            for t in tasks.iter_mut() {
                t.offset_us = if pattern == "prm-worst" { budget.div_ceil(1000) } else { 0 };
            }
            let vcpu = format!(
                "[guest.vcpu]\ncore = 0\npolicy = \"supply\"\nbudget = \"{budget}ns\"\nperiod = \"{period}ns\"\nsupply \
                 = \"{pattern}\"\n"
            );
            let (jobs, missed) = misses(&scenario_text(sched, &tasks, &vcpu), None);
            assert!(jobs > 0);
            assert_eq!(
                missed,
                0,
                "case {case} ({sched}, supply {pattern}, budget {budget} / period {period}): {missed} misses\n{}",
                scenario_text(sched, &tasks, &vcpu)
            );
        }
        for t in tasks.iter_mut() {
            t.offset_us = 0;
        }
        let (jobs, missed) = misses(&scenario_text(sched, &tasks, ""), Some(&plan));
        let (_, missed_hr) = misses(&scenario_with(sched, &tasks, "", "[sim]\nhrtick = true\n"), Some(&plan));
        let (_, missed_poll) = misses(
            &scenario_with(sched, &tasks, "[guest.vcpu]\nidle = \"poll\"\n", "[sim]\nhrtick = true\n"),
            Some(&plan),
        );
        assert_eq!(
            (missed_hr, missed_poll),
            (0, 0),
            "case {case}: exact (hrtick) SCHED_DEADLINE enforcement must meet every deadline"
        );
        dl_report.push(format!(
            "case {case} {sched}: Theta {budget} Pi {period}: SCHED_DEADLINE misses/jobs: tick(HZ=1000) \
             {missed}/{jobs}, hrtick {missed_hr}, hrtick+poll {missed_poll}"
        ));
        checked += 1;
    }
    assert!(checked >= 12, "too few schedulable random sets ({checked})");
    eprintln!("{}", dl_report.join("\n"));
}

/// A random host model: small per-period, per-job and latency costs, enforcement exact, late
/// (hrtick) or at a 1 ms / 4 ms tick.
fn random_host_model(rng: &mut SimRng) -> HostModel {
    let (kind, overrun) = match rng.uniform(0, 3) {
        0 => ("hrtick", 0),
        1 => ("hrtick", rng.uniform(1, 200) * 1000),
        2 => ("tick", 1_000_000),
        _ => ("tick", 4_000_000),
    };
    let max = rng.uniform(0, 400) * 1000;
    HostModel::from_json(&format!(
        r#"{{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":{},"context_switch_ns":{},"cache_reload_ns":{},
            "release_latency_ns":{{"p50":{},"p99":{},"max":{max}}},
            "enforcement":{{"kind":"{kind}","overrun_max_ns":{overrun}}}}}"#,
        rng.uniform(0, 50_000),
        rng.uniform(0, 5_000),
        rng.uniform(0, 30_000),
        max / 4,
        max / 2,
    ))
    .unwrap()
}

/// Issue 16: a plan made with a host model (`rtvirt plan --host-model`) meets every deadline in
/// the simulator under that model's worst case: WCET execution, every release latency at the
/// model's max, the per-period cost, the overrun at its largest (hrtick) or wherever the tick
/// falls, cache reloads and task switches - for random EDF and FP task sets and random models.
#[test]
fn overhead_aware_plans_meet_every_deadline_under_the_models_worst_case() {
    let mut rng = SimRng::new(2027, 0);
    let (mut checked, mut report) = (0, Vec::new());
    for case in 0..40 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let tasks = random_tasks(&mut rng);
        let model = random_host_model(&mut rng);
        let src = scenario_text(sched, &tasks, "");
        let s = Scenario::from_toml(&src, None).unwrap();
        // the simulator's admission limit (the kernel's 0.95, no fair server)
        let cap = BandwidthCap { value: 0.95, why: "the simulator's rt_runtime / rt_period".into() };
        let options =
            PlanOptions { overheads: Some(Overheads::of(&model)), bandwidth_cap: Some(cap), ..Default::default() };
        let plan = plan_at(&s, &options, None).plan;
        let g = &plan.guests[0];
        if g.core.is_none() {
            report.push(format!("case {case} {sched}: infeasible with {:?}", Overheads::of(&model)));
            continue;
        }
        for seed in [1, 2] {
            let cfg =
                SimConfig::new(&s, Some(&plan), Overrides { duration: Some(Nanos::from_secs(2)), seed: Some(seed) })
                    .unwrap();
            let worst = HostCosts::of(&model).worst_case();
            let r = simulate_with_costs(&s, &cfg, &RunOptions::default(), Some(&worst)).results;
            let (jobs, missed): (u64, u64) =
                (r.tasks.iter().map(|t| t.jobs).sum(), r.tasks.iter().map(|t| t.misses).sum());
            assert!(jobs > 0);
            assert_eq!(
                missed,
                0,
                "case {case} seed {seed} ({sched}, Theta {} / Pi {}, {:?}): {missed} of {jobs} jobs missed\n{src}",
                g.budget_ns,
                g.period_ns,
                Overheads::of(&model)
            );
        }
        report.push(format!(
            "case {case} {sched}: Theta {} / Pi {} (overhead-free {:?}): 0 misses",
            g.budget_ns,
            g.period_ns,
            g.overhead_free.as_ref().map(|f| (f.budget_ns, f.period_ns))
        ));
        checked += 1;
    }
    eprintln!("{}", report.join("\n"));
    assert!(checked >= 15, "too few schedulable random sets ({checked})");
}
