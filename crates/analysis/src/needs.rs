//! "What must I set": for a plan that does not fit, the host settings and the values that would
//! make it fit, found by planning again with one setting changed.
//!
//! Per guest that did not fit, planned alone on one core with the same options:
//! - no candidate server period inside the kernel's limits: the period range it needs;
//! - it fits alone: it lacks room beside the others (the whole plan's core count, below);
//! - it fits with exact enforcement (no overrun charged): HRTICK;
//! - it fits with a smaller release latency: the largest that fits, by bisection (the planner's
//!   feasibility is monotone in the latency charged: a larger jitter delays the supply more,
//!   [`crate::overhead`]);
//! - else it fits with no per-period overhead: the largest that fits, by bisection;
//! - else its tasks need more than one core.
//!
//! For the whole plan: the fewest more cores (up to [`MAX_MORE_CORES`]) with which it fits.

use crate::overhead::Overheads;
use crate::planner::{plan_at, PlanOptions, Planned};
use rtvirt_model::plan::{need_setting, Need};
use rtvirt_model::scenario::{Guest, Scenario};
use rtvirt_model::Nanos;

/// The most extra cores tried for the whole plan.
pub const MAX_MORE_CORES: u32 = 8;

/// Steps of each bisection (the value is found to within 1/2^STEPS of the charged one).
const STEPS: u32 = 12;

/// The needs of `planned` (made with `o`); `quantile` names the quantile the host's costs are
/// charged at (None: the largest seen).
pub fn needs(scenario: &Scenario, o: &PlanOptions, planned: &Planned, quantile: Option<f64>) -> Vec<Need> {
    if planned.plan.feasible {
        return vec![];
    }
    let mut out = Vec::new();
    let mut all_fit_alone = true;
    for u in planned.unplaced.iter().filter(|u| !u.too_large) {
        let Some(g) = scenario.guests.iter().find(|g| g.name == u.name) else { continue };
        if let Some(need) = guest_need(scenario, g, o, quantile) {
            all_fit_alone = false;
            out.push(need);
        }
    }
    if all_fit_alone {
        out.extend(more_cores(scenario, o));
    }
    out
}

/// `g` alone, in a scenario of its own.
fn alone(s: &Scenario, g: &Guest) -> Scenario {
    Scenario {
        name: s.name.clone(),
        description: None,
        host: s.host.clone(),
        guests: vec![g.clone()],
        sim: s.sim.clone(),
        net: None,
        adapt: None,
        source: s.source.clone(),
    }
}

/// How to get HRTICK enforcement on a Linux host.
pub const HRTICK_HOW: &str =
    "a kernel with CONFIG_SCHED_HRTICK, and `echo HRTICK_DL > /sys/kernel/debug/sched/features` \
                              (root; not persistent: add it to the boot)";

/// Whether `s` fits with `o` on one core.
fn fits_on_one(s: &Scenario, o: &PlanOptions, overheads: Option<Overheads>) -> bool {
    let cpus = o.cpus.first().map(|&c| vec![c]).unwrap_or_default();
    let one = PlanOptions { cores: Some(1), cpus, overheads, ..o.clone() };
    plan_at(s, &one, None).plan.feasible
}

/// What guest `g` needs to fit on a core of its own (None: it fits alone already).
fn guest_need(s: &Scenario, g: &Guest, o: &PlanOptions, quantile: Option<f64>) -> Option<Need> {
    let name = Some(g.name.clone());
    if let Some((min, max)) = o.period_limits {
        let all = g.server_periods.candidates(&g.tasks);
        if !all.is_empty() && all.iter().all(|p| p.0 < min || p.0 > max) {
            return Some(Need {
                guest: name,
                setting: need_setting::SERVER_PERIOD.into(),
                value: format!("{} .. {}", Nanos(min), Nanos(max)),
                how: format!(
                    "give the guest's server_periods inside the kernel's limits, or (root) lower the limit: sysctl \
                     kernel.sched_deadline_period_min_us={}",
                    (all[0].0 / 1000).max(1)
                ),
            });
        }
    }
    let alone = alone(s, g);
    let x = o.overheads;
    if fits_on_one(&alone, o, x) {
        return None;
    }
    let Some(x) = x else { return Some(more_than_a_core(g)) };
    let exact = Overheads { overrun: 0, ..x };
    if x.overrun > 0 && fits_on_one(&alone, o, Some(exact)) {
        return Some(Need {
            guest: name,
            setting: need_setting::BUDGET_ENFORCEMENT.into(),
            value: format!("HRTICK: overrun well below {} (the tick)", Nanos(x.overrun)),
            how: HRTICK_HOW.into(),
        });
    }
    let at = quantile.map_or("as its largest".to_string(), |q| format!("at p{}", q * 100.0));
    let largest = |set: &dyn Fn(u64) -> Overheads, hi: u64| largest_fitting(&alone, o, set, hi);
    if let Some(j) = largest(&|j| Overheads { release_jitter: j, ..exact }, x.release_jitter) {
        let enforcement = if x.overrun > 0 { ", with HRTICK" } else { "" };
        return Some(Need {
            guest: name,
            setting: need_setting::RELEASE_LATENCY.into(),
            value: format!("<= {} {at}{enforcement} (charged: {})", Nanos(j), Nanos(x.release_jitter)),
            how: "a PREEMPT_RT kernel, the guest's CPUs isolated (isolcpus=, nohz_full=, rcu_nocbs=, IRQs moved \
                  away) and deep idle states off: `rtvirt host audit --plan` shows each"
                .into(),
        });
    }
    let no_latency = Overheads { release_jitter: 0, ..exact };
    if let Some(p) = largest(&|p| Overheads { per_period: p, ..no_latency }, x.per_period) {
        return Some(Need {
            guest: name,
            setting: need_setting::SERVER_OVERHEAD.into(),
            value: format!("<= {} per period with no release latency (charged: {})", Nanos(p), Nanos(x.per_period)),
            how: "longer server periods (server_periods), or a host with cheaper timers and switches".into(),
        });
    }
    Some(more_than_a_core(g))
}

fn more_than_a_core(g: &Guest) -> Need {
    Need {
        guest: Some(g.name.clone()),
        setting: need_setting::CORES.into(),
        value: "more than one core's bandwidth".into(),
        how: format!("split guest \"{}\" over vCPUs (vcpus = n), or lower its tasks' budgets (rho)", g.name),
    }
}

/// The largest value in `[0, hi)` with which `s` fits on one core when `set` gives its costs
/// (None: not even 0).
fn largest_fitting(s: &Scenario, o: &PlanOptions, set: &dyn Fn(u64) -> Overheads, hi: u64) -> Option<u64> {
    if !fits_on_one(s, o, Some(set(0))) {
        return None;
    }
    let (mut lo, mut hi) = (0, hi);
    for _ in 0..STEPS {
        if hi - lo <= 1 {
            break;
        }
        let mid = lo + (hi - lo) / 2;
        if fits_on_one(s, o, Some(set(mid))) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// The fewest more cores with which the whole plan fits.
fn more_cores(s: &Scenario, o: &PlanOptions) -> Option<Need> {
    let n = o.core_count(s);
    (1..=MAX_MORE_CORES).find_map(|k| {
        let more = PlanOptions { cores: Some(n + k), cpus: vec![], ..o.clone() };
        plan_at(s, &more, None).plan.feasible.then(|| Need {
            guest: None,
            setting: need_setting::CORES.into(),
            value: format!("{} (now {n})", n + k),
            how: format!("--cores {} (or host.cores), on CPUs that are not housekeeping", n + k),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::{plan, Guarantee, PlanHost, PlanRequest};
    use rtvirt_model::hostmodel::HostModel;

    fn scenario(toml: &str) -> Scenario {
        Scenario::from_toml(toml, None).unwrap()
    }

    const TWO: &str = "name = \"two\"\n[host]\ncores = 1\n\
        [[guest]]\nname = \"a\"\nscheduler = \"edf\"\nserver_periods = [\"1ms\"]\n\
        [[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"6ms\"\n\
        [[guest]]\nname = \"b\"\nscheduler = \"edf\"\nserver_periods = [\"1ms\"]\n\
        [[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"6ms\"\n";

    #[test]
    fn guests_that_fit_alone_need_one_more_core() {
        let s = scenario(TWO);
        let host = PlanHost::ideal();
        let p = plan(&PlanRequest::new(&s, &host)).unwrap();
        assert!(!p.plan.feasible);
        let n = &p.plan.needs;
        assert_eq!(n.len(), 1, "{n:?}");
        assert_eq!((n[0].guest.as_deref(), n[0].setting.as_str()), (None, "cores"));
        assert!(n[0].value.starts_with("2 "), "{n:?}");
    }

    #[test]
    fn a_release_latency_need_is_the_largest_that_fits() {
        // one task of 10 ms period, 3 ms wcet; the stock model at its maximum latency (hard)
        let s = scenario(
            "name = \"lat\"\n[host]\ncores = 1\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n\
             server_periods = [\"1ms\"]\n[[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\ndeadline = \"4ms\"\nwcet = \"3ms\"\n",
        );
        let mut model = HostModel::uncalibrated();
        model.enforcement.overrun_max_ns = 0;
        model.release_latency_ns.max = 3_000_000;
        let host = PlanHost::of_model("m".into(), model, 1);
        let req = PlanRequest { guarantee: Guarantee::Hard, ..PlanRequest::new(&s, &host) };
        let p = plan(&req).unwrap();
        assert!(!p.plan.feasible);
        let need = p.plan.needs.iter().find(|n| n.setting == "release latency").expect("a latency need");
        // the value found fits, and a value a little larger does not (the bisection's oracle:
        // planning with that latency charged)
        let j: u64 = need.value.split_whitespace().nth(1).and_then(|v| Nanos::parse(v).ok()).unwrap().0;
        let o = req.options();
        let set = |j| Overheads { release_jitter: j, ..o.overheads.unwrap() };
        assert!(fits_on_one(&s, &o, Some(set(j))), "{need:?}");
        assert!(!fits_on_one(&s, &o, Some(set(j + 3_000_000 / (1 << STEPS) + 1))), "{need:?}");
    }
}
