//! rtvirt-model: the one data model every rtvirt job shares.
//!
//! - [`adapt_log`]: the decision log of `rtvirt host adapt` (JSON lines).
//! - [`agent_wire`]: the guest agent's report lines and the host's bounded, clamping reading of them.
//! - [`carts`]: CARTS XML input -> scenario (`rtvirt plan --import-carts`).
//! - [`document`]: which document a JSON value is (its `schema` field), read in one place.
//! - [`duration`]: `Nanos`, integer nanoseconds with human units in files.
//! - [`error`]: `InputError`, user-input errors naming file, line/column and field (exit code 2).
//! - [`scenario`]: the scenario file (TOML) -> a [`scenario::Scenario`] with every section checked.
//! - [`locate`]: a TOML field path (`guest[1].task[0].wcet`) -> its line and column.
//! - [`source`]: an input file's text kept to locate errors found after parsing.
//! - [`input`]: the one bounded reader of every input file (regular files, size limits).
//! - [`sweep`]: the sweep file (scenarios x rho x seeds), checked with its scenarios.
//! - [`exec`]: execution-time models (constant, normal, uniform, empirical samples).
//! - [`hostmodel`]: a host's measured costs and admission limits (`rtvirt.hostmodel/v1`).
//! - [`nova`]: OpenStack Nova flavor extra specs of a plan (`rtvirt.nova/v1`).
//! - [`observe`]: a guest's real-time demand as the host learned it (`rtvirt.observe/v1`).
//! - [`plan`]: the planner's output (`rtvirt.plan/v1`), read back by simulate/host/measure.
//! - [`rt_tests`]: the JSON file of `cyclictest --json`, written by `measure timer --json`.
//! - [`results`]: simulated and measured results (`rtvirt.results/v1`), one schema for both.
//! - [`schema`]: JSON Schemas of the documents, generated from their types (`docs/schema/`).
//! - [`stats`]: lossless mergeable latency histograms and summary statistics.
//! - [`tables`]: results and plans as tables of typed columns (Python frames, `rtvirt export`).
//! - [`tail`]: extreme-value tail reports and gate verdicts (`rtvirt.tail/v1`, `rtvirt.gate/v1`).
//! - [`verify`]: a prediction checked against a measurement, task by task (`rtvirt.verify/v1`).
//! - [`xml`]: the one XML/HTML escaper (content, attributes, comments).
//!
//! Invariants every other crate relies on:
//! - A scenario is checked once, where it is parsed: the file as written (`scenario/raw.rs`,
//!   unknown fields rejected) is crate-private, and `scenario/validate.rs` + `validate_sim.rs`
//!   check every section (core, `[sim]`, `[[sim.thread]]`, `[guest.vcpu]`, `[net]`) into a
//!   [`scenario::Scenario`]: nothing half-checked leaves this crate. The text is kept
//!   ([`source::Source`]), and [`scenario::Scenario::locate`] is the one place where an error found
//!   after parsing gets its file, line and column.
//! - Every input file is read through [`input`]; every bad input is an [`InputError`] naming file,
//!   line/column and field (exit code 2).
//! - Limits: [`scenario::MAX_TIMING`] (1 hour: periods, offsets, server periods, reservations;
//!   keeps release arithmetic far from u64 overflow), [`scenario::MAX_HORIZON`] (30 days: every
//!   simulated or measured duration, one [`scenario::check_horizon`]) and [`scenario::MAX_CORES`].
//! - Time is [`Nanos`]: integer nanoseconds, human units in files ("250us"), plain integers in
//!   JSON fields ending in `_ns`.
//! - Results are typed here and turned into JSON only here (serde): producers fill the types,
//!   readers read the types.

pub mod adapt_log;
pub mod agent_wire;
pub mod carts;
pub mod document;
pub mod duration;
pub mod error;
pub mod exec;
pub mod hostmodel;
pub mod input;
pub mod locate;
pub mod nova;
pub mod observe;
pub mod plan;
pub mod results;
pub mod rt_tests;
pub mod scenario;
pub mod schema;
mod serde_field;
pub mod source;
pub mod stats;
pub mod study;
pub mod sweep;
pub mod tables;
pub mod tail;
pub mod toml_shape;
pub mod verify;
pub mod vocab;
pub mod xml;

pub use duration::Nanos;
pub use error::InputError;

/// The embedded default scenario (`make demo`, `rtvirt demo`): three guests with Baker-style
/// light task sets and normal execution times (Burns 2014).
pub const DEFAULT_SCENARIO: &str = include_str!("../../../scenarios/default.toml");
pub const DEFAULT_SCENARIO_NAME: &str = "scenarios/default.toml (embedded)";

/// rtvirt's version, recorded in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
