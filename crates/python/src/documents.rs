//! The Python classes of the model's documents: `Scenario` (checked, with its TOML text), `Plan`
//! (`rtvirt.plan/v1`) and `Results` (`rtvirt.results/v1`). They hold the Rust values; JSON and
//! tables come from the model's code, so Python sees what the command line writes.

use crate::columns::{to_python, PyColumn};
use crate::errors::{to_py, without_lines};
use crate::values::dict_to_toml;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rtvirt_model::plan::Plan as ModelPlan;
use rtvirt_model::results::Results as ModelResults;
use rtvirt_model::scenario::Scenario as ModelScenario;
use rtvirt_model::tables::results::{table, TableName};
use rtvirt_model::InputError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A checked scenario (the TOML file of `rtvirt plan` and `rtvirt simulate`).
///
/// Make one with `Scenario.load(path)`, `Scenario.from_toml(text)` or `Scenario.from_dict(d)` (a
/// dict with the file's keys: `{"name": "s", "host": {"cores": 1}, "guest": [...]}`). Every rule
/// of the file applies; a bad value raises `rtvirt.InputError` naming its field.
#[pyclass(frozen, module = "rtvirt", name = "Scenario")]
pub struct Scenario {
    pub scenario: Arc<ModelScenario>,
}

impl Scenario {
    /// The TOML text the scenario was read from.
    pub fn text(&self) -> &str {
        self.scenario.source.text().unwrap_or_default()
    }

    pub fn path(&self) -> Option<&Path> {
        self.scenario.source.path.as_deref()
    }

    /// The name a sweep labels its cells with: the file, else the scenario's name.
    pub fn label(&self) -> PathBuf {
        self.path().map_or_else(|| PathBuf::from(&self.scenario.name), Path::to_path_buf)
    }
}

/// A scenario from TOML text (`path`: the file it names in errors and resolves samples from).
pub fn scenario_from_toml(text: &str, path: Option<&Path>) -> Result<Scenario, InputError> {
    Ok(Scenario { scenario: Arc::new(ModelScenario::from_toml(text, path)?) })
}

/// A scenario from a dict, checked as the same TOML file would be.
pub fn scenario_from_dict(dict: &Bound<'_, PyDict>) -> Result<Scenario, InputError> {
    let text = dict_to_toml(dict)?;
    scenario_from_toml(&text, None).map_err(without_lines)
}

#[pymethods]
impl Scenario {
    /// Read and check a scenario file (TOML).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Scenario> {
        let scenario = py.detach(|| ModelScenario::from_file(&path)).map_err(to_py)?;
        Ok(Scenario { scenario: Arc::new(scenario) })
    }

    /// Check scenario TOML text; `path`, if given, is the file errors name and sample files are
    /// relative to.
    #[staticmethod]
    #[pyo3(signature = (text, path=None))]
    fn from_toml(text: &str, path: Option<PathBuf>) -> PyResult<Scenario> {
        scenario_from_toml(text, path.as_deref()).map_err(to_py)
    }

    /// Check a scenario given as a dict with the TOML file's keys (durations as strings with
    /// units, "250us"; lists of tables as lists of dicts). Unknown keys and wrong types raise
    /// `rtvirt.InputError` naming the field.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Scenario> {
        scenario_from_dict(d).map_err(to_py)
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> &str {
        &self.scenario.name
    }

    /// The file it was read from (None for text and dicts).
    #[getter]
    fn get_path(&self) -> Option<String> {
        self.path().map(|p| p.display().to_string())
    }

    /// The guests' names, in file order.
    #[getter]
    fn guests(&self) -> Vec<String> {
        self.scenario.guests.iter().map(|g| g.name.clone()).collect()
    }

    /// The TOML text (for a dict: the TOML it was written as).
    fn to_toml(&self) -> &str {
        self.text()
    }

    fn __repr__(&self) -> String {
        format!("Scenario(name={:?}, guests={})", self.scenario.name, self.scenario.guests.len())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let this = slf.get();
        let from_toml = slf.get_type().getattr("from_toml")?;
        let args = (this.text().to_string(), this.get_path()).into_pyobject(slf.py())?;
        Ok((from_toml, args))
    }
}

/// A plan (`rtvirt.plan/v1`): per guest its server (period, budget, deadline) and core.
#[pyclass(frozen, module = "rtvirt._rtvirt", name = "Plan")]
pub struct Plan {
    pub plan: ModelPlan,
}

#[pymethods]
impl Plan {
    /// Read a plan from its JSON text.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Plan> {
        ModelPlan::from_json(text).map(|plan| Plan { plan }).map_err(to_py)
    }

    /// The JSON `rtvirt plan --format json` prints (without its final newline).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.plan).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    #[getter]
    fn feasible(&self) -> bool {
        self.plan.feasible
    }

    #[getter]
    fn max_rho(&self) -> Option<f64> {
        self.plan.max_rho
    }

    #[getter]
    fn cores_used(&self) -> u32 {
        self.plan.cores_used
    }

    /// Guests that did not fit on any core.
    #[getter]
    fn unplaced(&self) -> Vec<String> {
        self.plan.unplaced.clone()
    }

    /// Columns of the table "guests" or "tasks".
    fn columns<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Vec<PyColumn<'py>>> {
        let table = match name {
            "guests" => rtvirt_model::tables::plan::guests(&self.plan),
            "tasks" => rtvirt_model::tables::plan::tasks(&self.plan),
            other => {
                let e = InputError::field("table", format!("\"{other}\": expected guests or tasks"));
                return Err(to_py(e));
            }
        };
        to_python(py, &table)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let from_json = slf.get_type().getattr("from_json")?;
        Ok((from_json, (slf.get().to_json()?,).into_pyobject(slf.py())?))
    }
}

/// A results document (`rtvirt.results/v1`) of a simulation or measurement.
#[pyclass(frozen, module = "rtvirt._rtvirt", name = "Results")]
pub struct Results {
    pub results: ModelResults,
}

#[pymethods]
impl Results {
    /// Read one results document from its JSON text.
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Results> {
        let mut documents = rtvirt_model::tables::read::results_of_text(text).map_err(to_py)?;
        match documents.len() {
            1 => Ok(Results { results: documents.remove(0) }),
            n => Err(to_py(InputError::new(format!("{n} results documents: expected one")))),
        }
    }

    /// The JSON `rtvirt simulate --format json` prints (without its final newline).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.results).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    #[getter]
    fn kind(&self) -> &str {
        &self.results.kind
    }
    #[getter]
    fn seed(&self) -> Option<u64> {
        self.results.seed
    }
    #[getter]
    fn duration_ns(&self) -> u64 {
        self.results.duration_ns
    }
    #[getter]
    fn rho(&self) -> Option<f64> {
        self.results.rho
    }
    #[getter]
    fn scenario(&self) -> Option<&str> {
        self.results.scenario.as_deref()
    }
    #[getter]
    fn label(&self) -> Option<&str> {
        self.results.label.as_deref()
    }
    /// Why a sweep cell has no results (None when it ran).
    #[getter]
    fn error(&self) -> Option<&str> {
        self.results.error.as_deref()
    }

    /// Columns of a results table ("tasks", "guests", "cores", "flows", "latency", "histogram",
    /// "intervals").
    fn columns<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Vec<PyColumn<'py>>> {
        let name = TableName::parse(name).map_err(to_py)?;
        to_python(py, &table(name, &[&self.results]))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let from_json = slf.get_type().getattr("from_json")?;
        Ok((from_json, (slf.get().to_json()?,).into_pyobject(slf.py())?))
    }
}

/// Columns of results table `name` over several documents (a sweep), rows in document order.
#[pyfunction]
pub fn results_columns<'py>(
    py: Python<'py>,
    name: &str,
    documents: Vec<PyRef<'py, Results>>,
) -> PyResult<Vec<PyColumn<'py>>> {
    let name = TableName::parse(name).map_err(to_py)?;
    let documents: Vec<&ModelResults> = documents.iter().map(|d| &d.results).collect();
    to_python(py, &table(name, &documents))
}
