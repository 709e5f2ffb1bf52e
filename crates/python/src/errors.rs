//! `rtvirt.InputError`: a bad input, with the same located message as the command line's
//! (file, line, column, field), and the parts as attributes.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rtvirt_model::InputError as ModelError;

pyo3::create_exception!(
    rtvirt,
    InputError,
    PyValueError,
    "A bad input: str() is the message `rtvirt` prints (file, line, column, field, what was expected); the \
     attributes `file`, `line`, `column`, `field` and `message` hold its parts (None when unknown)."
);

/// The Python exception of a model error.
pub fn to_py(error: ModelError) -> PyErr {
    let err = InputError::new_err(error.to_string());
    Python::attach(|py| {
        let value = err.value(py);
        let (line, column) = error.at.line_col.unzip();
        let file = error.at.file.as_ref().map(|f| f.display().to_string());
        // setting attributes on a fresh exception instance cannot fail but for memory
        let _ = value.setattr("file", file);
        let _ = value.setattr("line", line);
        let _ = value.setattr("column", column);
        let _ = value.setattr("field", error.at.field.clone());
        let _ = value.setattr("message", error.message.clone());
    });
    err
}

/// An error of text built from a Python value (a dict): its lines are those of text the user never
/// saw, so only the field and the message are kept.
pub fn without_lines(mut error: ModelError) -> ModelError {
    if error.at.file.is_none() {
        error.at.line_col = None;
    }
    error
}
