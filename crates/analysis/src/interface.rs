//! The minimal resource interface of a guest (Burns 2014, step 2).
//!
//! - PRM `(Pi, Theta)`: for each candidate period `Pi`, the least integer-ns `Theta` with the
//!   guest schedulable on Shin & Lee 2003's periodic resource (EDF: Theorem 1; FP: Theorem 4).
//!   The period of least bandwidth `Theta / Pi` wins (ties: the larger period).
//! - EDP `(Pi, Theta, Delta)`: Easwaran, Anand & Lee 2007. `sbf` grows with `Theta` and shrinks
//!   with `Delta`, so the least bandwidth for a period is reached at `Delta = Theta`; among the
//!   deadlines that keep that least budget the largest is chosen (it is the easiest to admit on
//!   the host core), found by bisection over `Delta` (sbf is monotone in it).
//!
//! Least budget, exactly and without scanning every integer: `sbf` at a fixed `t` is
//! non-decreasing in `Theta`, so the least `Theta` that passes a check point is found by
//! bisection over `Theta` ("monotone exact search"), and it is needed only at points that the
//! current budget fails. For EDF the walk over absolute deadlines stops at `min(2 LCM, t*(Theta))`,
//! which shrinks as `Theta` grows; it starts from the necessary lower bound `Theta >= U Pi`.

use crate::dbf::{edf_horizon, fp_point_count, fp_points, utilisation, CheckPoints, Sporadic, MAX_CHECK_POINTS};
use crate::sbf::{Edp, Supply};
use crate::schedtest::{edf_schedulable_at, fp_schedulable_at, linear_horizon};
use rtvirt_model::scenario::GuestScheduler;

/// Which resource model the interface uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Model {
    /// Periodic resource model (Shin & Lee 2003): deadline = period.
    #[default]
    Prm,
    /// Explicit-deadline periodic (Easwaran et al. 2007): deadline <= period (SCHED_DEADLINE).
    Edp,
}

impl Model {
    pub fn as_str(self) -> &'static str {
        match self {
            Model::Prm => "prm",
            Model::Edp => "edp",
        }
    }

    /// The budget family the least-bandwidth search explores: PRM `(Pi, Theta, Pi)`, EDP
    /// `(Pi, Theta, Theta)` (the most supply for that budget).
    fn family(self) -> Family {
        match self {
            Model::Prm => Family::Prm,
            Model::Edp => Family::EdpTight,
        }
    }
}

/// A one-parameter family of resources over the budget `Theta`, each with sbf non-decreasing in
/// `Theta` at every t (what makes the bisection over `Theta` exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `(Pi, Theta, Pi)`: Shin & Lee's periodic resource.
    Prm,
    /// `(Pi, Theta, Theta)`: EDP with the deadline at the budget.
    EdpTight,
    /// `(Pi, Theta, Delta)` with a fixed deadline `Delta` (`Theta <= Delta`).
    EdpDeadline(u64),
    /// A PRM `(Pi, Theta)` as the tasks see it on a host with overheads
    /// ([`crate::overhead`]): its supply delayed by the release jitter and the overrun's pay-back
    /// ([`crate::overhead::Overheads::supply_delay`], shorter for a larger `Theta`), and at most
    /// `Pi - per_period` of it usable (the server pays `per_period` out of its budget).
    Delayed(crate::overhead::Overheads),
    /// An EDP as the tasks see it on a host with overheads: the reservation deployed is
    /// `(Pi, Theta + o, Delta)` with the deadline `Delta` given (Some) or at the deployed budget
    /// `Theta + o` (None, the most supply for that budget); the tasks get `Theta` of it within
    /// `Delta`, delayed like [`Family::Delayed`]. `sbf_EDP(t - delay)` is the EDP formula with
    /// `Delta + delay`; the delay shrinks as `Theta` grows, so sbf stays non-decreasing in `Theta`.
    DelayedEdp(crate::overhead::Overheads, Option<u64>),
}

impl Family {
    fn supply(self, period: u64, theta: u64) -> Edp {
        match self {
            Family::Prm => Edp::prm(period, theta),
            Family::EdpTight => Edp { period, budget: theta, deadline: theta },
            Family::EdpDeadline(d) => Edp { period, budget: theta, deadline: d },
            // sbf_PRM(t - delay) is Easwaran et al.'s formula with Delta = Pi + delay; a delay
            // beyond any horizon (a budget of 0 never pays an overrun back) supplies nothing
            Family::Delayed(o) => {
                let delay = o.supply_delay(period, theta).min(crate::dbf::TIME_CAP);
                Edp { period, budget: theta, deadline: period.saturating_add(delay) }
            }
            Family::DelayedEdp(o, deadline) => {
                let delay = o.supply_delay(period, theta).min(crate::dbf::TIME_CAP);
                let deployed = deadline.unwrap_or(theta.saturating_add(o.per_period));
                Edp { period, budget: theta, deadline: deployed.saturating_add(delay) }
            }
        }
    }
    /// Largest budget of the family for this period.
    fn max_budget(self, period: u64) -> u64 {
        match self {
            Family::EdpDeadline(d) => d.min(period),
            Family::Delayed(o) | Family::DelayedEdp(o, None) => period.saturating_sub(o.per_period),
            Family::DelayedEdp(o, Some(d)) => d.min(period).saturating_sub(o.per_period),
            _ => period,
        }
    }
}

/// A guest's server: `budget` ns within `deadline` ns of every `period` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interface {
    pub period: u64,
    pub budget: u64,
    pub deadline: u64,
}

impl Interface {
    pub fn bandwidth(&self) -> f64 {
        self.budget as f64 / self.period as f64
    }
    pub fn as_supply(&self) -> Edp {
        Edp { period: self.period, budget: self.budget, deadline: self.deadline }
    }
    /// The server as a constrained-deadline sporadic task for the host core's EDF.
    pub fn as_task(&self) -> Sporadic {
        Sporadic { c: self.budget, d: self.deadline, t: self.period }
    }
}

/// Least `theta` in `[lo, hi]` with `sbf(t) >= demand` on `model.supply(period, theta)`, by
/// bisection (sbf at fixed t is non-decreasing in theta); None if `hi` does not suffice.
fn least_theta_at(model: Family, period: u64, t: u64, demand: u128, lo: u64, hi: u64) -> Option<u64> {
    let ok = |theta: u64| model.supply(period, theta).sbf(t) as u128 >= demand;
    if lo > hi || !ok(hi) {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// What a guest's tasks demand, computed once per guest and shared by every resource tried:
/// EDF check points (lazily extended) or FP scheduling points with `rbf` (FP tasks sorted by
/// decreasing priority).
pub struct Demand<'a> {
    tasks: &'a [Sporadic],
    kind: DemandKind<'a>,
}

enum DemandKind<'a> {
    Edf(CheckPoints<'a>),
    /// Scheduling points per task; None: more than [`MAX_CHECK_POINTS`] (not listed).
    Fp(Option<Vec<Vec<(u64, u128)>>>),
}

impl<'a> Demand<'a> {
    pub fn new(tasks: &'a [Sporadic], sched: GuestScheduler) -> Self {
        let kind = match sched {
            GuestScheduler::Edf => DemandKind::Edf(CheckPoints::new(tasks)),
            GuestScheduler::Fp => DemandKind::Fp(
                (fp_point_count(tasks) <= MAX_CHECK_POINTS as u128)
                    .then(|| (0..tasks.len()).map(|i| fp_points(tasks, i)).collect()),
            ),
        };
        Demand { tasks, kind }
    }

    /// The exact analysis needs more than [`MAX_CHECK_POINTS`] check points: every answer of this
    /// demand is void (the caller reports the guest as too large to analyse).
    pub fn too_large(&self) -> bool {
        match &self.kind {
            DemandKind::Edf(points) => points.exceeded(),
            DemandKind::Fp(points) => points.is_none(),
        }
    }

    /// Exact test on one resource (Shin & Lee 2003, Theorems 1 and 4).
    pub fn schedulable(&mut self, r: &Edp) -> bool {
        if self.too_large() {
            return false;
        }
        match &mut self.kind {
            DemandKind::Edf(points) => edf_schedulable_at(points, r) && !points.exceeded(),
            DemandKind::Fp(Some(points)) => fp_schedulable_at(points, r),
            DemandKind::Fp(None) => false,
        }
    }

    /// Least budget within the family for this period; None: not even the family's largest works.
    pub fn min_budget(&mut self, model: Family, period: u64) -> Option<u64> {
        if self.too_large() {
            return None;
        }
        match &mut self.kind {
            DemandKind::Edf(points) => min_budget_edf(points, model, period).filter(|_| !points.exceeded()),
            DemandKind::Fp(Some(points)) => min_budget_fp(points, model, period),
            DemandKind::Fp(None) => None,
        }
    }
}

/// Least integer budget for EDF on the family's resource with this period (Shin & Lee 2003,
/// Theorem 1; Easwaran et al. 2007, Theorem 1 for EDP). None: not even the largest suffices.
fn min_budget_edf(points: &mut CheckPoints, model: Family, period: u64) -> Option<u64> {
    let tasks = points.tasks();
    if utilisation(tasks) > 1.0 + 1e-9 {
        return None; // more demand than any supply of rate <= 1 gives, whatever the check points
    }
    let top = model.max_budget(period);
    let horizon = edf_horizon(tasks);
    let until = |theta: u64| linear_horizon(tasks, &model.supply(period, theta)).map_or(horizon, |t| t.min(horizon));
    // Theta >= U Pi is necessary (with less, dbf overtakes sbf by t = LCM).
    let mut theta = ((utilisation(tasks) * period as f64 * (1.0 - 1e-9)).floor() as u64).min(top);
    let mut stop = until(theta);
    for i in 0.. {
        let Some((t, demand)) = points.get(i) else { break };
        if t > stop {
            break;
        }
        if (model.supply(period, theta).sbf(t) as u128) < demand {
            theta = least_theta_at(model, period, t, demand, theta + 1, top)?;
            stop = until(theta);
        }
    }
    Some(theta)
}

/// Least integer budget for FP on the family's resource (Shin & Lee 2003, Theorem 4): the max
/// over tasks of the min over their scheduling points.
fn min_budget_fp(points: &[Vec<(u64, u128)>], model: Family, period: u64) -> Option<u64> {
    let top = model.max_budget(period);
    let mut theta = 0;
    for task_points in points {
        if task_points.iter().any(|&(t, r)| model.supply(period, theta).sbf(t) as u128 >= r) {
            continue;
        }
        let mut best: Option<u64> = None;
        for &(t, r) in task_points {
            let hi = best.map_or(top, |b| b - 1);
            if let Some(v) = least_theta_at(model, period, t, r, theta + 1, hi) {
                best = Some(v);
            }
        }
        theta = best?;
    }
    Some(theta)
}

/// Least budget for the guest's scheduler (FP: tasks sorted by decreasing priority).
pub fn min_budget(tasks: &[Sporadic], sched: GuestScheduler, model: Model, period: u64) -> Option<u64> {
    min_budget_in(tasks, sched, model.family(), period)
}

/// Least budget within a resource family (FP: tasks sorted by decreasing priority).
pub fn min_budget_in(tasks: &[Sporadic], sched: GuestScheduler, model: Family, period: u64) -> Option<u64> {
    Demand::new(tasks, sched).min_budget(model, period)
}

/// Largest EDP deadline `Delta` in `[Theta, Pi]` that keeps the guest schedulable with budget
/// `Theta` (Easwaran et al. 2007; sbf is non-increasing in `Delta`, so bisection is exact).
/// Assumes `Delta = Theta` is schedulable.
pub fn max_deadline(demand: &mut Demand, period: u64, budget: u64) -> u64 {
    largest_deadline(demand, period, budget.max(1).min(period), |deadline| Edp { period, budget, deadline })
}

/// Largest deployed deadline in `[lo, Pi]` whose supply `supply(Delta)` keeps the guest
/// schedulable (sbf non-increasing in `Delta`: bisection); assumes `lo` is schedulable.
fn largest_deadline(demand: &mut Demand, period: u64, lo: u64, supply: impl Fn(u64) -> Edp) -> u64 {
    let (mut lo, mut hi) = (lo, period);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if demand.schedulable(&supply(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// `a` has strictly less bandwidth than `b`, or the same and a larger period (exact, u128).
fn better(a: (u64, u64), b: (u64, u64)) -> bool {
    let (lhs, rhs) = (a.1 as u128 * b.0 as u128, b.1 as u128 * a.0 as u128);
    lhs < rhs || (lhs == rhs && a.0 > b.0)
}

/// Whether `period` can beat or tie the best so far: only if the largest budget with no more
/// bandwidth, `floor(Theta_b Pi / Pi_b)` (less the per-period overhead), passes the (exact) test.
/// Cheaper than the least-budget search, as a failing test stops at its first violated check point.
fn may_compete(demand: &mut Demand, family: Family, period: u64, best: (u64, u64), per_period: u64) -> bool {
    let deployed = (best.1 as u128 * period as u128 / best.0 as u128).min(period as u128) as u64;
    let Some(theta) = deployed.checked_sub(per_period) else { return false };
    theta as f64 >= utilisation(demand.tasks) * period as f64 * (1.0 - 1e-9)
        && demand.schedulable(&family.supply(period, theta))
}

/// The interface of least bandwidth over the candidate periods (ties: larger period); None if no
/// candidate period admits any budget. FP tasks must be sorted by decreasing priority.
pub fn best_interface(
    tasks: &[Sporadic],
    sched: GuestScheduler,
    model: Model,
    candidates: &[u64],
) -> Option<Interface> {
    best_interface_for(&mut Demand::new(tasks, sched), model, candidates)
}

/// [`best_interface`] on a guest's shared [`Demand`].
pub fn best_interface_for(demand: &mut Demand, model: Model, candidates: &[u64]) -> Option<Interface> {
    let (period, budget) = least_bandwidth(demand, candidates, 0, |_| model.family())?;
    let deadline = match model {
        Model::Prm => period,
        Model::Edp => max_deadline(demand, period, budget),
    };
    Some(Interface { period, budget, deadline })
}

/// The PRM interface of least *deployed* bandwidth `(Theta + o) / Pi` on a host with overheads
/// ([`crate::overhead`]): per candidate period the least usable budget `Theta` on the delayed
/// supply, deployed as `(Pi, Theta + o, Pi)`. The demand's tasks must already carry the per-job
/// overhead in their `c`.
pub fn best_interface_with_overheads(
    demand: &mut Demand,
    candidates: &[u64],
    overheads: &crate::overhead::Overheads,
) -> Option<Interface> {
    let o = overheads.per_period;
    let (period, budget) = least_bandwidth(demand, candidates, o, |_| Family::Delayed(*overheads))?;
    Some(Interface { period, budget, deadline: period })
}

/// The EDP interface of least deployed bandwidth on a host with overheads: per candidate period
/// the least usable budget with the deployed deadline at the deployed budget
/// ([`Family::DelayedEdp`]), then the largest deployed deadline that keeps that budget (as
/// [`best_interface_for`] does without overheads). The demand's tasks carry the per-job overhead.
pub fn best_edp_with_overheads(
    demand: &mut Demand,
    candidates: &[u64],
    overheads: &crate::overhead::Overheads,
) -> Option<Interface> {
    let o = *overheads;
    let (period, budget) = least_bandwidth(demand, candidates, o.per_period, |_| Family::DelayedEdp(o, None))?;
    let usable = budget - o.per_period;
    let deadline = largest_deadline(demand, period, budget, |d| Family::DelayedEdp(o, Some(d)).supply(period, usable));
    Some(Interface { period, budget, deadline })
}

/// [`edp_menu`] on a host with overheads: for deployed deadlines `Pi k / 8` above the last one,
/// the least deployed budget with that deadline ([`Family::DelayedEdp`]), and the largest
/// deadline that keeps it; only alternatives that buy a larger deadline are kept.
pub fn edp_menu_with_overheads(
    demand: &mut Demand,
    best: Interface,
    overheads: &crate::overhead::Overheads,
) -> Vec<Interface> {
    let (o, period) = (*overheads, best.period);
    let mut menu = vec![best];
    for k in 1..=EDP_MENU_STEPS {
        let deadline = period * k / EDP_MENU_STEPS;
        let last = menu[menu.len() - 1];
        if deadline <= last.deadline {
            continue;
        }
        if let Some(usable) = demand.min_budget(Family::DelayedEdp(o, Some(deadline)), period) {
            let budget = usable + o.per_period;
            let d =
                largest_deadline(demand, period, deadline, |d| Family::DelayedEdp(o, Some(d)).supply(period, usable));
            if d > last.deadline {
                menu.push(Interface { period, budget, deadline: d });
            }
        }
    }
    menu
}

/// Whether any candidate period admits a PRM interface on a host with overheads: the supply at
/// every t is non-decreasing in the budget, so one schedulability test at the largest usable
/// budget `Pi - o` per period decides it exactly (a failing test stops at its first violated
/// check point, far cheaper than the least-budget search). The demand's tasks must already carry
/// the per-job overhead in their `c`.
pub fn has_interface_with_overheads(
    demand: &mut Demand,
    candidates: &[u64],
    overheads: &crate::overhead::Overheads,
) -> bool {
    let family = Family::Delayed(*overheads);
    candidates.iter().filter(|&&p| p > overheads.per_period).any(|&p| {
        let top = family.max_budget(p);
        utilisation(demand.tasks) * p as f64 * (1.0 - 1e-9) <= top as f64 && demand.schedulable(&family.supply(p, top))
    })
}

/// `(period, deployed budget)` of least deployed bandwidth: usable budget from `family(period)`,
/// plus `per_period`.
fn least_bandwidth(
    demand: &mut Demand,
    candidates: &[u64],
    per_period: u64,
    family: impl Fn(u64) -> Family,
) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    for &period in candidates.iter().filter(|&&p| p > per_period) {
        if best.is_some_and(|b| !may_compete(demand, family(period), period, b, per_period)) {
            continue;
        }
        if let Some(theta) = demand.min_budget(family(period), period) {
            let deployed = theta + per_period;
            if best.is_none_or(|b| better((period, deployed), b)) {
                best = Some((period, deployed));
            }
        }
    }
    best
}

/// Deadlines tried for the EDP menu: `Pi k / EDP_MENU_STEPS`, k = 1..=EDP_MENU_STEPS.
pub const EDP_MENU_STEPS: u64 = 8;

/// EDP alternatives at the chosen period, least bandwidth first: the least-bandwidth interface
/// `best`, then for deadlines `Delta = Pi k / 8` above its deadline the least budget with that
/// deadline (Easwaran et al. 2007), keeping only those that are not dominated (a larger budget
/// must buy a larger deadline). A larger deadline costs bandwidth but lowers the density
/// `Theta / Delta`, which is what lets servers share a core; the partitioner picks per core the
/// cheapest alternative that the core admits.
pub fn edp_menu(demand: &mut Demand, best: Interface) -> Vec<Interface> {
    let mut menu = vec![best];
    for k in 1..=EDP_MENU_STEPS {
        let deadline = best.period * k / EDP_MENU_STEPS;
        let last = menu[menu.len() - 1];
        if deadline <= last.deadline {
            continue;
        }
        if let Some(budget) = demand.min_budget(Family::EdpDeadline(deadline), best.period) {
            let d = max_deadline(demand, best.period, budget);
            if d > last.deadline {
                menu.push(Interface { period: best.period, budget, deadline: d });
            }
        }
    }
    menu
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedtest::edf_schedulable;
    use crate::schedtest::oracle::{edf_every_t, fp_every_t};
    use crate::schedtest::strategies::taskset;
    use proptest::prelude::*;

    fn oracle_ok(ts: &[Sporadic], sched: GuestScheduler, r: &Edp) -> bool {
        match sched {
            GuestScheduler::Edf => edf_every_t(ts, r),
            GuestScheduler::Fp => fp_every_t(ts, r),
        }
    }

    /// Every integer budget, each checked at every integer t.
    fn oracle_min_budget(ts: &[Sporadic], sched: GuestScheduler, model: Family, p: u64) -> Option<u64> {
        (0..=model.max_budget(p)).find(|&b| oracle_ok(ts, sched, &model.supply(p, b)))
    }

    fn family() -> impl Strategy<Value = Family> {
        prop_oneof![Just(Family::Prm), Just(Family::EdpTight), (1u64..10).prop_map(Family::EdpDeadline)]
    }

    fn sched() -> impl Strategy<Value = GuestScheduler> {
        prop::sample::select(vec![GuestScheduler::Edf, GuestScheduler::Fp])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn min_budget_matches_exhaustive_scan(ts in taskset(), s in sched(), p in 1u64..10, f in family()) {
            let f = match f { Family::EdpDeadline(d) => Family::EdpDeadline(d.min(p)), f => f };
            prop_assert_eq!(min_budget_in(&ts, s, f, p), oracle_min_budget(&ts, s, f, p));
        }

        #[test]
        fn shared_demand_answers_like_a_fresh_one(ts in taskset(), s in sched(),
                                                  rs in prop::collection::vec((1u64..12, 0u64..12, 0u64..12), 1..8)) {
            // one Demand asked about supplies in any order (its cache grows in between) answers
            // exactly as the exhaustive oracle does for each
            let mut shared = Demand::new(&ts, s);
            for (p, b, d) in rs {
                let b = b.min(p);
                let r = Edp { period: p, budget: b, deadline: d.clamp(b.max(1), p) };
                prop_assert_eq!(shared.schedulable(&r), oracle_ok(&ts, s, &r));
            }
        }

        #[test]
        fn edp_menu_is_feasible_and_trades_bandwidth_for_deadline(ts in taskset(), s in sched(), p in 1u64..12) {
            if let Some(best) = best_interface(&ts, s, Model::Edp, &[p]) {
                let menu = edp_menu(&mut Demand::new(&ts, s), best);
                prop_assert_eq!(menu[0], best);
                for w in menu.windows(2) {
                    prop_assert!(w[0].budget < w[1].budget && w[0].deadline < w[1].deadline);
                }
                for i in &menu {
                    prop_assert!(i.budget <= i.deadline && i.deadline <= i.period);
                    prop_assert!(oracle_ok(&ts, s, &i.as_supply()));
                }
            }
        }

        #[test]
        fn edp_interface_is_least_bandwidth_and_largest_deadline(ts in taskset(), s in sched(), p in 1u64..9) {
            let got = best_interface(&ts, s, Model::Edp, &[p]);
            // exhaustive over every (Theta, Delta) with Theta <= Delta <= Pi
            let mut all = vec![];
            for b in 0..=p {
                for d in b.max(1)..=p {
                    if oracle_ok(&ts, s, &Edp { period: p, budget: b, deadline: d }) {
                        all.push((b, d));
                    }
                }
            }
            let least = all.iter().map(|x| x.0).min();
            prop_assert_eq!(got.map(|i| i.budget), least);
            if let Some(i) = got {
                let dmax = all.iter().filter(|x| x.0 == i.budget).map(|x| x.1).max().unwrap();
                prop_assert_eq!(i.deadline, dmax);
            }
        }

        #[test]
        fn chosen_period_has_least_bandwidth(
            ts in taskset(), s in sched(), ps in prop::collection::vec(1u64..12, 1..5)
        ) {
            let got = best_interface(&ts, s, Model::Prm, &ps);
            let options: Vec<(u64, u64)> =
                ps.iter().filter_map(|&p| oracle_min_budget(&ts, s, Family::Prm, p).map(|b| (p, b))).collect();
            match got {
                None => prop_assert!(options.is_empty()),
                Some(i) => {
                    for &(p, b) in &options {
                        prop_assert!(i.budget as u128 * p as u128 <= b as u128 * i.period as u128);
                        if i.budget as u128 * p as u128 == b as u128 * i.period as u128 {
                            prop_assert!(i.period >= p);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn default_like_guest_gets_a_sensible_interface() {
        // vm1 of scenarios/default.toml at WCET budgets, 1..10 ms candidates.
        let ms = 1_000_000u64;
        let ts: Vec<Sporadic> = [(2_382_000, 25), (2_743_000, 40), (839_000, 10), (429_000, 10), (918_000, 10)]
            .iter()
            .map(|&(c, p)| Sporadic { c, d: p * ms, t: p * ms })
            .collect();
        let cands: Vec<u64> = (1..=10).map(|k| k * ms).collect();
        let i = best_interface(&ts, GuestScheduler::Edf, Model::Prm, &cands).unwrap();
        let u = utilisation(&ts);
        assert!(i.bandwidth() >= u && i.bandwidth() < 1.0, "{i:?} U={u}");
        assert!(edf_schedulable(&ts, &i.as_supply()));
        assert!(!edf_schedulable(&ts, &Edp::prm(i.period, i.budget - 1)));
        let e = best_interface(&ts, GuestScheduler::Edf, Model::Edp, &cands).unwrap();
        assert!(e.bandwidth() <= i.bandwidth() && e.deadline <= e.period && e.budget <= e.deadline);
    }
}
