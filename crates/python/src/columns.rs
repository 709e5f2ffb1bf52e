//! A [`Table`] handed to Python as `[(name, kind, nullable, values)]`, which the package's
//! `_frames.py` turns into a DataFrame with the column's dtype.

use pyo3::prelude::*;
use pyo3::types::PyList;
use rtvirt_model::tables::column::{Kind, Table, Values};

/// One column for Python.
pub type PyColumn<'py> = (&'static str, &'static str, bool, Bound<'py, PyList>);

pub fn to_python<'py>(py: Python<'py>, table: &Table) -> PyResult<Vec<PyColumn<'py>>> {
    table
        .columns
        .iter()
        .map(|c| {
            let kind = match c.spec.kind {
                Kind::Int => "int",
                Kind::Float => "float",
                Kind::Category => "category",
                Kind::Text => "text",
                Kind::Bool => "bool",
            };
            let values = match &c.values {
                Values::Int(v) => PyList::new(py, v)?,
                Values::Float(v) => PyList::new(py, v)?,
                Values::Text(v) => PyList::new(py, v)?,
                Values::Bool(v) => PyList::new(py, v)?,
            };
            Ok((c.spec.name, kind, c.spec.nullable, values))
        })
        .collect()
}
