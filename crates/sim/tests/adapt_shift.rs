//! `simulate --adapt` on scenarios/adapt_shift.toml (docs/adapt.md): demand shifts from 30% to
//! 70% of the WCET at half time. Same seed, three ways: static Cantelli planned for the first
//! phase loses DSR after the shift; static WCET keeps it but reserves the most; the adaptive
//! controller keeps DSR within 1 percentage point of static WCET on at most 70% of its bandwidth.
//! Run with `--nocapture` to print the table of docs/adapt.md.

use rtvirt_analysis::planner::{plan_at, PlanOptions};
use rtvirt_analysis::requests::bandwidth_cap;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_sim::adapt::adapting;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};
use std::path::Path;

fn scenario() -> Scenario {
    Scenario::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/adapt_shift.toml")).unwrap()
}

fn plan(s: &Scenario, rho: Option<f64>) -> Plan {
    let options = PlanOptions { rho, bandwidth_cap: Some(bandwidth_cap(s, None)), ..Default::default() };
    let p = plan_at(s, &options, None).plan;
    assert!(p.feasible);
    p
}

/// The results, the DSR over all jobs and the reserved bandwidth (the plan's, or time-averaged).
fn run(s: &Scenario, plan: &Plan, adapt: bool) -> (Results, f64, f64) {
    let cfg = SimConfig::new(s, Some(plan), Overrides::default()).unwrap();
    let cfg = if adapt { adapting(cfg, s, plan).unwrap() } else { cfg };
    let r = simulate(s, &cfg, &RunOptions::default()).results;
    let (jobs, misses) = r.tasks.iter().fold((0, 0), |(j, m), t| (j + t.jobs, m + t.misses));
    let dsr = 1.0 - misses as f64 / jobs as f64;
    let bw = if adapt {
        r.guests.iter().map(|g| g.bandwidth_mean.unwrap()).sum()
    } else {
        plan.guests.iter().map(|g| g.bandwidth).sum()
    };
    (r, dsr, bw)
}

#[test]
fn adaptive_keeps_the_dsr_of_wcet_on_less_bandwidth_than_either_static_plan_that_keeps_it() {
    let s = scenario();
    let (cantelli, wcet) = (plan(&s, Some(0.9)), plan(&s, None));
    let (_, c_dsr, c_bw) = run(&s, &cantelli, false);
    let (_, w_dsr, w_bw) = run(&s, &wcet, false);
    let (adaptive, a_dsr, a_bw) = run(&s, &wcet, true);
    println!("| run | DSR | reserved bandwidth | of static WCET |\n|---|---|---|---|");
    for (name, dsr, bw) in [
        ("static Cantelli (rho 0.9, first phase)", c_dsr, c_bw),
        ("static WCET", w_dsr, w_bw),
        ("adaptive (--adapt)", a_dsr, a_bw),
    ] {
        println!("| {name} | {:.4} | {bw:.4} | {:.0}% |", dsr, 100.0 * bw / w_bw);
    }
    assert!(c_dsr < w_dsr - 0.01, "static Cantelli should lose DSR after the shift: {c_dsr} vs {w_dsr}");
    assert!(c_bw < w_bw, "Cantelli reserves less than WCET");
    assert!(a_dsr >= w_dsr - 0.01, "adaptive DSR {a_dsr} not within 1 pp of static WCET {w_dsr}");
    assert!(a_bw <= 0.7 * w_bw, "adaptive bandwidth {a_bw} above 70% of static WCET's {w_bw}");
    // the reservation follows the demand: smaller before the shift than after it
    for g in &adaptive.guests {
        let series = g.reservations.as_ref().unwrap();
        let at = |t: u64| series.iter().rev().find(|c| c.at_ns <= t).unwrap().bandwidth;
        assert!(at(29_000_000_000) < at(59_000_000_000), "{}: {series:?}", g.name);
        assert_eq!(series[0].reason, "plan");
    }
    // the real output passes the committed results schema
    let value = serde_json::to_value(&adaptive).unwrap();
    let validator = jsonschema::validator_for(&rtvirt_model::schema::committed_value("results")).unwrap();
    let errors: Vec<String> = validator.iter_errors(&value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn without_adapt_nothing_changes_and_adapted_runs_are_deterministic() {
    let s = scenario();
    let wcet = plan(&s, None);
    let (fixed, _, _) = run(&s, &wcet, false);
    assert!(fixed.guests.iter().all(|g| g.bandwidth_mean.is_none() && g.reservations.is_none()));
    let short = Overrides { duration: Some(rtvirt_model::Nanos::from_secs(5)), seed: Some(3), ..Default::default() };
    let once = || {
        let cfg = adapting(SimConfig::new(&s, Some(&wcet), short).unwrap(), &s, &wcet).unwrap();
        serde_json::to_string(&simulate(&s, &cfg, &RunOptions::default()).results).unwrap()
    };
    assert_eq!(once(), once());
}
