//! The JSON form of [`Results`]. The fields up to `environment` are written first, in
//! declaration order; then the fields of every section and of the `extra` bag, merged into one
//! map in key order. That is the order the files have always had (the sections were once a
//! flattened `serde_json::Map`, a BTreeMap), so documents stay byte-identical. Nested values of
//! the sections go through `serde_json::Value` as well, which orders their keys too.
//!
//! Reading takes the head fields by name and hands the rest to each section in turn: a section
//! takes the fields it knows when all of them read as its types; whatever no section takes
//! stays in `extra`, to be written back as read.

use super::document::{CoreResult, CpuLatency, FlowResult, GuestResult, Results, TaskResult, RESULTS_SCHEMA};
use super::environment::Environment;
use super::explain::ExplainSection;
use super::sections::{HistogramBucket, Interval, StreamSection};
use crate::stats::Summary;
use serde::de::DeserializeOwned;
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Serialize};
use serde::{Deserializer, Serializer};
use serde_json::{Map, Value};
use std::path::Path;

/// The fields shared by several kinds, as they are written.
#[derive(Serialize, Deserialize, Default)]
struct Shared {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    histogram_ns: Option<Vec<HistogramBucket>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    intervals: Option<Vec<Interval>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rho: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    runaway_threads_demoted: Option<Vec<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scenario: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    explain: Option<ExplainSection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream: Option<StreamSection>,
}

impl Results {
    /// Every field after `environment`, in key order.
    fn tail(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let shared = Shared {
            histogram_ns: self.histogram_ns.clone(),
            intervals: self.intervals.clone(),
            interrupted: self.interrupted,
            rho: self.rho,
            runaway_threads_demoted: self.runaway_threads_demoted.clone(),
            scenario: self.scenario.clone(),
            error: self.error.clone(),
            explain: self.explain.clone(),
            stream: self.stream.clone(),
        };
        let mut tail = self.extra.clone();
        merge(&mut tail, &shared)?;
        merge(&mut tail, &self.timer)?;
        merge(&mut tail, &self.net)?;
        merge(&mut tail, &self.net_server)?;
        merge(&mut tail, &self.task_totals)?;
        merge(&mut tail, &self.simulation)?;
        merge(&mut tail, &self.xen)?;
        Ok(tail)
    }
}

/// Add the fields of a section (an object, or nothing for `None`) to `tail`.
fn merge<T: Serialize>(tail: &mut Map<String, Value>, section: &T) -> Result<(), serde_json::Error> {
    if let Value::Object(fields) = serde_json::to_value(section)? {
        tail.extend(fields);
    }
    Ok(())
}

impl Serialize for Results {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tail = self.tail().map_err(S::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema", &self.schema)?;
        map.serialize_entry("kind", &self.kind)?;
        if let Some(label) = &self.label {
            map.serialize_entry("label", label)?;
        }
        if let Some(seed) = &self.seed {
            map.serialize_entry("seed", seed)?;
        }
        map.serialize_entry("duration_ns", &self.duration_ns)?;
        if !self.tasks.is_empty() {
            map.serialize_entry("tasks", &self.tasks)?;
        }
        if !self.guests.is_empty() {
            map.serialize_entry("guests", &self.guests)?;
        }
        if !self.cores.is_empty() {
            map.serialize_entry("cores", &self.cores)?;
        }
        if !self.flows.is_empty() {
            map.serialize_entry("flows", &self.flows)?;
        }
        if let Some(latency) = &self.latency_ns {
            map.serialize_entry("latency_ns", latency)?;
        }
        if !self.cpus.is_empty() {
            map.serialize_entry("cpus", &self.cpus)?;
        }
        if let Some(rtt) = &self.rtt_ns {
            map.serialize_entry("rtt_ns", rtt)?;
        }
        if let Some(environment) = &self.environment {
            map.serialize_entry("environment", environment)?;
        }
        for (key, value) in &tail {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The fields read by name; the rest goes to the sections.
#[derive(Deserialize)]
struct Head {
    schema: String,
    kind: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    duration_ns: u64,
    #[serde(default)]
    tasks: Vec<TaskResult>,
    #[serde(default)]
    guests: Vec<GuestResult>,
    #[serde(default)]
    cores: Vec<CoreResult>,
    #[serde(default)]
    flows: Vec<FlowResult>,
    #[serde(default)]
    latency_ns: Option<Summary>,
    #[serde(default)]
    cpus: Vec<CpuLatency>,
    #[serde(default)]
    rtt_ns: Option<Summary>,
    #[serde(default)]
    environment: Option<Environment>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Results, D::Error> {
        let head = Head::deserialize(deserializer)?;
        let mut rest = head.rest;
        let shared: Shared = take(&mut rest).unwrap_or_default();
        let timer = take(&mut rest);
        let net = take(&mut rest);
        let net_server = take(&mut rest);
        let task_totals = take(&mut rest);
        let simulation = take(&mut rest);
        let xen = take(&mut rest);
        Ok(Results {
            schema: head.schema,
            kind: head.kind,
            label: head.label,
            seed: head.seed,
            duration_ns: head.duration_ns,
            tasks: head.tasks,
            guests: head.guests,
            cores: head.cores,
            flows: head.flows,
            latency_ns: head.latency_ns,
            cpus: head.cpus,
            rtt_ns: head.rtt_ns,
            environment: head.environment,
            histogram_ns: shared.histogram_ns,
            intervals: shared.intervals,
            interrupted: shared.interrupted,
            rho: shared.rho,
            runaway_threads_demoted: shared.runaway_threads_demoted,
            scenario: shared.scenario,
            error: shared.error,
            explain: shared.explain,
            stream: shared.stream,
            timer,
            net,
            net_server,
            task_totals,
            simulation,
            xen,
            extra: rest,
        })
    }
}

/// The section `T` read from `rest`, its fields removed from `rest`; None when `rest` has none
/// of its fields or one that does not read as its type (then all of them stay in `rest`).
fn take<T: DeserializeOwned + Serialize>(rest: &mut Map<String, Value>) -> Option<T> {
    let section: T = serde_json::from_value(Value::Object(rest.clone())).ok()?;
    let Ok(Value::Object(fields)) = serde_json::to_value(&section) else { return None };
    if fields.is_empty() || fields.keys().any(|key| !rest.contains_key(key)) {
        return None;
    }
    for key in fields.keys() {
        rest.remove(key);
    }
    Some(section)
}

// ---- reading only the fields this version knows ----

/// Whether `key` is a top-level field this version of `rtvirt.results/v1` knows: a property of
/// the schema generated from the types (computed once).
pub fn is_known_field(key: &str) -> bool {
    static KNOWN: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    KNOWN
        .get_or_init(|| {
            let schema = serde_json::to_value(schemars::schema_for!(Results)).unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object);
            properties.map(|p| p.keys().cloned().collect()).unwrap_or_default()
        })
        .contains(key)
}

/// A JSON object read as a results document for tables and reports, which look at the typed
/// sections only: fields this version does not know are skipped as they are read (serde's
/// `IgnoredAny`), and the sections that grow with the run (`tasks`, `guests`, `cores`, `flows`,
/// `cpus`, `histogram_ns`, `intervals`) go straight into their types, so memory follows the
/// known fields, not the file (no JSON tree of the document is built, and `extra` stays empty).
/// When the object's `schema` is not `rtvirt.results/v1`, the rest of it is skipped and
/// `results` is None.
pub struct KnownFields {
    /// The `schema` field as written (None: missing).
    pub schema: Option<Value>,
    pub results: Option<Results>,
}

impl<'de> Deserialize<'de> for KnownFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KnownFields, D::Error> {
        deserializer.deserialize_map(KnownVisitor)
    }
}

struct KnownVisitor;

impl<'de> serde::de::Visitor<'de> for KnownVisitor {
    type Value = KnownFields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an rtvirt.results/v1 document (a JSON object)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<KnownFields, A::Error> {
        use serde::de::IgnoredAny;
        let (mut typed, mut histogram, mut intervals) = (Results::default(), None, None);
        let mut rest = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "schema" => {
                    let schema: Value = map.next_value()?;
                    if schema.as_str() != Some(RESULTS_SCHEMA) {
                        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                        return Ok(KnownFields { schema: Some(schema), results: None });
                    }
                    rest.insert(key, schema);
                }
                "tasks" => typed.tasks = map.next_value()?,
                "guests" => typed.guests = map.next_value()?,
                "cores" => typed.cores = map.next_value()?,
                "flows" => typed.flows = map.next_value()?,
                "cpus" => typed.cpus = map.next_value()?,
                "histogram_ns" => histogram = map.next_value()?,
                "intervals" => intervals = map.next_value()?,
                known if is_known_field(known) => {
                    let value: Value = map.next_value()?;
                    rest.insert(key, value);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(schema) = rest.get("schema").cloned() else { return Ok(KnownFields { schema: None, results: None }) };
        let mut results = Results::deserialize(Value::Object(rest)).map_err(serde::de::Error::custom)?;
        (results.tasks, results.guests, results.cores, results.flows, results.cpus) =
            (typed.tasks, typed.guests, typed.cores, typed.flows, typed.cpus);
        (results.histogram_ns, results.intervals) = (histogram, intervals);
        Ok(KnownFields { schema: Some(schema), results: Some(results) })
    }
}

impl Results {
    /// Read a results file, checking the schema.
    pub fn from_file(path: &Path) -> Result<Results, crate::InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Results)?;
        let r: Results = serde_json::from_str(&text).map_err(|e| {
            crate::InputError::new(format!("not an rtvirt.results/v1 document: {e}"))
                .in_file(path)
                .at_line(e.line(), e.column())
        })?;
        if r.schema != RESULTS_SCHEMA {
            return Err(crate::InputError::field("schema", format!("\"{}\": expected \"{RESULTS_SCHEMA}\"", r.schema))
                .in_file(path));
        }
        Ok(r)
    }

    /// [`Results::from_file`] for readers of the typed sections only (reports): fields this
    /// version does not know are skipped as read, not kept in `extra` (see [`KnownFields`]).
    pub fn from_file_known(path: &Path) -> Result<Results, crate::InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Results)?;
        let read: KnownFields = serde_json::from_str(&text).map_err(|e| {
            crate::InputError::new(format!("not an rtvirt.results/v1 document: {e}"))
                .in_file(path)
                .at_line(e.line(), e.column())
        })?;
        read.results.ok_or_else(|| {
            let schema = read.schema.map_or_else(|| "missing".to_string(), |s| s.to_string());
            crate::InputError::field("schema", format!("{schema}: expected \"{RESULTS_SCHEMA}\"")).in_file(path)
        })
    }
}
