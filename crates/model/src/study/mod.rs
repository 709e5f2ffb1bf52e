//! The study file (`rtvirt study FILE.toml`): a matrix of repeated measurements, read and checked
//! like a scenario (same TOML parser, one [`Source::locate`]), and the study's index
//! (`rtvirt.study/v1`, [`index`]) that lists every cell and run written.
//!
//! ```toml
//! name = "tuning"
//! repeats = 3                      # runs per cell
//! duration = "2s"                  # each run
//! where = ["host", "container"]    # host | container | vm
//! guest_kernels = ["rt", "nrt"]    # with "vm": a cell per guest kernel
//!
//! [[configuration]]                # none: the host as it is
//! name = "stock"
//! [[configuration]]
//! name = "tuned"
//! profile = "tuned.toml"           # or plan = "plan.json" with vms = ["g=/run/g.qmp"]
//!
//! [[load]]                         # none: no load
//! name = "stress"
//! loads = ["syscalls:2@0"]         # as measure --load
//!
//! [[measure]]
//! name = "tcp_rr"
//! kind = "net-rr"                  # timer | net-rr | net-stream | tasks
//! options = { tcp = true, arrivals = "back-to-back" }   # as the measure command's options
//! ```
//!
//! Cells are the product configuration x where (x guest kernel) x load x measurement, run in
//! that order (outermost first, each axis in file order), the runs of a cell back to back. Paths
//! (profile, plan, a tasks scenario) are relative to the study file.

pub mod index;

use crate::duration::Nanos;
use crate::error::InputError;
use crate::scenario::parse_toml_located;
use crate::source::Source;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest number of runs (cells x repeats) of one study.
pub const MAX_RUNS: u64 = 100_000;
/// Longest run.
pub const MAX_RUN: Nanos = Nanos::from_secs(3600);
/// Options a study sets itself (a measurement may not set them).
pub const STUDY_OPTIONS: &[&str] = &["in", "load", "format", "duration", "guest_kernel", "guest-kernel", "connect"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStudy {
    name: String,
    #[serde(default)]
    description: Option<String>,
    repeats: u32,
    duration: Nanos,
    #[serde(rename = "where", default)]
    places: Option<Vec<Place>>,
    #[serde(default)]
    guest_kernels: Option<Vec<String>>,
    #[serde(rename = "configuration", default)]
    configurations: Vec<Configuration>,
    #[serde(rename = "load", default)]
    loads: Vec<LoadSet>,
    #[serde(rename = "measure")]
    measurements: Vec<Measurement>,
}

/// Where a cell's measurement runs (`measure --in`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    Host,
    Container,
    Vm,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::Host => "host",
            Place::Container => "container",
            Place::Vm => "vm",
        }
    }
}

/// A host configuration: applied before each of its cells and reverted after.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    pub name: String,
    /// An rtvirt profile (rtvirt.profile/v1 TOML).
    #[serde(default)]
    pub profile: Option<PathBuf>,
    /// A plan (rtvirt.plan/v1 JSON).
    #[serde(default)]
    pub plan: Option<PathBuf>,
    /// Guests the plan or profile names: GUEST=QMP_SOCKET[,vcpu=N] (as `host apply --vm`).
    #[serde(default)]
    pub vms: Vec<String>,
    /// Threads standing for guests' vCPUs: GUEST=TID[,vcpu=N] (as `host apply --pid`).
    #[serde(default)]
    pub pids: Vec<String>,
    /// Apply even if the lint fails (as `host apply --force`).
    #[serde(default)]
    pub force: bool,
}

impl Configuration {
    /// The file to apply (profile or plan), if any.
    pub fn input(&self) -> Option<&Path> {
        self.profile.as_deref().or(self.plan.as_deref())
    }
}

/// A set of interference loads (`measure --load`), run during each run of its cells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSet {
    pub name: String,
    #[serde(default)]
    pub loads: Vec<String>,
}

/// What a measurement measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeasureKind {
    Timer,
    NetRr,
    NetStream,
    Tasks,
}

impl MeasureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MeasureKind::Timer => "timer",
            MeasureKind::NetRr => "net-rr",
            MeasureKind::NetStream => "net-stream",
            MeasureKind::Tasks => "tasks",
        }
    }
}

/// An option value as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "a string, number, true/false or a list of them")]
pub enum OptionValue {
    Flag(bool),
    Integer(i64),
    Float(f64),
    Text(String),
    List(Vec<OptionValue>),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    pub name: String,
    pub kind: MeasureKind,
    /// The measure command's long options without `--` (`interval = "1ms"`, `tcp = true`), in
    /// key order.
    #[serde(default)]
    pub options: BTreeMap<String, OptionValue>,
}

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// "configuration/where[-kernel]/load/measurement".
    pub id: String,
    pub configuration: usize,
    pub place: Place,
    pub guest_kernel: Option<String>,
    pub load: usize,
    pub measurement: usize,
}

/// A checked study.
#[derive(Debug, Clone)]
pub struct Study {
    pub name: String,
    pub description: Option<String>,
    pub repeats: u32,
    pub duration: Nanos,
    pub places: Vec<Place>,
    pub guest_kernels: Vec<String>,
    pub configurations: Vec<Configuration>,
    pub loads: Vec<LoadSet>,
    pub measurements: Vec<Measurement>,
    pub source: Source,
}

impl Study {
    /// Read a study file; its paths are made relative to the current directory.
    pub fn from_file(path: &Path) -> Result<Study, InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Study)?;
        Study::from_toml(&text, Some(path))
    }

    /// Parse study text read from `path`.
    pub fn from_toml(text: &str, path: Option<&Path>) -> Result<Study, InputError> {
        let source = Source::toml(text, path);
        let raw: RawStudy = parse_toml_located(text).map_err(|e| source.locate(e))?;
        let base = path.and_then(Path::parent).unwrap_or(Path::new(""));
        check(raw, base, source.clone()).map_err(|e| source.locate(e))
    }

    /// Give `error` the line of its field in the study file (for checks made later, e.g. a
    /// measurement's options by the command's own parser).
    pub fn locate(&self, error: InputError) -> InputError {
        self.source.locate(error)
    }

    /// Run each cell `repeats` times (the `--repeats` option, named `option` in errors), within
    /// the study's limit of [`MAX_RUNS`].
    pub fn set_repeats(&mut self, repeats: u32, option: &str) -> Result<(), InputError> {
        if repeats == 0 {
            return Err(InputError::field(option, "0: expected at least 1 run per cell"));
        }
        self.check_runs(option, repeats)?;
        self.repeats = repeats;
        Ok(())
    }

    /// The number of cells (None: more than a u64 counts).
    fn cell_count(&self) -> Option<u64> {
        let vm = self.places.contains(&Place::Vm);
        let places = self.places.len() as u64 - u64::from(vm) + if vm { self.guest_kernels.len() as u64 } else { 0 };
        [self.configurations.len(), self.loads.len(), self.measurements.len()]
            .into_iter()
            .try_fold(places, |n, axis| n.checked_mul(axis as u64))
    }

    /// At most [`MAX_RUNS`] runs (cells x `repeats`, counted without overflow); else an error at
    /// `field`.
    fn check_runs(&self, field: &str, repeats: u32) -> Result<(), InputError> {
        let cells = self.cell_count();
        match cells.and_then(|c| c.checked_mul(u64::from(repeats))) {
            Some(runs) if runs <= MAX_RUNS => Ok(()),
            runs => {
                let runs = runs.map_or("more than 2^64".into(), |r| r.to_string());
                let cells = cells.map_or("more than 2^64".into(), |c| c.to_string());
                Err(InputError::field(
                    field,
                    format!("{repeats} runs of each of {cells} cells = {runs} runs: at most {MAX_RUNS} per study"),
                ))
            }
        }
    }

    /// Every cell, in the order they run.
    pub fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for (c, configuration) in self.configurations.iter().enumerate() {
            for &place in &self.places {
                let kernels: Vec<Option<&String>> = match place {
                    Place::Vm => self.guest_kernels.iter().map(Some).collect(),
                    _ => vec![None],
                };
                for kernel in kernels {
                    for (l, load) in self.loads.iter().enumerate() {
                        for (m, measurement) in self.measurements.iter().enumerate() {
                            let at = match kernel {
                                Some(k) => format!("vm-{k}"),
                                None => place.as_str().to_string(),
                            };
                            cells.push(Cell {
                                id: format!("{}/{at}/{}/{}", configuration.name, load.name, measurement.name),
                                configuration: c,
                                place,
                                guest_kernel: kernel.cloned(),
                                load: l,
                                measurement: m,
                            });
                        }
                    }
                }
            }
        }
        cells
    }
}

/// A name used in cell ids and file names: letters, digits, `-`, `_`, `.`.
fn check_name(field: &str, name: &str) -> Result<(), InputError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(InputError::field(field, format!("\"{name}\": expected 1 to 64 letters, digits, '-', '_' or '.'")))
    }
}

fn unique<'a>(section: &str, names: impl Iterator<Item = &'a str>) -> Result<(), InputError> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, name) in names.enumerate() {
        check_name(&format!("{section}[{i}].name"), name)?;
        if !seen.insert(name) {
            return Err(InputError::field(format!("{section}[{i}].name"), format!("\"{name}\" is used twice")));
        }
    }
    Ok(())
}

fn check(raw: RawStudy, base: &Path, source: Source) -> Result<Study, InputError> {
    check_name("name", &raw.name)?;
    if raw.repeats == 0 {
        return Err(InputError::field("repeats", "0: expected at least 1 run per cell"));
    }
    if raw.duration.0 == 0 || raw.duration > MAX_RUN {
        return Err(InputError::field("duration", format!("{}: expected more than 0 and at most 1h", raw.duration)));
    }
    let places = raw.places.unwrap_or_else(|| vec![Place::Host]);
    if places.is_empty() {
        return Err(InputError::field("where", "empty list: expected host, container and/or vm"));
    }
    no_repeats("where", &places, |p| p.as_str())?;
    let guest_kernels = raw.guest_kernels.unwrap_or_else(|| vec!["rt".into()]);
    if let Some((i, k)) = guest_kernels.iter().enumerate().find(|(_, k)| !matches!(k.as_str(), "rt" | "nrt")) {
        return Err(InputError::field(format!("guest_kernels[{i}]"), format!("\"{k}\": expected \"rt\" or \"nrt\"")));
    }
    no_repeats("guest_kernels", &guest_kernels, String::as_str)?;
    if places.contains(&Place::Vm) && guest_kernels.is_empty() {
        return Err(InputError::field("guest_kernels", "empty list: a vm cell needs \"rt\" and/or \"nrt\""));
    }
    let mut configurations = raw.configurations;
    if configurations.is_empty() {
        configurations.push(Configuration { name: "none".into(), ..Default::default() });
    }
    unique("configuration", configurations.iter().map(|c| c.name.as_str()))?;
    for (i, c) in configurations.iter_mut().enumerate() {
        if c.profile.is_some() && c.plan.is_some() {
            return Err(InputError::field(format!("configuration[{i}].plan"), "a profile or a plan, not both"));
        }
        if c.input().is_none() && !(c.vms.is_empty() && c.pids.is_empty()) {
            return Err(InputError::field(format!("configuration[{i}].vms"), "guests need a profile or a plan"));
        }
        c.profile = c.profile.as_ref().map(|p| base.join(p));
        c.plan = c.plan.as_ref().map(|p| base.join(p));
    }
    let mut loads = raw.loads;
    if loads.is_empty() {
        loads.push(LoadSet { name: "none".into(), loads: vec![] });
    }
    unique("load", loads.iter().map(|l| l.name.as_str()))?;
    if raw.measurements.is_empty() {
        return Err(InputError::field("measure", "no [[measure]]: expected at least one measurement"));
    }
    unique("measure", raw.measurements.iter().map(|m| m.name.as_str()))?;
    let mut measurements = raw.measurements;
    for (i, m) in measurements.iter_mut().enumerate() {
        if let Some(key) = m.options.keys().find(|k| STUDY_OPTIONS.contains(&k.as_str())) {
            return Err(InputError::field(
                format!("measure[{i}].options.{key}"),
                "set by the study (where, load, duration): expected a measurement option",
            ));
        }
        for key in ["scenario", "plan"] {
            if let Some(OptionValue::Text(path)) = m.options.get_mut(key) {
                *path = base.join(&*path).display().to_string();
            }
        }
    }
    let study = Study {
        name: raw.name,
        description: raw.description,
        repeats: raw.repeats,
        duration: raw.duration,
        places,
        guest_kernels,
        configurations,
        loads,
        measurements,
        source,
    };
    study.check_runs("repeats", study.repeats)?;
    Ok(study)
}

/// The first entry of `items` listed before (with its index), as a located error: two equal
/// places or guest kernels would give two cells one id, and their runs one file.
fn no_repeats<T: PartialEq>(field: &str, items: &[T], show: impl Fn(&T) -> &str) -> Result<(), InputError> {
    match items.iter().enumerate().find(|(i, item)| items[..*i].contains(item)) {
        Some((i, item)) => Err(InputError::field(
            format!("{field}[{i}]"),
            format!(
                "\"{}\" is listed twice: expected each once (its cells would share their ids and run files)",
                show(item)
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
