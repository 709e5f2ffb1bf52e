//! rtvirt-sim: a fast, deterministic discrete-event model of a virtualized host.
//!
//! - [`engine`]: the event queue, seeded random streams and the Chrome trace writer that every
//!   model is built on (pure, no I/O; same inputs + same seed = same events in the same order).
//! - [`config`]: scenario (+ plan) -> checked simulator configuration (policies, affinities).
//! - [`host`]: cores, host threads and their scheduling policies (Linux FIFO/RR/DEADLINE/OTHER,
//!   Xen Credit/RTDS, RT-Xen servers, static supply windows).
//! - [`guest`]: what runs on a host thread: guests (EDF/FP over periodic tasks) and loads.
//! - [`run`]: one run to the horizon -> `rtvirt.results/v1` and an optional trace.
//! - [`sweep`]: grids of runs in parallel with identical results whatever the thread count.
//! - [`net`]: the network path (`[net]`: KVM and Xen Dom0 packet processing), docs/netsim.md.
//!
//! - [`host_costs`]: a host model's measured costs (`rtvirt.hostmodel/v1`) as the simulator
//!   charges them (per server period, release latency, enforcement, cache reload).
//!
//! Entry points: [`config::SimConfig::new`] (checked scenario + plan + overrides),
//! [`run::simulate`] -> [`run::Outcome`], [`run::simulate_with_host_model`] (the same on a host
//! model), [`sweep::run_sweep`], [`net::simulate`].
//!
//! Invariants: the simulator never touches the OS (its "host" is a model); it is deterministic:
//! the same scenario and seed give byte-identical JSON whatever the thread count (one random
//! stream per (seed, stream id), events in (time, insertion) order, sweep cells in grid order);
//! memory does not grow with the horizon (statistics stream into histograms). It uses
//! rtvirt-analysis only in its tests: a sweep that plans at each rho gets the planner from the
//! CLI as a closure. How each part works and how it is validated: docs/simulate.md.

pub mod adapt;
pub mod config;
pub mod engine;
pub mod guest;
pub mod host;
pub mod host_costs;
pub mod net;
pub mod run;
pub mod sweep;

pub use config::{Overrides, SimConfig};
pub use host_costs::{HostCosts, LatencyDraw, OverheadCharge};
pub use run::{simulate, simulate_with_costs, simulate_with_host_model, Outcome, RunOptions};
