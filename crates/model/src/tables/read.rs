//! The results documents of a file, for tables: one `rtvirt.results/v1` document, a JSON array
//! of them (`simulate --sweep`, `vm matrix`), or JSON lines (`measure timer --interval-report`
//! lines, then the document; the lines become its `intervals` when it has none). Interval lines
//! with no document after them are refused, as `rtvirt report` refuses them.
//!
//! Two readers: [`results_documents_known`] (`rtvirt export`) reads each document with
//! [`KnownFields`], which skips the fields this version does not know as it reads them - memory:
//! the text (at most the results size limit of `crate::input`) plus the typed documents, no JSON
//! tree; [`results_documents`] (the Python package's `load`, whose documents are written back)
//! keeps those fields in `Results::extra`, through a JSON tree per document. Both find the
//! top-level values with serde's `IgnoredAny`.

use crate::document::{schema_of, Schema};
use crate::input::{read_text, InputKind};
use crate::results::{Interval, KnownFields, Results};
use crate::InputError;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::ops::Range;
use std::path::Path;

/// Every results document of the file at `path`, in file order, fields this version does not
/// know kept in `extra`.
pub fn results_documents(path: &Path) -> Result<Vec<Results>, InputError> {
    let text = read_text(path, InputKind::Results)?;
    results_of_text(&text).map_err(|e| e.in_file(path))
}

/// [`results_documents`] without the fields this version does not know (skipped as read).
pub fn results_documents_known(path: &Path) -> Result<Vec<Results>, InputError> {
    let text = read_text(path, InputKind::Results)?;
    results_of_text_known(&text).map_err(|e| e.in_file(path))
}

/// Every results document of JSON `text`, unknown fields kept.
pub fn results_of_text(text: &str) -> Result<Vec<Results>, InputError> {
    read::<Value>(text)
}

/// Every results document of JSON `text`, unknown fields skipped.
pub fn results_of_text_known(text: &str) -> Result<Vec<Results>, InputError> {
    read::<KnownFields>(text)
}

/// How one document is read.
trait Document: serde::de::DeserializeOwned {
    fn results(self) -> Result<Results, InputError>;
}

impl Document for KnownFields {
    fn results(self) -> Result<Results, InputError> {
        match self.results {
            Some(r) => Ok(r),
            None => {
                let schema = self.schema.map(|s| Value::Object([("schema".to_string(), s)].into_iter().collect()));
                Err(schema_error(schema.as_ref().map_or(Schema::Missing, schema_of)))
            }
        }
    }
}

impl Document for Value {
    fn results(self) -> Result<Results, InputError> {
        match schema_of(&self) {
            Schema::Results => serde_json::from_value(self)
                .map_err(|e| InputError::new(format!("not an rtvirt.results/v1 document: {e}"))),
            other => Err(schema_error(other)),
        }
    }
}

fn read<D: Document>(text: &str) -> Result<Vec<Results>, InputError> {
    let mut documents = Vec::new();
    // interval report lines waiting for their document, and where the first of them starts
    let mut lines: Vec<Interval> = Vec::new();
    let mut first_line = 0;
    for span in value_spans(text)? {
        let json = &text[span.clone()];
        let at = |e: serde_json::Error, what: &str| located(text, &span, e, what);
        if json.starts_with('[') {
            let items: Vec<D> = serde_json::from_str(json).map_err(|e| at(e, "rtvirt.results/v1 documents"))?;
            for (i, item) in items.into_iter().enumerate() {
                documents.push(item.results().map_err(|e| e.under(&format!("[{i}]")))?);
            }
        } else if probe(json).map_err(|e| at(e, "rtvirt.results/v1 documents"))?.is_interval_report() {
            if lines.is_empty() {
                first_line = span.start;
            }
            lines.push(serde_json::from_str(json).map_err(|e| at(e, "an interval report line"))?);
        } else {
            let read: D = serde_json::from_str(json).map_err(|e| at(e, "an rtvirt.results/v1 document"))?;
            let mut r = read.results()?;
            if r.intervals.is_none() && !lines.is_empty() {
                r.intervals = Some(std::mem::take(&mut lines));
            }
            lines.clear();
            documents.push(r);
        }
    }
    if !lines.is_empty() {
        let (line, col) = crate::error::line_col(text, first_line);
        let message = format!(
            "{} interval report line(s) {}: expected them before the rtvirt.results/v1 document they belong to (as \
             `measure timer --interval-report N --format json` writes them)",
            lines.len(),
            if documents.is_empty() { "and no results document" } else { "after the last document" }
        );
        return Err(InputError::new(message).at_line(line, col));
    }
    Ok(documents)
}

/// The byte ranges of the top-level JSON values of `text`, found without building them.
fn value_spans(text: &str) -> Result<Vec<Range<usize>>, InputError> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<IgnoredAny>();
    let mut spans = Vec::new();
    let mut start = 0;
    while let Some(value) = stream.next() {
        value.map_err(|e| {
            InputError::new(format!("not JSON: {e}: expected rtvirt.results/v1 documents"))
                .at_line(e.line(), e.column())
        })?;
        let end = stream.byte_offset();
        let skipped = text[start..end].len() - text[start..end].trim_start().len();
        spans.push(start + skipped..end);
        start = end;
    }
    Ok(spans)
}

/// A serde error in the value at `span`, located in the whole `text`.
fn located(text: &str, span: &Range<usize>, e: serde_json::Error, what: &str) -> InputError {
    let (first_line, first_col) = crate::error::line_col(text, span.start);
    let (line, col) = (e.line().max(1), e.column().max(1));
    let at = if line == 1 { (first_line, first_col + col - 1) } else { (first_line + line - 1, col) };
    InputError::new(format!("not {what}: {e}")).at_line(at.0, at.1)
}

/// The `type` tag of a top-level object (the rest skipped as read).
#[derive(Deserialize, Default)]
struct Probe {
    r#type: Option<Value>,
}

impl Probe {
    fn is_interval_report(&self) -> bool {
        self.r#type.as_ref().and_then(Value::as_str) == Some("interval")
    }
}

fn probe(json: &str) -> Result<Probe, serde_json::Error> {
    if json.starts_with('{') {
        serde_json::from_str(json)
    } else {
        Ok(Probe::default())
    }
}

/// Why a value with `schema` is not a results document.
fn schema_error(schema: Schema) -> InputError {
    match schema {
        Schema::Plan => InputError::field(
            "schema",
            "a plan (rtvirt.plan/v1): expected results (rtvirt.results/v1); a plan's tables come from `rtvirt.plan` \
             in Python",
        ),
        Schema::Other(s) => InputError::field("schema", format!("{s}: expected \"rtvirt.results/v1\"")),
        Schema::Results | Schema::Missing => {
            InputError::field("schema", "missing: expected an rtvirt.results/v1 document")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Reader = fn(&str) -> Result<Vec<Results>, InputError>;
    const READERS: [Reader; 2] = [results_of_text, results_of_text_known];

    #[test]
    fn single_documents_arrays_and_interval_lines_are_read() {
        let doc = r#"{"schema":"rtvirt.results/v1","kind":"simulation","duration_ns":5}"#;
        for read in READERS {
            assert_eq!(read(doc).unwrap().len(), 1);
            assert_eq!(read(&format!("[{doc},{doc}]")).unwrap().len(), 2);
            let line = r#"{"type":"interval","interval":0,"cpus":[{"cpu":0,"count":3}]}"#;
            let documents = read(&format!("{line}\n{doc}\n")).unwrap();
            assert_eq!(documents[0].intervals.as_ref().map(Vec::len), Some(1));
            // lines with no document after them are refused, with the line of the first
            let e = read(&format!("{line}\n{doc}\n{line}\n{line}\n")).unwrap_err();
            assert!(e.message.contains("2 interval report line(s) after the last document"), "{e}");
            assert_eq!(e.at.line_col.map(|l| l.0), Some(3), "{e}");
            let e = read(&format!("{line}\n")).unwrap_err();
            assert!(e.message.contains("and no results document"), "{e}");
        }
    }

    #[test]
    fn unknown_fields_are_kept_or_skipped() {
        let doc =
            r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":5,"later":[1,{"a":2}],"interval_ns":7}"#;
        let kept = results_of_text(doc).unwrap().remove(0);
        assert_eq!(kept.extra.get("later"), Some(&serde_json::json!([1, {"a": 2}])));
        let skipped = results_of_text_known(doc).unwrap().remove(0);
        assert!(skipped.extra.is_empty(), "{:?}", skipped.extra);
        assert_eq!(skipped, Results { extra: Default::default(), ..kept });
        assert_eq!(skipped.timer.and_then(|t| t.interval_ns), Some(7));
    }

    #[test]
    fn other_documents_are_refused_with_their_place() {
        for read in READERS {
            let e = read(r#"[{"schema":"rtvirt.results/v1","kind":"x","duration_ns":1},{"schema":"x"}]"#).unwrap_err();
            assert_eq!(e.at.field.as_deref(), Some("[1].schema"), "{e}");
            let e = read(r#"[{"schema":"rtvirt.plan/v1"}]"#).unwrap_err();
            assert!(e.message.contains("a plan (rtvirt.plan/v1)"), "{e}");
            let e = read("{\"schema\": \"rtvirt.results/v1\",\n \"kind\": 3}").unwrap_err();
            assert!(e.message.contains("rtvirt.results/v1 document"), "{e}");
            let e = read("{\n  oops").unwrap_err();
            assert_eq!(e.at.line_col.map(|l| l.0), Some(2), "{e}");
        }
    }
}
