//! Loading the documents a report is made of: `rtvirt.results/v1` and `rtvirt.plan/v1` JSON
//! files, told apart by their `schema` field, each with the name it is shown under.

use rtvirt_model::plan::{Plan, PLAN_SCHEMA};
use rtvirt_model::results::{Results, RESULTS_SCHEMA};
use rtvirt_model::InputError;
use std::path::{Path, PathBuf};

/// One loaded document.
#[derive(Debug, Clone)]
pub enum Document {
    Results(Box<Results>),
    Plan(Box<Plan>),
}

/// A document with where it came from and the name it is shown under in the report.
#[derive(Debug, Clone)]
pub struct Input {
    /// Series name: the result's label, else the file stem; made unique across inputs.
    pub name: String,
    pub path: PathBuf,
    pub doc: Document,
}

impl Input {
    pub fn results(&self) -> Option<&Results> {
        match &self.doc {
            Document::Results(r) => Some(r),
            Document::Plan(_) => None,
        }
    }
    pub fn plan(&self) -> Option<&Plan> {
        match &self.doc {
            Document::Plan(p) => Some(p),
            Document::Results(_) => None,
        }
    }
}

/// Load every file, in order (the first result of a comparison is its baseline).
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, InputError> {
    if paths.is_empty() {
        return Err(InputError::new("no input files (expected rtvirt.results/v1 or rtvirt.plan/v1 JSON files)"));
    }
    let mut inputs = paths.iter().map(|p| load_input(p)).collect::<Result<Vec<_>, _>>()?;
    make_names_unique(&mut inputs);
    Ok(inputs)
}

/// Load one file, deciding by its `schema` field whether it is a plan or results. A results
/// file may also be the output of `measure timer --interval-report ... --format json`: the
/// interval reports as JSON lines, then the results document; the reports become the result's
/// `intervals` (see [`crate::extract::intervals`]).
pub fn load_input(path: &Path) -> Result<Input, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(format!("cannot read: {e}")).in_file(path))?;
    let values = json_values(&text).map_err(|e| e.in_file(path))?;
    let (main, intervals) = split_stream(values);
    let main = main.ok_or_else(|| InputError::field("schema", format!("missing: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\" (files written by `rtvirt ... --format json`)")).in_file(path))?;
    let doc = match main.get("schema") {
        Some(serde_json::Value::String(s)) if s == PLAN_SCHEMA => Document::Plan(Box::new(Plan::from_file(path)?)),
        Some(serde_json::Value::String(s)) if s == RESULTS_SCHEMA => Document::Results(Box::new(read_results(path, main, intervals)?)),
        Some(other) => {
            return Err(InputError::field("schema", format!("{other}: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\"")).in_file(path));
        }
        None => unreachable!("split_stream only returns documents with a schema"),
    };
    let name = default_name(path, &doc);
    Ok(Input { name, path: path.to_path_buf(), doc })
}

/// Every JSON value in the text (one document, or JSON lines followed by a document).
fn json_values(text: &str) -> Result<Vec<serde_json::Value>, InputError> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .map(|v| v.map_err(|e| InputError::new(format!("not a JSON document: {e}")).at_line(e.line(), e.column())))
        .collect()
}

/// The document carrying a `schema` (the last one), and the `"type": "interval"` reports.
fn split_stream(values: Vec<serde_json::Value>) -> (Option<serde_json::Value>, Vec<serde_json::Value>) {
    let mut main = None;
    let mut intervals = Vec::new();
    for v in values {
        if v.get("schema").is_some() {
            main = Some(v);
        } else if v.get("type").and_then(|t| t.as_str()) == Some("interval") {
            intervals.push(v);
        }
    }
    (main, intervals)
}

/// The results document; a single-document file is re-read for line-located errors.
fn read_results(path: &Path, main: serde_json::Value, intervals: Vec<serde_json::Value>) -> Result<Results, InputError> {
    if intervals.is_empty() {
        return Results::from_file(path);
    }
    let mut r: Results = serde_json::from_value(main).map_err(|e| InputError::new(format!("not an rtvirt.results/v1 document: {e}")).in_file(path))?;
    r.extra.entry("intervals").or_insert(serde_json::Value::Array(intervals));
    Ok(r)
}

fn default_name(path: &Path, doc: &Document) -> String {
    let label = match doc {
        Document::Results(r) => r.label.clone().filter(|l| !l.trim().is_empty()),
        Document::Plan(_) => None,
    };
    label.unwrap_or_else(|| file_stem(path))
}

fn file_stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// Inputs sharing a label get their file stem appended, or their position if stems clash too.
fn make_names_unique(inputs: &mut [Input]) {
    let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
    let stems: Vec<String> = inputs.iter().map(|i| file_stem(&i.path)).collect();
    let count = |v: &[String], x: &String| v.iter().filter(|o| *o == x).count();
    for (i, input) in inputs.iter_mut().enumerate() {
        if count(&names, &names[i]) > 1 {
            input.name = if count(&stems, &stems[i]) > 1 || names[i] == stems[i] {
                format!("{} (#{})", names[i], i + 1)
            } else {
                format!("{} ({})", names[i], stems[i])
            };
        }
    }
}
