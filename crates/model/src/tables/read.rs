//! The results documents of a file, for tables: one `rtvirt.results/v1` document, a JSON array
//! of them (`simulate --sweep`, `vm matrix`), or JSON lines (`measure timer --interval-report`
//! lines, then the document; the lines become its `intervals` when it has none).

use crate::document::{is_interval_report, schema_of, Schema};
use crate::input::{read_text, InputKind};
use crate::results::{Interval, Results};
use crate::InputError;
use serde_json::Value;
use std::path::Path;

/// Every results document of the file at `path`, in file order.
pub fn results_documents(path: &Path) -> Result<Vec<Results>, InputError> {
    let text = read_text(path, InputKind::Results)?;
    results_of_text(&text).map_err(|e| e.in_file(path))
}

/// Every results document of JSON `text`.
pub fn results_of_text(text: &str) -> Result<Vec<Results>, InputError> {
    let mut documents = Vec::new();
    let mut lines: Vec<Interval> = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for value in stream {
        let value = value.map_err(|e| {
            InputError::new(format!("not JSON: {e}: expected rtvirt.results/v1 documents"))
                .at_line(e.line(), e.column())
        })?;
        match value {
            Value::Array(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    documents.push(document(item).map_err(|e| e.under(&format!("[{i}]")))?);
                }
            }
            value if is_interval_report(&value) => lines.push(
                serde_json::from_value(value)
                    .map_err(|e| InputError::new(format!("not an interval report line: {e}")))?,
            ),
            value => {
                let mut r = document(value)?;
                if r.intervals.is_none() && !lines.is_empty() {
                    r.intervals = Some(std::mem::take(&mut lines));
                }
                documents.push(r);
            }
        }
    }
    Ok(documents)
}

fn document(value: Value) -> Result<Results, InputError> {
    match schema_of(&value) {
        Schema::Results => serde_json::from_value(value)
            .map_err(|e| InputError::new(format!("not an rtvirt.results/v1 document: {e}"))),
        Schema::Plan => Err(InputError::field(
            "schema",
            "a plan (rtvirt.plan/v1): expected results (rtvirt.results/v1); a plan's tables come from `rtvirt.plan` \
             in Python",
        )),
        Schema::Other(s) => Err(InputError::field("schema", format!("{s}: expected \"rtvirt.results/v1\""))),
        Schema::Missing => Err(InputError::field("schema", "missing: expected an rtvirt.results/v1 document")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_documents_arrays_and_interval_lines_are_read() {
        let doc = r#"{"schema":"rtvirt.results/v1","kind":"simulation","duration_ns":5}"#;
        assert_eq!(results_of_text(doc).unwrap().len(), 1);
        assert_eq!(results_of_text(&format!("[{doc},{doc}]")).unwrap().len(), 2);
        let line = r#"{"type":"interval","interval":0,"cpus":[{"cpu":0,"count":3}]}"#;
        let read = results_of_text(&format!("{line}\n{doc}\n")).unwrap();
        assert_eq!(read[0].intervals.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn other_documents_are_refused_with_their_place() {
        let e = results_of_text(r#"[{"schema":"rtvirt.results/v1","kind":"x","duration_ns":1},{"schema":"x"}]"#)
            .unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("[1].schema"), "{e}");
        let e = results_of_text("{\"schema\": \"rtvirt.results/v1\",\n \"kind\": 3}").unwrap_err();
        assert!(e.message.contains("not an rtvirt.results/v1 document"), "{e}");
        let e = results_of_text("{\n  oops").unwrap_err();
        assert_eq!(e.at.line_col.map(|l| l.0), Some(2), "{e}");
    }
}
