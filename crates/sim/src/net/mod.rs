//! The network path of a virtualized host (Garcia Alvarado 2019, Xi et al. 2012) as a discrete-event model
//! in which every cost is CPU work done by a simulated thread on a simulated core, so that
//! priorities, placement, locks and copies decide the latency, not per-method factors.
//!
//! - [`kvm`]: the KVM host (NIC, hard IRQ / PREEMPT_RT IRQ threads, NET_RX softirq with shared
//!   or partitioned poll lists and priority-inheriting locks, bridge, vhost, guest, socket
//!   outsourcing) for Garcia Alvarado 2019.
//! - [`xen`]: Xen Dom0 inter-domain communication (netback TX/RX, softnet backlog, original and
//!   RTCA) for Xi et al. 2012, guest domains as vCPUs of the host's Xen Credit policy (with its cap).
//! - [`cache`]: the shared-LLC interference model; [`stats`]: per-flow statistics; `kernel`: limits of
//!   the modelled kernels shared by both.
//!
//! One set of calibrated per-stage costs (`rtvirt_model::scenario::net::NetCosts::default`) is
//! shared by every method; docs/netsim.md documents the model and its calibration.

pub mod cache;
mod kernel;
pub mod kvm;
pub mod stats;
pub mod xen;

use rtvirt_model::results::Results;
use rtvirt_model::scenario::net::{NetModel, NetScenario};

/// A finished network simulation.
pub struct NetRun {
    pub results: Results,
    pub trace: Option<serde_json::Value>,
    /// Events processed (performance reporting).
    pub events: u64,
}

/// Run a validated `[net]` scenario (with an optional Perfetto trace window for KVM runs).
pub fn simulate(scenario: &NetScenario, trace: Option<crate::engine::trace::TraceWindow>) -> NetRun {
    match &scenario.model {
        NetModel::Kvm(k) => {
            let opt =
                kvm::KvmRunOptions { duration: scenario.duration, warmup: scenario.warmup, seed: scenario.seed, trace };
            let r = kvm::run(k, &opt);
            NetRun { results: r.results, trace: r.trace, events: r.events }
        }
        NetModel::Xen(x) => {
            // the duration includes the warm-up (checked to leave at least one ping period)
            let measured = scenario.duration.0.saturating_sub(scenario.warmup.0);
            let rounds = (measured / x.period.0.max(1)).max(1).min(u32::MAX as u64) as u32;
            let r = xen::run(x, Some(rounds), scenario.warmup, scenario.seed);
            let events = r.simulation.as_ref().and_then(|scenario| scenario.events).unwrap_or(0);
            NetRun { results: r, trace: None, events }
        }
    }
}
