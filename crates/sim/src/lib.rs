//! rtvirt-sim: a fast, deterministic discrete-event model of a virtualized host.
//!
//! - [`engine`]: the event queue, seeded random streams and the Chrome trace writer that every
//!   model is built on (pure, no I/O; same inputs + same seed = same events in the same order).

pub mod engine;
