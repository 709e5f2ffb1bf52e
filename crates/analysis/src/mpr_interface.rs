//! The least MPR interface of a guest scheduled by global EDF over its vCPUs (Shin, Easwaran &
//! Lee 2008, Sec. 4.3; Easwaran, Shin & Lee 2009): per period `Pi` and concurrency `m'`, the least
//! integer `Theta` that passes the global EDF test ([`crate::gedf`]); over the candidates, the
//! least bandwidth `Theta / Pi` (ties: fewer vCPUs, then the larger period).
//!
//! The test's verdict "schedulable" only grows with `Theta` (the supply at every `t` grows, and a
//! horizon that grows can only add points beyond the smaller budget's horizon, where that budget
//! already passed), so the least `Theta` is found by bisection over `[floor(U Pi), m' Pi]`. A
//! budget whose check would need more than [`crate::dbf::MAX_CHECK_POINTS`] points (its horizon
//! grows as `1 / (Theta/Pi - U)`, so only budgets just above `U Pi`) counts as not shown: the
//! answer is the least budget the bounded test proves, never one it did not check. Only when not
//! even `m' Pi` can be checked is the guest refused ([`TooLarge`]).

//! The interface is deployed as its `m'` servers ([`Mpr::servers`]), which supply exactly the
//! MPR's `sbf` even when released independently (see [`crate::mpr`]).

use crate::dbf::{utilisation, Sporadic};
use crate::gedf::{schedulable, Verdict};
use crate::interface::Interface;
use crate::mpr::Mpr;

/// The analysis would need more than [`crate::dbf::MAX_CHECK_POINTS`] points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// Least `Theta` for this period and concurrency; `Ok(None)` if even `m' Pi` does not pass.
pub fn least_budget(tasks: &[Sporadic], period: u64, m: u64) -> Result<Option<u64>, TooLarge> {
    let passes = |theta: u64| schedulable(tasks, &Mpr { period, budget: theta, concurrency: m });
    let top = m * period;
    let floor = ((utilisation(tasks) * period as f64).floor() as u64).min(top);
    match passes(top) {
        Verdict::Schedulable => {}
        Verdict::NotShown => return Ok(None),
        Verdict::TooLarge => return Err(TooLarge),
    }
    let (mut lo, mut hi) = (floor, top);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) == Verdict::Schedulable {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(Some(lo))
}

/// `a = (Pi, Theta, m')` is a better interface than `b`: less bandwidth (exact), then fewer
/// vCPUs, then a larger period.
fn better(a: Mpr, b: Mpr) -> bool {
    let (lhs, rhs) = (a.budget as u128 * b.period as u128, b.budget as u128 * a.period as u128);
    lhs < rhs
        || (lhs == rhs && (a.concurrency, std::cmp::Reverse(a.period)) < (b.concurrency, std::cmp::Reverse(b.period)))
}

/// The least-bandwidth MPR interface over the candidate periods and `m'` from `ceil(U)` (at
/// least 1) to `max_vcpus`; `Ok(None)` if none passes.
pub fn best_interface(tasks: &[Sporadic], candidates: &[u64], max_vcpus: u64) -> Result<Option<Mpr>, TooLarge> {
    let first = (utilisation(tasks) * (1.0 - 1e-9)).ceil().max(1.0) as u64;
    best_over(tasks, candidates, first..=max_vcpus)
}

/// The least-bandwidth MPR interface of concurrency exactly `m` (a guest whose global scheduler
/// runs on `m` vCPUs) over the candidate periods; `Ok(None)` if none passes.
pub fn best_interface_on(tasks: &[Sporadic], candidates: &[u64], m: u64) -> Result<Option<Mpr>, TooLarge> {
    best_over(tasks, candidates, m..=m)
}

fn best_over(
    tasks: &[Sporadic],
    candidates: &[u64],
    concurrencies: std::ops::RangeInclusive<u64>,
) -> Result<Option<Mpr>, TooLarge> {
    let mut best: Option<Mpr> = None;
    for m in concurrencies {
        for &period in candidates {
            if let Some(b) = best {
                // only a budget of no more bandwidth than the best can win: test it first
                let cap = (b.budget as u128 * period as u128 / b.period as u128).min((m * period) as u128) as u64;
                if schedulable(tasks, &Mpr { period, budget: cap, concurrency: m }) != Verdict::Schedulable {
                    continue;
                }
            }
            if let Some(budget) = least_budget(tasks, period, m)? {
                let r = Mpr { period, budget, concurrency: m };
                if best.is_none_or(|b| better(r, b)) {
                    best = Some(r);
                }
            }
        }
    }
    Ok(best)
}

/// The vCPU servers that deploy `r` (Shin, Easwaran & Lee 2008, Sec. 5; [`Mpr::servers`]) as
/// interfaces for the host's partitioner: `m'` PRM servers `(Pi, Theta_i, Pi)`, largest first.
pub fn vcpu_servers(r: &Mpr) -> Vec<Interface> {
    r.servers().iter().map(|s| Interface { period: s.period, budget: s.budget, deadline: s.deadline }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gedf::tests::{every_t, taskset};
    use proptest::prelude::*;

    /// Every integer budget from 0, each checked at every integer t.
    fn brute_least(ts: &[Sporadic], p: u64, m: u64) -> Option<u64> {
        (0..=m * p).find(|&b| every_t(ts, &Mpr { period: p, budget: b, concurrency: m }) == Verdict::Schedulable)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn least_budget_matches_a_scan_of_every_budget(ts in taskset(), p in 1u64..7, m in 1u64..4) {
            prop_assert_eq!(least_budget(&ts, p, m), Ok(brute_least(&ts, p, m)));
        }

        #[test]
        fn best_interface_has_least_bandwidth(ts in taskset(), ps in prop::collection::vec(1u64..7, 1..3)) {
            let got = best_interface(&ts, &ps, 3).unwrap();
            let mut options = vec![];
            for m in 1..=3 {
                for &p in &ps {
                    if let Some(b) = brute_least(&ts, p, m) {
                        options.push(Mpr { period: p, budget: b, concurrency: m });
                    }
                }
            }
            match got {
                None => prop_assert!(options.is_empty()),
                Some(r) => {
                    prop_assert!(options.contains(&r));
                    for o in &options {
                        prop_assert!(r.budget as u128 * o.period as u128 <= o.budget as u128 * r.period as u128);
                    }
                }
            }
        }
    }

    #[test]
    fn vcpu_servers_split_the_budget_floor_and_ceil() {
        let servers = vcpu_servers(&Mpr { period: 10, budget: 23, concurrency: 3 });
        let budgets: Vec<u64> = servers.iter().map(|s| s.budget).collect();
        assert_eq!(budgets, vec![8, 8, 7]);
        assert!(servers.iter().all(|s| s.period == 10 && s.deadline == 10));
    }

    #[test]
    fn three_light_tasks_on_up_to_three_vcpus() {
        let ms = 1_000_000u64;
        let ts = vec![Sporadic { c: 3 * ms, d: 10 * ms, t: 10 * ms }; 3];
        let r = best_interface(&ts, &[2 * ms, 5 * ms, 10 * ms], 3).unwrap().unwrap();
        assert!((1..=3).contains(&r.concurrency));
        assert!(r.budget as f64 / r.period as f64 > utilisation(&ts), "{r:?}");
        assert_eq!(schedulable(&ts, &r), Verdict::Schedulable);
        assert_ne!(schedulable(&ts, &Mpr { budget: r.budget - 1, ..r }), Verdict::Schedulable);
    }
}
