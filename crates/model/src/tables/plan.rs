//! The tables of a plan (`rtvirt.plan/v1`): its guests' reservations and its tasks' budgets.

use crate::plan::Plan;
use crate::tables::column::{Cell, Spec, Table};

/// One row per guest: its server (period, budget, deadline), bandwidth, core and task count.
pub fn guests(plan: &Plan) -> Table {
    let mut table = Table::new(&[
        Spec::category("guest"),
        Spec::category("scheduler"),
        Spec::category("model"),
        Spec::int("period_ns"),
        Spec::int("budget_ns"),
        Spec::int("deadline_ns"),
        Spec::float("bandwidth"),
        Spec::int("core").nullable(),
        Spec::int("tasks"),
    ]);
    for g in &plan.guests {
        table.push(vec![
            Cell::text(&g.name),
            Cell::text(&g.scheduler),
            Cell::text(&g.model),
            Cell::int(g.period_ns),
            Cell::int(g.budget_ns),
            Cell::int(g.deadline_ns),
            Cell::Float(g.bandwidth),
            Cell::opt_int(g.core.map(u64::from)),
            Cell::int(g.tasks.len() as u64),
        ]);
    }
    table
}

/// One row per task: its timing and the execution bound the analysis used.
pub fn tasks(plan: &Plan) -> Table {
    let mut table = Table::new(&[
        Spec::category("guest"),
        Spec::category("task"),
        Spec::int("period_ns"),
        Spec::int("deadline_ns"),
        Spec::int("wcet_ns"),
        Spec::int("budget_ns"),
        Spec::float("rho"),
        Spec::category("bound"),
    ]);
    for g in &plan.guests {
        for t in &g.tasks {
            table.push(vec![
                Cell::text(&g.name),
                Cell::text(&t.name),
                Cell::int(t.period_ns),
                Cell::int(t.deadline_ns),
                Cell::int(t.wcet_ns),
                Cell::int(t.budget_ns),
                Cell::opt_float(t.rho),
                Cell::text(&t.bound),
            ]);
        }
    }
    table
}
