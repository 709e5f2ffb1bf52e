//! Partitioning the guests' servers onto cores (Burns 2014, step 3).
//!
//! Bin-packing heuristics on server bandwidth `Theta / Pi`: best-fit decreasing (default; within
//! 11/9 OPT + 1 bins for pure bandwidth packing, Johnson 1973 / Dosa 2007), first-fit decreasing,
//! worst-fit decreasing, and the non-sorting best-fit and first-fit. A core admits a server only
//! if (a) the total bandwidth stays within the per-core cap and (b) the servers, seen as
//! constrained-deadline sporadic tasks `(C = Theta, D = Delta, T = Pi)` under the host core's EDF
//! (SCHED_DEADLINE), pass the exact processor-demand test (Baruah, Rosier & Howell 1990; with
//! implicit deadlines it reduces to `U <= 1`).
//!
//! On a host whose enforcement lets a server overrun its runtime by up to `delta` before the
//! throttle (tick enforcement; `rtvirt plan --host-model`), the overrun runs at the server's
//! current deadline and so delays the *other* servers of its core. The kernel pays it back from
//! the server's next periods (`replenish_dl_entity`), so over any window the server executes at
//! most its budgets plus one unpaid overrun, `dbf_j(t) + delta`. A server's own overrun comes
//! after its runtime was supplied and is paid back out of its own next runtimes, so only the
//! others' overruns delay it: server i meets every deadline iff
//! `sum_j dbf_j(t) + delta #{j != i : D_j <= t} <= t` for all `t >= D_i`. Over all servers
//! (equal overruns) that is `sum_j dbf_j(t) + delta (m(t) - 1) <= t` wherever
//! `m(t) = #{j : D_j <= t} >= 1`: the processor-demand test with a one-shot task
//! `(C = delta, D = D_j, T = inf)` beside every server but one of least deadline. (The server's own
//! pay-back blackout is charged to its supply, `crate::overhead`.)
//! docs/sim-deadline-consistency.md, "Several servers on one core", derives it;
//! `crates/sim/tests/plan_consistency.rs` checks it against the simulated kernel.
//!
//! A guest of several vCPUs has one server per vCPU; servers of one *spread* group (a guest's
//! vCPUs, `spread = true`) are never placed on the same core ([`partition_apart`]).
//!
//! A guest may offer several interfaces, least bandwidth first (EDP: larger deadlines for more
//! budget, see `interface::edp_menu`); on each core tried, the cheapest one the core admits is
//! taken. The decreasing orders sort by the least bandwidth.

use crate::dbf::{Sporadic, TIME_CAP};
use crate::interface::Interface;
use crate::sbf::Dedicated;
use crate::schedtest::edf_schedulable;
use std::collections::BTreeSet;

/// Bin-packing heuristic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Heuristic {
    /// Best-fit decreasing: by decreasing bandwidth, onto the fullest core that admits it.
    #[default]
    Bfd,
    /// First-fit decreasing: by decreasing bandwidth, onto the lowest-numbered core that admits it.
    Ffd,
    /// Worst-fit decreasing: by decreasing bandwidth, onto the emptiest core that admits it.
    Wfd,
    /// Best-fit in scenario order.
    Bf,
    /// First-fit in scenario order.
    Ff,
}

impl Heuristic {
    pub fn as_str(self) -> &'static str {
        match self {
            Heuristic::Bfd => "bfd",
            Heuristic::Ffd => "ffd",
            Heuristic::Wfd => "wfd",
            Heuristic::Bf => "bf",
            Heuristic::Ff => "ff",
        }
    }
    fn decreasing(self) -> bool {
        matches!(self, Heuristic::Bfd | Heuristic::Ffd | Heuristic::Wfd)
    }
}

/// Exact admission of `new` on a core already running `core`: bandwidth cap, then the
/// uniprocessor EDF processor-demand test (Baruah et al. 1990) of all servers together, each
/// other servers' demand raised by one enforcement overrun of `overrun` ns each (module doc; 0:
/// exact enforcement). With an overrun, two or more servers of total bandwidth 1 never fit (at
/// `t = LCM` the demand is `t` plus the overruns), which is decided before the test.
pub fn admits(core: &[Sporadic], new: Sporadic, cap: f64, overrun: u64) -> bool {
    let bw: f64 = core.iter().chain(std::iter::once(&new)).map(|k| k.c as f64 / k.t as f64).sum();
    if bw > cap * (1.0 + 1e-12) || (overrun > 0 && !core.is_empty() && bw >= 1.0 - 1e-9) {
        return false;
    }
    let mut all = core.to_vec();
    all.push(new);
    all.extend(overruns(&all, overrun));
    edf_schedulable(&all, &Dedicated)
}

/// One overrun of every server but one of least deadline: one-shot demands of `overrun` at the
/// servers' deadlines.
fn overruns(servers: &[Sporadic], overrun: u64) -> Vec<Sporadic> {
    let Some(first) = servers.iter().enumerate().min_by_key(|(_, s)| s.d).map(|(i, _)| i) else { return vec![] };
    if overrun == 0 {
        return vec![];
    }
    servers
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != first)
        .map(|(_, s)| Sporadic { c: overrun, d: s.d, t: TIME_CAP })
        .collect()
}

struct Core {
    servers: Vec<Sporadic>,
    bandwidth: f64,
    /// Spread groups with a server here.
    groups: Vec<usize>,
}

/// The cores in the order a heuristic tries them, kept as servers are placed: first fit by id,
/// best fit fullest first, worst fit emptiest first (ties: lower id). Best and worst fit keep the
/// cores sorted by load (a `BTreeSet` keyed by the bandwidth's bits, which order as the
/// non-negative numbers do) and start at the first core with room for the server, instead of
/// sorting every core for every server ([`preference`], the order they must match).
struct Order {
    h: Heuristic,
    cores: usize,
    /// (load key, core), the order of trial for best and worst fit.
    by_load: BTreeSet<(u64, usize)>,
}

impl Order {
    fn new(cores: usize, h: Heuristic) -> Order {
        let by_load = match h {
            Heuristic::Ffd | Heuristic::Ff => BTreeSet::new(),
            _ => (0..cores).map(|c| (Self::key(h, 0.0), c)).collect(),
        };
        Order { h, cores, by_load }
    }

    /// Best fit: fullest first (the complement of the bits); worst fit: emptiest first.
    fn key(h: Heuristic, bandwidth: f64) -> u64 {
        let bits = bandwidth.max(0.0).to_bits();
        match h {
            Heuristic::Bfd | Heuristic::Bf => u64::MAX - bits,
            _ => bits,
        }
    }

    /// The cores in order of trial, leaving out only cores whose load exceeds `room` (where
    /// [`admits`]' bandwidth cap refuses every server of the bandwidth asked).
    fn trial(&self, room: f64) -> Box<dyn Iterator<Item = usize> + '_> {
        let room = Self::key(self.h, room.max(0.0));
        match self.h {
            Heuristic::Ffd | Heuristic::Ff => Box::new(0..self.cores),
            Heuristic::Bfd | Heuristic::Bf => Box::new(self.by_load.range((room, 0)..).map(|&(_, c)| c)),
            Heuristic::Wfd => Box::new(self.by_load.range(..=(room, usize::MAX)).map(|&(_, c)| c)),
        }
    }

    fn moved(&mut self, core: usize, from: f64, to: f64) {
        if self.by_load.remove(&(Self::key(self.h, from), core)) {
            self.by_load.insert((Self::key(self.h, to), core));
        }
    }
}

/// The order in which cores are tried for a server, sorted afresh (the oracle of [`Order`]).
#[cfg(test)]
fn preference(cores: &[Core], h: Heuristic) -> Vec<usize> {
    let mut ids: Vec<usize> = (0..cores.len()).collect();
    match h {
        Heuristic::Ffd | Heuristic::Ff => {}
        Heuristic::Bfd | Heuristic::Bf => {
            ids.sort_by(|&a, &b| cores[b].bandwidth.total_cmp(&cores[a].bandwidth).then(a.cmp(&b)))
        }
        Heuristic::Wfd => ids.sort_by(|&a, &b| cores[a].bandwidth.total_cmp(&cores[b].bandwidth).then(a.cmp(&b))),
    }
    ids
}

/// Place each guest, given its interfaces least bandwidth first (empty: no interface), on one of
/// `cores` cores; returns each guest's core and the interface it got, None where it did not fit.
/// `overrun`: how far enforcement lets a server run past its runtime ([`admits`]).
pub fn partition(
    servers: &[Vec<Interface>],
    cores: u32,
    cap: f64,
    h: Heuristic,
    overrun: u64,
) -> Vec<Option<(u32, Interface)>> {
    partition_apart(servers, &vec![None; servers.len()], cores, cap, h, overrun)
}

/// [`partition`], where servers of the same group `apart[i] = Some(group)` never share a core.
pub fn partition_apart(
    servers: &[Vec<Interface>],
    apart: &[Option<usize>],
    cores: u32,
    cap: f64,
    h: Heuristic,
    overrun: u64,
) -> Vec<Option<(u32, Interface)>> {
    let mut order: Vec<usize> = (0..servers.len()).collect();
    if h.decreasing() {
        let bw = |i: usize| servers[i].first().map_or(f64::INFINITY, |s| s.bandwidth());
        order.sort_by(|&a, &b| bw(b).total_cmp(&bw(a)).then(a.cmp(&b)));
    }
    let mut state: Vec<Core> = (0..cores).map(|_| Core { servers: vec![], bandwidth: 0.0, groups: vec![] }).collect();
    let mut trial = Order::new(cores as usize, h);
    let mut placed = vec![None; servers.len()];
    for i in order {
        let least = servers[i].iter().map(Interface::bandwidth).fold(f64::INFINITY, f64::min);
        // a core loaded beyond this refuses the least server at the cap (margin: the loads are
        // summed in another order than admits' sum)
        let room = cap * (1.0 + 1e-12) - least + 1e-9;
        let allowed = |c: &usize| apart[i].is_none_or(|g| !state[*c].groups.contains(&g));
        let fit = trial.trial(room).filter(allowed).find_map(|c| {
            servers[i].iter().find(|s| admits(&state[c].servers, s.as_task(), cap, overrun)).map(|s| (c, *s))
        });
        if let Some((c, server)) = fit {
            let from = state[c].bandwidth;
            state[c].servers.push(server.as_task());
            state[c].bandwidth += server.bandwidth();
            trial.moved(c, from, state[c].bandwidth);
            state[c].groups.extend(apart[i]);
            placed[i] = Some((c as u32, server));
        }
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbf::dbf_edf;
    use proptest::prelude::*;

    fn iface(budget: u64, deadline: u64, period: u64) -> Vec<Interface> {
        vec![Interface { period, budget, deadline }]
    }

    fn cores(p: Vec<Option<(u32, Interface)>>) -> Vec<Option<u32>> {
        p.into_iter().map(|x| x.map(|(c, _)| c)).collect()
    }

    /// Straight from the definition: every server i meets its deadlines iff at every integer
    /// `t >= D_i` the demand of all servers plus one overrun of each *other* server due by t is at
    /// most t; checked up to where the demand can no longer catch up with t
    /// (`U t + B + n delta <= t`) and past two hyperperiods.
    fn fits_by_brute_force(all: &[Sporadic], cap: f64, overrun: u64) -> bool {
        let u: f64 = all.iter().map(|k| k.c as f64 / k.t as f64).sum();
        let lcm = crate::dbf::hyperperiod(all);
        let extra = overrun * all.len() as u64;
        let b: u64 = all.iter().map(|k| k.t - k.d).sum::<u64>() + extra;
        let horizon = if u < 1.0 - 1e-12 { (b as f64 / (1.0 - u)).ceil() as u64 + 2 * lcm } else { 2 * lcm };
        let others_due = |i: usize, t: u64| (0..all.len()).filter(|&j| j != i && all[j].d <= t).count() as u128;
        let server_ok =
            |i: usize| (all[i].d..=horizon).all(|t| dbf_edf(all, t) + overrun as u128 * others_due(i, t) <= t as u128);
        u <= cap * (1.0 + 1e-12) && (0..all.len()).all(server_ok)
    }

    proptest! {
        #[test]
        fn admission_is_the_exact_demand_test(
            core in prop::collection::vec((1u64..4, 0u64..6, 2u64..7), 0..4), new in (1u64..4, 0u64..6, 2u64..7),
            overrun in 0u64..3, cap in prop::sample::select(vec![1.0, 0.9])
        ) {
            let mk = |(c, dd, t): (u64, u64, u64)| { let c = c.min(t); Sporadic { c, d: (c + dd).min(t), t } };
            let core: Vec<Sporadic> = core.into_iter().map(mk).collect();
            let new = mk(new);
            let mut all = core.clone();
            all.push(new);
            prop_assert_eq!(admits(&core, new, cap, overrun), fits_by_brute_force(&all, cap, overrun));
        }
    }

    fn server() -> impl Strategy<Value = Interface> {
        (2u64..9).prop_flat_map(|p| {
            (1..=p).prop_flat_map(move |b| (b..=p).prop_map(move |d| Interface { period: p, budget: b, deadline: d }))
        })
    }

    proptest! {
        #[test]
        fn every_core_of_every_heuristic_passes_the_exact_test(
            servers in prop::collection::vec(server(), 1..7), cores in 1u32..4, overrun in 0u64..3,
            h in prop::sample::select(
                vec![Heuristic::Bfd, Heuristic::Ffd, Heuristic::Wfd, Heuristic::Bf, Heuristic::Ff]
            )
        ) {
            let menus: Vec<Vec<Interface>> = servers.iter().map(|s| vec![*s]).collect();
            let placed = partition(&menus, cores, 1.0, h, overrun);
            for c in 0..cores {
                let on: Vec<Sporadic> = placed.iter().flatten().filter(|p| p.0 == c).map(|p| p.1.as_task()).collect();
                prop_assert!(on.is_empty() || fits_by_brute_force(&on, 1.0, overrun), "core {} {:?}", c, on);
            }
            // a server is left out only if no core could take it (cores only fill up, so not even
            // next to what ended up there)
            for (i, p) in placed.iter().enumerate() {
                if p.is_none() {
                    for c in 0..cores {
                        let on: Vec<Sporadic> =
                            placed.iter().flatten().filter(|p| p.0 == c).map(|p| p.1.as_task()).collect();
                        prop_assert!(!admits(&on, servers[i].as_task(), 1.0, overrun));
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn servers_of_a_spread_group_never_share_a_core(
            servers in prop::collection::vec((server(), prop::option::of(0usize..3)), 1..8), cores in 1u32..5,
            h in prop::sample::select(vec![Heuristic::Bfd, Heuristic::Ffd, Heuristic::Wfd, Heuristic::Ff])
        ) {
            let menus: Vec<Vec<Interface>> = servers.iter().map(|s| vec![s.0]).collect();
            let apart: Vec<Option<usize>> = servers.iter().map(|s| s.1).collect();
            let placed = partition_apart(&menus, &apart, cores, 1.0, h, 0);
            for (i, a) in placed.iter().enumerate() {
                for (j, b) in placed.iter().enumerate().skip(i + 1) {
                    if let (Some(a), Some(b), Some(g)) = (a, b, apart[i]) {
                        prop_assert!(apart[j] != Some(g) || a.0 != b.0, "servers {} and {} of group {}", i, j, g);
                    }
                }
            }
            for c in 0..cores {
                let on: Vec<Sporadic> = placed.iter().flatten().filter(|p| p.0 == c).map(|p| p.1.as_task()).collect();
                prop_assert!(on.is_empty() || fits_by_brute_force(&on, 1.0, 0));
            }
        }
    }

    /// [`partition_apart`] as it was before [`Order`]: every core sorted for every server.
    fn partition_sorted(
        servers: &[Vec<Interface>],
        apart: &[Option<usize>],
        cores: u32,
        cap: f64,
        h: Heuristic,
        overrun: u64,
    ) -> Vec<Option<(u32, Interface)>> {
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if h.decreasing() {
            let bw = |i: usize| servers[i].first().map_or(f64::INFINITY, |s| s.bandwidth());
            order.sort_by(|&a, &b| bw(b).total_cmp(&bw(a)).then(a.cmp(&b)));
        }
        let mut state: Vec<Core> =
            (0..cores).map(|_| Core { servers: vec![], bandwidth: 0.0, groups: vec![] }).collect();
        let mut placed = vec![None; servers.len()];
        for i in order {
            let allowed = |c: &usize| apart[i].is_none_or(|g| !state[*c].groups.contains(&g));
            let fit = preference(&state, h).into_iter().filter(allowed).find_map(|c| {
                servers[i].iter().find(|s| admits(&state[c].servers, s.as_task(), cap, overrun)).map(|s| (c, *s))
            });
            if let Some((c, server)) = fit {
                state[c].servers.push(server.as_task());
                state[c].bandwidth += server.bandwidth();
                state[c].groups.extend(apart[i]);
                placed[i] = Some((c as u32, server));
            }
        }
        placed
    }

    const ALL: [Heuristic; 5] = [Heuristic::Bfd, Heuristic::Ffd, Heuristic::Wfd, Heuristic::Bf, Heuristic::Ff];

    proptest! {
        #[test]
        fn the_kept_order_places_as_sorting_every_core_did(
            servers in prop::collection::vec((prop::collection::vec(server(), 0..3), prop::option::of(0usize..3)), 1..24),
            cores in 1u32..7, overrun in prop::sample::select(vec![0u64, 1]), cap in prop::sample::select(vec![0.5, 0.95, 1.0])
        ) {
            let menus: Vec<Vec<Interface>> = servers.iter().map(|s| s.0.clone()).collect();
            let apart: Vec<Option<usize>> = servers.iter().map(|s| s.1).collect();
            for h in ALL {
                let kept = partition_apart(&menus, &apart, cores, cap, h, overrun);
                prop_assert_eq!(kept, partition_sorted(&menus, &apart, cores, cap, h, overrun), "{:?}", h);
            }
        }
    }

    /// Many servers of random real-time sizes, loads that sum to the cap in other orders.
    #[test]
    fn the_kept_order_places_a_large_fleet_as_sorting_did() {
        let mut x: u64 = 7;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let menus: Vec<Vec<Interface>> = (0..1500)
            .map(|_| {
                let period = [1000, 2000, 5000, 10_000][next(4) as usize];
                let budget = 1 + next(period / 2);
                vec![Interface { period, budget, deadline: period - next(budget.min(period - budget) + 1) }]
            })
            .collect();
        let apart: Vec<Option<usize>> = (0..menus.len()).map(|i| (i % 5 == 0).then_some(i / 10)).collect();
        for h in ALL {
            let kept = partition_apart(&menus, &apart, 600, 0.95, h, 0);
            assert_eq!(kept, partition_sorted(&menus, &apart, 600, 0.95, h, 0), "{h:?}");
            assert!(kept.iter().filter(|p| p.is_some()).count() > 1000, "{h:?}");
        }
    }

    #[test]
    fn heuristics_place_as_their_names_say() {
        let s = [iface(5, 10, 10), iface(3, 10, 10), iface(4, 10, 10), iface(2, 10, 10)];
        // BFD: 0.5 -> c0, 0.4 -> c0 (0.9), 0.3 -> c1, 0.2 -> c1
        assert_eq!(cores(partition(&s, 3, 0.95, Heuristic::Bfd, 0)), vec![Some(0), Some(1), Some(0), Some(1)]);
        // WFD spreads: 0.5 -> c0, 0.4 -> c1, 0.3 -> c2, 0.2 -> c2 (0.5 vs 0.4 vs 0.3)
        assert_eq!(cores(partition(&s, 3, 0.95, Heuristic::Wfd, 0)), vec![Some(0), Some(2), Some(1), Some(2)]);
        // FF in order: 0.5 c0, 0.3 c0, 0.4 c1, 0.2 c1
        assert_eq!(cores(partition(&s, 3, 0.95, Heuristic::Ff, 0)), vec![Some(0), Some(0), Some(1), Some(1)]);
        // cap: 0.5 + 0.5 > 0.95
        assert_eq!(
            cores(partition(&[iface(5, 10, 10), iface(5, 10, 10)], 1, 0.95, Heuristic::Bfd, 0)),
            vec![Some(0), None]
        );
        assert_eq!(cores(partition(&[vec![], iface(1, 10, 10)], 1, 0.95, Heuristic::Bfd, 0)), vec![None, Some(0)]);
    }

    #[test]
    fn demand_test_rejects_what_bandwidth_alone_accepts() {
        // two servers with tight deadlines: U = 0.6 but both need 3 units within 3
        let a = Interface { period: 10, budget: 3, deadline: 3 }.as_task();
        assert!(admits(&[], a, 0.95, 0));
        assert!(!admits(&[a], a, 0.95, 0));
        let b = Interface { period: 10, budget: 3, deadline: 6 }.as_task();
        assert!(admits(&[a], b, 0.95, 0));
        // a menu: the tight alternative does not fit next to `a`, the looser one does
        let menu =
            vec![Interface { period: 10, budget: 3, deadline: 3 }, Interface { period: 10, budget: 4, deadline: 8 }];
        let first = vec![Interface { period: 10, budget: 3, deadline: 3 }];
        let got = partition(&[first, menu], 1, 0.95, Heuristic::Ff, 0);
        assert_eq!(got[1], Some((0, Interface { period: 10, budget: 4, deadline: 8 })));
    }

    #[test]
    fn an_overrun_delays_the_other_servers_of_the_core() {
        // two servers of 4 every 10 (deadline 10): U = 0.8; with an overrun of the other one the
        // demand at t = 10 is 8 + 2 = 10 (fits), 8 + 3 (does not)
        let s = Interface { period: 10, budget: 4, deadline: 10 }.as_task();
        assert!(admits(&[s], s, 0.95, 0));
        assert!(admits(&[s], s, 0.95, 2));
        assert!(!admits(&[s], s, 0.95, 3));
        // a server alone: its own overrun is paid back out of its own runtime (overhead.rs)
        assert!(admits(&[], s, 0.95, 1_000));
        // three of 3 every 10: at t = 10 the demand is 9 plus two overruns
        let t = Interface { period: 10, budget: 3, deadline: 10 }.as_task();
        assert!(admits(&[t, t], t, 0.95, 0));
        assert!(!admits(&[t, t], t, 0.95, 1));
    }
}
