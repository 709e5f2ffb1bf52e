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
            as_maps.iter().map(|m| Cell::plain(m.get(&field).map_or("-".into(), |v| show_field(&field, v)))).collect();
        mark_if_differs(&mut cells);
        let mut row = vec![Cell::plain(field_title(&field))];
        row.extend(cells);
        t.row(row);
    }
    let mut sec = Section::new("Environment");
    sec.table(t);
    Some(sec)
}

/// The row title of a field: words, units dropped where the value carries them.
fn field_title(field: &str) -> String {
    let field = field.strip_suffix("_ns").unwrap_or(field);
    let field = if field == "cpu_dma_latency_us" { "cpu_dma_latency" } else { field };
    field.replace('_', " ")
}

fn to_map(environment: &Environment) -> serde_json::Map<String, Value> {
    match serde_json::to_value(environment) {
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

/// `/dev/cpu_dma_latency` reads this (2000 s) when no process holds a request.
const NO_DMA_LATENCY_REQUEST: i64 = 2_000_000_000;

/// A field's value for people: sentinels said in words, durations with units, loads in a line.
fn show_field(field: &str, value: &Value) -> String {
    match (field, value) {
        ("cpu_dma_latency_us", Value::Number(n)) => match n.as_i64() {
            Some(us) if us >= NO_DMA_LATENCY_REQUEST => "not held (kernel default: C-states allowed)".into(),
            Some(us) => format!("held at {us} us during the run"),
            None => show(value),
        },
        ("load", Value::Array(items)) => items
            .iter()
            .map(|item| {
                serde_json::from_value::<rtvirt_model::results::LoadReport>(item.clone())
                    .map_or_else(|_| show(item), |l| crate::units::fmt_load(&l))
            })
            .collect::<Vec<_>>()
            .join("; "),
        (f, Value::Number(n)) if f.ends_with("_ns") => n.as_f64().map_or_else(|| show(value), crate::units::fmt_ns),
        _ => show(value),
    }
}

/// A JSON value as one line of text (strings unquoted, load entries joined).
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join("; "),
        Value::Object(o) => o.iter().map(|(k, value)| format!("{k}={}", show(value))).collect::<Vec<_>>().join(", "),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), |f| format!("{f:.1}")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_and_loads_read_in_words() {
        let not_held = show_field("cpu_dma_latency_us", &serde_json::json!(2_000_000_000));
        assert!(not_held.starts_with("not held"), "{not_held}");
        assert_eq!(show_field("cpu_dma_latency_us", &serde_json::json!(0)), "held at 0 us during the run");
        assert_eq!(field_title("cpu_dma_latency_us"), "cpu dma latency");
        assert_eq!(show_field("guest_boot_ns", &serde_json::json!(2_500_000_000u64)), "2.50s");
        let load = serde_json::json!([{"kind": "cpu", "workers": 1, "cpus_ran_on": "1", "duration_ns": 1_000_000_000u64,
            "ops": 5, "ops_per_s": 5.0, "unit": "iterations"}]);
        assert_eq!(show_field("load", &load), "cpu: 1 worker on CPUs 1, 5.0 iterations/s for 1.00s");
    }
}
