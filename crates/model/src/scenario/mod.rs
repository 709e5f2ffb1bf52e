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
pub mod net;
mod raw;
pub mod sim;
mod validate;
mod validate_sim;
mod validate_vcpus;

use crate::duration::Nanos;
use crate::error::InputError;
use crate::exec::ExecModel;
use crate::locate::locate_field;
pub use crate::source::Source;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Default per-core bandwidth cap: SCHED_DEADLINE's default admission limit (950 ms / 1 s).
pub const DEFAULT_BANDWIDTH_CAP: f64 = 0.95;

/// Most host cores a scenario (or `rtvirt plan --cores`) may declare.
pub const MAX_CORES: u32 = 4096;

/// Longest accepted period, offset or reservation parameter in a scenario: one hour. Real-time
/// periods are far shorter (SCHED_DEADLINE itself caps periods at ~4 s by default); the bound
/// keeps time arithmetic (release k = offset + k * period over a 30-day horizon) far from u64
/// overflow.
pub const MAX_TIMING: Nanos = Nanos::from_secs(3600);

/// Longest simulated horizon (`[sim] duration`, `[net] duration`, `--duration`). Memory is
/// bounded whatever the horizon (streaming statistics); the limit keeps a typo ("10000h") from
/// starting a run that would take days.
pub const MAX_HORIZON: Nanos = Nanos::from_secs(30 * 24 * 3600);

/// `duration` when it is a positive horizon of at most [`MAX_HORIZON`], else an error naming
/// `field`.
pub fn check_horizon(duration: Nanos, field: &str) -> Result<Nanos, InputError> {
    if duration.0 == 0 || duration > MAX_HORIZON {
        return Err(InputError::field(
            field,
            format!("{duration}: expected a positive horizon of at most {MAX_HORIZON} (30 days)"),
        ));
    }
    Ok(duration)
}

/// `duration` when it is at most [`MAX_TIMING`], else an error naming `field`.
pub fn check_timing(duration: Nanos, field: &str) -> Result<Nanos, InputError> {
    if duration > MAX_TIMING {
        return Err(InputError::field(field, format!("{duration}: expected at most {MAX_TIMING} (1 hour)")));
    }
    Ok(duration)
}

/// A scenario with every section checked: the only form in which a scenario leaves this crate.
#[derive(Debug, Serialize)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub host: HostSection,
    pub guests: Vec<Guest>,
    /// `[sim]` and `[[sim.thread]]` (defaults when absent).
    #[serde(skip)]
    pub sim: sim::SimSection,
    /// `[net]`: the network-path simulation, when given.
    #[serde(skip)]
    pub net: Option<net::NetScenario>,
    /// `[adapt]`: the online adaptation's settings, when given (`simulate --adapt` uses the
    /// defaults without it).
    #[serde(skip)]
    pub adapt: Option<adapt::AdaptSection>,
    /// The file and text it was read from, to locate errors found later ([`Scenario::locate`]).
    #[serde(skip)]
    pub source: Source,
}

/// The checked `[host]` section: the machine the scenario plans for (see the glossary in
/// docs/ARCHITECTURE.md for the other meanings of "host").
#[derive(Debug, Clone, Serialize)]
pub struct HostSection {
    pub cores: u32,
    pub bandwidth_cap: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestScheduler {
    /// Earliest deadline first.
    Edf,
    /// Fixed priority (higher `priority` number = more urgent, as in Linux SCHED_FIFO).
    Fp,
}

impl GuestScheduler {
    pub fn as_str(self) -> &'static str {
        match self {
            GuestScheduler::Edf => "edf",
            GuestScheduler::Fp => "fp",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Guest {
    pub name: String,
    pub scheduler: GuestScheduler,
    pub server_periods: PeriodChoice,
    pub rho: Option<f64>,
    pub tasks: Vec<Task>,
    /// How the guest schedules its tasks over its real-time vCPUs.
    pub placement: Placement,
    /// The guest's vCPUs may not share a host core (`spread`, default true).
    pub spread: bool,
    /// Its vCPUs, by id 0..n (`vcpus = n`, default 1).
    pub vcpus: Vec<Vcpu>,
}

impl Guest {
    /// The vCPUs that run real-time tasks (all but the housekeeping ones), by id.
    pub fn rt_vcpus(&self) -> impl Iterator<Item = &Vcpu> {
        self.vcpus.iter().filter(|v| !v.housekeeping)
    }

    /// More than one vCPU (housekeeping ones included).
    pub fn is_multi_vcpu(&self) -> bool {
        self.vcpus.len() > 1
    }
}

/// How a guest with several vCPUs schedules its tasks over them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Each task bound to one vCPU (its `vcpu`, else the planner's choice), one scheduler per vCPU.
    #[default]
    Partitioned,
    /// One scheduler over all real-time vCPUs; tasks migrate between them.
    Global,
}

impl Placement {
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Partitioned => "partitioned",
            Placement::Global => "global",
        }
    }
}

/// One vCPU of a guest.
#[derive(Debug, Clone, Serialize)]
pub struct Vcpu {
    /// 0..n, as the guest numbers them.
    pub id: u32,
    /// Runs no real-time task: gets no reservation, only a core (`housekeeping = [id, ...]`).
    pub housekeeping: bool,
    /// `[guest.vcpu]`: how this vCPU's thread runs on the simulated host (the section applies to
    /// every vCPU of the guest; the thread is named `<guest>/vcpu<id>`).
    #[serde(skip)]
    pub sim: sim::VcpuSpec,
}

/// Candidate server periods for a guest's interface.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeriodChoice {
    /// Not given: [`PeriodChoice::DEFAULT_STEPS`] evenly spaced periods up to the smallest task
    /// deadline (see [`PeriodChoice::candidates`]).
    Default,
    List(Vec<Nanos>),
    Range {
        min: Nanos,
        max: Nanos,
        step: Nanos,
    },
}

impl PeriodChoice {
    /// Number of candidates scanned by default.
    pub const DEFAULT_STEPS: u64 = 20;

    /// The candidate periods, ascending and deduplicated. Default: k * Dmin / 20 for k = 1..=20
    /// (Dmin = smallest task deadline), rounded down to whole microseconds, at least 1us.
    pub fn candidates(&self, tasks: &[Task]) -> Vec<Nanos> {
        let mut v: Vec<Nanos> = match self {
            PeriodChoice::List(l) => l.clone(),
            PeriodChoice::Range { min, max, step } => {
                (0..).map(|k| *min + Nanos(k * step.0)).take_while(|p| p <= max).collect()
            }
            PeriodChoice::Default => {
                let dmin = tasks.iter().map(|t| t.deadline.0).min().unwrap_or(10_000_000);
                (1..=Self::DEFAULT_STEPS)
                    .map(|k| {
                        Nanos(((dmin as u128 * k as u128 / Self::DEFAULT_STEPS as u128) as u64 / 1000 * 1000).max(1000))
                    })
                    .collect()
            }
        };
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub name: String,
    pub period: Nanos,
    pub deadline: Nanos,
    pub wcet: Nanos,
    /// Fixed priority (fp guests): higher = more urgent. For EDF guests, the deadline-monotonic
    /// rank is still filled in (informational).
    pub priority: u32,
    /// Whether `priority` was given in the file (false: deadline monotonic default).
    pub priority_given: bool,
    pub rho: Option<f64>,
    /// Release offset of the first job (simulation/measurement), default 0.
    pub offset: Nanos,
    pub exec: ExecModel,
    /// The vCPU the task is bound to (`vcpu = k`, partitioned guests only); None: the planner
    /// assigns it.
    pub vcpu: Option<u32>,
    /// `[[guest.task.phase]]`: models that replace `exec` from their start on (increasing `at`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
}

/// From `at` on (by job release time), a task's jobs draw from `exec`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    pub at: Nanos,
    pub exec: ExecModel,
}

impl Phase {
    /// The model in force for a job released at `release_ns`: the last phase started by then,
    /// else `first`.
    pub fn model_at<'a>(first: &'a ExecModel, phases: &'a [Phase], release_ns: u64) -> &'a ExecModel {
        phases.iter().rev().find(|p| p.at.0 <= release_ns).map_or(first, |p| &p.exec)
    }
}

impl Task {
    /// The execution-time model of a job released at `release_ns`.
    pub fn exec_at(&self, release_ns: u64) -> &ExecModel {
        Phase::model_at(&self.exec, &self.phases, release_ns)
    }

    /// Utilisation WCET / period.
    pub fn utilisation(&self) -> f64 {
        self.wcet.0 as f64 / self.period.0 as f64
    }
}

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

    /// Read and check a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, InputError> {
        let src = crate::input::read_text(path, crate::input::InputKind::Scenario)?;
        Scenario::from_toml(&src, Some(path))
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
