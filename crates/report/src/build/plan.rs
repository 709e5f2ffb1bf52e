//! Plan sections: per-core bandwidth (stacked by guest, with the cap) and the reservations.

use crate::doc::{Cell, Figure, Section, Table};
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::units::{fmt_ns, fmt_ratio};
use rtvirt_model::plan::Plan;

pub fn sections(inputs: &[Input]) -> Vec<Section> {
    inputs.iter().filter_map(|i| i.plan().map(|p| plan_section(&i.name, p))).collect()
}

fn plan_section(name: &str, plan: &Plan) -> Section {
    let mut sec = Section::new(format!("Plan: {name}"));
    let rho = plan.max_rho.map_or("none".into(), |r| format!("{r:.3}"));
    sec.note(format!(
        "{}; {} core(s) used; largest uniform rho that fits: {rho}.",
        if plan.feasible { "Feasible" } else { "NOT feasible" },
        plan.cores_used
    ));
    if let Some(host) = &plan.settings.host {
        let promise = plan.settings.guarantee.as_deref().unwrap_or("-");
        let worst = plan.guests.iter().flat_map(|g| &g.tasks).filter_map(|t| t.miss_bound).fold(0.0, f64::max);
        sec.note(format!(
            "Planned for: {host}. Promise: {promise}; every task's miss probability at most {worst:.4} (per task \
             in the plan's tasks[].miss_bound)."
        ));
    }
    for a in &plan.settings.assumptions {
        sec.note(format!("Assumes: {a}."));
    }
    if !plan.unplaced.is_empty() {
        sec.note(format!("Guests that fit on no core: {}.", plan.unplaced.join(", ")));
    }
    for n in &plan.needs {
        let whom = n.guest.as_ref().map_or("The plan".to_string(), |g| format!("Guest {g}"));
        sec.note(format!("To fit, {whom} needs {}: {} ({}).", n.setting, n.value, n.how));
    }
    if !plan.cores.is_empty() {
        sec.figure(bandwidth_figure(name, plan));
    }
    sec.table(reservation_table(plan));
    sec
}

fn bandwidth_figure(name: &str, plan: &Plan) -> Figure {
    let guests: Vec<String> = plan.guests.iter().filter(|g| g.core.is_some()).map(|g| g.name.clone()).collect();
    let cores = core_ids(plan);
    let values = cores
        .iter()
        .map(|&c| guests.iter().map(|g| plan.guest(g).filter(|gp| gp.core == Some(c)).map(|gp| gp.bandwidth)).collect())
        .collect();
    let cap = plan.settings.bandwidth_cap;
    let chart =
        BarChart {
            kind: "bandwidth",
            title: format!("Per-core bandwidth: {name}"),
            y_label: "bandwidth (budget / period)".into(),
            y_fmt: fmt_ratio,
            mode: BarMode::Stacked,
            categories: cores
                .iter()
                .map(|&c| {
                    if plan.cores.iter().any(|p| p.id == c) {
                        format!("core {c}")
                    } else {
                        format!("core {c} (unused)")
                    }
                })
                .collect(),
            series: guests,
            values,
            reference: cap.map(|c| (c, format!("cap {}", fmt_ratio(c)))),
            y_range: None,
        };
    Figure {
        kind: "bandwidth",
        title: chart.title.clone(),
        caption: "Each guest's vCPU reservation stacked on its core.".into(),
        svg: chart.render(),
    }
}

/// Every core of the host the plan was made for (`settings.cores`), else the cores it uses.
fn core_ids(plan: &Plan) -> Vec<u32> {
    let used_max = plan.cores.iter().map(|c| c.id + 1).max().unwrap_or(0);
    let host = plan.settings.cores.map_or(0, |n| n.min(256));
    (0..used_max.max(host)).collect()
}

fn reservation_table(plan: &Plan) -> Table {
    let mut t = Table::new(
        "Reservations",
        &["guest", "core", "scheduler / model", "period", "budget", "deadline", "bandwidth", "tasks", "task bounds"],
    );
    for g in &plan.guests {
        let bounds: Vec<String> =
            g.tasks.iter().map(|tp| format!("{} {} ({})", tp.name, fmt_ns(tp.budget_ns as f64), tp.bound)).collect();
        t.row(vec![
            Cell::plain(g.name.clone()),
            Cell::plain(g.core.map_or("unplaced".into(), |c| c.to_string())),
            Cell::plain(format!("{} / {}", g.scheduler, g.model)),
            Cell::plain(fmt_ns(g.period_ns as f64)),
            Cell::plain(fmt_ns(g.budget_ns as f64)),
            Cell::plain(fmt_ns(g.deadline_ns as f64)),
            Cell::plain(fmt_ratio(g.bandwidth)),
            Cell::plain(g.tasks.len().to_string()),
            Cell::plain(bounds.join(", ")),
        ]);
    }
    t
}
