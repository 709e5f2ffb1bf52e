//! Results and plans as tables of typed columns: the one place that flattens documents into rows,
//! shared by the Python package (pandas DataFrames) and `rtvirt export` (CSV, Parquet), so both
//! give the same tables.
//!
//! - [`column`]: [`column::Table`], columns of one kind each (integers, floats, categories, text,
//!   booleans), every value possibly missing.
//! - [`results`]: per results document the tables `tasks`, `guests`, `cores`, `flows`, `latency`,
//!   `histogram`, `intervals` ([`results::TableName`]), each row keyed by the document's scenario,
//!   rho and seed, with its `error` (a sweep cell that could not run is one row with its error).
//! - [`plan`]: a plan's `guests` and `tasks`.
//! - [`read`]: the results documents of a file (one document, a JSON array of them as sweeps and
//!   `vm matrix` print, or interval report lines followed by their document).
//!
//! Times are integer nanoseconds in columns ending in `_ns` (means and standard deviations are
//! floats); names (guests, tasks, flows, policies) are categories.

pub mod column;
pub mod plan;
pub mod read;
pub mod results;
