//! The one rule every run length of rtvirt follows (`measure timer|tasks|net client|net server`,
//! `load`): more than zero, at most [`MAX_DURATION_WITHOUT_FORCE`] unless `--force`, and never
//! beyond the model's 30-day horizon.

use crate::error::{Error, Result};
use rtvirt_model::scenario::MAX_HORIZON;
use rtvirt_model::Nanos;

/// Longest run accepted without `--force`.
pub const MAX_DURATION_WITHOUT_FORCE: Nanos = Nanos::from_secs(3600);

/// Check a run length given as `option` (e.g. `--duration`).
pub fn check_duration(option: &str, duration: Nanos, force: bool) -> Result<()> {
    let problem = if duration.0 == 0 {
        "a run must last more than 0"
    } else if duration > MAX_HORIZON {
        "more than 30 days"
    } else if duration > MAX_DURATION_WITHOUT_FORCE && !force {
        "more than 1 hour; add --force for a longer run"
    } else {
        return Ok(());
    };
    Err(Error::input(
        option,
        format!("{duration}: {problem} (expected more than 0 and at most 1 hour, or 30 days with --force)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_long_and_forced_runs() {
        assert!(check_duration("--duration", Nanos(1), false).is_ok());
        assert!(check_duration("--duration", MAX_DURATION_WITHOUT_FORCE, false).is_ok());
        let zero = check_duration("--duration", Nanos(0), true).unwrap_err().to_string();
        assert!(zero.contains("--duration") && zero.contains("more than 0"), "{zero}");
        let long = Nanos::from_secs(3601);
        assert!(check_duration("--duration", long, false).unwrap_err().to_string().contains("--force"));
        assert!(check_duration("--duration", long, true).is_ok());
        assert!(check_duration("--duration", Nanos(MAX_HORIZON.0 + 1), true).is_err());
    }
}
