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

/// Load one file, deciding by its `schema` field whether it is a plan or results.
pub fn load_input(path: &Path) -> Result<Input, InputError> {
    let schema = read_schema(path)?;
    let doc = if schema == PLAN_SCHEMA {
        Document::Plan(Box::new(Plan::from_file(path)?))
    } else if schema == RESULTS_SCHEMA {
        Document::Results(Box::new(Results::from_file(path)?))
    } else {
        return Err(InputError::field("schema", format!("\"{schema}\": expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\"")).in_file(path));
    };
    let name = default_name(path, &doc);
    Ok(Input { name, path: path.to_path_buf(), doc })
}

/// The `schema` string of a JSON document, with located errors for unreadable or non-JSON files.
fn read_schema(path: &Path) -> Result<String, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(format!("cannot read: {e}")).in_file(path))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        InputError::new(format!("not a JSON document: {e}")).in_file(path).at_line(e.line(), e.column())
    })?;
    match value.get("schema") {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(InputError::field("schema", format!("{other}: expected a string")).in_file(path)),
        None => Err(InputError::field("schema", format!("missing: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\" (files written by `rtvirt ... --format json`)")).in_file(path)),
    }
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
