//! Guests of several vCPUs: one server per real-time vCPU, none for a housekeeping vCPU.
//!
//! - **Partitioned** (each task bound to one vCPU): the tasks the scenario does not bind are
//!   packed onto the real-time vCPUs ([`crate::packing`]), each vCPU's cost being its least
//!   interface (PRM or EDP, computed exactly as for a guest of one vCPU by the caller's
//!   `analyse`); each vCPU then gets that interface (and its menu of alternatives). A real-time
//!   vCPU the packing leaves without tasks gets no reservation.
//! - **Global** (one global EDF or fixed-priority scheduler over the real-time vCPUs): the least
//!   MPR interface `(Pi, Theta, m')` with `m'` the number of real-time vCPUs (Shin, Easwaran & Lee
//!   2008; Easwaran, Shin & Lee 2009; [`crate::mpr_interface`]), deployed as its `m'` periodic
//!   servers ([`crate::mpr_interface::vcpu_servers`], each paying a host model's per-period cost),
//!   one per real-time vCPU. `m'` is the guest's vCPU count, not a free choice: the guest's
//!   scheduler runs on all of them, and the analysis holds for at most `m'` processors supplying
//!   at once.
//!
//! Where the servers go is the partitioner's (`crate::partition::partition_apart`, distinct
//! cores unless the guest sets `spread = false`).

use crate::dbf::{utilisation, Sporadic, MAX_CHECK_POINTS};
use crate::interface::{Interface, Model};
use crate::mpr_interface::{best_interface_on, vcpu_servers, GlobalTest};
use crate::packing::{pack, NoPacking, Problem, VcpuCost};
use rtvirt_model::plan::NO_RESERVATION;
use rtvirt_model::scenario::{Guest, GuestScheduler};
use std::collections::HashMap;

/// [`VcpuServer::model`] of a global guest's servers.
pub const MPR: &str = "mpr";

/// A server's least interface and the alternatives the partitioner may use (least first).
#[derive(Debug, Clone, Default)]
pub struct Server {
    pub interface: Option<Interface>,
    pub menu: Vec<Interface>,
    /// The exact analysis needs more than [`MAX_CHECK_POINTS`] check points.
    pub too_large: bool,
}

/// One vCPU of a guest: its tasks (indices into the guest's tasks, ascending) and its server.
#[derive(Debug, Clone)]
pub struct VcpuServer {
    pub id: u32,
    pub tasks: Vec<usize>,
    /// "prm" | "edp" | "mpr" | "none" (no reservation: `menu` empty).
    pub model: &'static str,
    pub menu: Vec<Interface>,
}

impl VcpuServer {
    fn none(id: u32, tasks: Vec<usize>) -> VcpuServer {
        VcpuServer { id, tasks, model: NO_RESERVATION, menu: vec![] }
    }
}

/// A multi-vCPU guest's servers, or why it has none.
#[derive(Debug, Clone)]
pub struct VcpuServers {
    pub vcpus: Vec<VcpuServer>,
    /// The guest cannot be planned: why (its servers are then not placed).
    pub failure: Option<String>,
    pub too_large: bool,
}

impl VcpuServers {
    fn failed(g: &Guest, model: &'static str, failure: String, too_large: bool) -> VcpuServers {
        let vcpus = g
            .vcpus
            .iter()
            .map(|v| {
                if v.housekeeping {
                    VcpuServer::none(v.id, vec![])
                } else {
                    VcpuServer { model, ..VcpuServer::none(v.id, vec![]) }
                }
            })
            .collect();
        VcpuServers { vcpus, failure: Some(failure), too_large }
    }
}

/// The reason of a guest beyond the exact analysis' bound.
pub fn too_large_reason() -> String {
    format!(
        "too large to analyse exactly: its task periods and deadlines need more than {MAX_CHECK_POINTS} check \
         points (e.g. a 60 min period next to a 10 us one); use periods closer together"
    )
}

/// The vCPU servers of a partitioned guest. `tasks`: the guest's tasks with their budgets, in
/// scenario order; `analyse(set)`: the least interface of a vCPU running those tasks.
pub fn partitioned(
    g: &Guest,
    tasks: &[Sporadic],
    model: Model,
    cap: f64,
    analyse: &mut dyn FnMut(&[usize]) -> Server,
) -> VcpuServers {
    let rt: Vec<u32> = g.rt_vcpus().map(|v| v.id).collect();
    let bound: Vec<Option<usize>> =
        g.tasks.iter().map(|t| t.vcpu.and_then(|id| rt.iter().position(|&r| r == id))).collect();
    let u: Vec<f64> = tasks.iter().map(|t| t.c as f64 / t.t as f64).collect();
    let problem = Problem { utilisation: &u, bound: &bound, vcpus: rt.len(), cap };
    let mut cost = Costs { analyse, cap, memo: HashMap::new() };
    let packing = pack(&problem, &mut cost);
    let too_large = cost.memo.values().any(|s| s.too_large);
    let model_name = model.as_str();
    let sets = match packing {
        Ok(p) => p.sets,
        Err(_) if too_large => return VcpuServers::failed(g, model_name, too_large_reason(), true),
        Err(why) => return VcpuServers::failed(g, model_name, no_packing_reason(g, &rt, &why, tasks, cap), false),
    };
    let vcpus = g
        .vcpus
        .iter()
        .map(|v| match rt.iter().position(|&r| r == v.id) {
            None => VcpuServer::none(v.id, vec![]),
            Some(k) if sets[k].is_empty() => VcpuServer::none(v.id, vec![]),
            Some(k) => {
                let menu = cost.memo.get(&sets[k]).map(|s| s.menu.clone()).unwrap_or_default();
                VcpuServer { id: v.id, tasks: sets[k].clone(), model: model_name, menu }
            }
        })
        .collect();
    VcpuServers { vcpus, failure: None, too_large: false }
}

fn no_packing_reason(g: &Guest, rt: &[u32], why: &NoPacking, tasks: &[Sporadic], cap: f64) -> String {
    let name = |t: usize| format!("\"{}\"", g.tasks[t].name);
    match *why {
        NoPacking::Bound(k) => {
            let names: Vec<String> = (0..g.tasks.len()).filter(|&t| g.tasks[t].vcpu == Some(rt[k])).map(name).collect();
            format!(
                "the tasks bound to vCPU {} ({}) have no interface on one vCPU within the per-core cap {cap}",
                rt[k],
                names.join(", ")
            )
        }
        NoPacking::Proven => format!(
            "no assignment of its tasks (utilisation of the budgets {:.3}) to its {} real-time vCPUs has an \
             interface on every vCPU within the per-core cap {cap} (exact search over every assignment)",
            utilisation(tasks),
            rt.len()
        ),
        NoPacking::Heuristic(t) => format!(
            "first-fit decreasing found no real-time vCPU for task {} (of {} tasks, utilisation of the budgets \
             {:.3}, on {} vCPUs): another assignment may exist; bind tasks to vCPUs with `vcpu = N`",
            name(t),
            g.tasks.len(),
            utilisation(tasks),
            rt.len()
        ),
    }
}

/// The packing's costs: each task set's least interface, analysed once.
struct Costs<'a> {
    analyse: &'a mut dyn FnMut(&[usize]) -> Server,
    cap: f64,
    memo: HashMap<Vec<usize>, Server>,
}

impl VcpuCost for Costs<'_> {
    fn bandwidth(&mut self, tasks: &[usize]) -> Option<f64> {
        let analyse = &mut self.analyse;
        let server = self.memo.entry(tasks.to_vec()).or_insert_with(|| analyse(tasks));
        server.interface.map(|i| i.bandwidth()).filter(|&b| b <= self.cap * (1.0 + 1e-12))
    }
}

/// The vCPU servers of a global guest: its least MPR interface on its real-time vCPUs, split into
/// one server per vCPU. `tasks`: the guest's tasks with their budgets (by decreasing priority for
/// FP; per-job costs included).
pub fn global(g: &Guest, tasks: &[Sporadic], candidates: &[u64], test: &GlobalTest) -> VcpuServers {
    let m = g.rt_vcpus().count() as u64;
    let r = match best_interface_on(tasks, test, candidates, m) {
        Err(_) => return VcpuServers::failed(g, MPR, too_large_reason(), true),
        Ok(None) => return VcpuServers::failed(g, MPR, global_failure(tasks, test, m), false),
        Ok(Some(r)) => r,
    };
    let servers = vcpu_servers(&r, &test.overheads);
    let all: Vec<usize> = (0..g.tasks.len()).collect();
    let mut next = servers.iter();
    let vcpus = g
        .vcpus
        .iter()
        .map(|v| match (v.housekeeping, if v.housekeeping { None } else { next.next() }) {
            (true, _) => VcpuServer::none(v.id, vec![]),
            (false, Some(&s)) if s.budget > 0 => VcpuServer { id: v.id, tasks: all.clone(), model: MPR, menu: vec![s] },
            // a server of no budget (Theta < m'): the vCPU runs the guest's tasks on no reservation
            (false, _) => VcpuServer::none(v.id, all.clone()),
        })
        .collect();
    VcpuServers { vcpus, failure: None, too_large: false }
}

/// Why no MPR interface exists: the test that did not show it, and the costs it charged.
fn global_failure(tasks: &[Sporadic], test: &GlobalTest, m: u64) -> String {
    let name = match test.scheduler {
        GuestScheduler::Edf => "global EDF (Shin, Easwaran & Lee 2008's test)",
        GuestScheduler::Fp => "global fixed priority (Bertogna & Cirinei 2007's response-time test)",
    };
    let costs = if test.overheads.is_zero() {
        format!(", even with {m} whole cores")
    } else {
        let o = &test.overheads;
        format!(
            " with the host model's costs ({} ns per server period, {} ns per job, release latency {} ns, \
             enforcement overrun {} ns), even with each server's whole period less its cost",
            o.per_period, o.per_job, o.release_jitter, o.overrun
        )
    };
    format!(
        "its tasks (utilisation of the budgets {:.3}) are not shown schedulable by {name} on {m} vCPUs at any \
         candidate server period{costs}",
        utilisation(tasks)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::best_interface;
    use crate::schedtest::edf_schedulable;
    use proptest::prelude::*;
    use rtvirt_model::scenario::Scenario;

    /// One guest of `vcpus` vCPUs (`extra`: more guest keys) and tasks (period ms, wcet ms, vcpu).
    fn guest(vcpus: u32, extra: &str, tasks: &[(u64, u64, Option<u32>)]) -> Scenario {
        let mut t = format!(
            "[host]\ncores = 4\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = {vcpus}\n{extra}\n\
             server_periods = [\"2ms\", \"5ms\"]\n"
        );
        for (i, (period, wcet, vcpu)) in tasks.iter().enumerate() {
            t.push_str(&format!("[[guest.task]]\nname = \"t{i}\"\nperiod = \"{period}ms\"\nwcet = \"{wcet}ms\"\n"));
            if let Some(v) = vcpu {
                t.push_str(&format!("vcpu = {v}\n"));
            }
        }
        Scenario::from_toml(&t, None).unwrap()
    }

    fn sporadic(g: &Guest) -> Vec<Sporadic> {
        g.tasks.iter().map(|t| Sporadic { c: t.wcet.0, d: t.deadline.0, t: t.period.0 }).collect()
    }

    fn prm(tasks: &[Sporadic], set: &[usize]) -> Server {
        let ts: Vec<Sporadic> = set.iter().map(|&i| tasks[i]).collect();
        let i = best_interface(&ts, GuestScheduler::Edf, Model::Prm, &[2_000_000, 5_000_000]);
        Server { interface: i, menu: i.into_iter().collect(), too_large: false }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// Plan consistency: every vCPU's server admits exactly the tasks packed onto it (the exact
        /// uniprocessor EDF test on the server's PRM supply), every task is on one vCPU, and a
        /// task the scenario binds stays on its vCPU.
        #[test]
        fn each_vcpu_server_admits_its_tasks(
            tasks in prop::collection::vec((prop::sample::select(vec![5u64, 10, 20]), 1u64..4, prop::option::weighted(0.3, 0u32..3)), 1..7)
        ) {
            let s = guest(3, "", &tasks);
            let g = &s.guests[0];
            let ts = sporadic(g);
            let got = partitioned(g, &ts, Model::Prm, 1.0, &mut |set| prm(&ts, set));
            if got.failure.is_some() {
                return Ok(());
            }
            let mut seen = vec![0; ts.len()];
            for v in &got.vcpus {
                for &t in &v.tasks {
                    seen[t] += 1;
                    prop_assert!(g.tasks[t].vcpu.is_none_or(|b| b == v.id));
                }
                match v.menu.first() {
                    None => prop_assert!(v.tasks.is_empty() && v.model == NO_RESERVATION),
                    Some(i) => {
                        let on: Vec<Sporadic> = v.tasks.iter().map(|&t| ts[t]).collect();
                        prop_assert!(edf_schedulable(&on, &crate::sbf::Edp::prm(i.period, i.budget)));
                        prop_assert!(!edf_schedulable(&on, &crate::sbf::Edp::prm(i.period, i.budget - 1)));
                    }
                }
            }
            prop_assert!(seen.iter().all(|&n| n == 1), "{:?}", seen);
        }
    }

    #[test]
    fn housekeeping_vcpus_get_no_server_and_bound_tasks_stay() {
        let s = guest(3, "housekeeping = [1]", &[(10, 4, Some(2)), (10, 1, None), (10, 1, None)]);
        let g = &s.guests[0];
        let ts = sporadic(g);
        let got = partitioned(g, &ts, Model::Prm, 1.0, &mut |set| prm(&ts, set));
        assert!(got.failure.is_none(), "{:?}", got.failure);
        assert_eq!(got.vcpus[1].model, NO_RESERVATION);
        assert!(got.vcpus[1].tasks.is_empty());
        assert!(got.vcpus[2].tasks.contains(&0));
    }

    #[test]
    fn a_global_guest_gets_one_mpr_server_per_rt_vcpu() {
        let s = guest(2, "placement = \"global\"", &[(10, 3, None), (10, 3, None), (10, 3, None)]);
        let g = &s.guests[0];
        let ts = sporadic(g);
        let got = global(g, &ts, &[2_000_000, 5_000_000], &GlobalTest::edf());
        assert!(got.failure.is_none(), "{:?}", got.failure);
        assert_eq!(got.vcpus.len(), 2);
        let budget: u64 = got.vcpus.iter().map(|v| v.menu[0].budget).sum();
        let period = got.vcpus[0].menu[0].period;
        let r = crate::mpr::Mpr { period, budget, concurrency: 2 };
        assert_eq!(crate::gedf::schedulable(&ts, &r), crate::gedf::Verdict::Schedulable);
        assert!(got.vcpus.iter().all(|v| v.model == MPR && v.tasks == vec![0, 1, 2]));
        // more than two vCPUs' worth of work: refused, naming the test
        let s = guest(2, "placement = \"global\"", &[(10, 9, None), (10, 9, None), (10, 9, None)]);
        let got = global(&s.guests[0], &sporadic(&s.guests[0]), &[2_000_000], &GlobalTest::edf());
        assert!(got
            .failure
            .unwrap()
            .contains("not shown schedulable by global EDF (Shin, Easwaran & Lee 2008's test) on 2 vCPUs"));
    }
}
