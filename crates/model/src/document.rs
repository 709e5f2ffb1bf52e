//! Telling rtvirt's JSON documents apart: the one place that reads a value's `schema` field (and
//! the `"type": "interval"` tag of `measure timer --interval-report` lines), so that readers such
//! as the report dispatch on a type instead of indexing JSON by key.

use crate::plan::PLAN_SCHEMA;
use crate::results::RESULTS_SCHEMA;
use serde_json::Value;

/// What a JSON value's `schema` field says it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schema<'a> {
    /// `rtvirt.results/v1`
    Results,
    /// `rtvirt.plan/v1`
    Plan,
    /// A `schema` field holding anything else (a string or not), as written.
    Other(&'a Value),
    /// No `schema` field (or not an object).
    Missing,
}

/// The schema `value` declares.
pub fn schema_of(value: &Value) -> Schema<'_> {
    match value.get("schema") {
        None => Schema::Missing,
        Some(Value::String(s)) if s == RESULTS_SCHEMA => Schema::Results,
        Some(Value::String(s)) if s == PLAN_SCHEMA => Schema::Plan,
        Some(other) => Schema::Other(other),
    }
}

/// Whether `value` is an interval report line (`"type": "interval"`) printed before a results
/// document.
pub fn is_interval_report(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("interval")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_are_told_apart_by_their_schema_and_type() {
        assert_eq!(schema_of(&json!({"schema": RESULTS_SCHEMA})), Schema::Results);
        assert_eq!(schema_of(&json!({"schema": PLAN_SCHEMA})), Schema::Plan);
        assert_eq!(schema_of(&json!({"schema": 3})), Schema::Other(&json!(3)));
        assert_eq!(schema_of(&json!({"kind": "timer"})), Schema::Missing);
        assert_eq!(schema_of(&json!([1])), Schema::Missing);
        assert!(is_interval_report(&json!({"type": "interval", "cpu": 0})));
        assert!(!is_interval_report(&json!({"type": 1})));
    }
}
