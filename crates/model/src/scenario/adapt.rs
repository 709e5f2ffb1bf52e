//! `[adapt]`: how `rtvirt simulate --adapt` (and `rtvirt host adapt --scenario`) adapt the
//! reservations online. Every key is optional; the defaults are [`AdaptSection::default`].
//!
//! ```toml
//! [adapt]
//! interval = "100ms"      # the controller runs every interval
//! rho = 0.9               # probability a job fits its budget (Cantelli or quantile bound)
//! budget = "cantelli"     # or "quantile"
//! window = 100            # samples kept per task (the sliding window)
//! min_samples = 20        # samples a window needs before it sizes the reservation
//! grow_band = 0.02        # grow when the wanted budget is more than 2% above the current one
//! shrink_band = 0.1       # shrink when it is more than 10% below ...
//! min_interval = "1s"     # ... and at least this long after the guest's last change
//! keep = ["vm1", "vm2"]   # criticality: guests kept first when a core is short (default: file order)
//! ```

use crate::duration::Nanos;
use crate::error::{shown, InputError};
use serde::Deserialize;

/// Largest window (samples per task): bounds the controller's memory.
pub const MAX_WINDOW: usize = 100_000;

/// Most controller steps in one run (`duration / interval`): bounds the reservation series.
pub const MAX_STEPS: u64 = 100_000;

/// `[adapt]` as written.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAdapt {
    pub interval: Option<Nanos>,
    pub rho: Option<f64>,
    pub budget: Option<String>,
    pub window: Option<i64>,
    pub min_samples: Option<i64>,
    pub grow_band: Option<f64>,
    pub shrink_band: Option<f64>,
    pub min_interval: Option<Nanos>,
    pub keep: Option<Vec<String>>,
}

/// Which bound sizes a task's budget from its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdaptBudget {
    Cantelli,
    Quantile,
}

/// The checked `[adapt]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptSection {
    pub interval: Nanos,
    pub rho: f64,
    pub budget: AdaptBudget,
    pub window: usize,
    pub min_samples: usize,
    pub grow_band: f64,
    pub shrink_band: f64,
    pub min_interval: Nanos,
    /// Guest names, most critical first (guests not named follow in file order).
    pub keep: Vec<String>,
}

impl Default for AdaptSection {
    fn default() -> Self {
        AdaptSection {
            interval: Nanos::from_ms(100),
            rho: 0.9,
            budget: AdaptBudget::Cantelli,
            window: 100,
            min_samples: 20,
            grow_band: 0.02,
            shrink_band: 0.1,
            min_interval: Nanos::from_secs(1),
            keep: vec![],
        }
    }
}

impl AdaptSection {
    /// Criticality rank of guest `name` (0 = kept first): its place in `keep`, else after them.
    pub fn rank(&self, name: &str) -> u32 {
        self.keep.iter().position(|k| k == name).unwrap_or(self.keep.len()) as u32
    }
}

impl RawAdapt {
    /// Checked against the scenario's guest names (errors name the `[adapt]` field).
    pub(crate) fn validate(self, guests: &[&str]) -> Result<AdaptSection, InputError> {
        let d = AdaptSection::default();
        let field = |f: &str, msg: String| Err(InputError::field(format!("adapt.{f}"), msg));
        let interval = self.interval.unwrap_or(d.interval);
        if interval < Nanos::from_us(100) || interval > crate::scenario::limits::MAX_TIMING {
            return field("interval", format!("{interval}: expected 100us to 1h"));
        }
        let rho = self.rho.unwrap_or(d.rho);
        if !(rho > 0.0 && rho <= 1.0) {
            return field("rho", format!("{}: expected a probability in (0, 1]", shown(rho)));
        }
        let budget = match self.budget.as_deref() {
            None | Some("cantelli") => AdaptBudget::Cantelli,
            Some("quantile") => AdaptBudget::Quantile,
            Some(other) => return field("budget", format!("\"{other}\": expected \"cantelli\" or \"quantile\"")),
        };
        let window = self.window.unwrap_or(d.window as i64);
        if !(1..=MAX_WINDOW as i64).contains(&window) {
            return field("window", format!("{window}: expected 1 to {MAX_WINDOW} samples"));
        }
        let min_samples = self.min_samples.unwrap_or((d.min_samples as i64).min(window));
        if !(1..=window).contains(&min_samples) {
            return field("min_samples", format!("{min_samples}: expected 1 to window ({window})"));
        }
        let band = |v: Option<f64>, dflt: f64, f: &str| match v.unwrap_or(dflt) {
            b if (0.0..1.0).contains(&b) => Ok(b),
            b => Err(InputError::field(format!("adapt.{f}"), format!("{}: expected a fraction in [0, 1)", shown(b)))),
        };
        let grow_band = band(self.grow_band, d.grow_band, "grow_band")?;
        let shrink_band = band(self.shrink_band, d.shrink_band, "shrink_band")?;
        let min_interval = self.min_interval.unwrap_or(d.min_interval);
        if min_interval > crate::scenario::limits::MAX_TIMING {
            return field("min_interval", format!("{min_interval}: expected at most 1h"));
        }
        let keep = self.keep.unwrap_or_default();
        for (i, k) in keep.iter().enumerate() {
            if !guests.contains(&k.as_str()) {
                return field(&format!("keep[{i}]"), format!("\"{k}\" is not a guest: expected one of {guests:?}"));
            }
            if keep[..i].contains(k) {
                return field(&format!("keep[{i}]"), format!("\"{k}\" is named twice: expected each guest once"));
            }
        }
        Ok(AdaptSection {
            interval,
            rho,
            budget,
            window: window as usize,
            min_samples: min_samples as usize,
            grow_band,
            shrink_band,
            min_interval,
            keep,
        })
    }
}
