//! The least MPR interface of a guest scheduled globally over its vCPUs (Shin, Easwaran & Lee
//! 2008, Sec. 4.3; Easwaran, Shin & Lee 2009): per period `Pi` and concurrency `m'`, the least
//! integer `Theta` that passes the guest's global test - global EDF ([`crate::gedf`]) or global
//! fixed priority ([`crate::gfp`]); over the candidates, the least deployed bandwidth (ties: fewer
//! vCPUs, then the larger period).
//!
//! The tests' verdict "schedulable" only grows with `Theta` (the supply at every `t` grows; for
//! EDF a horizon that grows can only add points beyond the smaller budget's horizon, where that
//! budget already passed; for FP every response time shrinks), so the least `Theta` is found by
//! bisection over `[floor(U Pi), m' Pi]`. A budget whose check would need more than
//! [`crate::dbf::MAX_CHECK_POINTS`] points counts as not shown: the answer is the least budget the
//! bounded test proves, never one it did not check. Only when not even the largest budget can be
//! checked is the guest refused ([`TooLarge`]).
//!
//! With a host model's costs ([`crate::overhead`], Phan et al. 2013, as for a guest of one vCPU):
//! each server of positive budget pays `per_period` out of its own budget (deployed
//! `Theta_i + o`, so `Theta <= m' (Pi - o)`); the jobs' `c` come inflated by the per-job cost; the
//! supply is delayed by the enforcement pay-back of the smallest positive server,
//! `ceil(delta / Theta_i) Pi` (each server's own delay is at most that, and the servers' supplies
//! add up to the MPR's, [`crate::mpr`]); and the release latency is the tasks' release jitter
//! ([`crate::gedf::schedulable_with_jitter`], [`crate::gfp`]). The delay shrinks as `Theta` grows,
//! so the bisection stays exact.
//!
//! The interface is deployed as its `m'` servers ([`Mpr::servers`]), which supply exactly the
//! MPR's `sbf` even when released independently (see [`crate::mpr`]).

use crate::dbf::{utilisation, Sporadic};
use crate::gedf::Verdict;
use crate::interface::Interface;
use crate::mpr::{Mpr, MultiSupply};
use crate::overhead::Overheads;
use crate::sbf::Supply;
use rtvirt_model::scenario::GuestScheduler;

/// The analysis would need more than [`crate::dbf::MAX_CHECK_POINTS`] points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// What a global guest's interface is searched for: its scheduler (for FP the tasks come by
/// decreasing priority) and the host's costs (zero without a host model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalTest {
    pub scheduler: GuestScheduler,
    pub overheads: Overheads,
}

impl GlobalTest {
    /// Global EDF without host costs.
    pub fn edf() -> GlobalTest {
        GlobalTest { scheduler: GuestScheduler::Edf, overheads: Overheads::default() }
    }

    /// The verdict of `tasks` on the usable MPR `r` (module doc).
    pub fn verdict(&self, tasks: &[Sporadic], r: Mpr) -> Verdict {
        let delay = self.overheads.payback(r.period, least_server_budget(&r));
        if delay == 0 {
            return self.verdict_on(tasks, &r);
        }
        if delay == u64::MAX {
            return Verdict::NotShown;
        }
        self.verdict_on(tasks, &Delayed { inner: r, delay })
    }

    fn verdict_on(&self, tasks: &[Sporadic], supply: &impl MultiSupply) -> Verdict {
        let jitter = self.overheads.release_jitter;
        match self.scheduler {
            GuestScheduler::Edf => crate::gedf::schedulable_with_jitter(tasks, supply, jitter),
            GuestScheduler::Fp => crate::gfp::schedulable(tasks, supply, jitter),
        }
    }

    /// The largest usable `Theta` of period `Pi`: every server's budget plus its cost within `Pi`.
    fn top(&self, period: u64, m: u64) -> u64 {
        m * period.saturating_sub(self.overheads.per_period)
    }

    /// `Theta` plus what the servers of positive budget pay per period.
    fn deployed_budget(&self, r: &Mpr) -> u64 {
        let paying = r.servers().iter().filter(|s| s.budget > 0).count() as u64;
        r.budget + paying * self.overheads.per_period
    }
}

/// The smallest positive budget among `r`'s servers (0 when `Theta = 0`).
fn least_server_budget(r: &Mpr) -> u64 {
    r.servers().iter().map(|s| s.budget).filter(|&b| b > 0).min().unwrap_or(0)
}

/// A supply that starts `delay` late: `sbf(t - delay)`.
struct Delayed {
    inner: Mpr,
    delay: u64,
}

impl Supply for Delayed {
    fn sbf(&self, t: u64) -> u64 {
        t.checked_sub(self.delay).map_or(0, |t| self.inner.sbf(t))
    }
    fn linear(&self) -> (f64, f64) {
        let (rate, delay) = self.inner.linear();
        (rate, delay + self.delay as f64)
    }
}

impl MultiSupply for Delayed {
    fn concurrency(&self) -> u64 {
        self.inner.concurrency
    }
    fn kink_streams(&self) -> Vec<(u64, u64)> {
        let mut streams: Vec<(u64, u64)> =
            self.inner.kink_streams().into_iter().map(|(step, o)| (step, o.saturating_add(self.delay))).collect();
        streams.push((u64::MAX, self.delay));
        streams
    }
}

/// Least usable `Theta` for this period and concurrency; `Ok(None)` if even the largest does not
/// pass.
pub fn least_budget(tasks: &[Sporadic], test: &GlobalTest, period: u64, m: u64) -> Result<Option<u64>, TooLarge> {
    let passes = |theta: u64| test.verdict(tasks, Mpr { period, budget: theta, concurrency: m });
    let top = test.top(period, m);
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

/// `a` is a better interface than `b`: less deployed bandwidth (exact), then fewer vCPUs, then a
/// larger period.
fn better(test: &GlobalTest, a: Mpr, b: Mpr) -> bool {
    let (da, db) = (test.deployed_budget(&a), test.deployed_budget(&b));
    let (lhs, rhs) = (da as u128 * b.period as u128, db as u128 * a.period as u128);
    lhs < rhs
        || (lhs == rhs && (a.concurrency, std::cmp::Reverse(a.period)) < (b.concurrency, std::cmp::Reverse(b.period)))
}

/// The least-bandwidth global EDF interface over the candidate periods and `m'` from `ceil(U)`
/// (at least 1) to `max_vcpus`; `Ok(None)` if none passes.
pub fn best_interface(tasks: &[Sporadic], candidates: &[u64], max_vcpus: u64) -> Result<Option<Mpr>, TooLarge> {
    let first = (utilisation(tasks) * (1.0 - 1e-9)).ceil().max(1.0) as u64;
    best_over(tasks, &GlobalTest::edf(), candidates, first..=max_vcpus)
}

/// The least-bandwidth interface of concurrency exactly `m` (a guest whose global scheduler runs
/// on `m` vCPUs) over the candidate periods; `Ok(None)` if none passes.
pub fn best_interface_on(
    tasks: &[Sporadic],
    test: &GlobalTest,
    candidates: &[u64],
    m: u64,
) -> Result<Option<Mpr>, TooLarge> {
    best_over(tasks, test, candidates, m..=m)
}

fn best_over(
    tasks: &[Sporadic],
    test: &GlobalTest,
    candidates: &[u64],
    concurrencies: std::ops::RangeInclusive<u64>,
) -> Result<Option<Mpr>, TooLarge> {
    let mut best: Option<Mpr> = None;
    for m in concurrencies {
        for &period in candidates {
            if let Some(b) = best.filter(|_| test.overheads.per_period == 0) {
                // only a budget of no more bandwidth than the best can win: test it first
                let cap = (b.budget as u128 * period as u128 / b.period as u128).min((m * period) as u128) as u64;
                if test.verdict(tasks, Mpr { period, budget: cap, concurrency: m }) != Verdict::Schedulable {
                    continue;
                }
            }
            if let Some(budget) = least_budget(tasks, test, period, m)? {
                let r = Mpr { period, budget, concurrency: m };
                if best.is_none_or(|b| better(test, r, b)) {
                    best = Some(r);
                }
            }
        }
    }
    Ok(best)
}

/// The vCPU servers that deploy `r` (Shin, Easwaran & Lee 2008, Sec. 5; [`Mpr::servers`]) as
/// interfaces for the host's partitioner: `m'` PRM servers `(Pi, Theta_i + o, Pi)`, largest
/// first, `o` the per-period cost paid by each server of positive budget.
pub fn vcpu_servers(r: &Mpr, overheads: &Overheads) -> Vec<Interface> {
    let cost = |b: u64| if b > 0 { b + overheads.per_period } else { 0 };
    r.servers().iter().map(|s| Interface { period: s.period, budget: cost(s.budget), deadline: s.deadline }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gedf::schedulable;
    use crate::gedf::tests::{every_t, taskset};
    use crate::mpr::tests::ServerSupply;
    use crate::sbf::Edp;
    use proptest::prelude::*;

    /// Servers each delayed by its own pay-back: the supply the host gives, finer than the
    /// smallest server's delay the search uses.
    struct OwnDelays(Vec<(Edp, u64)>);

    impl Supply for OwnDelays {
        fn sbf(&self, t: u64) -> u64 {
            self.0.iter().map(|(s, d)| t.checked_sub(*d).map_or(0, |t| s.sbf(t))).sum()
        }
        fn linear(&self) -> (f64, f64) {
            let s = ServerSupply { servers: self.0.iter().map(|x| x.0).collect() };
            let (rate, delay) = s.linear();
            (rate, delay + self.0.iter().map(|x| x.1).max().unwrap_or(0) as f64)
        }
    }

    impl MultiSupply for OwnDelays {
        fn concurrency(&self) -> u64 {
            self.0.len() as u64
        }
        fn kink_streams(&self) -> Vec<(u64, u64)> {
            let shifted = |(s, d): &(Edp, u64)| {
                let mut k: Vec<(u64, u64)> = s.kink_streams().into_iter().map(|(p, o)| (p, o + d)).collect();
                k.extend([(u64::MAX, *d), (s.period, *d)]);
                k
            };
            self.0.iter().flat_map(shifted).collect()
        }
    }

    fn small_overheads() -> impl Strategy<Value = Overheads> {
        (0u64..2, 0u64..3, 0u64..4).prop_map(|(per_period, release_jitter, overrun)| Overheads {
            per_period,
            release_jitter,
            overrun,
            ..Overheads::default()
        })
    }

    fn scheduler() -> impl Strategy<Value = GuestScheduler> {
        prop::sample::select(vec![GuestScheduler::Edf, GuestScheduler::Fp])
    }

    /// Every integer budget from 0, each checked at every integer t.
    fn brute_least(ts: &[Sporadic], p: u64, m: u64) -> Option<u64> {
        (0..=m * p).find(|&b| every_t(ts, &Mpr { period: p, budget: b, concurrency: m }) == Verdict::Schedulable)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn least_budget_matches_a_scan_of_every_budget(ts in taskset(), p in 1u64..7, m in 1u64..4) {
            prop_assert_eq!(least_budget(&ts, &GlobalTest::edf(), p, m), Ok(brute_least(&ts, p, m)));
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        #[test]
        fn least_fp_budget_matches_a_scan_of_every_budget(ts in taskset(), p in 1u64..7, m in 1u64..4) {
            let test = GlobalTest { scheduler: GuestScheduler::Fp, overheads: Overheads::default() };
            let scan = (0..=m * p)
                .find(|&b| crate::gfp::schedulable(&ts, &Mpr { period: p, budget: b, concurrency: m }, 0) == Verdict::Schedulable);
            prop_assert_eq!(least_budget(&ts, &test, p, m), Ok(scan));
        }

        /// With a host's costs: the least budget is the least that passes (every budget scanned),
        /// and its servers, each paying its cost and delayed by its own pay-back, pass the test
        /// on the supply they give.
        #[test]
        fn least_budget_with_costs_is_least_and_holds_on_the_servers_own_supply(
            ts in taskset(), p in 2u64..7, m in 1u64..4, o in small_overheads(), scheduler in scheduler()
        ) {
            let test = GlobalTest { scheduler, overheads: o };
            let got = least_budget(&ts, &test, p, m).unwrap();
            let scan = (0..=test.top(p, m)).find(|&b| test.verdict(&ts, Mpr { period: p, budget: b, concurrency: m }) == Verdict::Schedulable);
            prop_assert_eq!(got, scan);
            let Some(theta) = got else { return Ok(()) };
            let r = Mpr { period: p, budget: theta, concurrency: m };
            let deployed = vcpu_servers(&r, &o);
            prop_assert!(deployed.iter().all(|s| s.budget <= p));
            let own: Vec<(Edp, u64)> = deployed
                .iter()
                .filter(|s| s.budget > 0)
                .map(|s| {
                    let usable = s.budget - o.per_period;
                    (Edp::prm(p, usable), o.payback(p, usable))
                })
                .collect();
            let supply = OwnDelays(own);
            let verdict = match scheduler {
                GuestScheduler::Edf => crate::gedf::schedulable_with_jitter(&ts, &supply, o.release_jitter),
                GuestScheduler::Fp => crate::gfp::schedulable(&ts, &supply, o.release_jitter),
            };
            prop_assert_eq!(verdict, Verdict::Schedulable);
        }
    }

    #[test]
    fn vcpu_servers_split_the_budget_floor_and_ceil() {
        let servers = vcpu_servers(&Mpr { period: 10, budget: 23, concurrency: 3 }, &Overheads::default());
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
