//! Real command outputs checked against the committed JSON Schemas (`docs/schema/`), with the
//! `jsonschema` crate.

/// Assert that `doc` (or every element of it, for an array of documents) is valid against
/// `docs/schema/<name>.schema.json`.
pub fn assert_valid(name: &str, doc: &serde_json::Value) {
    if let serde_json::Value::Array(items) = doc {
        items.iter().for_each(|item| assert_valid(name, item));
        return;
    }
    let schema = rtvirt_model::schema::committed_value(name);
    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("docs/schema/{name}: {e}"));
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "output is not valid against docs/schema/{name}.schema.json:\n{}", errors.join("\n"));
}

/// Read a JSON-lines file (e.g. a `host adapt` decision log), each line valid against
/// `docs/schema/<name>.schema.json`.
#[allow(dead_code)] // not every test crate reads JSON lines
pub fn json_lines_valid(name: &str, path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    lines.iter().for_each(|line| assert_valid(name, line));
    lines
}
