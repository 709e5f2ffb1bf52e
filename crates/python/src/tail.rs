//! `rtvirt.tail(samples_ns, duration, horizons, confidence)`: the tail report of `rtvirt tail`
//! (rtvirt-tail) for samples in time order, as its JSON text (`rtvirt.tail/v1`).

use crate::errors::to_py;
use crate::values::duration;
use pyo3::prelude::*;
use rtvirt_model::error::InputError;
use rtvirt_tail::{analyse, Data, Options, Series};

/// The tail report of `samples_ns` (time order) covering `duration`, with return levels for
/// `horizons` (duration strings), as JSON.
#[pyfunction]
#[pyo3(signature = (samples_ns, duration, horizons, confidence=0.95))]
pub fn tail(
    py: Python<'_>,
    samples_ns: Vec<u64>,
    duration: &Bound<'_, PyAny>,
    horizons: Vec<Bound<'_, PyAny>>,
    confidence: f64,
) -> PyResult<String> {
    let covered = self::duration(Some(duration), "duration").map_err(to_py)?.unwrap_or_default();
    let horizons = horizons
        .iter()
        .map(|h| self::duration(Some(h), "horizons").map(Option::unwrap_or_default))
        .collect::<Result<Vec<_>, _>>()
        .map_err(to_py)?;
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(to_py(InputError::field("confidence", format!("{confidence}: expected a level in (0, 1)"))));
    }
    let series = Series { source: "python".into(), duration_ns: covered.0, data: Data::Ordered(samples_ns) };
    let report = py.detach(|| analyse(&series, &Options { horizons, confidence }));
    Ok(serde_json::to_string(&report).expect("a report is JSON"))
}
