//! Plan-to-simulation consistency: budgets from the planner (exact PRM interface, WCET
//! execution) given as a periodic supply of Theta every Pi - early, late, random and the PRM
//! worst-case pattern (early then late: the 2(Pi - Theta) blackout) - give zero deadline misses,
//! for random EDF and FP task sets. The same plans under the SCHED_DEADLINE model are run too and
//! with exact enforcement (hrtick) they also give zero misses; with enforcement at the tick the
//! overruns paid back later cause misses, which are reported (docs/sim-deadline-consistency.md).

use rtvirt_analysis::planner::{plan_at, PlanOptions};
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::Scenario;
use rtvirt_sim::engine::rng::SimRng;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};

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
