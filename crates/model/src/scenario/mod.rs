//! The scenario: host, guests and their periodic tasks (plus simulator/network sections), read
//! from TOML with unknown fields rejected and validated into typed values with clear errors.
//!
//! ```toml
//! [host]
//! cores = 2
//! bandwidth_cap = 0.95          # optional, per core
//!
//! [[guest]]
//! name = "vm1"
//! scheduler = "edf"             # or "fp"
//! server_periods = ["5ms", "10ms"]   # or { min = "1ms", max = "10ms", step = "1ms" }
//! rho = 0.9                     # optional
//! vcpus = 1                     # optional, default 1
//! placement = "partitioned"     # or "global": how the guest schedules its tasks over its vCPUs
//! housekeeping = []             # vCPUs without real-time tasks: no reservation, only a core
//! spread = true                 # the guest's vCPUs on distinct host cores (default)
//!
//! [[guest.task]]
//! name = "t1"
//! period = "10ms"
//! deadline = "8ms"              # optional, default = period
//! wcet = "1ms"                  # with samples also "max" or "p99"
//! exec = { dist = "normal", mean = "300us", sd = "166us" }
//! vcpu = 0                      # partitioned guests: bind the task to vCPU 0 (else planned)
//! ```

pub mod adapt;
mod limits;
pub mod net;
mod raw;
pub mod sim;
mod types;
mod validate;
mod validate_sim;
mod validate_vcpus;

use crate::error::InputError;
use crate::locate::locate_field;
pub use crate::source::Source;
use std::path::Path;

pub use limits::{check_horizon, check_timing, DEFAULT_BANDWIDTH_CAP, MAX_CORES, MAX_HORIZON, MAX_TIMING, MAX_VCPUS};
pub use types::{Guest, GuestScheduler, HostSection, PeriodChoice, Phase, Placement, Scenario, Task, Vcpu};

/// Give tasks the deadline-monotonic priorities the validator assigns when a file gives none
/// (shorter deadline = higher number; ties by period, then order). For generated scenarios.
pub fn assign_deadline_monotonic(tasks: &mut [Task]) {
    tasks.iter_mut().for_each(|t| t.priority_given = false);
    let _ = validate::assign_priorities(tasks, GuestScheduler::Fp);
}

impl Scenario {
    /// Parse and check scenario text, every section. `file` is used in error messages and to
    /// resolve sample paths (relative to the file's folder).
    pub fn from_toml(src: &str, file: Option<&Path>) -> Result<Scenario, InputError> {
        let source = Source::toml(src, file);
        let raw = parse_raw(src).map_err(|e| source.locate(e))?;
        let base = file.and_then(|p| p.parent()).map(Path::to_path_buf).unwrap_or_default();
        let located = source.clone();
        validate::scenario(raw, &base, source).map_err(|e| located.locate(e))
    }

    /// The same document as JSON (`{"host": {...}, "guest": [{..., "task": [...]}]}`): read into
    /// the scenario's types without a tree of the document, for fleets too large to write as TOML.
    /// Errors name the file, the field and, for a syntax or type error, the line and column.
    pub fn from_json(src: &str, file: Option<&Path>) -> Result<Scenario, InputError> {
        let source = Source::file_only(file);
        let de = &mut serde_json::Deserializer::from_str(src);
        let raw: raw::RawScenario = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let text = inner.to_string();
            let msg =
                text.strip_suffix(&format!(" at line {} column {}", inner.line(), inner.column())).unwrap_or(&text);
            let err = match field.as_str() {
                "" | "." => InputError::new(msg),
                _ => InputError::field(field, msg),
            };
            source.locate(err.at_line(inner.line(), inner.column()))
        })?;
        let base = file.and_then(|p| p.parent()).map(Path::to_path_buf).unwrap_or_default();
        let located = source.clone();
        validate::scenario(raw, &base, source).map_err(|e| located.locate(e))
    }

    /// Read and check a scenario file: JSON when its name ends in `.json`, else TOML.
    pub fn from_file(path: &Path) -> Result<Scenario, InputError> {
        use crate::input::{read_text, InputKind};
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            return Scenario::from_json(&read_text(path, InputKind::ScenarioJson)?, Some(path));
        }
        Scenario::from_toml(&read_text(path, InputKind::Scenario)?, Some(path))
    }

    /// The embedded default scenario.
    pub fn default_scenario() -> Scenario {
        Scenario::from_toml(crate::DEFAULT_SCENARIO, None).expect("embedded default scenario is valid")
    }

    /// Give an error about one of this scenario's fields (found after parsing: a command's own
    /// rule, a plan combined with it) its file, line and column.
    pub fn locate(&self, error: InputError) -> InputError {
        self.source.locate(error)
    }

    pub fn guest(&self, name: &str) -> Option<&Guest> {
        self.guests.iter().find(|g| g.name == name)
    }
}

/// TOML -> raw structs, with the field path and line/column of any error.
fn parse_raw(src: &str) -> Result<raw::RawScenario, InputError> {
    parse_toml_located(src)
}

/// Deserialize any TOML document (scenario, host profile...) with located errors: the field path
/// and its line/column, as for scenarios.
pub fn parse_toml_located<T: serde::de::DeserializeOwned>(src: &str) -> Result<T, InputError> {
    crate::toml_shape::check(src)?;
    let de = toml::Deserializer::parse(src).map_err(toml_error(src, None))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = toml_path(e.path());
        toml_error(src, Some(path))(e.into_inner())
    })
}

fn toml_error(src: &str, path: Option<String>) -> impl Fn(toml::de::Error) -> InputError + '_ {
    move |e| {
        let msg = plain_words(e.message().trim());
        let mut err = match &path {
            Some(p) if !p.is_empty() && p != "." => InputError::field(p.clone(), msg),
            _ => InputError::new(msg),
        };
        if let Some((l, c)) = path.as_deref().and_then(|p| locate_field(src, p)) {
            err = err.at_line(l, c);
        } else if let Some(span) = e.span() {
            let (l, c) = crate::error::line_col(src, span.start);
            err = err.at_line(l, c);
        } else if err.message.contains("recursion limit") {
            err.message = "keys or values nested deeper than the TOML reader allows (recursion limit): expected a few \
                           levels of tables, not hundreds"
                .into();
            err = err.at_line(most_nested_line(src), 1);
        }
        err
    }
}

/// 1-based number of the line with the most nesting marks (`.`, `[`, `{`): where a recursion
/// limit was hit, for an error the TOML reader gives without a position.
fn most_nested_line(src: &str) -> usize {
    let depth = |l: &str| l.chars().filter(|c| matches!(c, '.' | '[' | '{')).count();
    src.lines().enumerate().max_by_key(|(i, l)| (depth(l), std::cmp::Reverse(*i))).map_or(1, |(i, _)| i + 1)
}

/// serde's words for a list where a table belongs ("invalid length 1, expected struct RawExec
/// with 6 elements", "invalid type: sequence") name a private type or serde's terms: say what
/// the file needs instead.
fn plain_words(msg: &str) -> String {
    match msg.find("expected struct Raw") {
        Some(_) if msg.starts_with("invalid length") || msg.starts_with("invalid type") => {
            "expected a table such as { key = value, ... } here, not a list".to_string()
        }
        _ => match msg.strip_prefix("invalid type: sequence, expected ") {
            Some(expected) => format!("a list here; expected {expected}"),
            None => msg.to_string(),
        },
    }
}

/// serde_path_to_error's path ("guest[1].task[0].wcet" style), mapped to file field names.
fn toml_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
