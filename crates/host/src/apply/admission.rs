//! Per-core admission of SCHED_DEADLINE reservations before the kernel is asked: every server to
//! be pinned on a core, plus the deadline threads already pinned there, must pass rtvirt's exact
//! test (the EDF processor-demand test of rtvirt-analysis, passed in by the caller through
//! [`Admission`], since rtvirt-host does no analysis) and then the kernel's own bandwidth rule
//! ([`KernelBandwidthCap`]); only then is `sched_setattr` called. Used by plans and by profiles'
//! pinned `deadline` entries.

use crate::threads;
use rtvirt_model::InputError;
use rtvirt_os::sysinfo;
use std::collections::BTreeMap;

/// One reservation on a core, as the admission tests see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub guest: String,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// A per-core admission test: Ok if the servers can all be guaranteed on one core.
pub trait Admission {
    fn name(&self) -> &str;
    fn admit(&self, servers: &[Server]) -> std::result::Result<(), String>;
    /// The test for core `core` (default: the same on every core).
    fn admit_on(&self, _core: u32, servers: &[Server]) -> std::result::Result<(), String> {
        self.admit(servers)
    }
}

/// The kernel's own SCHED_DEADLINE rule, checked before asking it: the servers' total bandwidth,
/// plus the core's fair server (Linux >= 6.12: its runtime/period is reserved in the root
/// domain's deadline bandwidth like any deadline task's), must stay within
/// sched_rt_runtime_us/sched_rt_period_us. (A necessary condition only; the exact EDF demand test
/// comes from rtvirt-analysis through [`Admission`].)
pub struct KernelBandwidthCap {
    /// None: admission control is disabled (sched_rt_runtime_us = -1).
    pub cap: Option<f64>,
    /// The per-CPU fair servers whose bandwidth is already reserved.
    pub fair_server: sysinfo::FairServers,
}

impl KernelBandwidthCap {
    /// This host's cap, with its fair servers as already read (they only count when the cap is
    /// enforced).
    pub fn of_this_host(fair_server: sysinfo::FairServers) -> Self {
        KernelBandwidthCap { cap: sysinfo::dl_bandwidth_cap(), fair_server }
    }

    /// The deadline bandwidth left on `core` for reservations: the cap less the core's fair
    /// server (None: admission control is disabled).
    pub fn free_on(&self, core: u32) -> Option<f64> {
        let fair = self.fair_server.active_on(core).map_or(0.0, |f| f.runtime_ns as f64 / f.period_ns.max(1) as f64);
        self.cap.map(|cap| cap - fair)
    }

    fn check(&self, servers: &[Server], fair: Option<(u32, sysinfo::FairServer)>) -> std::result::Result<(), String> {
        let Some(cap) = self.cap else { return Ok(()) };
        // Integer arithmetic in the kernel's units (bandwidth << 20), as in to_ratio()/__dl_overflow().
        let bw = |runtime: u64, period: u64| ((runtime as u128) << 20) / period.max(1) as u128;
        let fair_bw = fair.map(|(_, f)| bw(f.runtime_ns, f.period_ns)).unwrap_or(0);
        let total: u128 = servers.iter().map(|s| bw(s.runtime_ns, s.period_ns)).sum::<u128>() + fair_bw;
        let limit = (cap * (1u64 << 20) as f64) as u128;
        if total > limit {
            let fair_note = fair
                .map(|(c, f)| {
                    format!(
                        ", including CPU {c}'s fair server {f} ({:.3}, {})",
                        fair_bw as f64 / (1u64 << 20) as f64,
                        self.fair_server.source()
                    )
                })
                .unwrap_or_default();
            return Err(format!(
                "total bandwidth {:.3}{fair_note} exceeds the kernel's cap {cap:.3} \
                 (sched_rt_runtime_us/sched_rt_period_us)",
                total as f64 / (1u64 << 20) as f64
            ));
        }
        Ok(())
    }
}

impl Admission for KernelBandwidthCap {
    fn name(&self) -> &str {
        "kernel SCHED_DEADLINE bandwidth cap"
    }
    /// Without a core: the servers alone.
    fn admit(&self, servers: &[Server]) -> std::result::Result<(), String> {
        self.check(servers, None)
    }
    fn admit_on(&self, core: u32, servers: &[Server]) -> std::result::Result<(), String> {
        self.check(servers, self.fair_server.active_on(core).map(|f| (core, f)))
    }
}

/// A reservation the apply will pin: thread `tid` gets `server` on `core`.
#[derive(Debug, Clone)]
pub struct Pinned {
    pub core: u32,
    pub tid: u32,
    pub server: Server,
}

/// Check every core: the new reservations plus the SCHED_DEADLINE threads already pinned there
/// (other guests, earlier applies) must pass each of `exact` (rtvirt's own tests, first) and then
/// the kernel's bandwidth cap (counting `fair_server`, this host's fair servers as read once per
/// apply). `what` names the input in the error ("the plan", "the profile"), `field` the field the
/// error points at.
pub fn admit_per_core(
    pinned: &[Pinned],
    exact: &[&dyn Admission],
    fair_server: &sysinfo::FairServers,
    what: &str,
    field: &str,
) -> Result<(), InputError> {
    let mut per_core: BTreeMap<u32, Vec<Server>> = BTreeMap::new();
    for p in pinned {
        per_core.entry(p.core).or_default().push(p.server.clone());
    }
    if per_core.is_empty() {
        return Ok(());
    }
    for t in threads::all_threads()
        .iter()
        .filter(|t| t.sched.is_deadline() && t.affinity.len() == 1 && !pinned.iter().any(|p| p.tid == t.tid))
    {
        if let Some(v) = per_core.get_mut(&t.affinity.iter().next().expect("one CPU")) {
            v.push(Server {
                guest: format!("existing thread {} ({})", t.tid, t.comm),
                runtime_ns: t.sched.runtime_ns,
                deadline_ns: t.sched.deadline_ns,
                period_ns: t.sched.period_ns,
            });
        }
    }
    let kernel = KernelBandwidthCap::of_this_host(fair_server.clone());
    let tests: Vec<&dyn Admission> = exact.iter().copied().chain(std::iter::once(&kernel as &dyn Admission)).collect();
    for (core, servers) in &per_core {
        for t in &tests {
            t.admit_on(*core, servers).map_err(|why| {
                let names: Vec<&str> = servers.iter().map(|s| s.guest.as_str()).collect();
                InputError::field(
                    field,
                    format!("{what} does not fit core {core} ({}): {} failed: {why}", names.join(", "), t.name()),
                )
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_os::sysinfo::FairServers;

    fn server(r: u64, p: u64) -> Server {
        Server { guest: "g".into(), runtime_ns: r, deadline_ns: p, period_ns: p }
    }

    #[test]
    fn kernel_cap_uses_the_kernels_fixed_point() {
        let k = KernelBandwidthCap { cap: Some(0.95), fair_server: FairServers::Absent };
        assert!(k.admit(&[server(5, 10), server(4, 10)]).is_ok());
        assert!(k.admit(&[server(5, 10), server(5, 10)]).unwrap_err().contains("exceeds"));
        assert!(KernelBandwidthCap { cap: None, fair_server: FairServers::Absent }
            .admit(&[server(10, 10), server(10, 10)])
            .is_ok());
    }

    #[test]
    fn kernel_cap_counts_the_cores_fair_server() {
        // debugfs values: CPU 0's fair server at the default 50 ms / 1 s, CPU 1's switched off
        let v: Vec<String> = ["50000000", "1000000000", "0", "1000000000"].map(String::from).to_vec();
        let k = KernelBandwidthCap { cap: Some(0.95), fair_server: FairServers::parse(&[0, 1], &v) };
        assert!((k.free_on(0).unwrap() - 0.90).abs() < 1e-12 && k.free_on(1) == Some(0.95), "left for reservations");
        let servers = [server(46, 100), server(45, 100)]; // 0.91
        assert!(k.admit_on(1, &servers).is_ok(), "no fair server on CPU 1: 0.91 <= 0.95");
        let e = k.admit_on(0, &servers).unwrap_err();
        assert!(e.contains("0.960") && e.contains("CPU 0's fair server 50000000/1000000000 ns"), "{e}");
        // exactly at the cap is admitted, as by the kernel (overflow only when above)
        assert!(k.admit_on(0, &[server(90, 100)]).is_ok());
        // admission control off: nothing counts
        assert!(KernelBandwidthCap { cap: None, fair_server: FairServers::Unreadable("x".into()) }
            .admit_on(0, &[server(1, 1)])
            .is_ok());
        // unreadable settings are assumed at the default
        let unknown = KernelBandwidthCap { cap: Some(0.95), fair_server: FairServers::Unreadable("no debugfs".into()) };
        assert!(unknown.admit_on(1, &servers).unwrap_err().contains("assumed at the default"));
    }

    /// Records the order in which tests are asked, and refuses everything.
    struct Refuse(&'static str);
    impl Admission for Refuse {
        fn name(&self) -> &str {
            self.0
        }
        fn admit(&self, _: &[Server]) -> std::result::Result<(), String> {
            Err("refused".into())
        }
    }

    #[test]
    fn rtvirts_exact_test_is_asked_before_the_kernels_cap() {
        // Bandwidth 1.0: over the kernel's cap too (when admission control is on), yet the
        // error is the exact test's.
        let p = Pinned { core: 0, tid: u32::MAX, server: server(10_000_000, 10_000_000) };
        let e = admit_per_core(&[p], &[&Refuse("exact")], &FairServers::Absent, "the plan", "cores").unwrap_err();
        assert!(
            e.message.contains("the plan does not fit core 0") && e.message.contains("exact failed: refused"),
            "{e}"
        );
        assert!(
            admit_per_core(&[], &[&Refuse("exact")], &FairServers::Absent, "the plan", "cores").is_ok(),
            "nothing pinned, nothing to admit"
        );
    }
}
