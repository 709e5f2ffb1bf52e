//! Exact schedulability of a task set on a resource with a supply bound function.
//!
//! - EDF: schedulable iff `dbf_EDF(t) <= sbf(t)` for all `0 < t <= 2 LCM` (Shin & Lee 2003,
//!   Theorem 1; with a dedicated processor this is Baruah et al. 1990's processor-demand test).
//!   Only absolute deadlines need checking (dbf steps there, sbf never decreases), and none beyond
//!   `t* = (rate * delay + B) / (rate - U)` where the linear bounds `dbf(t) <= U t + B` and
//!   `sbf(t) >= rate (t - delay)` cross (Shin & Lee 2003, Sec. 5; Easwaran et al. 2007, Eq. (2)).
//! - FP: schedulable iff every task `i` has a scheduling point `t <= D_i` with
//!   `rbf_i(t) <= sbf(t)` (Shin & Lee 2003, Theorem 4, with Bini & Buttazzo 2004's point set).

use crate::dbf::{edf_horizon, fp_points, linear_demand_offset, utilisation, CheckPoints, Sporadic, TIME_CAP};
use crate::sbf::Supply;

/// `t*`: no EDF check point at or beyond it can fail on this supply (None: the linear bounds never
/// cross, i.e. the supply rate does not exceed U). Rounded up with a safety margin.
pub fn linear_horizon(tasks: &[Sporadic], supply: &impl Supply) -> Option<u64> {
    let (rate, delay) = supply.linear();
    let u = utilisation(tasks);
    if rate <= u {
        return None;
    }
    let t_star = (rate * delay.max(0.0) + linear_demand_offset(tasks)) / (rate - u);
    let t = (t_star * (1.0 + 1e-9)).ceil() + 1.0;
    Some(if t >= TIME_CAP as f64 { TIME_CAP } else { t as u64 })
}

/// The last EDF check point needed: `min(2 LCM, t*)`.
pub fn edf_check_until(tasks: &[Sporadic], supply: &impl Supply) -> u64 {
    let h = edf_horizon(tasks);
    linear_horizon(tasks, supply).map_or(h, |t| t.min(h))
}

/// Exact EDF test on a supply (Shin & Lee 2003, Theorem 1). A task set that needs more than
/// [`crate::dbf::MAX_CHECK_POINTS`] check points is reported unschedulable (the safe answer).
pub fn edf_schedulable(tasks: &[Sporadic], supply: &impl Supply) -> bool {
    let mut points = CheckPoints::new(tasks);
    edf_schedulable_at(&mut points, supply) && !points.exceeded()
}

/// [`edf_schedulable`] reading (and extending) shared check points.
pub fn edf_schedulable_at(points: &mut CheckPoints, supply: &impl Supply) -> bool {
    let until = edf_check_until(points.tasks(), supply);
    (0..).map_while(|i| points.get(i)).take_while(|&(t, _)| t <= until).all(|(t, d)| d <= supply.sbf(t) as u128)
}

/// Exact FP test on a supply for tasks sorted by decreasing priority (Shin & Lee 2003, Thm 4).
pub fn fp_schedulable(tasks_by_priority: &[Sporadic], supply: &impl Supply) -> bool {
    let points: Vec<Vec<(u64, u128)>> = (0..tasks_by_priority.len()).map(|i| fp_points(tasks_by_priority, i)).collect();
    fp_schedulable_at(&points, supply)
}

/// [`fp_schedulable`] on precomputed scheduling points (one list per task, priority order).
pub fn fp_schedulable_at(points: &[Vec<(u64, u128)>], supply: &impl Supply) -> bool {
    points.iter().all(|p| p.iter().any(|&(t, r)| r <= supply.sbf(t) as u128))
}

#[cfg(test)]
pub(crate) mod oracle {
    //! Brute-force oracles: check every integer t.
    use crate::dbf::{dbf_edf, edf_horizon, rbf_fp, Sporadic};
    use crate::sbf::Supply;

    pub fn edf_every_t(tasks: &[Sporadic], supply: &impl Supply) -> bool {
        (1..=edf_horizon(tasks)).all(|t| dbf_edf(tasks, t) <= supply.sbf(t) as u128)
    }

    pub fn fp_every_t(tasks: &[Sporadic], supply: &impl Supply) -> bool {
        (0..tasks.len()).all(|i| (1..=tasks[i].d).any(|t| rbf_fp(tasks, i, t) <= supply.sbf(t) as u128))
    }
}

#[cfg(test)]
pub(crate) mod strategies {
    use crate::dbf::Sporadic;
    use proptest::prelude::*;

    /// Small constrained-deadline tasks with periods from a set with a small LCM.
    pub fn task() -> impl Strategy<Value = Sporadic> {
        prop::sample::select(vec![2u64, 3, 4, 6, 8, 12])
            .prop_flat_map(|t| (1..=t).prop_flat_map(move |d| (1..=d.min(3)).prop_map(move |c| Sporadic { c, d, t })))
    }

    pub fn taskset() -> impl Strategy<Value = Vec<Sporadic>> {
        prop::collection::vec(task(), 1..4)
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::taskset;
    use super::*;
    use crate::sbf::{Dedicated, Edp};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn edf_test_matches_every_t(ts in taskset(), p in 1u64..9, b in 0u64..9, d in 0u64..9) {
            let b = b.min(p);
            let r = Edp { period: p, budget: b, deadline: d.clamp(b.max(1), p) };
            prop_assert_eq!(edf_schedulable(&ts, &r), oracle::edf_every_t(&ts, &r));
            prop_assert_eq!(edf_schedulable(&ts, &Dedicated), oracle::edf_every_t(&ts, &Dedicated));
        }

        #[test]
        fn fp_test_matches_every_t(ts in taskset(), p in 1u64..9, b in 0u64..9) {
            let r = Edp::prm(p, b.min(p));
            prop_assert_eq!(fp_schedulable(&ts, &r), oracle::fp_every_t(&ts, &r));
        }
    }
}
