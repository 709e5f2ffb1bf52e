//! Global EDF on a multiprocessor supply (an MPR, [`crate::mpr`]): a sufficient test, checked
//! exactly over the integer window lengths it quantifies over.
//!
//! Shin, Easwaran & Lee 2008, Theorem 1, in integer time: constrained-deadline sporadic tasks are
//! schedulable by global EDF on a supply of concurrency `m'` if for every task `k` and every
//! `A_k >= 0`, with `t = A_k + D_k`: `DEM_k(t) < sbf(t)`, where
//! `DEM_k(t) = m' (C_k - 1) + sum_i I^_i + sum of the m' - 1 largest (I-_i - I^_i)`, and
//! - `I^_i = min(DBF_i(t), x)`, `I-_i = min(W_i(t), x)` for `i != k`, `x = t - C_k + 1`;
//!   `I^_k = min(DBF_k(t) - C_k, A_k)`, `I-_k = min(W_k(t) - C_k, A_k)` (earlier jobs of `k`);
//! - `DBF_i(t) = N_i C_i`, `N_i = max(0, floor((t - D_i) / T_i) + 1)`: the jobs inside the window
//!   (Baruah, Rosier & Howell 1990);
//! - `W_i(t) = N_i C_i + min(C_i, max(0, t - N_i T_i))`: the same plus one carried-in job
//!   executing as late as it can (Bertogna, Cirinei & Lipari 2005, the EDF workload bound with
//!   the last deadline at the window's end);
//! - at most `m' - 1` tasks carry a job in (Baruah 2007), hence the `m' - 1` largest terms.
//!
//! Why integer time, `C_k - 1`, `x = t - C_k + 1` and `<`: the forms with `m' C_k`, `t - C_k`
//! and `<=` (Shin, Easwaran & Lee 2008; Baruah 2007) accept two tasks `(C, D, T) = (1, 1, 2)` and
//! `(1, 1, 3)` on one processor, which miss at time 1. A job of `k` that misses runs at most
//! `C_k - 1` slots of the window, so at least `x` slots see every supplied processor busy with
//! other work; the `x` of them with the least supply hold at least `sbf(t) - m' (t - x)` of it,
//! and a task runs at most one processor per slot: a miss needs
//! `sum_i min(I_i, x) >= sbf(t) - m' (C_k - 1)` (the cap of Bertogna, Cirinei & Lipari 2005,
//! `D_k - C_k + 1` in their integer-time form).
//!
//! Which `t` to check (Shin, Easwaran & Lee 2008, Theorem 2, rederived for any linear supply
//! bound): `DEM_k(t) < m' C_k + U t + B + C_sum` (`B = sum U_i (T_i - D_i)`, `C_sum` the
//! `m' - 1` largest `C_i`) and `sbf(t) >= rate (t - delay)`, so no `t` at or beyond
//! `(m' C_k + B + C_sum + rate delay) / (rate - U)` can fail; with `rate <= U` the test fails.
//! Within that horizon: `DEM_k` is a maximum of linear functions (convex) between the points
//! where a `DBF_i`/`W_i` steps or bends or meets its cap, and `sbf` is concave between its
//! [`MultiSupply::kink_streams`]; so `sbf - DEM_k` is concave between consecutive points of the
//! union, and checking both ends of every such piece is checking every integer `t` (tested
//! against exactly that). At most [`MAX_CHECK_POINTS`] points per test, counted before the
//! walk: beyond, the verdict is [`Verdict::TooLarge`], never a guess. Global fixed priority:
//! [`crate::gfp`].

use crate::dbf::{linear_demand_offset, utilisation, Sporadic, MAX_CHECK_POINTS, TIME_CAP};
use crate::mpr::MultiSupply;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Outcome of the global EDF test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every job meets its deadline.
    Schedulable,
    /// The sufficient test does not show it (some `t` has `DEM_k(t) > sbf(t)`, or `rate <= U`).
    NotShown,
    /// More than [`MAX_CHECK_POINTS`] points would have to be checked.
    TooLarge,
}

/// `N_i`: jobs of `task` released and due inside a window of length `t` that ends at a deadline.
fn jobs_inside(task: &Sporadic, t: u64) -> u64 {
    if t < task.d {
        0
    } else {
        (t - task.d) / task.t + 1
    }
}

/// `DBF_i(t) = N_i C_i`.
pub fn dbf(task: &Sporadic, t: u64) -> u128 {
    jobs_inside(task, t) as u128 * task.c as u128
}

/// `W_i(t) = N_i C_i + min(C_i, max(0, t - N_i T_i))` (Bertogna, Cirinei & Lipari 2005).
pub fn workload(task: &Sporadic, t: u64) -> u128 {
    let n = jobs_inside(task, t);
    let carried = t.saturating_sub(n.saturating_mul(task.t)).min(task.c);
    n as u128 * task.c as u128 + carried as u128
}

/// `DEM_k(t)` for a supply of concurrency `m` (module doc). `t >= D_k`, `C_k >= 1`.
pub fn demand(tasks: &[Sporadic], k: usize, m: u64, t: u64) -> u128 {
    let own = tasks[k];
    let (a, cap) = ((t - own.d) as u128, (t + 1).saturating_sub(own.c) as u128);
    let mut inside = 0u128;
    let mut carry: Vec<u128> = Vec::with_capacity(tasks.len());
    for (i, task) in tasks.iter().enumerate() {
        let (hat, bar) = if i == k {
            ((dbf(task, t) - own.c as u128).min(a), (workload(task, t) - own.c as u128).min(a))
        } else {
            (dbf(task, t).min(cap), workload(task, t).min(cap))
        };
        inside += hat;
        carry.push(bar - hat);
    }
    let most = (m as usize).saturating_sub(1).min(carry.len());
    if most < carry.len() {
        carry.select_nth_unstable_by(most, |x, y| y.cmp(x));
    }
    m as u128 * (own.c - 1) as u128 + inside + carry[..most].iter().sum::<u128>()
}

/// The last `t` worth checking for task `k` (module doc); None when `rate <= U`.
pub fn horizon(tasks: &[Sporadic], k: usize, supply: &impl MultiSupply) -> Option<u64> {
    let (rate, delay) = supply.linear();
    let u = utilisation(tasks);
    if rate <= u * (1.0 + 1e-12) {
        return None;
    }
    let m = supply.concurrency();
    let mut c: Vec<u64> = tasks.iter().map(|x| x.c).collect();
    c.sort_unstable_by(|x, y| y.cmp(x));
    let c_sum: f64 = c.iter().take(m.saturating_sub(1) as usize).map(|&x| x as f64).sum();
    let top = m as f64 * tasks[k].c as f64 + linear_demand_offset(tasks) + c_sum + rate * delay.max(0.0);
    let t = (top / (rate - u) * (1.0 + 1e-9)).ceil() + 1.0;
    Some(if t >= TIME_CAP as f64 { TIME_CAP } else { (t as u64).max(tasks[k].d) })
}

/// The last `t` at which `min(X(t), cap(t))` can still take the cap, for `X <= U t + off`, cap
/// `t - shift`: past it `X` is always below the cap.
fn cap_reach(u: f64, off: f64, shift: u64, end: u64) -> u64 {
    if u >= 1.0 - 1e-12 {
        return end;
    }
    let t = ((off + shift as f64) / (1.0 - u) * (1.0 + 1e-9)).ceil() + 1.0;
    if t >= end as f64 {
        end
    } else {
        t as u64
    }
}

/// Sorted distinct points of periodic streams `offset + n step` and of finite lists, in
/// `[from, to]`, merged lazily.
struct Points {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    to: u64,
    last: Option<u64>,
}

impl Points {
    fn new(streams: &[(u64, u64)], singles: Vec<u64>, from: u64, to: u64) -> Points {
        let mut heap = BinaryHeap::new();
        for &(step, offset) in streams {
            let first = offset.saturating_add(from.saturating_sub(offset).div_ceil(step).saturating_mul(step));
            heap.push(Reverse((first, step)));
        }
        heap.extend(singles.into_iter().filter(|&p| p >= from).map(|p| Reverse((p, 0))));
        heap.push(Reverse((from, 0)));
        heap.push(Reverse((to, 0)));
        Points { heap, to, last: None }
    }
}

impl Iterator for Points {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        loop {
            let Reverse((p, step)) = self.heap.pop()?;
            if p > self.to {
                return None;
            }
            if step > 0 {
                self.heap.push(Reverse((p.saturating_add(step), step)));
            }
            if self.last != Some(p) {
                self.last = Some(p);
                return Some(p);
            }
        }
    }
}

/// Where the pieces of `DEM_k` begin: per task, `W_i` bends at `n T_i` and `n T_i + C_i`,
/// `DBF_i` steps at `n T_i + D_i`; and each term may meet its cap (`t - C_k`, or `A_k` for `k`)
/// at `j C_i + C_k` (`j C_k + D_k`), which matters only while the cap can bind.
fn demand_points(tasks: &[Sporadic], k: usize, end: u64) -> (Vec<(u64, u64)>, Vec<u64>) {
    let own = tasks[k];
    let mut streams = vec![];
    let mut singles = vec![];
    for (i, x) in tasks.iter().enumerate().filter(|(_, x)| x.c > 0) {
        streams.extend([(x.t, 0), (x.t, x.c), (x.t, x.d)]);
        let u = x.c as f64 / x.t as f64;
        let off = u * (x.t - x.d) as f64 + x.c as f64;
        let (base, reach) =
            if i == k { (own.d, cap_reach(u, off, own.d, end)) } else { (own.c - 1, cap_reach(u, off, own.c, end)) };
        singles.extend((0..).map(|j: u64| base.saturating_add(j.saturating_mul(x.c))).take_while(|&p| p <= reach));
    }
    (streams, singles)
}

/// The global EDF test of Shin, Easwaran & Lee 2008 (Theorem 1) on `supply`.
pub fn schedulable(tasks: &[Sporadic], supply: &impl MultiSupply) -> Verdict {
    let m = supply.concurrency();
    let kinks = supply.kink_streams();
    let mut budget = MAX_CHECK_POINTS;
    for k in (0..tasks.len()).filter(|&k| tasks[k].c > 0) {
        let Some(end) = horizon(tasks, k, supply) else { return Verdict::NotShown };
        let from = tasks[k].d;
        let (mut streams, singles) = demand_points(tasks, k, end);
        streams.extend(kinks.iter().copied());
        // refuse before walking when the points up to the horizon cannot fit the budget
        let periodic: u128 = streams.iter().map(|&(step, _)| ((end - from) / step) as u128 + 1).sum();
        if periodic + singles.len() as u128 > budget as u128 {
            return Verdict::TooLarge;
        }
        let fails = |t: u64| demand(tasks, k, m, t) >= supply.sbf(t) as u128;
        let mut points = Points::new(&streams, singles, from, end).peekable();
        while let Some(a) = points.next() {
            if budget == 0 {
                return Verdict::TooLarge;
            }
            budget -= 1;
            let before_next = points.peek().map(|b| b - 1).filter(|&b| b > a);
            if fails(a) || before_next.is_some_and(fails) {
                return Verdict::NotShown;
            }
        }
    }
    Verdict::Schedulable
}

/// The global EDF test with release jitter `J`: [`schedulable`] when `J = 0`; else the
/// single window of Bertogna, Cirinei & Lipari 2005 from a job's arrival to its deadline, of
/// which the job is ready for at least `D_k - J`: a miss needs, over the `x` blocked slots with
/// the most supply, `sum_{i != k} min(W_i(D_k), D_k - C_k + 1) >= sbf(D_k - J) - m' (C_k - 1)`
/// (interfering jobs run inside their arrival-to-deadline windows, jitter or not; module doc for
/// the slot argument), so `m' (C_k - 1) + sum_{i != k} min(W_i(D_k), D_k - C_k + 1) < sbf(D_k - J)`
/// for every `k` shows it (`x <= D_k - C_k + 1`, and the ready window is at least `D_k - J`).
pub fn schedulable_with_jitter(tasks: &[Sporadic], supply: &impl MultiSupply, jitter: u64) -> Verdict {
    if jitter == 0 {
        return schedulable(tasks, supply);
    }
    let m = supply.concurrency() as u128;
    for (k, own) in tasks.iter().enumerate().filter(|(_, x)| x.c > 0) {
        let Some(ready) = own.d.checked_sub(jitter).filter(|&r| r >= own.c) else { return Verdict::NotShown };
        let cap = (own.d - own.c + 1) as u128;
        let others: u128 =
            tasks.iter().enumerate().filter(|&(i, _)| i != k).map(|(_, x)| workload(x, own.d).min(cap)).sum();
        if m * (own.c - 1) as u128 + others >= supply.sbf(ready) as u128 {
            return Verdict::NotShown;
        }
    }
    Verdict::Schedulable
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mpr::tests::mpr;
    use crate::mpr::tests::ServerSupply;
    use crate::mpr::Mpr;
    use crate::sbf::{Edp, Supply};
    use proptest::prelude::*;

    /// Brute force: the same condition at every integer `t` in `[D_k, horizon]`.
    pub fn every_t(tasks: &[Sporadic], supply: &impl MultiSupply) -> Verdict {
        let m = supply.concurrency();
        for k in (0..tasks.len()).filter(|&k| tasks[k].c > 0) {
            let Some(end) = horizon(tasks, k, supply) else { return Verdict::NotShown };
            if (tasks[k].d..=end).any(|t| demand(tasks, k, m, t) >= supply.sbf(t) as u128) {
                return Verdict::NotShown;
            }
        }
        Verdict::Schedulable
    }

    /// Small constrained-deadline tasks, periods with a small LCM (so that `rate - U` is never
    /// tiny and the brute force's horizon stays short).
    pub fn taskset() -> impl Strategy<Value = Vec<Sporadic>> {
        let task = prop::sample::select(vec![2u64, 3, 4, 6, 8, 12])
            .prop_flat_map(|t| (1..=t).prop_flat_map(move |d| (1..=d).prop_map(move |c| Sporadic { c, d, t })));
        prop::collection::vec(task, 1..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn piecewise_check_equals_every_t_on_an_mpr(ts in taskset(), r in mpr()) {
            prop_assert_eq!(schedulable(&ts, &r), every_t(&ts, &r));
        }

        #[test]
        fn piecewise_check_equals_every_t_on_servers(ts in taskset(), r in mpr()) {
            let s = ServerSupply { servers: r.servers() };
            prop_assert_eq!(schedulable(&ts, &s), every_t(&ts, &s));
        }

        #[test]
        fn demand_is_non_decreasing_and_above_the_own_job(ts in taskset(), m in 1u64..5, extra in 0u64..30) {
            for k in 0..ts.len() {
                let t = ts[k].d + extra;
                prop_assert!(demand(&ts, k, m, t + 1) >= demand(&ts, k, m, t));
                prop_assert!(demand(&ts, k, m, t) >= m as u128 * (ts[k].c - 1) as u128);
            }
        }

        #[test]
        fn workload_bounds(ts in taskset(), t in 0u64..60) {
            for x in &ts {
                prop_assert!(workload(x, t) >= dbf(x, t) && workload(x, t) <= dbf(x, t) + x.c as u128);
            }
        }

        #[test]
        fn one_processor_needs_at_least_the_exact_uniprocessor_test(ts in taskset(), p in 1u64..9, b in 0u64..9) {
            // with m' = 1 a pass implies the exact uniprocessor EDF test passes (sufficient test)
            let r = Edp::prm(p, b.min(p));
            if schedulable(&ts, &r) == Verdict::Schedulable {
                prop_assert!(crate::schedtest::edf_schedulable(&ts, &r));
            }
        }
    }

    /// Which ready jobs the supplied processors run first.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Order {
        /// Earliest absolute deadline (global EDF).
        Deadline,
        /// Lowest task index (global FP, tasks by decreasing priority).
        Priority,
    }

    /// Global EDF or FP simulated slot by slot on one legal MPR pattern: each period's `Theta`
    /// units placed in its slots (at most `m'` per slot) early, late or at random (`style`);
    /// sporadic releases at least `T` apart (extra gaps from `gaps`), each job ready up to
    /// `jitter` slots after its arrival (cycling through `0..=jitter`). In each slot the `s`
    /// supplied processors run the `s` ready jobs first in `order`. True if a job misses.
    pub fn simulate_misses(
        ts: &[Sporadic],
        r: Mpr,
        style: &[u8],
        gaps: &[u64],
        jitter: u64,
        order: Order,
        horizon: u64,
    ) -> bool {
        let (p, m) = (r.period as usize, r.concurrency);
        let supply_in = |k: usize| -> Vec<u64> {
            let mut v = vec![0u64; p];
            let mut left = r.budget;
            let order: Vec<usize> = match style[k % style.len()] % 3 {
                0 => (0..p).collect(),
                1 => (0..p).rev().collect(),
                _ => (0..p).map(|j| (j * 7 + k * 3) % p).collect::<Vec<_>>(),
            };
            for j in order.into_iter().chain(0..p) {
                let add = left.min(m - v[j]);
                v[j] += add;
                left -= add;
            }
            v
        };
        // jobs: (key, ready, deadline, remaining); next arrival per task
        let mut next: Vec<u64> = vec![0; ts.len()];
        let mut jobs: Vec<(u64, u64, u64, u64)> = vec![];
        let mut gap = gaps.iter().cycle();
        let mut delay = (0..=jitter).cycle();
        let mut pattern = vec![];
        for now in 0..horizon {
            for (i, x) in ts.iter().enumerate() {
                if next[i] == now {
                    let key = if order == Order::Deadline { now + x.d } else { i as u64 };
                    jobs.push((key, now + delay.next().unwrap_or(0), now + x.d, x.c));
                    next[i] = now + x.t + gap.next().copied().unwrap_or(0);
                }
            }
            if jobs.iter().any(|&(_, _, d, left)| left > 0 && d <= now) {
                return true;
            }
            let (k, j) = ((now / r.period) as usize, (now % r.period) as usize);
            if j == 0 {
                pattern = supply_in(k);
            }
            jobs.retain(|&(.., left)| left > 0);
            jobs.sort_unstable();
            for job in jobs.iter_mut().filter(|job| job.1 <= now).take(pattern[j] as usize) {
                job.3 -= 1;
            }
        }
        false
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn a_passing_task_set_never_misses_in_simulation(
            ts in taskset(), r in mpr(), style in prop::collection::vec(0u8..3, 1..6),
            gaps in prop::collection::vec(prop::sample::select(vec![0u64, 0, 0, 1, 2, 5]), 1..8)
        ) {
            if schedulable(&ts, &r) == Verdict::Schedulable {
                prop_assert!(!simulate_misses(&ts, r, &style, &gaps, 0, Order::Deadline, 400));
            }
        }

        #[test]
        fn a_set_passing_with_jitter_never_misses_in_simulation(
            ts in taskset(), r in mpr(), style in prop::collection::vec(0u8..3, 1..6),
            gaps in prop::collection::vec(prop::sample::select(vec![0u64, 0, 0, 1, 2, 5]), 1..8),
            jitter in 1u64..3
        ) {
            if schedulable_with_jitter(&ts, &r, jitter) == Verdict::Schedulable {
                prop_assert!(!simulate_misses(&ts, r, &style, &gaps, jitter, Order::Deadline, 400));
            }
        }
    }

    #[test]
    fn the_boundary_case_of_the_non_strict_form_is_refused() {
        // both release at 0 with deadline 1 on one processor: one of them misses
        let ts = [Sporadic { c: 1, d: 1, t: 2 }, Sporadic { c: 1, d: 1, t: 3 }];
        assert_eq!(schedulable(&ts, &Mpr { period: 1, budget: 1, concurrency: 1 }), Verdict::NotShown);
        assert_eq!(schedulable(&ts[..1], &Mpr { period: 1, budget: 1, concurrency: 1 }), Verdict::Schedulable);
        assert_eq!(schedulable(&ts, &Mpr { period: 1, budget: 2, concurrency: 2 }), Verdict::Schedulable);
    }

    #[test]
    fn dedicated_processors_pass_light_sets_and_fail_overload() {
        // two processors, three tasks of utilisation 0.3 each: BCL-style tests accept it
        let ts = vec![Sporadic { c: 3, d: 10, t: 10 }; 3];
        let two = Mpr { period: 10, budget: 20, concurrency: 2 };
        assert_eq!(schedulable(&ts, &two), Verdict::Schedulable);
        assert_eq!(two.sbf(7), 14);
        // total utilisation 2.1 on two processors: never
        let heavy = vec![Sporadic { c: 7, d: 10, t: 10 }; 3];
        assert_eq!(schedulable(&heavy, &two), Verdict::NotShown);
        // a job longer than its deadline: never
        assert_eq!(schedulable(&[Sporadic { c: 5, d: 4, t: 10 }], &two), Verdict::NotShown);
    }

    #[test]
    fn long_horizons_are_refused() {
        // one dedicated processor, U = 1 - 1/3e9: the horizon spans ~1e18 ns, a check point
        // every 2 ns, and no early violation to stop at
        let ts = [Sporadic { c: 1, d: 2, t: 2 }, Sporadic { c: 1_499_999_999, d: 3_000_000_000, t: 3_000_000_000 }];
        let r = Mpr { period: 1, budget: 1, concurrency: 1 };
        assert_eq!(schedulable(&ts, &r), Verdict::TooLarge);
    }
}
