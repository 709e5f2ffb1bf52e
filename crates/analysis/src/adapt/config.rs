//! The adaptive controller's settings: a scenario's `[adapt]` section (whose defaults are the
//! documented ones, `rtvirt_model::scenario::adapt`) plus the reservation model and the cap.

use crate::budgets::BudgetMethod;
use crate::interface::Model;
use rtvirt_model::scenario::adapt::{AdaptBudget, AdaptSection, MAX_WINDOW};
use rtvirt_model::scenario::DEFAULT_BANDWIDTH_CAP;

/// SCHED_DEADLINE's smallest runtime (`1 << DL_SCALE` ns): no reservation is made smaller.
pub const MIN_RUNTIME_NS: u64 = 1024;

/// How the controller sizes and changes reservations.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptConfig {
    /// Probability a job stays within its budget (Cantelli or quantile bound).
    pub rho: f64,
    /// Cantelli (default) or the empirical quantile of the window.
    pub budget: BudgetMethod,
    /// PRM (deadline = period) or EDP (least deadline search) for the guest's interface.
    pub model: Model,
    /// Per-core bandwidth cap the admission never exceeds.
    pub cap: f64,
    /// Samples kept per task (and per guest for server-period demand): the sliding window.
    pub window: usize,
    /// Samples a window needs before the controller sizes from it.
    pub min_samples: usize,
    /// Grow only when the wanted budget exceeds the current one by more than this fraction.
    pub grow_band: f64,
    /// Shrink only when the wanted budget is below the current one by more than this fraction.
    pub shrink_band: f64,
    /// Rate limit: a guest shrinks at most once per this many ns after its last change (growth,
    /// which protects deadlines, is not delayed).
    pub min_interval_ns: u64,
    /// Smallest budget any reservation gets (also what a degraded guest keeps at least). Default
    /// [`MIN_RUNTIME_NS`].
    pub min_budget_ns: u64,
    /// Server-period demand only: a window in which more than `1 - rho` of the periods used the
    /// whole budget (the demand is censored there) grows the budget by this factor. Default 1.25.
    pub saturation_growth: f64,
}

impl Default for AdaptConfig {
    /// The `[adapt]` section's defaults, PRM, SCHED_DEADLINE's default cap.
    fn default() -> Self {
        AdaptConfig::from_section(&AdaptSection::default(), Model::Prm, DEFAULT_BANDWIDTH_CAP)
    }
}

impl AdaptConfig {
    /// A scenario's `[adapt]` section for reservations of `model` under the per-core `cap`.
    pub fn from_section(a: &AdaptSection, model: Model, cap: f64) -> AdaptConfig {
        AdaptConfig {
            rho: a.rho,
            budget: match a.budget {
                AdaptBudget::Cantelli => BudgetMethod::Cantelli,
                AdaptBudget::Quantile => BudgetMethod::Quantile,
            },
            model,
            cap,
            window: a.window,
            min_samples: a.min_samples,
            grow_band: a.grow_band,
            shrink_band: a.shrink_band,
            min_interval_ns: a.min_interval.0,
            min_budget_ns: MIN_RUNTIME_NS,
            saturation_growth: 1.25,
        }
    }

    /// Which setting is out of range, and what was expected (None: all fine).
    pub fn check(&self) -> Option<(&'static str, String)> {
        let bad = |field, expected: &str| Some((field, expected.to_string()));
        if !(self.rho > 0.0 && self.rho <= 1.0) {
            return bad("rho", "a probability in (0, 1]");
        }
        if !(self.cap > 0.0 && self.cap <= 1.0) {
            return bad("cap", "a per-core bandwidth in (0, 1]");
        }
        if self.window == 0 || self.window > MAX_WINDOW {
            return bad("window", "between 1 and 100000 samples");
        }
        if self.min_samples == 0 || self.min_samples > self.window {
            return bad("min_samples", "at least 1 and at most window");
        }
        if !(0.0..1.0).contains(&self.grow_band) || !(0.0..1.0).contains(&self.shrink_band) {
            return bad("grow_band", "grow_band and shrink_band in [0, 1)");
        }
        if !(self.saturation_growth >= 1.0 && self.saturation_growth <= 10.0) {
            return bad("saturation_growth", "a factor in [1, 10]");
        }
        None
    }
}
