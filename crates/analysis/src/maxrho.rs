//! The largest uniform rho for which every guest fits (issue: "report the largest uniform rho for
//! which everything fits on the given cores").
//!
//! One rho is applied to every task (overriding task and guest rhos); budgets are non-decreasing
//! in rho (Cantelli bound and quantiles both are), hence so are interfaces, and the search bisects
//! over rho in `(0, 1]` to [`RHO_RESOLUTION`]. `rho = 1` means every task at its WCET. The
//! bisection assumes the partitioning heuristic is monotone in the servers' sizes, which holds for
//! the exact admission test but not always for the greedy order (a known bin-packing anomaly);
//! the reported value is always one at which the plan was verified feasible.

use crate::planner::{plan_at, PlanOptions};
use rtvirt_model::scenario::Scenario;

/// Resolution of the max-rho search.
pub const RHO_RESOLUTION: f64 = 1e-4;

fn fits(scenario: &Scenario, options: &PlanOptions, rho: f64) -> bool {
    plan_at(scenario, options, Some(rho)).plan.feasible
}

/// Largest uniform rho (multiple of [`RHO_RESOLUTION`], or 1.0 when WCET budgets fit) with a
/// feasible plan; None when not even rho = RHO_RESOLUTION fits.
pub fn max_rho(scenario: &Scenario, options: &PlanOptions) -> Option<f64> {
    if fits(scenario, options, 1.0) {
        return Some(1.0);
    }
    let steps = (1.0 / RHO_RESOLUTION).round() as u64;
    // invariant: lo fits, hi does not (in units of RHO_RESOLUTION)
    let (mut lo, mut hi) = (1u64, steps);
    if !fits(scenario, options, lo as f64 * RHO_RESOLUTION) {
        return None;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(scenario, options, mid as f64 * RHO_RESOLUTION) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo as f64 * RHO_RESOLUTION)
}
