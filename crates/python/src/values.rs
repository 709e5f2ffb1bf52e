//! Python values -> the text the model reads: a dict becomes TOML (so a dict is checked by the
//! same parser and rules as a file, unknown keys and wrong types included), a duration argument
//! a [`Nanos`]. Written by hand because it is a walk of a few Python types; every value that has
//! no TOML form is an error naming its field.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use rtvirt_model::{InputError, Nanos};

/// A dict as TOML text.
pub fn dict_to_toml(dict: &Bound<'_, PyDict>) -> Result<String, InputError> {
    let table = table(dict, "")?;
    toml::to_string(&table).map_err(|e| InputError::new(format!("cannot write the dict as TOML: {e}")))
}

fn table(dict: &Bound<'_, PyDict>, at: &str) -> Result<toml::Table, InputError> {
    let mut out = toml::Table::new();
    for (key, value) in dict.iter() {
        let Ok(key) = key.extract::<String>() else {
            let shown = key.repr().map(|r| r.to_string()).unwrap_or_default();
            return Err(field_error(at, format!("key {shown}: expected string keys")));
        };
        let here = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
        if value.is_none() {
            continue; // None: the key is left out (its default applies)
        }
        out.insert(key, toml_value(&value, &here)?);
    }
    Ok(out)
}

fn field_error(at: &str, message: String) -> InputError {
    if at.is_empty() {
        InputError::new(message)
    } else {
        InputError::field(at, message)
    }
}

fn toml_value(value: &Bound<'_, PyAny>, at: &str) -> Result<toml::Value, InputError> {
    if value.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(value.extract().unwrap_or_default()));
    }
    if value.is_instance_of::<PyInt>() {
        return value
            .extract::<i64>()
            .map(toml::Value::Integer)
            .map_err(|_| InputError::field(at, "integer out of range: expected at most 2^63 - 1"));
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(value.extract().unwrap_or_default()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(toml::Value::String(text.to_string()));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        return table(dict, at).map(toml::Value::Table);
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in value.try_iter().map_err(|e| InputError::field(at, e.to_string()))?.enumerate() {
            let item = item.map_err(|e| InputError::field(at, e.to_string()))?;
            items.push(toml_value(&item, &format!("{at}[{i}]"))?);
        }
        return Ok(toml::Value::Array(items));
    }
    Err(InputError::field(
        at,
        format!("{}: expected a string, number, boolean, list or dict (the values of a TOML file)", describe(value)),
    ))
}

/// A value as errors show it: its type and repr.
pub fn describe(value: &Bound<'_, PyAny>) -> String {
    let type_name = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    let repr = value.repr().map(|r| r.to_string()).unwrap_or_default();
    format!("{type_name} {repr}")
}

/// A duration argument: a string with a unit ("10s", "250us"), as in files.
pub fn duration(value: Option<&Bound<'_, PyAny>>, field: &str) -> Result<Option<Nanos>, InputError> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    match value.cast::<PyString>() {
        Ok(text) => Nanos::parse(&text.to_string()).map(Some).map_err(|e| InputError::field(field, e)),
        Err(_) => Err(InputError::field(
            field,
            format!("{}: expected a duration string with its unit, such as \"10s\" or \"250us\"", describe(value)),
        )),
    }
}
