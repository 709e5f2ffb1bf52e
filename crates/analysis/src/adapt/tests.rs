use super::*;
use crate::partition::admits;
use crate::planner::{plan_at, PlanOptions};
use proptest::prelude::*;
use rtvirt_model::scenario::Scenario;

/// Guests of one task each: (name, period ms, wcet ms), EDF, one 5 ms server period.
fn scenario(guests: &[(&str, u64, u64)]) -> Scenario {
    let mut t = String::from("[host]\ncores = 1\n");
    for (name, period, wcet) in guests {
        t.push_str(&format!(
            "[[guest]]\nname = \"{name}\"\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n[[guest.task]]\nname = \
             \"t\"\nperiod = \"{period}ms\"\nwcet = \"{wcet}ms\"\n"
        ));
    }
    Scenario::from_toml(&t, None).unwrap()
}

/// Every guest on core 0 at its planned (WCET) reservation, ranks in order.
fn controller(s: &Scenario, config: AdaptConfig) -> Controller {
    let plan = plan_at(s, &PlanOptions::default(), Some(1.0)).plan;
    let guests = s
        .guests
        .iter()
        .zip(&plan.guests)
        .enumerate()
        .map(|(k, (g, p))| AdaptGuest {
            guest: g.clone(),
            core: 0,
            reservation: Interface { period: p.period_ns, budget: p.budget_ns, deadline: p.deadline_ns },
            rank: k as u32,
        })
        .collect();
    Controller::new(config, guests).unwrap()
}

fn quick() -> AdaptConfig {
    AdaptConfig { window: 30, min_samples: 10, min_interval_ns: 0, ..Default::default() }
}

fn feed(c: &mut Controller, g: usize, samples: &[u64]) {
    for &s in samples {
        c.observe_job(g, 0, s);
    }
}

fn core_ok(c: &Controller, n: usize, cap: f64) -> bool {
    let servers: Vec<_> = (0..n).map(|i| c.reservation(i).as_task()).collect();
    servers.split_last().is_none_or(|(last, rest)| admits(rest, *last, cap, 0))
}

#[test]
fn the_wanted_reservation_is_the_planners_for_the_window_as_samples() {
    use rtvirt_model::exec::ExecModel;
    let s = scenario(&[("a", 10, 8)]);
    let mut c = controller(&s, quick());
    let window: Vec<u64> = (0..30).map(|k| 1_000_000 + 37_000 * (k % 7)).collect();
    feed(&mut c, 0, &window);
    let d = c.step(0);
    // the same guest planned with the window as its samples, at the controller's rho
    let mut planned = scenario(&[("a", 10, 8)]);
    let mut w = Window::new(30);
    window.iter().for_each(|&v| w.push(v));
    planned.guests[0].tasks[0].exec = ExecModel::Samples(w.samples("w"));
    let p = plan_at(&planned, &PlanOptions::default(), Some(0.9)).plan;
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].new.period, d[0].new.budget), (p.guests[0].period_ns, p.guests[0].budget_ns));
    assert_eq!(d[0].reason, Reason::Shrink);
}

#[test]
fn over_demand_keeps_the_critical_guest_and_degrades_and_names_the_others() {
    let s = scenario(&[("critical", 10, 8), ("best_effort", 10, 8)]);
    let mut c = controller(&s, quick());
    // first 2 ms of every 10 ms each: both shrink, and fit
    for g in 0..2 {
        feed(&mut c, g, &[2_000_000; 30]);
    }
    let d = c.step(0);
    assert!(d.len() == 2 && d.iter().all(|x| x.reason == Reason::Shrink), "{d:?}");
    // then 6 ms: 0.6 + 0.6 > 0.95
    for g in 0..2 {
        feed(&mut c, g, &[6_000_000; 30]);
    }
    let d = c.step(1);
    let by = |n: &str| d.iter().find(|x| x.guest == n).cloned().unwrap();
    assert_eq!(by("critical").reason, Reason::Grow);
    assert_eq!(by("critical").new.budget, by("critical").wanted.budget);
    let be = by("best_effort");
    assert_eq!(be.reason, Reason::Degraded { kept: vec!["critical".into()] });
    assert!(be.new.budget < be.wanted.budget && be.reason.text().contains("critical"));
    assert!(core_ok(&c, 2, 0.95));
    // the critical guest dies: its bandwidth goes to the other
    c.remove(0);
    let d = c.step(2);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].guest.as_str(), d[0].new.budget), ("best_effort", d[0].wanted.budget));
}

#[test]
fn hysteresis_and_the_rate_limit_hold_back_small_and_early_shrinks() {
    let s = scenario(&[("a", 10, 8)]);
    let config = AdaptConfig { min_interval_ns: 1_000, ..quick() };
    let mut c = controller(&s, config);
    feed(&mut c, 0, &[4_000_000; 30]);
    assert_eq!(c.step(0)[0].reason, Reason::Shrink);
    let level = c.reservation(0).budget;
    // 5% less demand: within the shrink band
    feed(&mut c, 0, &[3_800_000; 30]);
    assert!(c.step(5_000).is_empty());
    // half the demand, but only 500 ns after a change: rate-limited; later it shrinks
    feed(&mut c, 0, &[6_000_000; 30]);
    assert_eq!(c.step(6_000)[0].reason, Reason::Grow);
    feed(&mut c, 0, &[2_000_000; 30]);
    assert!(c.step(6_500).is_empty());
    assert!(c.step(7_000)[0].new.budget < level);
}

#[test]
fn bad_settings_and_overfull_cores_are_refused() {
    let s = scenario(&[("a", 10, 2)]);
    let plan = plan_at(&s, &PlanOptions::default(), None).plan;
    let r = Interface {
        period: plan.guests[0].period_ns,
        budget: plan.guests[0].budget_ns,
        deadline: plan.guests[0].period_ns,
    };
    let g = AdaptGuest { guest: s.guests[0].clone(), core: 0, reservation: r, rank: 0 };
    let e = Controller::new(AdaptConfig { rho: 0.0, ..Default::default() }, vec![g.clone()]).unwrap_err();
    assert!(e.to_string().contains("adapt.rho"), "{e}");
    let many = AdaptConfig { min_budget_ns: 3_000_000, ..Default::default() };
    // three reservations of 0.4 that even at their minimum (their own budget) exceed the cap
    let e = Controller::new(many, vec![g.clone(), g.clone(), g.clone()]).unwrap_err();
    assert!(e.to_string().contains("core 0"), "{e}");
    // lying reporters: unknown indices ignored, values beyond the period clamped and counted
    let mut c = Controller::new(quick(), vec![g]).unwrap();
    c.observe_job(7, 0, 1);
    c.observe_job(0, 9, 1);
    c.observe_job(0, 0, u64::MAX);
    assert_eq!(c.clamped(0), 1);
}

fn guests() -> impl Strategy<Value = Vec<(u64, u64)>> {
    // (period ms, wcet ms) per guest
    prop::collection::vec((4u64..20).prop_flat_map(|p| (Just(p), 1..=p / 2)), 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn no_step_admits_above_the_cap(
        gs in guests(), demand in prop::collection::vec(prop::collection::vec(1u64..100, 10..40), 1..6)
    ) {
        let names: Vec<String> = (0..gs.len()).map(|i| format!("g{i}")).collect();
        let spec: Vec<(&str, u64, u64)> = gs.iter().zip(&names).map(|(&(p, w), n)| (n.as_str(), p, w)).collect();
        let s = scenario(&spec);
        let mut c = controller(&s, quick());
        for (round, pcts) in demand.iter().enumerate() {
            for (g, &(p, _)) in gs.iter().enumerate() {
                for (k, pct) in pcts.iter().enumerate() {
                    // guest g's jobs at pct% of its period, varied per guest
                    c.observe_job(g, 0, p * 10_000 * ((pct + 13 * (g + k) as u64) % 100 + 1));
                }
            }
            c.step(round as u64 * 1_000);
            prop_assert!(core_ok(&c, gs.len(), 0.95));
            let bw: f64 = (0..gs.len()).map(|i| c.reservation(i).bandwidth()).sum();
            prop_assert!(bw <= 0.95 + 1e-9, "bandwidth {}", bw);
        }
    }

    #[test]
    fn a_stable_demand_settles_and_then_changes_nothing(
        gs in guests(), pcts in prop::collection::vec(1u64..100, 30), steps in 3usize..8
    ) {
        let names: Vec<String> = (0..gs.len()).map(|i| format!("g{i}")).collect();
        let spec: Vec<(&str, u64, u64)> = gs.iter().zip(&names).map(|(&(p, w), n)| (n.as_str(), p, w)).collect();
        let mut c = controller(&scenario(&spec), quick());
        for step in 0..steps {
            for (g, &(_, w)) in gs.iter().enumerate() {
                for pct in &pcts {
                    c.observe_job(g, 0, w * 10_000 * pct);
                }
            }
            let d = c.step(step as u64 * 1_000_000_000);
            prop_assert!(step < 2 || d.is_empty(), "step {}: {:?}", step, d);
        }
    }

    #[test]
    fn more_demand_never_gets_less(
        (p, w) in (4u64..20).prop_flat_map(|p| (Just(p), 1..=p / 2)),
        pcts in prop::collection::vec(1u64..100, 10..30), scale in 100u64..300
    ) {
        let s = scenario(&[("a", p, w)]);
        let budget = |k: u64| {
            let mut c = controller(&s, quick());
            for pct in &pcts {
                c.observe_job(0, 0, w * 100 * pct * k / 100);
            }
            c.step(0);
            c.reservation(0).budget
        };
        prop_assert!(budget(scale) >= budget(100));
    }
}

#[test]
fn a_guest_without_tasks_is_sized_by_its_server_periods() {
    let s = scenario(&[("a", 10, 2)]);
    let mut guest = s.guests[0].clone();
    guest.tasks.clear();
    let reservation = Interface { period: 10_000_000, budget: 2_000_000, deadline: 10_000_000 };
    let mut c = Controller::new(quick(), vec![AdaptGuest { guest, core: 0, reservation, rank: 0 }]).unwrap();
    for _ in 0..10 {
        c.observe_server_period(0, 1_000_000);
    }
    // Not the minimum budget (no per-task window stands for it): the per-period demand's bound.
    let d = c.step(0);
    assert_eq!((d.len(), d[0].new.budget, d[0].reason.as_str()), (1, 1_000_000, "shrink"), "{d:?}");
    // The whole budget used in every period: censored, grown by the saturation factor.
    for _ in 0..10 {
        c.observe_server_period(0, 1_000_000);
    }
    let d = c.step(1);
    assert_eq!((d.len(), d[0].new.budget, d[0].reason.as_str()), (1, 1_250_000, "grow"), "{d:?}");
}
