//! rtvirt-python: the `rtvirt._rtvirt` extension module of the Python package (crates/python/python/rtvirt).
//! It exposes the Rust engine itself (no second implementation): scenarios checked by
//! rtvirt-model, plans by rtvirt-analysis, simulations and sweeps by rtvirt-sim, tables by
//! `rtvirt_model::tables` (the same as `rtvirt export`). The GIL is released while the engine runs.
//!
//! - [`documents`]: the `Scenario`, `Plan` and `Results` classes.
//! - [`run`]: `plan`, `simulate`, `load`.
//! - [`sweep`]: the `Sweep` class (local rayon runs) and `run_cells` (a batch of cells, for Ray tasks) and `results_from_wire`.
//! - [`tail`]: `tail` (rtvirt-tail's report of samples in time order).
//! - [`values`]: dicts as TOML text, duration arguments.
//! - [`columns`]: tables as Python lists, one per column.
//! - [`errors`]: the exception `rtvirt.InputError`.

mod columns;
mod documents;
mod errors;
mod run;
mod sweep;
mod tail;
mod values;

use pyo3::prelude::*;

#[pymodule]
fn _rtvirt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<errors::InputError>())?;
    m.add("VERSION", rtvirt_model::VERSION)?;
    m.add_class::<documents::Scenario>()?;
    m.add_class::<documents::Plan>()?;
    m.add_class::<documents::Results>()?;
    m.add_class::<sweep::Sweep>()?;
    m.add_function(wrap_pyfunction!(run::plan, m)?)?;
    m.add_function(wrap_pyfunction!(run::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(run::load, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::run_cells, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::results_from_wire, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::failed_cell, m)?)?;
    m.add_function(wrap_pyfunction!(documents::results_columns, m)?)?;
    m.add_function(wrap_pyfunction!(tail::tail, m)?)?;
    Ok(())
}
