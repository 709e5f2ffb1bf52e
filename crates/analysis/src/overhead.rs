//! Overhead-aware interfaces: a host model's measured costs charged to the analysis, after the
//! overhead-aware compositional analysis of Phan, Xu, Lee, Lee & Sokolsky 2013 (as in CARTS,
//! Phan et al. 2011): costs the host spends per server period are paid
//! out of the server's budget, costs per job inflate the job's execution, and latency delays the
//! supply the tasks see.
//!
//! - **Per server period** `o = server_overhead_ns + cache_reload_ns` (replenishment timer, two
//!   switches, and the vCPU's working set reloaded after its blackout): the reservation deployed is
//!   `(Pi, Theta + o)`, the tasks see the periodic resource `(Pi, Theta)`.
//! - **Per job** `cache_reload_ns + 2 context_switch_ns`: a job's release preempts at most one
//!   job (EDF and FP), which reloads its cache; the job's `c` is inflated by it (Phan et al. 2013,
//!   Sec. IV, the cache-related overhead charged to the preempting task).
//! - **Release latency** `J = release_latency_ns.max`, a release jitter: EDF's demand with jitter
//!   is `dbf_J(t) = dbf(t + J)` (Spuri 1996), FP's request bound with jitter has its points shifted
//!   by `J` the same way, so `dbf_J(t) <= sbf(t)` for all t is `dbf(t) <= sbf(t - J)`: the supply
//!   is delayed by `J` (and a task with `D <= J` can never be schedulable).
//! - **Enforcement overrun** `delta = enforcement.overrun_max_ns` (hrtick: how late the
//!   throttle comes; tick: the tick's length, up to which depletion goes unnoticed): the server
//!   may run `delta` past its runtime and the kernel pays it back from the following periods
//!   (`replenish_dl_entity` adds one runtime per period until it is positive;
//!   docs/sim-deadline-consistency.md). A window that starts right after an overrun therefore
//!   gets up to `delta` less than the PRM bound, `sbf(t) - delta`; since a PRM gives `Theta` per
//!   period, `sbf(t - k Pi) = sbf(t) - k Theta` beyond its first blackout, so the safe bound used is
//!   the supply delayed by `ceil(delta / Theta) Pi` (Theta the usable budget; the pay-back is in
//!   fact at `Theta + o` per period). A delay of `delta` alone would be optimistic: the period after
//!   an overrun supplies `Theta - delta`, and with it the supply stays `delta` below the PRM bound
//!   for good (the simulator shows the misses, `crates/sim/tests/plan_consistency.rs`).
//!
//! A PRM `(Pi, Theta)` delayed by `d` is, as a function of t, the EDP formula with `Delta = Pi + d`
//! (first supply at `Pi + d - Theta`, blackout `2 (Pi - Theta) + d`). The delay shrinks as `Theta`
//! grows, so the supply at every t is still non-decreasing in `Theta` and the exact least-budget
//! search of [`crate::interface`] runs unchanged on [`crate::interface::Family::Delayed`].

use rtvirt_model::hostmodel::{EnforcementKind, HostModel};

/// The host's costs as the analysis charges them (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overheads {
    /// Paid by each server once per period out of its budget.
    pub per_period: u64,
    /// Added to every job's execution bound.
    pub per_job: u64,
    /// Release jitter of every task.
    pub release_jitter: u64,
    /// Largest overrun before the throttle.
    pub overrun: u64,
    /// The overrun comes from enforcement at the tick (for the text; paid back alike).
    pub tick: bool,
}

impl Overheads {
    /// The costs of a host model.
    pub fn of(model: &HostModel) -> Overheads {
        Overheads {
            per_period: model.server_overhead_ns.saturating_add(model.cache_reload_ns),
            per_job: model.cache_reload_ns.saturating_add(model.context_switch_ns.saturating_mul(2)),
            release_jitter: model.release_latency_ns.max,
            overrun: model.enforcement.overrun_max_ns,
            tick: model.enforcement.kind == EnforcementKind::Tick,
        }
    }

    /// How long the tasks' supply is delayed with server period `period` and usable budget
    /// `budget`: the release jitter and the overrun's pay-back, `ceil(delta / Theta) Pi` (a budget
    /// of 0 never pays it back: `u64::MAX`).
    pub fn supply_delay(&self, period: u64, budget: u64) -> u64 {
        self.release_jitter.saturating_add(self.payback(period, budget))
    }

    /// The pay-back blackout of one overrun: `ceil(overrun / budget)` whole periods.
    pub fn payback(&self, period: u64, budget: u64) -> u64 {
        match (self.overrun, budget) {
            (0, _) => 0,
            (_, 0) => u64::MAX,
            (overrun, budget) => overrun.div_ceil(budget).saturating_mul(period),
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Overheads::default()
    }
}

/// The guests of a plan made *without* overheads that a host enforcing `o.overrun` late (a tick)
/// starves: an overrun of up to `o.overrun` is paid back over `ceil(overrun / Theta)` periods
/// with no supply, and where that blackout reaches the guest's shortest task deadline a job
/// released into it misses whatever the analysis said. One sentence per such guest (empty when
/// the plan was made with overheads, or the host enforces exactly).
pub fn payback_warnings(plan: &rtvirt_model::plan::Plan, o: &Overheads) -> Vec<String> {
    if plan.settings.overheads.is_some() || o.overrun == 0 {
        return vec![];
    }
    plan.guests
        .iter()
        .filter(|g| g.core.is_some())
        .filter_map(|g| {
            let blackout = o.payback(g.period_ns, g.budget_ns);
            let shortest = g.tasks.iter().map(|t| t.deadline_ns).min()?;
            (blackout >= shortest).then(|| {
                format!(
                    "guest \"{}\": budget {} every {}, planned without a host model; enforcement {} late lets it \
                     overrun by up to that, paid back over {} periods ({} with no supply), not shorter than its \
                     shortest task deadline ({}): its jobs can miss; plan with --host-model (or enable HRTICK)",
                    g.name,
                    rtvirt_model::Nanos(g.budget_ns),
                    rtvirt_model::Nanos(g.period_ns),
                    rtvirt_model::Nanos(o.overrun),
                    o.overrun.div_ceil(g.budget_ns.max(1)),
                    rtvirt_model::Nanos(blackout),
                    rtvirt_model::Nanos(shortest)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbf::{hyperperiod, Sporadic};
    use crate::interface::{
        best_edp_with_overheads, best_interface_with_overheads, edp_menu_with_overheads, has_interface_with_overheads,
        Demand,
    };
    use crate::sbf::{Edp, Supply};
    use crate::schedtest::strategies::taskset;
    use proptest::prelude::*;
    use rtvirt_model::scenario::GuestScheduler;

    /// The least supply with overheads, straight from the definitions: the EDP `(Pi, usable,
    /// deadline)` (a PRM when `deadline = Pi`) blacked out for the enforcement pay-back,
    /// `ceil(overrun / usable)` whole periods (not the release jitter: the oracle's demand has it).
    fn supply(period: u64, usable: u64, deadline: u64, o: &Overheads, t: u64) -> u64 {
        if usable == 0 {
            return 0;
        }
        let payback = o.overrun.div_ceil(usable) * period;
        if t < payback {
            return 0;
        }
        Edp { period, budget: usable, deadline }.sbf(t - payback)
    }

    /// EDF demand with release jitter J (Spuri 1996) and per-job overhead, job by job.
    fn dbf_jitter(tasks: &[Sporadic], o: &Overheads, t: u64) -> u64 {
        tasks
            .iter()
            .map(|k| {
                let jobs = if t + o.release_jitter >= k.d { (t + o.release_jitter - k.d) / k.t + 1 } else { 0 };
                jobs * (k.c + o.per_job)
            })
            .sum()
    }

    /// FP with jitter: task i (index = priority order) meets its deadline iff some t in
    /// (0, D_i - J] has c_i + sum_{j<i} ceil((t + J) / T_j) c_j <= sbf(t).
    fn fp_ok(tasks: &[Sporadic], o: &Overheads, period: u64, usable: u64, deadline: u64) -> bool {
        (0..tasks.len()).all(|i| {
            let d = tasks[i].d.saturating_sub(o.release_jitter);
            (1..=d).any(|t| {
                let hp: u64 = tasks[..i].iter().map(|k| (t + o.release_jitter).div_ceil(k.t) * (k.c + o.per_job)).sum();
                tasks[i].c + o.per_job + hp <= supply(period, usable, deadline, o, t)
            })
        })
    }

    /// The tasks meet every deadline on the supply of usable budget `usable` within deployed
    /// deadline `deadline`, checked at every integer t far past 2 LCM.
    fn ok(tasks: &[Sporadic], sched: GuestScheduler, o: &Overheads, period: u64, usable: u64, deadline: u64) -> bool {
        match sched {
            GuestScheduler::Edf => {
                let delay = o.release_jitter + o.overrun.div_ceil(usable.max(1)) * period;
                let horizon = 4 * hyperperiod(tasks) + 4 * (delay + period);
                (0..=horizon).all(|t| dbf_jitter(tasks, o, t) <= supply(period, usable, deadline, o, t))
            }
            GuestScheduler::Fp => fp_ok(tasks, o, period, usable, deadline),
        }
    }

    /// Least deployed budget by scanning every budget and every integer t far past 2 LCM.
    fn oracle(tasks: &[Sporadic], sched: GuestScheduler, o: &Overheads, period: u64) -> Option<u64> {
        (0..=period.checked_sub(o.per_period)?)
            .find(|&usable| ok(tasks, sched, o, period, usable, period))
            .map(|usable| usable + o.per_period)
    }

    /// EDP: the least deployed budget with the deadline at it, then the largest deployed
    /// deadline that keeps it, by scanning every budget and every deadline.
    fn oracle_edp(tasks: &[Sporadic], sched: GuestScheduler, o: &Overheads, period: u64) -> Option<(u64, u64)> {
        let usable =
            (0..=period.checked_sub(o.per_period)?).find(|&u| ok(tasks, sched, o, period, u, u + o.per_period))?;
        let budget = usable + o.per_period;
        let deadline = (budget..=period).rev().find(|&d| ok(tasks, sched, o, period, usable, d))?;
        Some((budget, deadline))
    }

    fn overheads() -> impl Strategy<Value = Overheads> {
        (0u64..3, 0u64..2, 0u64..3, 0u64..4, any::<bool>()).prop_map(
            |(per_period, per_job, release_jitter, overrun, tick)| Overheads {
                per_period,
                per_job,
                release_jitter,
                overrun,
                tick,
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn least_budget_with_overheads_is_the_brute_force_one(
            tasks in taskset(), o in overheads(), period in 1u64..7, fp in any::<bool>()
        ) {
            let sched = if fp { GuestScheduler::Fp } else { GuestScheduler::Edf };
            let inflated: Vec<Sporadic> = tasks.iter().map(|t| Sporadic { c: t.c + o.per_job, ..*t }).collect();
            let mut demand = Demand::new(&inflated, sched);
            let got = best_interface_with_overheads(&mut demand, &[period], &o).map(|i| i.budget);
            let want = oracle(&tasks, sched, &o, period);
            prop_assert_eq!(got, want, "tasks {:?} overheads {:?} period {}", tasks, o, period);
        }

        #[test]
        fn edp_with_overheads_is_the_brute_force_one(
            tasks in taskset(), o in overheads(), period in 1u64..7, fp in any::<bool>()
        ) {
            let sched = if fp { GuestScheduler::Fp } else { GuestScheduler::Edf };
            let inflated: Vec<Sporadic> = tasks.iter().map(|t| Sporadic { c: t.c + o.per_job, ..*t }).collect();
            let mut demand = Demand::new(&inflated, sched);
            let got = best_edp_with_overheads(&mut demand, &[period], &o).map(|i| (i.budget, i.deadline));
            prop_assert_eq!(got, oracle_edp(&tasks, sched, &o, period), "tasks {:?} overheads {:?} period {}", tasks, o, period);
            // every alternative of the menu is schedulable, buys a larger deadline with more budget
            if let Some(best) = best_edp_with_overheads(&mut demand, &[period], &o) {
                let menu = edp_menu_with_overheads(&mut demand, best, &o);
                for w in menu.windows(2) {
                    prop_assert!(w[1].budget > w[0].budget && w[1].deadline > w[0].deadline, "{:?}", menu);
                }
                for i in &menu {
                    prop_assert!(ok(&tasks, sched, &o, period, i.budget - o.per_period, i.deadline), "{:?}", i);
                }
            }
        }

        #[test]
        fn chosen_period_with_overheads_has_least_deployed_bandwidth(
            tasks in taskset(), o in overheads(), periods in prop::collection::vec(1u64..8, 1..4), fp in any::<bool>()
        ) {
            let sched = if fp { GuestScheduler::Fp } else { GuestScheduler::Edf };
            let inflated: Vec<Sporadic> = tasks.iter().map(|t| Sporadic { c: t.c + o.per_job, ..*t }).collect();
            let got = best_interface_with_overheads(&mut Demand::new(&inflated, sched), &periods, &o);
            let exists = has_interface_with_overheads(&mut Demand::new(&inflated, sched), &periods, &o);
            prop_assert_eq!(exists, got.is_some());
            let options: Vec<(u64, u64)> =
                periods.iter().filter_map(|&p| oracle(&tasks, sched, &o, p).map(|b| (p, b))).collect();
            match got {
                None => prop_assert!(options.is_empty(), "missed {:?}", options),
                Some(i) => {
                    prop_assert!(options.contains(&(i.period, i.budget)), "{:?} not in {:?}", i, options);
                    for &(p, b) in &options {
                        let (lhs, rhs) = (i.budget as u128 * p as u128, b as u128 * i.period as u128);
                        prop_assert!(lhs < rhs || (lhs == rhs && i.period >= p), "{:?} vs ({}, {})", i, p, b);
                    }
                }
            }
        }
    }

    #[test]
    fn a_plan_without_overheads_warns_where_a_tick_overrun_outlasts_a_deadline() {
        // 1 ms of work every 50 ms: the least PRM budget is 52.6 us every 2.5 ms, and a 4 ms
        // tick's overrun is paid back over 77 periods (190 ms) - longer than the 50 ms deadline
        let s = rtvirt_model::scenario::Scenario::from_toml(
            "[host]\ncores = 1\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n[[guest.task]]\nname = \"t\"\n\
             period = \"50ms\"\nwcet = \"1ms\"\n",
            None,
        )
        .unwrap();
        let plain = crate::planner::plan_at(&s, &Default::default(), None).plan;
        let tick = Overheads { overrun: 4_000_000, tick: true, ..Default::default() };
        let w = payback_warnings(&plain, &tick);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("guest \"g\"") && w[0].contains("plan with --host-model"), "{}", w[0]);
        assert!(payback_warnings(&plain, &Overheads::default()).is_empty());
        // a 100 us overrun is paid back within 5 periods: no warning
        assert!(payback_warnings(&plain, &Overheads { overrun: 100_000, ..tick }).is_empty());
        // planned with the host's overheads: the pay-back is in the analysis
        let options = crate::planner::PlanOptions { overheads: Some(tick), ..Default::default() };
        let aware = crate::planner::plan_at(&s, &options, None).plan;
        assert!(aware.feasible);
        assert!(payback_warnings(&aware, &tick).is_empty());
    }

    #[test]
    fn no_overheads_is_the_plain_prm_analysis() {
        let tasks = [Sporadic { c: 1, d: 4, t: 4 }, Sporadic { c: 2, d: 6, t: 6 }];
        for period in 1..6 {
            let plain =
                crate::interface::best_interface(&tasks, GuestScheduler::Edf, crate::interface::Model::Prm, &[period]);
            let with = best_interface_with_overheads(
                &mut Demand::new(&tasks, GuestScheduler::Edf),
                &[period],
                &Overheads::default(),
            );
            assert_eq!(plain, with, "period {period}");
        }
    }

    #[test]
    fn a_per_period_overhead_moves_the_choice_off_the_smallest_period() {
        // u = 0.2 of 10 ms tasks; candidates 1..10 ms. Without overhead the smallest period has
        // the least bandwidth; 50 us per period makes a larger period cheaper.
        let ms = 1_000_000;
        let tasks = [Sporadic { c: 2 * ms, d: 10 * ms, t: 10 * ms }];
        let candidates: Vec<u64> = (1..=10).map(|k| k * ms).collect();
        let plain =
            crate::interface::best_interface(&tasks, GuestScheduler::Edf, crate::interface::Model::Prm, &candidates)
                .unwrap();
        assert_eq!(plain.period, ms);
        let o = Overheads { per_period: 50_000, ..Default::default() };
        let with =
            best_interface_with_overheads(&mut Demand::new(&tasks, GuestScheduler::Edf), &candidates, &o).unwrap();
        assert!(with.period > ms / 10, "{with:?}");
        assert!(with.bandwidth() > plain.bandwidth());
    }
}
