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
        let source = Source::toml(text, Some(path));
        let raw: RawSweep = parse_toml_located(text).map_err(|e| source.locate(e))?;
        let base = path.parent().unwrap_or(Path::new(""));
        Sweep::check(raw, base).map_err(|e| source.locate(e))
    }

    fn check(raw: RawSweep, base: &Path) -> Result<Sweep, InputError> {
        if raw.scenarios.is_empty() {
            return Err(InputError::field("scenarios", "empty list: expected at least one scenario file"));
        }
        let rho = raw.rho.unwrap_or_default();
        if let Some(r) = rho.iter().find(|r| !(**r > 0.0 && **r < 1.0)) {
            return Err(InputError::field("rho", format!("{r}: expected probabilities strictly between 0 and 1")));
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
        let mut scenarios = Vec::with_capacity(raw.scenarios.len());
        for p in &raw.scenarios {
            let full = base.join(p);
            let s = Scenario::from_file(&full)?;
            if s.net.is_some() {
                return Err(InputError::field("scenarios", "a scenario with a [net] section: sweeps run the CPU scheduling model; run network-path scenarios one by one with `rtvirt simulate FILE`").in_file(&full));
            }
            scenarios.push((full, s));
        }
        Ok(Sweep { scenarios, seeds, rho, duration })
    }
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
        let e = Sweep::from_toml("scenarios = [\"missing.toml\"]\n", &path).unwrap_err();
        assert!(e.to_string().contains("missing.toml"), "{e}");
    }
}
