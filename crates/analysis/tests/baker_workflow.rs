//! The Burns 2014 workflow on Baker-model light task sets (WCET uniform in 1%..10% of the period,
//! mean 30/50/70% of WCET, SD = WCET/6): budgets fall as rho falls and never exceed the WCET
//! ones; guest bandwidths follow; BFD never uses more cores than FFD on this corpus; max_rho is a
//! verified boundary.

use rtvirt_analysis::dbf::Sporadic;
use rtvirt_analysis::gen::{baker_scenario, BakerSpec};
use rtvirt_analysis::interface::{best_interface, Model};
use rtvirt_analysis::partition::Heuristic;
use rtvirt_analysis::planner::{max_rho, RHO_RESOLUTION};
use rtvirt_analysis::planner::{plan_at, PlanOptions};
use rtvirt_model::plan::GuestPlan;
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::{Guest, GuestScheduler};

const SEEDS: u64 = 12;
const MEANS: [f64; 3] = [0.3, 0.5, 0.7];
const RHOS: [f64; 5] = [0.1, 0.3, 0.5, 0.7, 0.9];

/// The guest's least-bandwidth interface for its planned task budgets. With PRM the plan uses it;
/// with EDP the partitioner may pick a looser (more bandwidth, larger deadline) alternative.
fn least_bandwidth(g: &GuestPlan, guest: &Guest, model: Model) -> f64 {
    let ts: Vec<Sporadic> =
        g.tasks.iter().map(|t| Sporadic { c: t.budget_ns, d: t.deadline_ns, t: t.period_ns }).collect();
    let cands: Vec<u64> = guest.server_periods.candidates(&guest.tasks).iter().map(|p| p.0).collect();
    let i = best_interface(&ts, GuestScheduler::Edf, model, &cands).unwrap();
    if model == Model::Prm {
        assert_eq!((i.period, i.budget), (g.period_ns, g.budget_ns), "the PRM plan uses the least interface");
    }
    i.bandwidth()
}

fn plan(spec: &BakerSpec, rho: Option<f64>, model: Model, h: Heuristic) -> Plan {
    let s = baker_scenario(spec);
    plan_at(&s, &PlanOptions { model, heuristic: h, ..Default::default() }, rho).plan
}

#[test]
fn budgets_and_bandwidths_fall_with_rho_and_never_exceed_wcet() {
    for seed in 0..SEEDS {
        for mean in MEANS {
            let spec = BakerSpec::light(seed, 3, 6, mean);
            let guests = baker_scenario(&spec).guests;
            for model in [Model::Prm, Model::Edp] {
                let wcet = plan(&spec, None, model, Heuristic::Bfd);
                let mut prev: Option<Plan> = None;
                for rho in RHOS {
                    let p = plan(&spec, Some(rho), model, Heuristic::Bfd);
                    for ((g, gw), guest) in p.guests.iter().zip(&wcet.guests).zip(&guests) {
                        let (b, bw) = (least_bandwidth(g, guest, model), least_bandwidth(gw, guest, model));
                        assert!(b <= bw + 1e-12, "seed {seed} mean {mean} rho {rho}: {} bw {b} > wcet bw {bw}", g.name);
                        for (t, tw) in g.tasks.iter().zip(&gw.tasks) {
                            assert!(t.budget_ns <= tw.wcet_ns && tw.budget_ns == tw.wcet_ns);
                            assert_eq!(tw.bound, "wcet");
                        }
                    }
                    if let Some(q) = &prev {
                        for ((g, gq), guest) in p.guests.iter().zip(&q.guests).zip(&guests) {
                            let (b, bq) = (least_bandwidth(g, guest, model), least_bandwidth(gq, guest, model));
                            assert!(bq <= b + 1e-12, "bandwidth rose as rho fell: {} {b} -> {bq}", g.name);
                            for (t, tq) in g.tasks.iter().zip(&gq.tasks) {
                                assert!(tq.budget_ns <= t.budget_ns);
                            }
                        }
                    }
                    prev = Some(p);
                }
            }
        }
    }
}

#[test]
fn lower_mean_gives_lower_budgets_at_the_same_rho() {
    // same seed = same periods and WCETs; only the mean differs
    for seed in 0..SEEDS {
        let bw = |mean| -> f64 {
            plan(&BakerSpec::light(seed, 4, 5, mean), Some(0.9), Model::Prm, Heuristic::Bfd)
                .guests
                .iter()
                .map(|g| g.bandwidth)
                .sum()
        };
        let (a, b, c) = (bw(0.3), bw(0.5), bw(0.7));
        assert!(a <= b + 1e-12 && b <= c + 1e-12, "seed {seed}: {a} {b} {c}");
    }
}

#[test]
fn bfd_never_uses_more_cores_than_ffd() {
    let mut where_worse = vec![];
    let mut compared = 0;
    for seed in 0..40 {
        for (guests, tasks) in [(12, 4), (20, 3), (8, 8)] {
            let mut spec = BakerSpec::light(seed, guests, tasks, 0.5);
            spec.cores = guests as u32;
            for rho in [None, Some(0.5), Some(0.9)] {
                let bfd = plan(&spec, rho, Model::Prm, Heuristic::Bfd);
                let ffd = plan(&spec, rho, Model::Prm, Heuristic::Ffd);
                assert!(bfd.feasible && ffd.feasible);
                compared += 1;
                if bfd.cores_used > ffd.cores_used {
                    where_worse.push((seed, guests, tasks, rho, bfd.cores_used, ffd.cores_used));
                }
            }
        }
    }
    assert!(compared >= 300);
    assert!(where_worse.is_empty(), "BFD used more cores than FFD on: {where_worse:?}");
}

#[test]
fn max_rho_is_a_verified_boundary() {
    let mut interior = 0;
    for seed in 0..SEEDS {
        let mut spec = BakerSpec::light(seed, 6, 8, 0.5);
        spec.cores = 2;
        let s = baker_scenario(&spec);
        let o = PlanOptions::default();
        match max_rho(&s, &o) {
            Some(r) if r >= 1.0 => assert!(plan_at(&s, &o, Some(1.0)).plan.feasible),
            Some(r) => {
                interior += 1;
                assert!(plan_at(&s, &o, Some(r)).plan.feasible, "seed {seed}: infeasible at max_rho {r}");
                assert!(
                    !plan_at(&s, &o, Some(r + RHO_RESOLUTION)).plan.feasible,
                    "seed {seed}: feasible above max_rho {r}"
                );
            }
            None => assert!(!plan_at(&s, &o, Some(RHO_RESOLUTION)).plan.feasible),
        }
    }
    assert!(interior > 0, "the corpus should contain sets that only fit below rho = 1");
}
