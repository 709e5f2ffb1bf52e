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

pub mod config;
pub mod engine;
pub mod guest;
pub mod host;
pub mod net;
pub mod run;
pub mod sweep;

pub use config::{Overrides, SimConfig};
pub use run::{simulate, Outcome, RunOptions};
