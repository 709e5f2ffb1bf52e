//! The sweep file (`rtvirt simulate --sweep SWEEP.toml`): scenarios x rho x seeds, read and
//! checked like a scenario (same TOML parser, one [`Source::locate`]); every scenario it names is
//! read and checked in full. The simulator (`rtvirt-sim`, `sweep.rs`) runs the grid.
//!
//! ```toml
//! scenarios = ["seeds5.toml"]   # relative to the sweep file
//! seeds = [1, 2, 3]             # or { first = 1, count = 10 }
//! rho = [0.1, 0.5, 0.9]         # optional: plan every scenario at each rho (SCHED_DEADLINE)
//! duration = "10s"              # optional, overrides the scenarios' [sim] duration
//! ```

use crate::duration::Nanos;
use crate::error::shown;
use crate::error::InputError;
use crate::scenario::{check_horizon, parse_toml_located, Scenario};
use crate::source::Source;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Largest grid accepted (cells).
pub const MAX_CELLS: usize = 1_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    scenarios: Vec<String>,
    seeds: Option<RawSeeds>,
    rho: Option<Vec<f64>>,
    duration: Option<Nanos>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "a list of seeds such as [1, 2, 3] or { first = 1, count = 10 }")]
enum RawSeeds {
    List(Vec<u64>),
    Range { first: u64, count: u64 },
}

/// A checked sweep.
#[derive(Debug)]
pub struct Sweep {
    /// Each scenario's path and checked content, in file order.
    pub scenarios: Vec<(PathBuf, Scenario)>,
    pub seeds: Vec<u64>,
    /// Empty: run the scenarios as they are (no planning).
    pub rho: Vec<f64>,
    pub duration: Option<Nanos>,
}

impl Sweep {
    /// Read a sweep file; scenario paths are relative to it, and each scenario is checked.
    pub fn from_file(path: &Path) -> Result<Sweep, InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Sweep)?;
        Sweep::from_toml(&text, path)
    }

    /// Parse sweep text read from `path`.
    pub fn from_toml(text: &str, path: &Path) -> Result<Sweep, InputError> {
        let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
        Sweep::from_toml_with(text, Some(path), |_, entry| {
            let full = base.join(entry);
            Scenario::from_file(&full).map(|s| (full, s))
        })
    }

    /// Parse sweep text (from `path`, if a file) whose `scenarios` entries are turned into
    /// scenarios by `scenario(index, entry)` (the Python package's sweeps take scenarios made in
    /// code as well as files). Errors are located as [`Sweep::from_toml`] locates them.
    pub fn from_toml_with(
        text: &str,
        path: Option<&Path>,
        scenario: impl Fn(usize, &str) -> Result<(PathBuf, Scenario), InputError>,
    ) -> Result<Sweep, InputError> {
        let source = Source::toml(text, path);
        let raw: RawSweep = parse_toml_located(text).map_err(|e| source.locate(e))?;
        let entries = raw.scenarios.clone();
        let mut sweep = Sweep::check(raw).map_err(|e| source.locate(e))?;
        sweep.scenarios = load_scenarios(&entries, &source, scenario)?;
        Ok(sweep)
    }

    /// Every rule of the sweep file itself (its scenarios are read by [`load_scenarios`]).
    fn check(raw: RawSweep) -> Result<Sweep, InputError> {
        if raw.scenarios.is_empty() {
            return Err(InputError::field("scenarios", "empty list: expected at least one scenario file"));
        }
        let rho = raw.rho.unwrap_or_default();
        if let Some(r) = rho.iter().find(|r| !(**r > 0.0 && **r < 1.0)) {
            return Err(InputError::field(
                "rho",
                format!("{}: expected probabilities strictly between 0 and 1", shown(*r)),
            ));
        }
        let seed_count = match &raw.seeds {
            None => 1,
            Some(RawSeeds::List(l)) => l.len() as u128,
            Some(RawSeeds::Range { count, .. }) => *count as u128,
        };
        // counted before anything is allocated: a huge `count` is refused, not materialised
        let cells = raw.scenarios.len() as u128 * rho.len().max(1) as u128 * seed_count;
        if cells > MAX_CELLS as u128 {
            return Err(InputError::field("seeds", format!("{cells} runs: at most {MAX_CELLS} per sweep")));
        }
        let seeds = match raw.seeds {
            None => vec![1],
            Some(RawSeeds::List(l)) if !l.is_empty() => l,
            Some(RawSeeds::Range { first, count }) if count > 0 && first.checked_add(count).is_some() => {
                (first..first + count).collect()
            }
            Some(_) => return Err(InputError::field("seeds", "expected a non-empty list or a positive count")),
        };
        let duration = raw.duration.map(|d| check_horizon(d, "duration")).transpose()?;
        Ok(Sweep { scenarios: Vec::new(), seeds, rho, duration })
    }
}

/// Read and check each scenario of the sweep. An error inside a scenario keeps that file's own
/// location; a scenario that cannot be read, or has a `[net]` section, is an error at its entry
/// `scenarios[i]` of the sweep file.
fn load_scenarios(
    entries: &[String],
    source: &Source,
    scenario: impl Fn(usize, &str) -> Result<(PathBuf, Scenario), InputError>,
) -> Result<Vec<(PathBuf, Scenario)>, InputError> {
    let mut scenarios = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let at_entry = |message: String| source.locate(InputError::field(format!("scenarios[{i}]"), message));
        let (full, s) = scenario(i, entry).map_err(|e| match (&e.at.line_col, &e.at.field, &e.at.file) {
            (None, None, Some(file)) => at_entry(format!("{}: {}", file.display(), e.message)),
            (None, None, None) => at_entry(format!("{entry}: {}", e.message)),
            _ => e,
        })?;
        if s.net.is_some() {
            return Err(at_entry(format!(
                "{}: a scenario with a [net] section: sweeps run the CPU scheduling model; run network-path scenarios \
                 one by one with `rtvirt simulate FILE`",
                full.display()
            )));
        }
        scenarios.push((full, s));
    }
    Ok(scenarios)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_seed_count_is_refused_before_allocating() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sweep.toml");
        let e = Sweep::from_toml("scenarios = [\"a.toml\"]\nseeds = { first = 1, count = 1000000000 }\n", &path)
            .unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("seeds"), "{e}");
        assert_eq!(e.at.line_col.map(|l| l.0), Some(2), "{e}");
        assert!(e.message.contains("at most 1000000"), "{e}");
    }

    #[test]
    fn errors_name_the_sweep_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sweep.toml");
        let e = Sweep::from_toml("scenarios = [\"a.toml\"]\nrho = [1.5]\n", &path).unwrap_err();
        assert_eq!((e.at.field.as_deref(), e.at.line_col.map(|l| l.0)), (Some("rho"), Some(2)), "{e}");
        assert_eq!(e.at.file.as_deref(), Some(path.as_path()));
        let e = Sweep::from_toml("rho = [0.5]\nscenarios = [\"missing.toml\"]\n", &path).unwrap_err();
        assert!(e.to_string().contains("missing.toml"), "{e}");
        // found by the fuzzing harness: a scenario that cannot be read is located at its entry
        assert_eq!((e.at.field.as_deref(), e.at.line_col.map(|l| l.0)), (Some("scenarios[0]"), Some(2)), "{e}");
        assert_eq!(e.at.file.as_deref(), Some(path.as_path()));
    }
}
