//! Demand of a task set: the demand bound function of EDF, the request bound function of fixed
//! priority, and the check points at which they change value.
//!
//! - `dbf_EDF(t) = sum_i max(0, floor((t - D_i) / T_i) + 1) * C_i` - Baruah, Rosier, Howell 1990
//!   (constrained deadlines), as used by Shin & Lee 2003, Eq. (2).
//! - `rbf_i(t) = C_i + sum_{j in hp(i)} ceil(t / T_j) * C_j` - Lehoczky, Sha, Ding 1989; Shin & Lee
//!   2003, Eq. (5) (fixed priority, constrained deadlines).
//!
//! Written by hand: the crates that exist (e.g. `response-time-analysis`) model supply as
//! dedicated-processor bounds with their own time types; here every quantity is integer
//! nanoseconds and the check-point walk is lazy (it stops at a horizon that the caller may shrink
//! while it walks, see `interface.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A sporadic/periodic task with constrained deadline: execution bound `c`, relative deadline
/// `d <= t`, period (minimum inter-arrival) `t`; all integer nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sporadic {
    pub c: u64,
    pub d: u64,
    pub t: u64,
}

/// Most check points (EDF absolute deadlines, FP scheduling points) that the exact analysis of
/// one guest may visit. It bounds `plan`'s memory (32 bytes a point, 64 MiB) and time: a guest
/// that needs more (e.g. task periods of 60 min and 10 us) is reported as too large to analyse
/// exactly, never approximated.
pub const MAX_CHECK_POINTS: usize = 1 << 21;

/// Times beyond this are "infinite" for the analysis (hyperperiods saturate here, so that
/// 2 * LCM and sums stay far from u64 overflow).
pub const TIME_CAP: u64 = u64::MAX / 8;

/// `dbf_EDF(t)` with constrained deadlines (Baruah et al. 1990; Shin & Lee 2003, Eq. (2)).
pub fn dbf_edf(tasks: &[Sporadic], t: u64) -> u128 {
    tasks.iter().filter(|k| t >= k.d).map(|k| ((t - k.d) / k.t + 1) as u128 * k.c as u128).sum()
}

/// `rbf_i(t) = C_i + sum_{j < i} ceil(t / T_j) C_j` for tasks sorted by decreasing priority
/// (Lehoczky et al. 1989; Shin & Lee 2003, Eq. (5)).
pub fn rbf_fp(tasks_by_priority: &[Sporadic], i: usize, t: u64) -> u128 {
    let hp: u128 = tasks_by_priority[..i].iter().map(|k| t.div_ceil(k.t) as u128 * k.c as u128).sum();
    hp + tasks_by_priority[i].c as u128
}

/// Total utilisation `U = sum C_i / T_i`.
pub fn utilisation(tasks: &[Sporadic]) -> f64 {
    tasks.iter().map(|k| k.c as f64 / k.t as f64).sum()
}

/// `B = sum U_i (T_i - D_i)`, the offset of the linear upper bound `dbf(t) <= U t + B`
/// (follows from `floor(x) <= x` in the dbf; used for the horizon `t*`, Shin & Lee 2003, Sec. 5).
pub fn linear_demand_offset(tasks: &[Sporadic]) -> f64 {
    tasks.iter().map(|k| k.c as f64 / k.t as f64 * (k.t - k.d) as f64).sum()
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Least common multiple of the periods (the hyperperiod), saturating at [`TIME_CAP`].
pub fn hyperperiod(tasks: &[Sporadic]) -> u64 {
    let mut l: u128 = 1;
    for k in tasks {
        let p = k.t as u128;
        l = l / gcd(l, p) * p;
        if l >= TIME_CAP as u128 {
            return TIME_CAP;
        }
    }
    l as u64
}

/// The EDF analysis horizon `2 * LCM` of Shin & Lee 2003 (Theorem 1), saturating.
pub fn edf_horizon(tasks: &[Sporadic]) -> u64 {
    hyperperiod(tasks).saturating_mul(2).min(TIME_CAP)
}

/// Lazily walks the distinct absolute deadlines `k T_i + D_i` in increasing order, yielding
/// `(t, dbf_EDF(t))`: the only points where `dbf_EDF` steps (it is constant between them).
pub struct DeadlineWalk<'a> {
    tasks: &'a [Sporadic],
    next: BinaryHeap<Reverse<(u64, usize)>>,
    demand: u128,
}

impl<'a> DeadlineWalk<'a> {
    pub fn new(tasks: &'a [Sporadic]) -> Self {
        let next = tasks.iter().enumerate().filter(|(_, k)| k.c > 0).map(|(i, k)| Reverse((k.d, i))).collect();
        DeadlineWalk { tasks, next, demand: 0 }
    }
}

impl Iterator for DeadlineWalk<'_> {
    type Item = (u64, u128);
    fn next(&mut self) -> Option<(u64, u128)> {
        let Reverse((t, _)) = *self.next.peek()?;
        if t >= TIME_CAP {
            return None;
        }
        while let Some(&Reverse((u, i))) = self.next.peek() {
            if u != t {
                break;
            }
            self.next.pop();
            let k = self.tasks[i];
            self.demand += k.c as u128;
            self.next.push(Reverse((u.saturating_add(k.t), i)));
        }
        Some((t, self.demand))
    }
}

/// The EDF check points `(t, dbf_EDF(t))` of a task set, walked once and kept, so that every
/// supply tried for the same tasks (candidate periods, budgets, deadlines) reads an array instead
/// of walking the deadlines again.
/// At most [`MAX_CHECK_POINTS`] are kept: asking for more ends the walk and marks the points
/// [`CheckPoints::exceeded`], after which no answer computed from them may be used.
pub struct CheckPoints<'a> {
    tasks: &'a [Sporadic],
    walk: DeadlineWalk<'a>,
    seen: Vec<(u64, u128)>,
    exceeded: bool,
}

impl<'a> CheckPoints<'a> {
    pub fn new(tasks: &'a [Sporadic]) -> Self {
        CheckPoints { tasks, walk: DeadlineWalk::new(tasks), seen: vec![], exceeded: false }
    }
    pub fn tasks(&self) -> &'a [Sporadic] {
        self.tasks
    }
    /// The `i`-th check point (0-based), walking further only when it was not reached before;
    /// None past the last one, or past [`MAX_CHECK_POINTS`] (then [`CheckPoints::exceeded`]).
    pub fn get(&mut self, i: usize) -> Option<(u64, u128)> {
        if i >= MAX_CHECK_POINTS {
            self.exceeded = true;
            return None;
        }
        while self.seen.len() <= i {
            self.seen.push(self.walk.next()?);
        }
        Some(self.seen[i])
    }
    /// A check point beyond [`MAX_CHECK_POINTS`] was needed: the walk was cut short.
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }
}

/// How many scheduling points [`fp_points`] gives for every task together, before duplicates
/// are removed (`sum_i 1 + sum_{j<i} floor(D_i / T_j)`), computed without listing them.
pub fn fp_point_count(tasks_by_priority: &[Sporadic]) -> u128 {
    (0..tasks_by_priority.len())
        .map(|i| {
            let d = tasks_by_priority[i].d;
            1 + tasks_by_priority[..i].iter().map(|k| (d / k.t) as u128).sum::<u128>()
        })
        .sum()
}

/// Scheduling points of task `i` (tasks sorted by decreasing priority): `{D_i} U {k T_j <= D_i :
/// j < i}`, each with `rbf_i` there. `rbf_i` is constant on `(k T_j, (k+1) T_j]`, so its right
/// ends are the only points worth checking against a non-decreasing supply (Bini & Buttazzo 2004).
pub fn fp_points(tasks_by_priority: &[Sporadic], i: usize) -> Vec<(u64, u128)> {
    let d = tasks_by_priority[i].d;
    let mut ts: Vec<u64> = vec![d];
    for k in &tasks_by_priority[..i] {
        ts.extend((1..=d / k.t).map(|m| m * k.t));
    }
    ts.sort_unstable();
    ts.dedup();
    ts.into_iter().map(|t| (t, rbf_fp(tasks_by_priority, i, t))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn task() -> impl Strategy<Value = Sporadic> {
        (1u64..12).prop_flat_map(|t| (1..=t).prop_flat_map(move |d| (1..=d).prop_map(move |c| Sporadic { c, d, t })))
    }

    proptest! {
        #[test]
        fn walk_matches_dbf_at_every_step(ts in prop::collection::vec(task(), 1..5)) {
            let h = edf_horizon(&ts);
            let steps: Vec<(u64, u128)> = DeadlineWalk::new(&ts).take_while(|p| p.0 <= h).collect();
            // every value yielded is dbf there, and dbf does not change between yielded points
            let mut prev = 0u128;
            let mut idx = 0;
            for t in 1..=h {
                let v = dbf_edf(&ts, t);
                if idx < steps.len() && steps[idx].0 == t {
                    prop_assert_eq!(steps[idx].1, v);
                    idx += 1;
                } else {
                    prop_assert_eq!(v, prev, "dbf changed at {} which is not a check point", t);
                }
                prev = v;
            }
            prop_assert_eq!(idx, steps.len());
        }

        #[test]
        fn fp_points_are_the_right_ends_of_rbf_steps(ts in prop::collection::vec(task(), 1..5)) {
            for i in 0..ts.len() {
                let pts = fp_points(&ts, i);
                for t in 1..=ts[i].d {
                    // the next point at or after t has the same rbf (rbf is constant up to it)
                    let p = pts.iter().find(|p| p.0 >= t).unwrap();
                    prop_assert_eq!(rbf_fp(&ts, i, t), p.1);
                }
            }
        }
    }

    #[test]
    fn check_points_stop_at_the_limit() {
        // periods 60 min and 1 ns: one deadline per nanosecond
        let ts = [Sporadic { c: 1, d: 3_600_000_000_000, t: 3_600_000_000_000 }, Sporadic { c: 0, d: 1, t: 1 }];
        let mut points = CheckPoints::new(&ts);
        assert!(points.get(MAX_CHECK_POINTS - 1).is_none(), "a task of budget 0 has no deadlines");
        let ts = [Sporadic { c: 1, d: 3_600_000_000_000, t: 3_600_000_000_000 }, Sporadic { c: 1, d: 2, t: 2 }];
        let mut points = CheckPoints::new(&ts);
        assert!(points.get(MAX_CHECK_POINTS - 1).is_some() && !points.exceeded());
        assert!(points.get(MAX_CHECK_POINTS).is_none() && points.exceeded());
        assert_eq!(points.seen.len(), MAX_CHECK_POINTS);
    }

    #[test]
    fn fp_point_count_bounds_the_points() {
        let ts = [Sporadic { c: 1, d: 10, t: 10 }, Sporadic { c: 1, d: 15, t: 15 }, Sporadic { c: 1, d: 30, t: 30 }];
        let listed: usize = (0..3).map(|i| fp_points(&ts, i).len()).sum();
        assert_eq!(fp_point_count(&ts), 1 + 2 + 6);
        assert!(listed as u128 <= fp_point_count(&ts));
        let huge =
            [Sporadic { c: 1, d: 10_000, t: 10_000 }, Sporadic { c: 1, d: 3_600_000_000_000, t: 3_600_000_000_000 }];
        assert_eq!(fp_point_count(&huge), 2 + 360_000_000);
    }

    #[test]
    fn hyperperiod_saturates() {
        let big: Vec<Sporadic> = [1_000_003u64, 1_000_033, 1_000_037, 1_000_039, 999_999_937]
            .iter()
            .map(|&t| Sporadic { c: 1, d: t, t })
            .collect();
        assert_eq!(hyperperiod(&big), TIME_CAP);
        assert_eq!(edf_horizon(&big), TIME_CAP);
        let small = [Sporadic { c: 1, d: 4, t: 4 }, Sporadic { c: 1, d: 6, t: 6 }];
        assert_eq!(hyperperiod(&small), 12);
    }
}
