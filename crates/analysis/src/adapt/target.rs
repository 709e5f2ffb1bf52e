//! The reservation a guest wants from what was observed, sized by the planner's own code, and
//! the hysteresis and rate limit that decide whether to ask for it now.
//!
//! - From per-task windows (a guest agent reports each job): each task's `c` is the planner's
//!   budget ([`task_budget`]: Cantelli 1928 or the window's quantile, at most the WCET) with the
//!   window as the task's samples; the guest's least interface at its current server period is
//!   [`best_interface`] (Shin & Lee 2003 PRM; Easwaran et al. 2007 EDP) - the plan's step 1 and 2
//!   (Burns 2014) redone on fresh data.
//! - From server-period windows (host-side inference: CPU time the vCPU used per server period,
//!   nothing known of its tasks): the budget is the bound of the per-period demand itself, as the
//!   legacy feedback scheduler sizes an unmodified application's reservation from the budget it
//!   consumed (Cucinotta, Checconi, Abeni & Palopoli 2010); a window in which the budget was used
//!   up more often than `1 - rho` is censored (the demand may be larger) and grows by a factor.
//! - The window plays the part of the predictor of adaptive reservations (a moving estimate of
//!   the execution-time distribution; Abeni, Cucinotta, Lipari, Marzario & Palopoli 2005; AQuoSA,
//!   Palopoli, Cucinotta, Marzario & Lipari 2009). Hysteresis and a rate limit keep the loop
//!   quiet: grow beyond a small band at once (a deadline is at stake), shrink only beyond a larger
//!   band and only `min_interval_ns` after the last change, so noise around a level causes no
//!   oscillation.

use crate::adapt::config::AdaptConfig;
use crate::adapt::window::Window;
use crate::budgets::{cantelli, task_budget, BudgetMethod, TaskBudget};
use crate::interface::{best_interface, Interface, Model};
use rtvirt_model::exec::ExecModel;
use rtvirt_model::scenario::Guest;

/// What a guest's observations ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wanted {
    pub interface: Interface,
    /// Observed mean demand as a bandwidth (sum of mean / period).
    pub demand: f64,
}

/// The wanted reservation from per-task windows (aligned with `guest.tasks`) at the fixed
/// server `period`; a guest not schedulable even on a whole core at that period wants all of it.
pub fn from_tasks(guest: &Guest, windows: &[Window], period: u64, c: &AdaptConfig) -> Wanted {
    let budgets: Vec<TaskBudget> = guest
        .tasks
        .iter()
        .zip(windows)
        .map(|(t, w)| {
            let mut observed = t.clone();
            observed.exec = ExecModel::Samples(w.samples(&format!("{}/{} window", guest.name, t.name)));
            task_budget(&observed, Some(c.rho), c.budget)
        })
        .collect();
    let tasks = crate::planner::sporadic_tasks(guest, &budgets);
    let whole = Interface { period, budget: period, deadline: period };
    let interface = best_interface(&tasks, guest.scheduler, c.model, &[period]).unwrap_or(whole);
    let demand = guest.tasks.iter().zip(windows).map(|(t, w)| w.mean() / t.period.0 as f64).sum();
    Wanted { interface: clamp_budget(interface, c), demand }
}

/// The wanted reservation from a window of CPU time used per server period, given the current
/// reservation (its budget tells censored samples).
pub fn from_server_periods(window: &Window, current: Interface, c: &AdaptConfig) -> Wanted {
    let samples = window.samples("server-period window");
    let bound = match c.budget {
        BudgetMethod::Quantile => samples.quantile(c.rho).0 as f64,
        BudgetMethod::Cantelli => cantelli(samples.mean(), samples.variance(), c.rho),
    };
    let saturated = window.fraction_at_least(current.budget) > 1.0 - c.rho;
    let bound = if saturated { bound.max(current.budget as f64 * c.saturation_growth) } else { bound };
    let budget = bound.ceil().min(current.period as f64) as u64;
    let deadline = match c.model {
        Model::Prm => current.period,
        Model::Edp => current.deadline.max(budget),
    };
    let interface = Interface { period: current.period, budget, deadline };
    Wanted { interface: clamp_budget(interface, c), demand: window.mean() / current.period as f64 }
}

fn clamp_budget(mut i: Interface, c: &AdaptConfig) -> Interface {
    i.budget = i.budget.clamp(c.min_budget_ns.min(i.period), i.period);
    i.deadline = i.deadline.max(i.budget);
    i
}

/// Why a reservation is to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Grow,
    Shrink,
}

/// Whether to ask for `wanted` now (hysteresis and rate limit), else keep `current`.
pub fn propose(current: Interface, wanted: Interface, since_change: Option<u64>, c: &AdaptConfig) -> Option<Move> {
    let (now, want) = (current.budget as f64, wanted.budget as f64);
    if want > now * (1.0 + c.grow_band) {
        return Some(Move::Grow);
    }
    let rested = since_change.is_none_or(|d| d >= c.min_interval_ns);
    (want < now * (1.0 - c.shrink_band) && rested).then_some(Move::Shrink)
}
