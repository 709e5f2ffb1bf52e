//! rtvirt-model: the one data model every rtvirt job shares.
//!
//! - [`carts`]: CARTS XML input -> scenario (`rtvirt plan --import-carts`).
//! - [`duration`]: `Nanos`, integer nanoseconds with human units in files.
//! - [`error`]: `InputError`, user-input errors naming file, line/column and field (exit code 2).
//! - [`scenario`]: the scenario file (TOML) -> a [`scenario::Scenario`] with every section checked.
//! - [`source`]: an input file's text kept to locate errors found after parsing.
//! - [`input`]: the one bounded reader of every input file (regular files, size limits).
//! - [`sweep`]: the sweep file (scenarios x rho x seeds), checked with its scenarios.
//! - [`exec`]: execution-time models (constant, normal, uniform, empirical samples).
//! - [`plan`]: the planner's output (`rtvirt.plan/v1`), read back by simulate/host/measure.
//! - [`results`]: simulated and measured results (`rtvirt.results/v1`), one schema for both.
//! - [`schema`]: JSON Schemas of the documents, generated from their types (`docs/schema/`).
//! - [`stats`]: lossless mergeable latency histograms and summary statistics.
//! - [`xml`]: the one XML/HTML escaper (content, attributes, comments).

pub mod carts;
pub mod duration;
pub mod error;
pub mod exec;
pub mod input;
pub mod plan;
pub mod results;
pub mod scenario;
pub mod schema;
pub mod source;
pub mod stats;
pub mod sweep;
pub mod xml;

pub use duration::Nanos;
pub use error::InputError;

/// The embedded default scenario (`make demo`, `rtvirt demo`): three guests with Baker-style
/// light task sets and normal execution times (SEEDS.md section 5).
pub const DEFAULT_SCENARIO: &str = include_str!("../../../scenarios/default.toml");
pub const DEFAULT_SCENARIO_NAME: &str = "scenarios/default.toml (embedded)";

/// rtvirt's version, recorded in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
