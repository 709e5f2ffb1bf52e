//! Loading the documents a report is made of: `rtvirt.results/v1` and `rtvirt.plan/v1` JSON
//! files, told apart by their `schema` field, each with the name it is shown under; a file may
//! also hold a JSON array of results documents (the `--in vm` / `vm matrix` output), or be the
//! output of another tool (cyclictest, rtla, oslat, sockperf, netperf, iperf3), recognised and
//! read by `rtvirt_import`.
//!
//! Memory stays proportional to what the report draws, not to the JSON tree of the input:
//! - a JSON array is streamed from the file (`serde_json::Deserializer::from_reader` over the
//!   bounded reader of [`rtvirt_model::input::open`]): one element at a time is held as a JSON
//!   value, then as its typed document;
//! - any other file is read once and parsed without a JSON tree: the top-level values are found
//!   with `IgnoredAny`, then the one document is read by [`results_doc`], which reads the large
//!   sections straight into their types;
//! - `intervals` become [`IntervalPoint`]s (32 bytes each) as they are read, and per-CPU
//!   histograms (never drawn) are dropped;
//! - an array holds at most [`MAX_ARRAY_DOCUMENTS`]: each element is a typed document of ~5 KB
//!   and two table rows, so this bounds an array's report at about half a gigabyte.
//!
//! A results document read here differs from `Results::from_file` in two ways only: its
//! `intervals` are in [`Input::intervals`] (not in `Results::intervals`, which keeps only the
//! `measure tasks` windows, those with `tasks`), and an `intervals` or
//! `histogram_ns` that is not the list it should be is an error (rather than an unknown field).

use crate::interval::{interval_points, IntervalPoint};
use rtvirt_model::adapt_log::AdaptLog;
use rtvirt_model::document::{schema_of, Schema};
use rtvirt_model::input::{InputKind, Limited};
use rtvirt_model::plan::{Plan, PLAN_SCHEMA};
use rtvirt_model::results::{CpuLatency, HistogramBucket, Interval, Results, RESULTS_SCHEMA};
use rtvirt_model::InputError;
use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The most documents one JSON array may hold (a report of more is unreadable anyway).
pub const MAX_ARRAY_DOCUMENTS: usize = 100_000;

/// One loaded document.
#[derive(Debug, Clone)]
pub enum Document {
    Results(Box<Results>),
    Plan(Box<Plan>),
    /// `rtvirt host adapt`'s decision log (`rtvirt report --adapt-log`).
    AdaptLog(Box<AdaptLog>),
}

/// A document with where it came from and the name it is shown under in the report.
#[derive(Debug, Clone)]
pub struct Input {
    /// Series name: the result's label, else the file stem; made unique across inputs.
    pub name: String,
    pub path: PathBuf,
    pub doc: Document,
    /// The result's per-interval points in time order, read from its `intervals` (or the
    /// interval report lines before it) by the loader; `None` for inputs made in code, whose
    /// points are taken from `Results::intervals` (see [`Input::interval_points`]).
    pub intervals: Option<Vec<IntervalPoint>>,
}

impl Input {
    pub fn results(&self) -> Option<&Results> {
        match &self.doc {
            Document::Results(r) => Some(r),
            Document::Plan(_) | Document::AdaptLog(_) => None,
        }
    }
    pub fn plan(&self) -> Option<&Plan> {
        match &self.doc {
            Document::Plan(p) => Some(p),
            Document::Results(_) | Document::AdaptLog(_) => None,
        }
    }
    pub fn adapt_log(&self) -> Option<&AdaptLog> {
        match &self.doc {
            Document::AdaptLog(l) => Some(l),
            Document::Results(_) | Document::Plan(_) => None,
        }
    }
    /// The per-interval points of a result, in time order (empty for a plan).
    pub fn interval_points(&self) -> std::borrow::Cow<'_, [IntervalPoint]> {
        match (&self.intervals, self.results()) {
            (Some(points), _) => points.into(),
            (None, Some(r)) => crate::interval::intervals(r).into(),
            (None, None) => Vec::new().into(),
        }
    }
}

/// Load every file, in order (the first result of a comparison is its baseline). A file holding
/// a JSON array of results documents (`vm matrix --format json`, `measure timer --in vm
/// --format json`) gives one input per element, in order.
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, InputError> {
    load_labelled(paths, &[])
}

/// [`load_inputs`] with the names given by the user (`rtvirt report --label`): none, or one per
/// file in file order; a file holding several results names them "label: element name".
pub fn load_labelled(paths: &[PathBuf], labels: &[String]) -> Result<Vec<Input>, InputError> {
    if paths.is_empty() {
        return Err(InputError::new("no input files (expected rtvirt.results/v1 or rtvirt.plan/v1 JSON files)"));
    }
    if !labels.is_empty() && labels.len() != paths.len() {
        return Err(InputError::field(
            "--label",
            format!(
                "{} label(s) for {} file(s): give one --label per input file, in the order of the files",
                labels.len(),
                paths.len()
            ),
        ));
    }
    let mut inputs = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let mut loaded = load_file(p)?;
        if let Some(label) = labels.get(i) {
            let several = loaded.len() > 1;
            for input in &mut loaded {
                input.name = if several { format!("{label}: {}", input.name) } else { label.clone() };
            }
        }
        inputs.extend(loaded);
    }
    make_names_unique(&mut inputs);
    Ok(inputs)
}

/// Load one file: one document (see [`load_input`]), or an array of results documents; the
/// numbers of each results document are checked ([`crate::check`]).
pub fn load_file(path: &Path) -> Result<Vec<Input>, InputError> {
    let mut reader = rtvirt_model::input::open(path, InputKind::Results)?;
    if is_other_tools_output(&mut reader, path)? {
        return imported(path, &rtvirt_model::input::read_rest(reader, path, InputKind::Results)?);
    }
    let (inputs, array) = if starts_an_array(&mut reader, path)? {
        (load_array(path, reader)?, true)
    } else {
        (vec![input_of(path, &rtvirt_model::input::read_rest(reader, path, InputKind::Results)?)?], false)
    };
    for (i, input) in inputs.iter().enumerate() {
        let prefix = if array { format!("[{i}].") } else { String::new() };
        input.results().map_or(Ok(()), |r| crate::check::results(r, &prefix)).map_err(|e| e.in_file(path))?;
    }
    Ok(inputs)
}

/// `rtvirt host adapt`'s decision log (JSON lines), named by its file stem.
pub fn load_adapt_log(path: &Path) -> Result<Input, InputError> {
    let log = AdaptLog::from_file(path)?;
    Ok(Input {
        name: file_stem(path),
        path: path.to_path_buf(),
        doc: Document::AdaptLog(Box::new(log)),
        intervals: None,
    })
}

/// Load one file, deciding by its `schema` field whether it is a plan or results. A results
/// file may also be the output of `measure timer --interval-report ... --format json`: the
/// interval reports as JSON lines, then the results document; the reports become the result's
/// `intervals` (see [`crate::interval::intervals`]).
pub fn load_input(path: &Path) -> Result<Input, InputError> {
    input_of(path, &rtvirt_model::input::read_text(path, InputKind::Results)?)
}

/// Whether the file is another tool's output rather than rtvirt JSON, judged by its first
/// buffer (nothing is consumed): text that is not JSON, or JSON that `rtvirt_import` recognises
/// (cyclictest or iperf3 `--json`).
fn is_other_tools_output(reader: &mut BufReader<Limited>, path: &Path) -> Result<bool, InputError> {
    let head = reader.fill_buf().map_err(|e| InputError::new(format!("cannot read results: {e}")).in_file(path))?;
    let head = String::from_utf8_lossy(head);
    let json = head.trim_start().is_empty() || head.trim_start().starts_with(['{', '[']);
    Ok(!json || rtvirt_import::detect(&head).is_some())
}

/// Another tool's output as results documents: named by the file stem, or by their labels
/// ("rtla-timerlat IRQ", ...) when the file gives several.
fn imported(path: &Path, text: &str) -> Result<Vec<Input>, InputError> {
    let docs = rtvirt_import::import_text(path, text, None)?;
    let several = docs.len() > 1;
    docs.into_iter()
        .map(|r| {
            crate::check::results(&r, "").map_err(|e| e.in_file(path))?;
            let name = if several { r.label.clone().unwrap_or_else(|| file_stem(path)) } else { file_stem(path) };
            Ok(Input { name, path: path.to_path_buf(), doc: Document::Results(Box::new(r)), intervals: None })
        })
        .collect()
}

/// Whether the first byte that is not white space is `[` (nothing is consumed).
fn starts_an_array(reader: &mut BufReader<Limited>, path: &Path) -> Result<bool, InputError> {
    loop {
        let buf = reader.fill_buf().map_err(|e| InputError::new(format!("cannot read results: {e}")).in_file(path))?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => return Ok(buf[i] == b'['),
            None if buf.is_empty() => return Ok(false),
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

/// The document of a file's text: its one value carrying a `schema`, with the `"type":
/// "interval"` reports among the other values as its intervals (see [`load_input`]); other
/// values are ignored.
fn input_of(path: &Path, text: &str) -> Result<Input, InputError> {
    let spans = value_spans(text).map_err(|e| e.in_file(path))?;
    let mut main: Option<(Range<usize>, Value)> = None;
    let mut lines = Vec::new();
    for span in spans {
        let probe = probe(&text[span.clone()]).map_err(|e| located(e, text, &span).in_file(path))?;
        if let Some(schema) = probe.schema {
            if main.is_some() {
                let (line, col) = rtvirt_model::error::line_col(text, span.start);
                let message = format!(
                    "a second document (a value with a `schema`): expected one {RESULTS_SCHEMA} or {PLAN_SCHEMA} \
                     document per file, or a JSON array of {RESULTS_SCHEMA} documents"
                );
                return Err(InputError::new(message).at_line(line, col).in_file(path));
            }
            main = Some((span, schema));
        } else if probe.r#type.as_ref().and_then(Value::as_str) == Some("interval") {
            if main.is_some() {
                let (line, col) = rtvirt_model::error::line_col(text, span.start);
                let message = "an interval report line after the document: expected the lines before the \
                               rtvirt.results/v1 document they belong to (as `measure timer --interval-report N \
                               --format json` writes them)";
                return Err(InputError::new(message).at_line(line, col).in_file(path));
            }
            lines.push(span);
        }
    }
    let (span, schema) = main.ok_or_else(|| {
        InputError::field(
            "schema",
            format!(
                "missing: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\" (files written by `rtvirt ... --format \
                 json`)"
            ),
        )
        .in_file(path)
    })?;
    let (doc, intervals) = match &schema {
        Value::String(s) if s == PLAN_SCHEMA => (Document::Plan(Box::new(plan_of(path, text, &span)?)), None),
        Value::String(s) if s == RESULTS_SCHEMA => {
            let loaded = results_of(text, &span).map_err(|e| e.in_file(path))?;
            let intervals = match loaded.intervals {
                Some(points) => Some(points),
                None if lines.is_empty() => None,
                None => Some(line_points(text, &lines).map_err(|e| e.in_file(path))?),
            };
            (Document::Results(Box::new(loaded.results)), intervals.map(in_time_order))
        }
        other => {
            return Err(InputError::field(
                "schema",
                format!("{other}: expected \"{RESULTS_SCHEMA}\" or \"{PLAN_SCHEMA}\""),
            )
            .in_file(path));
        }
    };
    let name = default_name(path, &doc);
    Ok(Input { name, path: path.to_path_buf(), doc, intervals })
}

/// The byte ranges of the top-level JSON values of `text`, found without building them.
fn value_spans(text: &str) -> Result<Vec<Range<usize>>, InputError> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<IgnoredAny>();
    let mut spans = Vec::new();
    let mut start = 0;
    while let Some(value) = stream.next() {
        value.map_err(|e| InputError::new(format!("not a JSON document: {e}")).at_line(e.line(), e.column()))?;
        let end = stream.byte_offset();
        let skipped = text[start..end].len() - text[start..end].trim_start().len();
        spans.push(start + skipped..end);
        start = end;
    }
    Ok(spans)
}

/// The two top-level fields that say what a value is.
#[derive(Deserialize, Default)]
struct Probe {
    schema: Option<Value>,
    r#type: Option<Value>,
}

/// The `schema` and `type` of an object (nothing for other values).
fn probe(json: &str) -> Result<Probe, InputError> {
    if !json.starts_with('{') {
        return Ok(Probe::default());
    }
    serde_json::from_str(json)
        .map_err(|e| InputError::new(format!("not a JSON document: {e}")).at_line(e.line(), e.column()))
}

/// An error located in the value at `span` of `text`, located in `text` instead.
fn located(mut error: InputError, text: &str, span: &Range<usize>) -> InputError {
    if let Some((line, col)) = error.at.line_col {
        let (first_line, first_col) = rtvirt_model::error::line_col(text, span.start);
        error.at.line_col =
            Some(if line <= 1 { (first_line, first_col + col.max(1) - 1) } else { (first_line + line - 1, col) });
    }
    error
}

fn plan_of(path: &Path, text: &str, span: &Range<usize>) -> Result<Plan, InputError> {
    let limit = InputKind::Plan.limit();
    if span.len() as u64 > limit {
        return Err(InputError::new(format!(
            "cannot read plan: {} bytes is larger than the {} MiB a plan may hold",
            span.len(),
            limit >> 20
        ))
        .in_file(path));
    }
    Plan::from_json(&text[span.clone()]).map_err(|e| located(e, text, span).in_file(path))
}

/// A results document as the loader keeps it (see [`results_doc`]).
pub struct LoadedResults {
    pub results: Results,
    /// Points of its `intervals`, in document order.
    pub intervals: Option<Vec<IntervalPoint>>,
}

/// The results document at `span` of `text`, read by [`results_doc`].
fn results_of(text: &str, span: &Range<usize>) -> Result<LoadedResults, InputError> {
    let de = &mut serde_json::Deserializer::from_str(&text[span.clone()]);
    results_doc(de).map_err(|e| {
        let e = InputError::new(format!("not an {RESULTS_SCHEMA} document: {e}")).at_line(e.line(), e.column());
        located(e, text, span)
    })
}

/// The points of the interval report lines (each a small JSON value), in line order.
fn line_points(text: &str, lines: &[Range<usize>]) -> Result<Vec<IntervalPoint>, InputError> {
    let mut points = Vec::new();
    for (i, span) in lines.iter().enumerate() {
        let report: Interval = serde_json::from_str(&text[span.clone()]).map_err(|e| {
            let e = InputError::new(format!("interval report {} before the document: {e}", i + 1))
                .at_line(e.line(), e.column());
            located(e, text, span)
        })?;
        points.extend(interval_points(i, &report));
    }
    Ok(points)
}

/// Points sorted by time (stable: equal times keep their order).
fn in_time_order(mut points: Vec<IntervalPoint>) -> Vec<IntervalPoint> {
    points.sort_by(|a, b| a.t_ns.total_cmp(&b.t_ns));
    points
}

// ---- one results document without a JSON tree ----

/// Read one results document from `de`: the sections that grow with the run (`tasks`, `guests`,
/// `cores`, `flows`, `cpus`, `histogram_ns`, `intervals`) and the head fields straight into their
/// types (errors at their line), everything else (small) through `Results`' own reading.
pub fn results_doc<'de, D: serde::Deserializer<'de>>(de: D) -> Result<LoadedResults, D::Error> {
    match de.deserialize_map(ResultsVisitor)? {
        Read::Results(loaded) => Ok(*loaded),
        Read::NotResults(schema) => Err(de::Error::custom(schema_message(schema.as_ref()))),
    }
}

fn schema_message(schema: Option<&Value>) -> String {
    format!("schema {}: expected \"{RESULTS_SCHEMA}\"", schema.map_or_else(|| "missing".into(), Value::to_string))
}

/// What [`ResultsVisitor`] read: a results document, or an object whose `schema` (None: missing)
/// says it is not one (the rest of it skipped as read).
enum Read {
    Results(Box<LoadedResults>),
    NotResults(Option<Value>),
}

/// An element of a results array, read by [`ResultsVisitor`].
struct Element(Read);

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(ElementVisitor).map(Element)
    }
}

/// An object is read by [`ResultsVisitor`]; any other value has no `schema` (skipped as read).
struct ElementVisitor;

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an rtvirt.results/v1 document (a JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Read, A::Error> {
        ResultsVisitor.visit_map(map)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Read, S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Read::NotResults(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Read, E> {
        Ok(Read::NotResults(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Read, E> {
        Ok(Read::NotResults(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Read, E> {
        Ok(Read::NotResults(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Read, E> {
        Ok(Read::NotResults(None))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Read, E> {
        Ok(Read::NotResults(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Read, E> {
        Ok(Read::NotResults(None))
    }
}

struct ResultsVisitor;

/// The typed sections read so far; `rest` holds the other fields as JSON values.
#[derive(Default)]
struct Sections {
    results: Results,
    histogram: Option<Option<Vec<HistogramBucket>>>,
    intervals: Option<Option<PointsOf>>,
}

impl<'de> Visitor<'de> for ResultsVisitor {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an rtvirt.results/v1 document (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        let mut typed = Sections::default();
        let r = &mut typed.results;
        let mut rest = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "tasks" => r.tasks = map.next_value()?,
                "guests" => r.guests = map.next_value()?,
                "cores" => r.cores = map.next_value()?,
                "flows" => r.flows = map.next_value()?,
                "cpus" => r.cpus = map.next_value::<CpusWithoutHistograms>()?.0,
                "latency_ns" => r.latency_ns = map.next_value()?,
                "rtt_ns" => r.rtt_ns = map.next_value()?,
                "environment" => r.environment = map.next_value()?,
                "histogram_ns" => typed.histogram = Some(map.next_value()?),
                "intervals" => typed.intervals = Some(map.next_value::<Option<PointsOf>>()?),
                "schema" => {
                    let v: Value = map.next_value()?;
                    if v.as_str() != Some(RESULTS_SCHEMA) {
                        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                        return Ok(Read::NotResults(Some(v)));
                    }
                    rest.insert(key, v);
                }
                // the head fields are checked here, where their line is known
                "kind" | "label" => {
                    let v: Option<String> = map.next_value()?;
                    rest.insert(key, v.map_or(Value::Null, Value::String));
                }
                "seed" | "duration_ns" => {
                    let v: Option<u64> = map.next_value()?;
                    rest.insert(key, v.map_or(Value::Null, Value::from));
                }
                known if rtvirt_model::results::is_known_field(known) => {
                    let v: Value = map.next_value()?;
                    rest.insert(key, v);
                }
                // a field this version does not know: never drawn, skipped as read
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !rest.contains_key("schema") {
            return Ok(Read::NotResults(None));
        }
        let mut results = Results::deserialize(Value::Object(rest)).map_err(de::Error::custom)?;
        let r = typed.results;
        (results.tasks, results.guests, results.cores, results.flows, results.cpus) =
            (r.tasks, r.guests, r.cores, r.flows, r.cpus);
        (results.latency_ns, results.rtt_ns, results.environment) = (r.latency_ns, r.rtt_ns, r.environment);
        if let Some(histogram) = typed.histogram {
            results.histogram_ns = histogram;
        }
        let (points, windows) = typed.intervals.flatten().map_or((None, Vec::new()), |p| (Some(p.points), p.windows));
        results.intervals = (!windows.is_empty()).then_some(windows);
        Ok(Read::Results(Box::new(LoadedResults { results, intervals: points })))
    }
}

/// `cpus` without their histograms (the report draws none of them).
struct CpusWithoutHistograms(Vec<CpuLatency>);

impl<'de> Deserialize<'de> for CpusWithoutHistograms {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_seq(ElementsVisitor::new(
            "a list of per-CPU results",
            |_, mut cpu: CpuLatency, out: &mut Vec<CpuLatency>| {
                cpu.histogram_ns = None;
                out.push(cpu);
            },
        ))
        .map(CpusWithoutHistograms)
    }
}

/// `intervals` as points, each report turned into its points as it is read; `measure tasks`
/// windows (reports with `tasks`, which have no points) are kept whole for the DSR per window.
struct PointsOf {
    points: Vec<IntervalPoint>,
    windows: Vec<Interval>,
}

/// One interval report as read: a point, or a `measure tasks` window.
enum ReadInterval {
    Point(IntervalPoint),
    Window(Box<Interval>),
}

impl<'de> Deserialize<'de> for PointsOf {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let read = de.deserialize_seq(ElementsVisitor::new(
            "a list of interval reports",
            |i, report: Interval, out: &mut Vec<ReadInterval>| match report.tasks {
                Some(_) => out.push(ReadInterval::Window(Box::new(report))),
                None => out.extend(interval_points(i, &report).into_iter().map(ReadInterval::Point)),
            },
        ))?;
        let mut all = PointsOf { points: Vec::new(), windows: Vec::new() };
        for r in read {
            match r {
                ReadInterval::Point(p) => all.points.push(p),
                ReadInterval::Window(w) => all.windows.push(*w),
            }
        }
        Ok(all)
    }
}

/// A JSON array read one element at a time into `add(index, element, out)`.
struct ElementsVisitor<T, O, F> {
    expecting: &'static str,
    add: F,
    marker: std::marker::PhantomData<(T, O)>,
}

impl<T, O, F: FnMut(usize, T, &mut Vec<O>)> ElementsVisitor<T, O, F> {
    fn new(expecting: &'static str, add: F) -> Self {
        ElementsVisitor { expecting, add, marker: std::marker::PhantomData }
    }
}

impl<'de, T: Deserialize<'de>, O, F: FnMut(usize, T, &mut Vec<O>)> Visitor<'de> for ElementsVisitor<T, O, F> {
    type Value = Vec<O>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_seq<S: SeqAccess<'de>>(mut self, mut seq: S) -> Result<Vec<O>, S::Error> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(element) = seq.next_element::<T>()? {
            (self.add)(i, element, &mut out);
            i += 1;
        }
        Ok(out)
    }
}

// ---- a JSON array of results documents, streamed from the file ----

/// The elements of a results array, read from the file one at a time, each named by its label,
/// else by its guest kernel and host load (`vm/<kernel>/<load>`), else by the file stem and its
/// position.
fn load_array(path: &Path, reader: BufReader<Limited>) -> Result<Vec<Input>, InputError> {
    let failure = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let read =
        de.deserialize_seq(ArrayVisitor { path, failure: &failure }).and_then(|inputs| de.end().map(|()| inputs));
    read.map_err(|e| match failure.take() {
        // an element at fault is named by its index (the reader is past its end by now)
        Some(error) if error.at.field.is_some() => error.at_line(e.line(), e.column()).in_file(path),
        error => error
            .unwrap_or_else(|| InputError::new(format!("not a JSON document: {e}")))
            .at_line(e.line(), e.column())
            .in_file(path),
    })
}

/// Reads the array's elements; an element that is not a results document is put in `failure`.
struct ArrayVisitor<'a> {
    path: &'a Path,
    failure: &'a RefCell<Option<InputError>>,
}

impl<'de> Visitor<'de> for ArrayVisitor<'_> {
    type Value = Vec<Input>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of rtvirt.results/v1 documents")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Vec<Input>, S::Error> {
        let mut inputs = Vec::new();
        loop {
            let i = inputs.len();
            let read = seq.next_element::<Element>().inspect_err(|e| {
                let message = format!("not an {RESULTS_SCHEMA} document: {e}");
                *self.failure.borrow_mut() = Some(InputError::field(format!("[{i}]"), message));
            })?;
            let Some(Element(read)) = read else { break };
            if i == MAX_ARRAY_DOCUMENTS {
                let message = format!("more than {MAX_ARRAY_DOCUMENTS} documents in one array: split the file");
                let e = InputError::field(format!("[{i}]"), message.clone());
                *self.failure.borrow_mut() = Some(e);
                return Err(de::Error::custom(message));
            }
            match array_element(self.path, i, read) {
                Ok(input) => inputs.push(input),
                Err(e) => {
                    let message = e.to_string();
                    *self.failure.borrow_mut() = Some(e);
                    return Err(de::Error::custom(message));
                }
            }
        }
        if inputs.is_empty() {
            let e = InputError::new("an empty array: expected rtvirt.results/v1 documents");
            *self.failure.borrow_mut() = Some(e);
            return Err(de::Error::custom("an empty array"));
        }
        Ok(inputs)
    }
}

/// Why element `i` of a results array, whose `schema` is `schema`, is not a results document.
fn array_element_error(i: usize, schema: Option<Value>) -> InputError {
    let wrong = |name: &str| format!("\"{name}\": an array may only hold \"{RESULTS_SCHEMA}\" documents");
    let value = Value::Object(schema.map(|s| ("schema".to_string(), s)).into_iter().collect());
    let message = match schema_of(&value) {
        Schema::Results => format!("\"{RESULTS_SCHEMA}\" but not read as one"),
        Schema::Plan => wrong(PLAN_SCHEMA),
        Schema::Other(Value::String(name)) => wrong(name),
        Schema::Other(_) | Schema::Missing => format!("missing: expected \"{RESULTS_SCHEMA}\""),
    };
    InputError::field(format!("[{i}].schema"), message)
}

/// Element `i` of a results array, its intervals turned into points.
fn array_element(path: &Path, i: usize, read: Read) -> Result<Input, InputError> {
    let loaded = match read {
        Read::Results(loaded) => *loaded,
        Read::NotResults(schema) => return Err(array_element_error(i, schema).in_file(path)),
    };
    let r = loaded.results;
    let name = array_name(&r).unwrap_or_else(|| format!("{}[{i}]", file_stem(path)));
    Ok(Input {
        name,
        path: path.to_path_buf(),
        doc: Document::Results(Box::new(r)),
        intervals: loaded.intervals.map(in_time_order),
    })
}

/// The label of a result, else `vm/<guest kernel>/<host load>` from its environment.
fn array_name(results: &Results) -> Option<String> {
    if let Some(l) = results.label.clone().filter(|l| !l.trim().is_empty()) {
        return Some(l);
    }
    let env = results.environment.as_ref()?;
    let kernel = env.guest_kernel.as_deref()?;
    let load = env.host_load.as_deref().unwrap_or("none");
    Some(format!("vm/{kernel}/{load}"))
}

fn default_name(path: &Path, doc: &Document) -> String {
    let label = match doc {
        Document::Results(r) => r.label.clone().filter(|l| !l.trim().is_empty()),
        Document::Plan(_) | Document::AdaptLog(_) => None,
    };
    label.unwrap_or_else(|| file_stem(path))
}

fn file_stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// Inputs sharing a label are told apart by the parameters that differ between them (scenario,
/// rho, seed, kind, guest kernel, host load: a sweep's cells read "default rho=0.5 seed=2"),
/// else by their file stem, else by their position. Linear in the number of inputs (a large
/// array has one name per element).
pub fn make_names_unique(inputs: &mut [Input]) {
    let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    names.iter().enumerate().for_each(|(i, n)| groups.entry(n.as_str()).or_default().push(i));
    let mut with_params = names.clone();
    for group in groups.values().filter(|g| g.len() > 1) {
        let params: Vec<Vec<(&'static str, String)>> = group.iter().map(|&i| parameters(&inputs[i])).collect();
        let differs = |k: usize| params.iter().any(|p| p.get(k) != params[0].get(k));
        let keys: Vec<usize> = (0..params[0].len()).filter(|&k| differs(k)).collect();
        if keys.is_empty() {
            continue;
        }
        for (&i, p) in group.iter().zip(&params) {
            let suffix: Vec<String> = keys.iter().map(|&k| format!("{}={}", p[k].0, p[k].1)).collect();
            with_params[i] = format!("{} {}", names[i], suffix.join(" "));
        }
    }
    let stems: Vec<String> = inputs.iter().map(|i| file_stem(&i.path)).collect();
    let counts = |v: &[String]| {
        let mut c: HashMap<String, usize> = HashMap::new();
        v.iter().for_each(|x| *c.entry(x.clone()).or_default() += 1);
        c
    };
    let (name_counts, stem_counts) = (counts(&with_params), counts(&stems));
    for (i, input) in inputs.iter_mut().enumerate() {
        input.name = if name_counts[&with_params[i]] == 1 {
            with_params[i].clone()
        } else if stem_counts[&stems[i]] > 1 || with_params[i] == stems[i] {
            format!("{} (#{})", with_params[i], i + 1)
        } else {
            format!("{} ({})", with_params[i], stems[i])
        };
    }
}

/// The parameters a result was produced with, by name (for telling apart same-named inputs).
fn parameters(input: &Input) -> Vec<(&'static str, String)> {
    let Some(r) = input.results() else { return Vec::new() };
    let scenario = r.scenario.as_deref().map(|s| file_stem(Path::new(s)));
    let env = r.environment.as_ref();
    [
        ("scenario", scenario),
        ("rho", r.rho.map(crate::units::fmt_plain)),
        ("seed", r.seed.map(|v| v.to_string())),
        ("kind", Some(r.kind.clone())),
        ("guest", env.and_then(|e| e.guest_kernel.clone())),
        ("load", env.and_then(|e| e.host_load.clone())),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.unwrap_or_else(|| "-".into())))
    .collect()
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
    fn labels_name_the_inputs_one_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let doc = r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1,"label":"x"}"#;
        let a = write(dir.path(), "a.json", doc);
        let b = write(dir.path(), "b.json", &format!("[{doc},{doc}]"));
        let inputs = load_labelled(&[a.clone(), b.clone()], &["before".into(), "after".into()]).unwrap();
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["before", "after: x (#2)", "after: x (#3)"]);
        let e = load_labelled(&[a, b], &["only one".into()]).unwrap_err().to_string();
        assert!(e.contains("--label") && e.contains("1 label(s) for 2 file(s)"), "{e}");
    }

    #[test]
    fn sweep_cells_are_named_by_their_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let cell = |rho: f64, seed: u64| {
            let head = r#"{"schema":"rtvirt.results/v1","kind":"simulation","duration_ns":1,"label":"default","#;
            format!(r#"{head}"scenario":"scenarios/default.toml","rho":{rho},"seed":{seed}}}"#)
        };
        let text = format!("[{},{},{},{}]", cell(0.5, 1), cell(0.5, 2), cell(0.9, 1), cell(0.9, 2));
        let p = write(dir.path(), "sweep.json", &text);
        let names: Vec<String> = load_inputs(&[p]).unwrap().into_iter().map(|i| i.name).collect();
        assert_eq!(
            names,
            ["default rho=0.5 seed=1", "default rho=0.5 seed=2", "default rho=0.9 seed=1", "default rho=0.9 seed=2"]
        );
    }

    #[test]
    fn an_array_beyond_the_document_limit_is_refused_at_the_first_extra_element() {
        let dir = tempfile::tempdir().unwrap();
        let one = r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1}"#;
        let text = format!("[{}]", vec![one; MAX_ARRAY_DOCUMENTS + 1].join(","));
        let e = load_file(&write(dir.path(), "big.json", &text)).unwrap_err().to_string();
        assert!(e.contains("[100000]") && e.contains("more than 100000 documents"), "{e}");
        let text = format!("[{}]", vec![one; MAX_ARRAY_DOCUMENTS].join(","));
        assert_eq!(load_file(&write(dir.path(), "fits.json", &text)).unwrap().len(), MAX_ARRAY_DOCUMENTS);
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
