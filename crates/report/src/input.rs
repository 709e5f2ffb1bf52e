//! Loading the documents a report is made of: `rtvirt.results/v1` and `rtvirt.plan/v1` JSON
//! files, told apart by their `schema` field, each with the name it is shown under; a file may
//! also hold a JSON array of results documents (the `--in vm` / `vm matrix` output).

use rtvirt_model::input::{read_text, InputKind};
use rtvirt_model::plan::{Plan, PLAN_SCHEMA};
use rtvirt_model::results::{Interval, Results, RESULTS_SCHEMA};
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

/// Load every file, in order (the first result of a comparison is its baseline). A file holding
/// a JSON array of results documents (`vm matrix --format json`, `measure timer --in vm
/// --format json`) gives one input per element, in order.
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, InputError> {
    if paths.is_empty() {
        return Err(InputError::new("no input files (expected rtvirt.results/v1 or rtvirt.plan/v1 JSON files)"));
    }
    let mut inputs = Vec::new();
    for p in paths {
        inputs.extend(load_file(p)?);
    }
    make_names_unique(&mut inputs);
    Ok(inputs)
}

/// Load one file: one document (see [`load_input`]), or an array of results documents; the
/// numbers of each results document are checked ([`crate::check`]).
pub fn load_file(path: &Path) -> Result<Vec<Input>, InputError> {
    let mut values = read_values(path)?;
    let (inputs, array) = match values.pop() {
        Some(serde_json::Value::Array(items)) if values.is_empty() => (load_array(path, items)?, true),
        last => {
            values.extend(last);
            (vec![input_of(path, values)?], false)
        }
    };
    for (i, input) in inputs.iter().enumerate() {
        let prefix = if array { format!("[{i}].") } else { String::new() };
        input.results().map_or(Ok(()), |r| crate::check::results(r, &prefix)).map_err(|e| e.in_file(path))?;
    }
    Ok(inputs)
}

/// Load one file, deciding by its `schema` field whether it is a plan or results. A results
/// file may also be the output of `measure timer --interval-report ... --format json`: the
/// interval reports as JSON lines, then the results document; the reports become the result's
/// `intervals` (see [`crate::extract::intervals`]).
pub fn load_input(path: &Path) -> Result<Input, InputError> {
    input_of(path, read_values(path)?)
}

/// The JSON values of a file, in order.
fn read_values(path: &Path) -> Result<Vec<serde_json::Value>, InputError> {
    let text = read_text(path, InputKind::Results)?;
    json_values(&text).map_err(|e| e.in_file(path))
}

/// The document of a file from its JSON values (see [`load_input`]).
fn input_of(path: &Path, values: Vec<serde_json::Value>) -> Result<Input, InputError> {
    let (main, intervals) = split_stream(values);
    let main = main.ok_or_else(|| {
        InputError::field(
            "schema",
            format!(
                "missing: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\" (files written by `rtvirt ... --format \
                 json`)"
            ),
        )
        .in_file(path)
    })?;
    let doc = match main.get("schema") {
        Some(serde_json::Value::String(s)) if s == PLAN_SCHEMA => Document::Plan(Box::new(Plan::from_file(path)?)),
        Some(serde_json::Value::String(s)) if s == RESULTS_SCHEMA => {
            Document::Results(Box::new(read_results(path, main, intervals)?))
        }
        Some(other) => {
            return Err(InputError::field(
                "schema",
                format!("{other}: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\""),
            )
            .in_file(path));
        }
        None => unreachable!("split_stream only returns documents with a schema"),
    };
    let name = default_name(path, &doc);
    Ok(Input { name, path: path.to_path_buf(), doc })
}

/// The elements of a results array, each named by its label, else by its guest kernel and host
/// load (`vm/<kernel>/<load>`), else by the file stem and its position.
fn load_array(path: &Path, items: Vec<serde_json::Value>) -> Result<Vec<Input>, InputError> {
    if items.is_empty() {
        return Err(InputError::new("an empty array: expected rtvirt.results/v1 documents").in_file(path));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let at = |e: InputError| e.in_file(path);
            match v.get("schema").and_then(|s| s.as_str()) {
                Some(RESULTS_SCHEMA) => {}
                Some(other) => {
                    return Err(at(InputError::field(
                        format!("[{i}].schema"),
                        format!("\"{other}\": an array may only hold \"{RESULTS_SCHEMA}\" documents"),
                    )))
                }
                None => {
                    return Err(at(InputError::field(
                        format!("[{i}].schema"),
                        format!("missing: expected \"{RESULTS_SCHEMA}\""),
                    )))
                }
            }
            let r: Results = serde_json::from_value(v).map_err(|e| {
                at(InputError::field(format!("[{i}]"), format!("not an {RESULTS_SCHEMA} document: {e}")))
            })?;
            let name = array_name(&r).unwrap_or_else(|| format!("{}[{i}]", file_stem(path)));
            Ok(Input { name, path: path.to_path_buf(), doc: Document::Results(Box::new(r)) })
        })
        .collect()
}

/// The label of a result, else `vm/<guest kernel>/<host load>` from its environment.
fn array_name(r: &Results) -> Option<String> {
    if let Some(l) = r.label.clone().filter(|l| !l.trim().is_empty()) {
        return Some(l);
    }
    let env = r.environment.as_ref()?;
    let kernel = env.guest_kernel.as_deref()?;
    let load = env.host_load.as_deref().unwrap_or("none");
    Some(format!("vm/{kernel}/{load}"))
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
fn read_results(
    path: &Path,
    main: serde_json::Value,
    intervals: Vec<serde_json::Value>,
) -> Result<Results, InputError> {
    if intervals.is_empty() {
        return Results::from_file(path);
    }
    let mut r: Results = serde_json::from_value(main)
        .map_err(|e| InputError::new(format!("not an rtvirt.results/v1 document: {e}")).in_file(path))?;
    let intervals = intervals
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value::<Interval>(v).map_err(|e| {
                InputError::new(format!("interval report {} before the document: {e}", i + 1)).in_file(path)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    r.intervals.get_or_insert(intervals);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn an_array_of_results_gives_one_input_each_named_by_label_or_guest_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let labelled = r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1,"label":"vm/rt/none"}"#;
        let guest = concat!(
            r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":2,"environment":{"guest_kernel":"nrt","#,
            r#""host_load":"cpu:1"}}"#,
        );
        let bare = r#"{"schema":"rtvirt.results/v1","kind":"tasks","duration_ns":3}"#;
        let p = write(dir.path(), "matrix.json", &format!("[{labelled},\n{guest}, {bare}]\n"));
        let single = write(dir.path(), "one.json", labelled);
        let inputs = load_inputs(&[p, single]).unwrap();
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["vm/rt/none (#1)", "vm/nrt/cpu:1", "matrix[2]", "vm/rt/none (one)"]);
        assert_eq!(inputs[1].results().unwrap().duration_ns, 2);
        assert_eq!(inputs[2].results().unwrap().kind, "tasks");
    }

    #[test]
    fn bad_arrays_are_located() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "a.json",
            r#"[{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1}, {"schema":"rtvirt.plan/v1"}]"#,
        );
        let e = load_inputs(&[p]).unwrap_err().to_string();
        assert!(e.contains("a.json") && e.contains("[1].schema") && e.contains("rtvirt.plan/v1"), "{e}");
        let p = write(dir.path(), "b.json", r#"[{"schema":"rtvirt.results/v1","kind":3,"duration_ns":1}]"#);
        let e = load_inputs(&[p]).unwrap_err().to_string();
        assert!(e.contains("b.json") && e.contains("[0]") && e.contains("not an rtvirt.results/v1 document"), "{e}");
        let p = write(dir.path(), "c.json", "[]");
        assert!(load_inputs(&[p]).unwrap_err().to_string().contains("empty array"));
        let p = write(dir.path(), "d.json", "[1]");
        assert!(load_inputs(&[p]).unwrap_err().to_string().contains("[0].schema"));
    }
}
