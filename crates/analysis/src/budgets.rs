//! Per-task probabilistic execution bounds `c` (Burns 2014, step 1).
//!
//! - Cantelli (one-sided Chebyshev) inequality: `P(X >= E + k) <= Var / (Var + k^2)`; choosing
//!   `k = sqrt(rho Var / (1 - rho))` makes the right side `1 - rho`, so a job completes within
//!   `c = min(WCET, E + sqrt(rho Var / (1 - rho)))` with probability at least `rho` whatever the
//!   distribution (Cantelli 1928; the probabilistic budget of the Burns 2014 study, "step 1").
//! - Empirical quantile (`--budget quantile`): `c = min(WCET, Q_rho)` with `Q_rho` the
//!   nearest-rank rho-quantile of the task's samples; tasks without samples use Cantelli.
//!
//! `rho` is chosen per task, else per guest, else by the `--rho` flag; with none of them (the
//! documented default) the task's bound is its WCET. Tasks with a constant execution time always
//! use their WCET.

use rtvirt_model::exec::ExecModel;
use rtvirt_model::scenario::Task;

/// How stochastic tasks get their bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BudgetMethod {
    /// `E + sqrt(rho Var / (1 - rho))`, capped at the WCET (default).
    #[default]
    Cantelli,
    /// The rho-quantile of the samples (tasks with samples only; others use Cantelli).
    Quantile,
}

impl BudgetMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetMethod::Cantelli => "cantelli",
            BudgetMethod::Quantile => "quantile",
        }
    }
}

/// Which bound produced a task's `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Wcet,
    Cantelli,
    Quantile,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Wcet => "wcet",
            Bound::Cantelli => "cantelli",
            Bound::Quantile => "quantile",
        }
    }
}

/// A task's execution bound for the analysis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskBudget {
    /// `c` in integer ns (real bounds are rounded up), `1 <= c <= WCET`.
    pub c: u64,
    /// The rho in effect (None: no rho anywhere, WCET used).
    pub rho: Option<f64>,
    pub bound: Bound,
}

/// `E + sqrt(rho Var / (1 - rho))`: the Cantelli bound exceeded with probability at most
/// `1 - rho` (Cantelli's inequality; Burns 2014 step 1). `rho >= 1` gives +infinity.
pub fn cantelli(mean: f64, variance: f64, rho: f64) -> f64 {
    if rho >= 1.0 {
        return f64::INFINITY;
    }
    mean + (rho * variance.max(0.0) / (1.0 - rho)).sqrt()
}

/// The rho in effect for a task: task's, else guest's, else the flag's (None: WCET).
pub fn effective_rho(task: Option<f64>, guest: Option<f64>, flag: Option<f64>) -> Option<f64> {
    task.or(guest).or(flag)
}

/// `c = min(WCET, bound)` for one task at the given rho (Burns 2014 step 1). `rho = Some(1.0)` means
/// "WCET" (the Cantelli bound is infinite there).
pub fn task_budget(task: &Task, rho: Option<f64>, method: BudgetMethod) -> TaskBudget {
    let wcet = task.wcet.0;
    let wcet_bound = TaskBudget { c: wcet, rho, bound: Bound::Wcet };
    let Some(r) = rho else { return wcet_bound };
    if !task.exec.is_stochastic() {
        return wcet_bound;
    }
    let (value, bound) = match (&task.exec, method) {
        (ExecModel::Samples(s), BudgetMethod::Quantile) => (s.quantile(r).0 as f64, Bound::Quantile),
        (exec, _) => (cantelli(exec.mean_ns(task.wcet), exec.variance_ns2(), r), Bound::Cantelli),
    };
    if value.ceil() >= wcet as f64 {
        return wcet_bound;
    }
    TaskBudget { c: (value.ceil() as u64).max(1), rho, bound }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rtvirt_model::Nanos;

    fn task(wcet: u64, exec: ExecModel) -> Task {
        Task {
            name: "t".into(),
            period: Nanos(100 * wcet),
            deadline: Nanos(100 * wcet),
            wcet: Nanos(wcet),
            priority: 1,
            priority_given: false,
            rho: None,
            offset: Nanos::ZERO,
            exec,
            vcpu: None,
            phases: vec![],
        }
    }

    /// The two-point distribution that attains Cantelli's bound: `E + k` with probability
    /// `p = Var / (Var + k^2)`, `E - Var / k` otherwise. Returns (values, probabilities).
    fn extremal(mean: f64, var: f64, k: f64) -> ([f64; 2], [f64; 2]) {
        let p = var / (var + k * k);
        ([mean + k, mean - var / k], [p, 1.0 - p])
    }

    proptest! {
        #[test]
        fn cantelli_is_attained_by_the_two_point_distribution(
            mean in 1.0f64..1e6, sd in 1.0f64..1e5, rho in 0.01f64..0.99
        ) {
            let var = sd * sd;
            let c = cantelli(mean, var, rho);
            let (x, p) = extremal(mean, var, c - mean);
            // the distribution has the given mean and variance ...
            let m = x[0] * p[0] + x[1] * p[1];
            let v = (x[0] - m).powi(2) * p[0] + (x[1] - m).powi(2) * p[1];
            prop_assert!((m - mean).abs() <= 1e-6 * mean.max(1.0));
            prop_assert!((v - var).abs() <= 1e-6 * var);
            // ... and exceeds (reaches) c with probability exactly 1 - rho: the bound is tight.
            prop_assert!((p[0] - (1.0 - rho)).abs() < 1e-9);
        }

        #[test]
        fn cantelli_holds_for_two_point_distributions(
            a in 0.0f64..100.0, b in 0.0f64..100.0, q in 0.01f64..0.99, rho in 0.01f64..0.99
        ) {
            // X = a w.p. q, b otherwise: P(X >= c) <= 1 - rho (Cantelli's inequality).
            let mean = a * q + b * (1.0 - q);
            let var = (a - mean).powi(2) * q + (b - mean).powi(2) * (1.0 - q);
            prop_assume!(var > 1e-9);
            let c = cantelli(mean, var, rho);
            let exceed = if a >= c { q } else { 0.0 } + if b >= c { 1.0 - q } else { 0.0 };
            prop_assert!(exceed <= 1.0 - rho + 1e-9, "P(X>=c)={} rho={}", exceed, rho);
        }

        #[test]
        fn budget_is_monotone_in_rho_and_capped_by_wcet(
            wcet in 10u64..10_000_000, mean_pct in 1u64..100, r1 in 0.01f64..0.99, r2 in 0.01f64..0.99
        ) {
            let t = task(wcet, ExecModel::Normal { mean: Nanos(wcet * mean_pct / 100), sd: Nanos(wcet / 6) });
            let (lo, hi) = if r1 <= r2 { (r1, r2) } else { (r2, r1) };
            let a = task_budget(&t, Some(lo), BudgetMethod::Cantelli);
            let b = task_budget(&t, Some(hi), BudgetMethod::Cantelli);
            prop_assert!(a.c <= b.c && b.c <= wcet && a.c >= 1);
            prop_assert_eq!(b.bound == Bound::Wcet, b.c == wcet);
        }
    }

    #[test]
    fn precedence_and_defaults() {
        assert_eq!(effective_rho(Some(0.5), Some(0.6), Some(0.7)), Some(0.5));
        assert_eq!(effective_rho(None, Some(0.6), Some(0.7)), Some(0.6));
        assert_eq!(effective_rho(None, None, Some(0.7)), Some(0.7));
        assert_eq!(effective_rho(None, None, None), None);
        let t = task(1000, ExecModel::Normal { mean: Nanos(300), sd: Nanos(100) });
        assert_eq!(
            task_budget(&t, None, BudgetMethod::Cantelli),
            TaskBudget { c: 1000, rho: None, bound: Bound::Wcet }
        );
        // rho = 0.9: 300 + sqrt(0.9 * 10000 / 0.1) = 300 + 300 = 600
        assert_eq!(task_budget(&t, Some(0.9), BudgetMethod::Cantelli).c, 600);
        assert_eq!(task_budget(&t, Some(0.9), BudgetMethod::Cantelli).bound, Bound::Cantelli);
        assert_eq!(task_budget(&t, Some(1.0), BudgetMethod::Cantelli).bound, Bound::Wcet);
        let c = task(1000, ExecModel::Constant);
        assert_eq!(task_budget(&c, Some(0.5), BudgetMethod::Cantelli).c, 1000);
    }

    #[test]
    fn quantile_uses_samples() {
        use rtvirt_model::exec::Samples;
        use std::sync::Arc;
        let s = Samples { path: "x.csv".into(), sorted_ns: Arc::new((1..=100).map(|v| v * 10).collect()) };
        let t = task(1000, ExecModel::Samples(s));
        let b = task_budget(&t, Some(0.9), BudgetMethod::Quantile);
        assert_eq!((b.c, b.bound), (900, Bound::Quantile));
        assert_eq!(task_budget(&t, Some(0.999), BudgetMethod::Quantile).bound, Bound::Wcet);
        // mean 505, sd ~288: Cantelli at rho 0.5 is ~793
        assert_eq!(task_budget(&t, Some(0.5), BudgetMethod::Cantelli).bound, Bound::Cantelli);
    }
}
