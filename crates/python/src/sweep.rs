//! Sweeps: a grid of simulations (scenarios x rho x seeds) from a sweep file or a dict with its
//! keys, run here with rayon (`rtvirt_sim::sweep::run_sweep`, as `rtvirt simulate --sweep`) or
//! in batches elsewhere (`run_cells`, which a Ray task calls, and `results_from_wire`, which reads
//! its compact JSON back): both give the same documents.

use crate::documents::{Results, Scenario};
use crate::errors::{to_py, without_lines};
use crate::values::{describe, dict_to_toml};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use rtvirt_analysis::requests::plan_sweep_cell;
use rtvirt_model::scenario::Scenario as ModelScenario;
use rtvirt_model::sweep::Sweep as ModelSweep;
use rtvirt_model::{InputError, Nanos};
use rtvirt_sim::sweep::{lost_cell, run_one_cell, run_sweep, Cell, SweepSpec};
use std::path::{Path, PathBuf};

/// A checked sweep: its scenarios, rhos, seeds and duration.
#[pyclass(frozen, module = "rtvirt._rtvirt", name = "Sweep")]
pub struct Sweep {
    spec: SweepSpec,
}

/// A scenario given in a sweep dict: a file, or a Scenario made in code.
enum Entry {
    File(PathBuf),
    Made { text: String, path: Option<PathBuf>, label: PathBuf },
}

#[pymethods]
impl Sweep {
    /// Read a sweep file (TOML: scenarios, seeds, rho, duration).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Sweep> {
        let spec = py.detach(|| SweepSpec::from_file(&path)).map_err(to_py)?;
        Ok(Sweep { spec })
    }

    /// A sweep from a dict with the sweep file's keys; `scenarios` holds file paths (relative to
    /// `base`, default the current directory) or Scenario objects.
    #[staticmethod]
    #[pyo3(signature = (d, base=None))]
    fn from_dict(d: &Bound<'_, PyDict>, base: Option<PathBuf>) -> PyResult<Sweep> {
        let base = base.unwrap_or_default();
        let (entries, text) = split_scenarios(d, &base).map_err(to_py)?;
        let sweep = ModelSweep::from_toml_with(&text, None, |i, _| resolve(&entries[i]))
            .map_err(|e| to_py(without_lines(e)))?;
        Ok(Sweep { spec: SweepSpec::from_sweep(sweep).map_err(to_py)? })
    }

    /// The cells in output order: (scenario index, rho or None, seed).
    fn cells(&self) -> Vec<(usize, Option<f64>, u64)> {
        self.spec.cells().iter().map(|c| (c.scenario, c.rho, c.seed)).collect()
    }

    /// Each scenario as (TOML text, file or None, label): what a cell run elsewhere needs.
    fn scenarios(&self) -> Vec<(String, Option<String>, String)> {
        self.spec
            .scenarios
            .iter()
            .map(|(label, s)| {
                let path = s.source.path.as_ref().map(|p| p.display().to_string());
                (s.source.text().unwrap_or_default().to_string(), path, label.display().to_string())
            })
            .collect()
    }

    /// The simulated horizon of every cell in ns (None: each scenario's own).
    #[getter]
    fn duration_ns(&self) -> Option<u64> {
        self.spec.duration.map(|d| d.0)
    }

    /// Run every cell here on `threads` threads (None: all cores); `progress(done, total)` is
    /// called as cells finish. Results in cell order.
    #[pyo3(signature = (threads=None, progress=None))]
    fn run_local(&self, py: Python<'_>, threads: Option<usize>, progress: Option<Py<PyAny>>) -> PyResult<Vec<Results>> {
        if threads == Some(0) {
            return Err(to_py(InputError::field("threads", "0: expected at least one worker thread")));
        }
        let report = |done: usize, total: usize| {
            if let Some(callback) = &progress {
                // a failing progress callback must not stop the sweep
                Python::attach(|py| callback.call1(py, (done, total)).map(drop).unwrap_or_default());
            }
        };
        let results = py.detach(|| run_sweep(&self.spec, &plan_sweep_cell, threads, &report)).map_err(to_py)?;
        Ok(results.into_iter().map(|results| Results { results }).collect())
    }
}

/// The dict's scenario entries, and the dict as TOML with each entry as a placeholder string.
fn split_scenarios(d: &Bound<'_, PyDict>, base: &Path) -> Result<(Vec<Entry>, String), InputError> {
    let copy = d.copy().map_err(|e| InputError::new(e.to_string()))?;
    let mut entries = Vec::new();
    if let Ok(Some(list)) = d.get_item("scenarios") {
        let Ok(list) = list.cast::<PyList>() else {
            return Err(InputError::field("scenarios", format!("{}: expected a list", describe(&list))));
        };
        for (i, item) in list.iter().enumerate() {
            entries.push(entry(&item, base).map_err(|m| InputError::field(format!("scenarios[{i}]"), m))?);
        }
        let names: Vec<String> = (0..entries.len()).map(|i| format!("scenario {i}")).collect();
        copy.set_item("scenarios", names).map_err(|e| InputError::new(e.to_string()))?;
    }
    Ok((entries, dict_to_toml(&copy)?))
}

fn entry(item: &Bound<'_, PyAny>, base: &Path) -> Result<Entry, String> {
    if let Ok(s) = item.cast::<Scenario>() {
        let s = s.get();
        let path = s.path().map(Path::to_path_buf);
        return Ok(Entry::Made { text: s.text().to_string(), path, label: s.label() });
    }
    match item.extract::<PathBuf>() {
        Ok(p) => Ok(Entry::File(base.join(p))),
        Err(_) => Err(format!("{}: expected a scenario file path or an rtvirt.Scenario", describe(item))),
    }
}

fn resolve(entry: &Entry) -> Result<(PathBuf, ModelScenario), InputError> {
    match entry {
        Entry::File(path) => ModelScenario::from_file(path).map(|s| (path.clone(), s)),
        Entry::Made { text, path, label } => {
            ModelScenario::from_toml(text, path.as_deref()).map(|s| (label.clone(), s))
        }
    }
}

/// Run a batch of a sweep's cells (what one Ray task runs): `scenarios` as [`Sweep::scenarios`]
/// gives them (TOML text, file or None, label), each parsed once; every cell `(scenario, rho,
/// seed)` planned at its rho (None: as it is) and simulated for `duration_ns` (None: the
/// scenario's own). The documents - the same as the cells' in a local sweep - come back as one
/// compact JSON array: the wire form [`results_from_wire`] reads, about half the pretty text's
/// bytes, read without the generic `Value` pass of `Results.from_json`.
#[pyfunction]
#[pyo3(signature = (scenarios, cells, duration_ns))]
pub fn run_cells<'py>(
    py: Python<'py>,
    scenarios: Vec<(String, Option<PathBuf>, PathBuf)>,
    cells: Vec<(usize, Option<f64>, u64)>,
    duration_ns: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let wire = py.detach(|| -> Result<Vec<u8>, InputError> {
        let mut parsed: Vec<Option<ModelScenario>> = scenarios.iter().map(|_| None).collect();
        let mut documents = Vec::with_capacity(cells.len());
        for &(index, rho, seed) in &cells {
            let (text, path, label) = scenarios.get(index).ok_or_else(|| {
                InputError::field("cells", format!("scenario {index}: expected one of {}", scenarios.len()))
            })?;
            let scenario = match &mut parsed[index] {
                Some(s) => s,
                slot => slot.insert(ModelScenario::from_toml(text, path.as_deref())?),
            };
            let cell = Cell { scenario: 0, rho, seed };
            documents.push(run_one_cell(label, scenario, &cell, duration_ns.map(Nanos), &plan_sweep_cell));
        }
        serde_json::to_vec(&documents).map_err(|e| InputError::new(format!("results not serialisable: {e}")))
    });
    Ok(PyBytes::new(py, &wire.map_err(to_py)?))
}

/// The documents of a batch in the wire form of [`run_cells`].
#[pyfunction]
pub fn results_from_wire(py: Python<'_>, wire: &[u8]) -> PyResult<Vec<Results>> {
    let documents: Vec<rtvirt_model::results::Results> = py
        .detach(|| serde_json::from_slice(wire))
        .map_err(|e| to_py(InputError::new(format!("not a batch of results in the wire form: {e}"))))?;
    Ok(documents.into_iter().map(|results| Results { results }).collect())
}

/// The document of a cell whose Ray task failed (its worker died every time it was retried),
/// labelled `label`, with `reason` as its error.
#[pyfunction]
pub fn failed_cell(label: PathBuf, rho: Option<f64>, seed: u64, reason: &str) -> Results {
    Results { results: lost_cell(&label, &Cell { scenario: 0, rho, seed }, reason) }
}
