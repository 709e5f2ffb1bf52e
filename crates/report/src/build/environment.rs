//! The environment each result was measured in, side by side, rows that differ highlighted.

use super::compare::mark_if_differs;
use crate::doc::{Cell, Section, Table};
use crate::input::Input;
use rtvirt_model::results::Environment;
use serde_json::Value;

pub fn section(inputs: &[Input]) -> Option<Section> {
    let envs: Vec<(&str, &Environment)> = inputs
        .iter()
        .filter_map(|i| i.results().and_then(|r| r.environment.as_ref()).map(|e| (i.name.as_str(), e)))
        .collect();
    if envs.is_empty() {
        return None;
    }
    let mut header = vec!["field".to_string()];
    header.extend(envs.iter().map(|(n, _)| n.to_string()));
    let mut t = Table {
        caption: "Environment (rows that differ between results are highlighted)".into(),
        header,
        rows: Vec::new(),
    };
    let as_maps: Vec<serde_json::Map<String, Value>> = envs.iter().map(|(_, e)| to_map(e)).collect();
    for field in field_names(&as_maps) {
        let mut cells: Vec<Cell> =
            as_maps.iter().map(|m| Cell::plain(m.get(&field).map_or("-".into(), show))).collect();
        mark_if_differs(&mut cells);
        let mut row = vec![Cell::plain(field.replace('_', " "))];
        row.extend(cells);
        t.row(row);
    }
    let mut sec = Section::new("Environment");
    sec.table(t);
    Some(sec)
}

fn to_map(e: &Environment) -> serde_json::Map<String, Value> {
    match serde_json::to_value(e) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// Field names in first-seen order over every environment.
fn field_names(maps: &[serde_json::Map<String, Value>]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for k in maps.iter().flat_map(|m| m.keys()) {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    names
}

/// A JSON value as one line of text (strings unquoted, load entries joined).
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join("; "),
        Value::Object(o) => o.iter().map(|(k, v)| format!("{k}={}", show(v))).collect::<Vec<_>>().join(", "),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), |f| format!("{f:.1}")),
        other => other.to_string(),
    }
}
