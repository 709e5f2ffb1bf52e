//! Global fixed priority on a multiprocessor supply (an MPR, [`crate::mpr`]): a sufficient
//! response-time analysis, in integer time, with release jitter.
//!
//! The response-time analysis of Bertogna & Cirinei 2007 (RTSS, "Response-time analysis for
//! globally scheduled symmetric multiprocessor platforms") with the interference argument of
//! Bertogna, Cirinei & Lipari 2009, on a supply bound instead of `m` whole processors, as Shin,
//! Easwaran & Lee 2008 put global EDF on an MPR. Tasks are given by decreasing priority and have
//! constrained deadlines; a job becomes ready at most `J` (the release jitter) after its arrival.
//!
//! - A job of `k` ready at `r` that has not completed by `r + t` ran at most `C_k - 1` slots of
//!   `[r, r + t)`, so at least `x = t - C_k + 1` slots of it had every supplied processor busy with
//!   higher-priority jobs. The `x` of them with the most supply hold at least `sbf(t) - m' (C_k - 1)`
//!   (the other `t - x` slots hold at most `m'` each), and a task runs on at most one processor per
//!   slot. So the job completes within `t` of being ready if
//!   `m' (C_k - 1) + sum_{i in hp(k)} min(W_i(t), t - C_k + 1) < sbf(t)`.
//! - `W_i(t) = N C_i + min(C_i, t + R_i - C_i - N T_i)`, `N = floor((t + R_i - C_i) / T_i)`: the
//!   most work of task `i` in a window of length `t` when each of its jobs completes within `R_i`
//!   of its arrival - one carried-in job finishing at `R_i` as late as it can, the others as early
//!   as they can (Bertogna & Cirinei 2007). Jitter only moves execution inside
//!   `[arrival, arrival + R_i]`, so the bound holds with `R_i` counted from the arrival.
//! - `R_k = J + t*`, `t*` the least `t >= C_k` meeting the condition; `k` is schedulable if
//!   `R_k <= D_k`. Both sides grow with `t` (the demand is non-decreasing), so `t*` is the limit
//!   of `t_{n+1} = min { t : sbf(t) > demand(t_n) }` from `t_0 = C_k`: every `t` below `t_{n+1}`
//!   fails, and the walk stops at the first `t_n` that passes (tested equal to a scan of every `t`).
//!   At most [`MAX_CHECK_POINTS`] steps over all tasks: beyond, [`Verdict::TooLarge`].
//!
//! With `m' = 1` the test is never more optimistic than the exact uniprocessor FP test on the
//! same supply (property-tested), and it is checked against a slot-by-slot global FP simulation on
//! legal MPR supply patterns with sporadic releases and jitter.

use crate::dbf::{Sporadic, MAX_CHECK_POINTS};
use crate::gedf::Verdict;
use crate::mpr::MultiSupply;

/// `W_i(t)` of a task whose jobs complete within `response >= C_i` of their arrival.
pub fn workload(task: &Sporadic, response: u64, t: u64) -> u128 {
    let reach = t as u128 + response as u128 - task.c as u128;
    let n = reach / task.t as u128;
    n * task.c as u128 + (reach - n * task.t as u128).min(task.c as u128)
}

/// `m' (C_k - 1) + sum_{i in hp} min(W_i(t), t - C_k + 1)` for a job of execution `c`, `t >= c`.
pub fn demand(hp: &[Sporadic], responses: &[u64], c: u64, m: u64, t: u64) -> u128 {
    let cap = (t - c + 1) as u128;
    let interference: u128 = hp.iter().zip(responses).map(|(task, &r)| workload(task, r, t).min(cap)).sum();
    m as u128 * (c - 1) as u128 + interference
}

/// Where the demand stops outgrowing any supply: when at least `m'` interference terms rise
/// with slope 1 from `t` (capped at `t - C_k + 1`, or a carried-in or body job of `W_i` being
/// counted), the demand grows at least as fast as an `m'`-processor supply until the first of
/// them stops rising, so a `t` that fails keeps failing until then; else `t`. (This skips the
/// unit steps the plain iteration would take there.)
fn rising_together(hp: &[Sporadic], responses: &[u64], c: u64, m: u64, t: u64) -> u64 {
    let cap = |t: u64| (t - c + 1) as u128;
    let ends: Vec<u64> = hp
        .iter()
        .zip(responses)
        .filter_map(|(task, &r)| {
            if workload(task, r, t) >= cap(t) {
                // capped: W_i - cap never grows (W_i rises at slope <= 1), so bisect its end
                let (mut lo, mut hi) = (t, t.saturating_add(task.t).saturating_add(task.c));
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if workload(task, r, mid) < cap(mid) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                return Some(lo);
            }
            let reach = t + r - task.c;
            let into = reach % task.t;
            (into < task.c).then(|| t + (task.c - into))
        })
        .collect();
    if (ends.len() as u64) < m {
        return t;
    }
    ends.into_iter().min().unwrap_or(t)
}

/// The least `t` in `[from, to]` with `sbf(t) > level`, by bisection (`sbf` is non-decreasing).
fn first_above(supply: &impl MultiSupply, level: u128, from: u64, to: u64) -> Option<u64> {
    if from > to || supply.sbf(to) as u128 <= level {
        return None;
    }
    let (mut lo, mut hi) = (from, to);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if supply.sbf(mid) as u128 > level {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The response time of every task (by decreasing priority) from its arrival, with release
/// jitter `jitter`; `Err` with the verdict when one is not shown within its deadline.
pub fn response_times(tasks: &[Sporadic], supply: &impl MultiSupply, jitter: u64) -> Result<Vec<u64>, Verdict> {
    let m = supply.concurrency();
    let mut steps = MAX_CHECK_POINTS;
    let mut responses = Vec::with_capacity(tasks.len());
    for (k, own) in tasks.iter().enumerate() {
        if own.c == 0 {
            responses.push(jitter.min(own.d));
            continue;
        }
        let limit = own.d.checked_sub(jitter).ok_or(Verdict::NotShown)?;
        let mut t = own.c;
        loop {
            if steps == 0 {
                return Err(Verdict::TooLarge);
            }
            steps -= 1;
            let level = demand(&tasks[..k], &responses, own.c, m, t);
            let next = first_above(supply, level, t, limit).ok_or(Verdict::NotShown)?;
            if next == t {
                break;
            }
            t = next.max(rising_together(&tasks[..k], &responses, own.c, m, t));
        }
        responses.push(jitter + t);
    }
    Ok(responses)
}

/// The global FP test (module doc) of `tasks` by decreasing priority on `supply`.
pub fn schedulable(tasks: &[Sporadic], supply: &impl MultiSupply, jitter: u64) -> Verdict {
    match response_times(tasks, supply, jitter) {
        Ok(_) => Verdict::Schedulable,
        Err(v) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gedf::tests::{simulate_misses, taskset, Order};
    use crate::mpr::tests::{mpr, ServerSupply};
    use crate::mpr::Mpr;
    use crate::sbf::{Edp, Supply};
    use proptest::prelude::*;

    /// Brute force: each `R_k` from a scan of every integer `t` in `[C_k, D_k - J]`.
    fn scan(tasks: &[Sporadic], supply: &impl MultiSupply, jitter: u64) -> Option<Vec<u64>> {
        let m = supply.concurrency();
        let mut responses = vec![];
        for (k, own) in tasks.iter().enumerate() {
            if own.c == 0 {
                responses.push(jitter.min(own.d));
                continue;
            }
            let t = (own.c..=own.d.checked_sub(jitter)?)
                .find(|&t| demand(&tasks[..k], &responses, own.c, m, t) < supply.sbf(t) as u128)?;
            responses.push(jitter + t);
        }
        Some(responses)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn fixed_point_equals_a_scan_of_every_t(ts in taskset(), r in mpr(), jitter in 0u64..3) {
            prop_assert_eq!(response_times(&ts, &r, jitter).ok(), scan(&ts, &r, jitter));
            let s = ServerSupply { servers: r.servers() };
            prop_assert_eq!(response_times(&ts, &s, jitter).ok(), scan(&ts, &s, jitter));
        }

        #[test]
        fn a_passing_task_set_never_misses_in_simulation(
            ts in taskset(), r in mpr(), style in prop::collection::vec(0u8..3, 1..6),
            gaps in prop::collection::vec(prop::sample::select(vec![0u64, 0, 0, 1, 2, 5]), 1..8),
            jitter in prop::sample::select(vec![0u64, 0, 1, 2])
        ) {
            if schedulable(&ts, &r, jitter) == Verdict::Schedulable {
                prop_assert!(!simulate_misses(&ts, r, &style, &gaps, jitter, Order::Priority, 400));
            }
        }

        #[test]
        fn more_budget_never_loses_the_verdict(ts in taskset(), r in mpr(), jitter in 0u64..3) {
            if r.budget < r.concurrency * r.period && schedulable(&ts, &r, jitter) == Verdict::Schedulable {
                let more = Mpr { budget: r.budget + 1, ..r };
                prop_assert_eq!(schedulable(&ts, &more, jitter), Verdict::Schedulable);
                let (a, b) = (response_times(&ts, &r, jitter).unwrap(), response_times(&ts, &more, jitter).unwrap());
                prop_assert!(a.iter().zip(&b).all(|(x, y)| y <= x));
            }
        }

        #[test]
        fn one_processor_needs_at_least_the_exact_uniprocessor_test(ts in taskset(), p in 1u64..9, b in 0u64..9) {
            let r = Edp::prm(p, b.min(p));
            if schedulable(&ts, &r, 0) == Verdict::Schedulable {
                prop_assert!(crate::schedtest::fp_schedulable(&ts, &r));
            }
        }
    }

    #[test]
    fn three_light_tasks_on_two_dedicated_processors() {
        let ts = vec![Sporadic { c: 3, d: 10, t: 10 }; 3];
        let two = Mpr { period: 10, budget: 20, concurrency: 2 };
        // the two highest run at once; the third waits for at most 3 slots of both
        assert_eq!(response_times(&ts, &two, 0), Ok(vec![3, 3, 6]));
        assert_eq!(response_times(&ts, &two, 2), Ok(vec![5, 5, 8]));
        assert_eq!(schedulable(&ts, &two, 5), Verdict::NotShown);
        assert_eq!(two.sbf(7), 14);
        let heavy = vec![Sporadic { c: 7, d: 10, t: 10 }; 3];
        assert_eq!(schedulable(&heavy, &two, 0), Verdict::NotShown);
    }
}
