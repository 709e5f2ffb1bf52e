//! Partitioned guests of several vCPUs: which vCPU runs which task.
//!
//! Each vCPU runs its tasks under the guest's scheduler on its own server, planned exactly as a
//! guest of one vCPU (`interface`); a vCPU's set of tasks *fits* when its least interface has a
//! bandwidth within the per-core cap. The packing binds every task not bound by the scenario to
//! a vCPU so that every vCPU fits and the guest's total bandwidth (the sum of its vCPUs' least
//! interfaces; a vCPU without tasks needs none) is least:
//!
//! - **exactly** when the sets to evaluate are few ([`EXACT_SETS`]): dynamic programming over the
//!   subsets of unbound tasks, vCPU by vCPU (the classic set-partition recurrence, `O(n 3^m)`
//!   combinations of `n` vCPUs and `m` unbound tasks, each subset's interface computed once);
//! - else by **first-fit decreasing** utilisation with the exact per-vCPU test (Lopez, Diaz &
//!   Garcia 2004 analyse first-fit partitioning of EDF tasks): tasks fill the lowest-numbered
//!   vCPU that still fits, which keeps the number of servers - and the blackout each adds - low.
//!   It may miss a packing that exists; the planner says so when it fails.
//!
//! The costs come from the caller (the planner's interface search), so the search is tested
//! against brute force over every assignment with the real interfaces.

use std::collections::HashMap;

/// Most subset evaluations (least-interface searches) the exact search may make: at most 8
/// unbound tasks on vCPUs without bound tasks (2^8 subsets).
pub const EXACT_SETS: usize = 256;

/// One guest's packing problem.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// Per task its utilisation c / T (what first-fit decreasing sorts by and pre-filters with).
    pub utilisation: &'a [f64],
    /// Per task the vCPU (0..vcpus) the scenario binds it to, if any.
    pub bound: &'a [Option<usize>],
    pub vcpus: usize,
    /// Per-core bandwidth cap: a vCPU whose tasks' utilisation exceeds it cannot fit.
    pub cap: f64,
}

/// The costs of a vCPU's task set (never empty, task indices ascending).
pub trait VcpuCost {
    /// Bandwidth of the least interface of a vCPU running `tasks`, None when it exceeds the cap
    /// or none exists.
    fn bandwidth(&mut self, tasks: &[usize]) -> Option<f64>;
    /// Whether `tasks` fit on one vCPU (`bandwidth(tasks).is_some()`, possibly cheaper).
    fn fits(&mut self, tasks: &[usize]) -> bool {
        self.bandwidth(tasks).is_some()
    }
}

/// Tasks per vCPU (indices ascending) and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct Packing {
    pub sets: Vec<Vec<usize>>,
    /// Proven least total bandwidth (the exact search); false: first-fit decreasing.
    pub exact: bool,
}

/// Why no packing was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoPacking {
    /// The tasks bound to this vCPU do not fit on it.
    Bound(usize),
    /// The exact search proved that no assignment fits.
    Proven,
    /// First-fit decreasing left this task over (another assignment might fit).
    Heuristic(usize),
}

/// The packing of least total bandwidth (exact when small, see the module doc).
pub fn pack(p: &Problem, cost: &mut dyn VcpuCost) -> Result<Packing, NoPacking> {
    let base = bound_sets(p);
    if let Some(v) = (0..p.vcpus).find(|&v| !base[v].is_empty() && !cost.fits(&base[v])) {
        return Err(NoPacking::Bound(v));
    }
    let free: Vec<usize> = (0..p.utilisation.len()).filter(|&t| p.bound[t].is_none()).collect();
    if exact_is_small(&base, free.len()) {
        exact(&base, &free, cost).map(|sets| Packing { sets, exact: true }).ok_or(NoPacking::Proven)
    } else {
        first_fit_decreasing(p, base, &free, cost).map(|sets| Packing { sets, exact: false })
    }
}

fn bound_sets(p: &Problem) -> Vec<Vec<usize>> {
    let mut sets = vec![vec![]; p.vcpus];
    for (t, v) in p.bound.iter().enumerate() {
        if let Some(v) = v {
            sets[*v].push(t);
        }
    }
    sets
}

/// Distinct bound sets (vCPUs with the same - usually empty - bound set share their subsets'
/// costs) times the subsets of the free tasks.
fn exact_is_small(base: &[Vec<usize>], free: usize) -> bool {
    let mut classes: Vec<&Vec<usize>> = base.iter().collect();
    classes.sort();
    classes.dedup();
    free < usize::BITS as usize - 1 && (1usize << free).saturating_mul(classes.len()) <= EXACT_SETS
}

/// Set-partition dynamic programme: `best[mask]` after vCPU j = least total bandwidth of vCPUs
/// 0..=j running the free tasks of `mask` (plus their bound ones).
fn exact(base: &[Vec<usize>], free: &[usize], cost: &mut dyn VcpuCost) -> Option<Vec<Vec<usize>>> {
    let full = (1usize << free.len()) - 1;
    let mut costs = SubsetCosts { base, free, memo: HashMap::new(), cost };
    let mut best = vec![f64::INFINITY; full + 1];
    best[0] = 0.0;
    let mut choices: Vec<Vec<usize>> = Vec::with_capacity(base.len());
    for v in 0..base.len() {
        let mut next = vec![f64::INFINITY; full + 1];
        let mut choice = vec![0usize; full + 1];
        for mask in 0..=full {
            let mut sub = mask;
            loop {
                let before = best[mask ^ sub];
                if before.is_finite() {
                    if let Some(c) = costs.of(v, sub) {
                        if before + c < next[mask] {
                            next[mask] = before + c;
                            choice[mask] = sub;
                        }
                    }
                }
                if sub == 0 {
                    break;
                }
                sub = (sub - 1) & mask;
            }
        }
        best = next;
        choices.push(choice);
    }
    best[full].is_finite().then(|| reconstruct(base, free, &choices, full))
}

fn reconstruct(base: &[Vec<usize>], free: &[usize], choices: &[Vec<usize>], full: usize) -> Vec<Vec<usize>> {
    let mut sets = base.to_vec();
    let mut mask = full;
    for v in (0..base.len()).rev() {
        let sub = choices[v][mask];
        sets[v].extend(members(free, sub));
        sets[v].sort_unstable();
        mask ^= sub;
    }
    sets
}

fn members(free: &[usize], mask: usize) -> impl Iterator<Item = usize> + '_ {
    free.iter().enumerate().filter(move |(i, _)| mask >> i & 1 == 1).map(|(_, &t)| t)
}

/// Each vCPU's cost with a subset of the free tasks, computed once per distinct bound set.
struct SubsetCosts<'a> {
    base: &'a [Vec<usize>],
    free: &'a [usize],
    memo: HashMap<(&'a [usize], usize), Option<f64>>,
    cost: &'a mut dyn VcpuCost,
}

impl SubsetCosts<'_> {
    fn of(&mut self, v: usize, sub: usize) -> Option<f64> {
        let base = self.base[v].as_slice();
        if base.is_empty() && sub == 0 {
            return Some(0.0);
        }
        if let Some(&known) = self.memo.get(&(base, sub)) {
            return known;
        }
        // a superset of a set that does not fit does not fit either (demand only grows)
        let doomed = (0..self.free.len())
            .filter(|i| sub >> i & 1 == 1)
            .any(|i| matches!(self.memo.get(&(base, sub ^ (1 << i))), Some(None)));
        let value = if doomed {
            None
        } else {
            let mut tasks: Vec<usize> = base.iter().copied().chain(members(self.free, sub)).collect();
            tasks.sort_unstable();
            self.cost.bandwidth(&tasks)
        };
        self.memo.insert((base, sub), value);
        value
    }
}

/// Free tasks by decreasing utilisation (ties: file order), each onto the lowest-numbered vCPU
/// that still fits with it.
fn first_fit_decreasing(
    p: &Problem,
    mut sets: Vec<Vec<usize>>,
    free: &[usize],
    cost: &mut dyn VcpuCost,
) -> Result<Vec<Vec<usize>>, NoPacking> {
    let mut order = free.to_vec();
    order.sort_by(|&a, &b| p.utilisation[b].total_cmp(&p.utilisation[a]).then(a.cmp(&b)));
    let mut load: Vec<f64> = sets.iter().map(|s| s.iter().map(|&t| p.utilisation[t]).sum()).collect();
    for t in order {
        let fit = (0..p.vcpus).find(|&v| {
            if load[v] + p.utilisation[t] > p.cap * (1.0 + 1e-9) {
                return false;
            }
            let mut with = sets[v].clone();
            with.push(t);
            with.sort_unstable();
            cost.fits(&with)
        });
        let v = fit.ok_or(NoPacking::Heuristic(t))?;
        sets[v].push(t);
        sets[v].sort_unstable();
        load[v] += p.utilisation[t];
    }
    Ok(sets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbf::Sporadic;
    use crate::interface::{best_interface, Model};
    use proptest::prelude::*;
    use rtvirt_model::scenario::GuestScheduler;

    /// The real cost: the least EDF PRM interface over a few candidate periods, within `cap`.
    struct Interfaces<'a> {
        tasks: &'a [Sporadic],
        cap: f64,
        calls: usize,
    }

    impl VcpuCost for Interfaces<'_> {
        fn bandwidth(&mut self, set: &[usize]) -> Option<f64> {
            self.calls += 1;
            let tasks: Vec<Sporadic> = set.iter().map(|&t| self.tasks[t]).collect();
            best_interface(&tasks, GuestScheduler::Edf, Model::Prm, &[2, 3, 5])
                .map(|i| i.bandwidth())
                .filter(|&b| b <= self.cap)
        }
    }

    /// Least total over every assignment of the free tasks (None: no assignment fits).
    fn brute_force(tasks: &[Sporadic], bound: &[Option<usize>], vcpus: usize, cap: f64) -> Option<f64> {
        let n = tasks.len();
        let mut best: Option<f64> = None;
        for code in 0..vcpus.pow(n as u32) {
            let of = |t: usize| bound[t].unwrap_or(code / vcpus.pow(t as u32) % vcpus);
            let mut total = 0.0;
            let mut ok = true;
            for v in 0..vcpus {
                let set: Vec<usize> = (0..n).filter(|&t| of(t) == v).collect();
                if set.is_empty() {
                    continue;
                }
                match (Interfaces { tasks, cap, calls: 0 }).bandwidth(&set) {
                    Some(b) => total += b,
                    None => ok = false,
                }
            }
            if ok && best.is_none_or(|b| total < b) {
                best = Some(total);
            }
        }
        best
    }

    fn task() -> impl Strategy<Value = Sporadic> {
        (2u64..13).prop_flat_map(|t| (1..=t.min(4), Just(t)).prop_map(|(c, t)| Sporadic { c, d: t, t }))
    }

    fn problem() -> impl Strategy<Value = (Vec<Sporadic>, Vec<Option<usize>>, usize)> {
        (1usize..4).prop_flat_map(|vcpus| {
            prop::collection::vec((task(), prop::option::weighted(0.2, 0..vcpus)), 1..7).prop_map(move |ts| {
                let (tasks, bound) = ts.into_iter().unzip();
                (tasks, bound, vcpus)
            })
        })
    }

    fn utilisations(tasks: &[Sporadic]) -> Vec<f64> {
        tasks.iter().map(|t| t.c as f64 / t.t as f64).collect()
    }

    fn total(sets: &[Vec<usize>], tasks: &[Sporadic], cap: f64) -> f64 {
        let mut cost = Interfaces { tasks, cap, calls: 0 };
        sets.iter().filter(|s| !s.is_empty()).map(|s| cost.bandwidth(s).expect("every vCPU fits")).sum()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn the_exact_search_finds_the_least_total_of_every_assignment(
            (tasks, bound, vcpus) in problem(), cap in prop::sample::select(vec![0.6, 0.95, 1.0])
        ) {
            let u = utilisations(&tasks);
            let p = Problem { utilisation: &u, bound: &bound, vcpus, cap };
            let oracle = brute_force(&tasks, &bound, vcpus, cap);
            let mut cost = Interfaces { tasks: &tasks, cap, calls: 0 };
            match pack(&p, &mut cost) {
                Ok(found) => {
                    prop_assert!(found.exact);
                    let got = total(&found.sets, &tasks, cap);
                    let best = oracle.expect("brute force finds the packing too");
                    prop_assert!((got - best).abs() < 1e-9, "{} vs brute force {}", got, best);
                    for (t, b) in bound.iter().enumerate() {
                        prop_assert!(b.is_none_or(|v| found.sets[v].contains(&t)));
                    }
                    let mut all: Vec<usize> = found.sets.concat();
                    all.sort_unstable();
                    prop_assert_eq!(all, (0..tasks.len()).collect::<Vec<_>>());
                }
                Err(_) => prop_assert_eq!(oracle, None),
            }
        }

        #[test]
        fn first_fit_decreasing_binds_every_task_once_on_vcpus_that_fit(
            (tasks, bound, vcpus) in problem(), cap in prop::sample::select(vec![0.6, 0.95, 1.0])
        ) {
            let u = utilisations(&tasks);
            let p = Problem { utilisation: &u, bound: &bound, vcpus, cap };
            let mut cost = Interfaces { tasks: &tasks, cap, calls: 0 };
            // as `pack` does first: the bound tasks fit on their vCPUs
            prop_assume!(bound_sets(&p).iter().all(|s| s.is_empty() || cost.fits(s)));
            let oracle = brute_force(&tasks, &bound, vcpus, cap);
            match first_fit_decreasing(&p, bound_sets(&p), &(0..tasks.len()).filter(|&t| bound[t].is_none()).collect::<Vec<_>>(), &mut cost) {
                Ok(sets) => {
                    // never below the least total; every vCPU fits; bound tasks stay
                    let best = oracle.expect("a packing exists");
                    prop_assert!(total(&sets, &tasks, cap) >= best - 1e-9);
                    for (t, b) in bound.iter().enumerate() {
                        prop_assert!(b.is_none_or(|v| sets[v].contains(&t)));
                    }
                    let mut all: Vec<usize> = sets.concat();
                    all.sort_unstable();
                    prop_assert_eq!(all, (0..tasks.len()).collect::<Vec<_>>());
                }
                Err(NoPacking::Heuristic(t)) => prop_assert!(bound[t].is_none()),
                Err(other) => prop_assert!(false, "unexpected {:?}", other),
            }
        }
    }

    #[test]
    fn the_exact_search_evaluates_each_subset_once() {
        let tasks = vec![Sporadic { c: 1, d: 10, t: 10 }; 8];
        let u = utilisations(&tasks);
        let bound = vec![None; 8];
        let mut cost = Interfaces { tasks: &tasks, cap: 1.0, calls: 0 };
        let found = pack(&Problem { utilisation: &u, bound: &bound, vcpus: 4, cap: 1.0 }, &mut cost).unwrap();
        assert!(found.exact);
        assert!(cost.calls < 256, "{} evaluations", cost.calls);
        // one more free task: first-fit decreasing
        let tasks = vec![Sporadic { c: 1, d: 10, t: 10 }; 9];
        let u = utilisations(&tasks);
        let bound = vec![None; 9];
        let mut cost = Interfaces { tasks: &tasks, cap: 1.0, calls: 0 };
        let found = pack(&Problem { utilisation: &u, bound: &bound, vcpus: 4, cap: 1.0 }, &mut cost).unwrap();
        assert!(!found.exact);
    }

    #[test]
    fn bound_tasks_that_do_not_fit_name_their_vcpu() {
        let tasks = vec![Sporadic { c: 3, d: 4, t: 4 }, Sporadic { c: 3, d: 4, t: 4 }];
        let u = utilisations(&tasks);
        let bound = vec![Some(1), Some(1)];
        let mut cost = Interfaces { tasks: &tasks, cap: 1.0, calls: 0 };
        let got = pack(&Problem { utilisation: &u, bound: &bound, vcpus: 2, cap: 1.0 }, &mut cost);
        assert_eq!(got, Err(NoPacking::Bound(1)));
    }
}
