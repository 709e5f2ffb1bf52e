//! `rtvirt measure tasks`: a scenario's periodic task sets under their planned reservations.

use super::args::TasksArgs;
use super::output::progress;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::placement::options::Where;
use crate::placement::{container::rerun_in_container, with_loads};

pub fn run(a: TasksArgs) -> CmdResult {
    let scenario = crate::cli_common::load_scenario(a.scenario.as_deref())?;
    let plan = match (&a.plan, a.rho) {
        (Some(_), Some(_)) => anyhow::bail!("--rho applies when planning here; a --plan file was already planned"),
        (Some(path), None) => {
            let p = rtvirt_model::plan::Plan::from_file(path)?;
            p.check_matches(&scenario).map_err(|e| e.in_file(path))?;
            p
        }
        (None, rho) => {
            if let Some(r) = rho {
                if !(r > 0.0 && r <= 1.0) {
                    anyhow::bail!("--rho {r}: expected 0 < rho <= 1");
                }
            }
            let opts = rtvirt_analysis::planner::PlanOptions::default();
            rtvirt_analysis::planner::plan_at(&scenario, &opts, rho).plan
        }
    };
    let cfg = rtvirt_probe::tasks::TasksConfig { duration: a.duration, seed: a.seed, force: a.common.force };
    match a.common.r#in {
        Where::Container => {
            return rerun_in_container(&plan.guests.iter().filter_map(|g| g.core).collect::<Vec<u32>>())
        }
        Where::Vm => return crate::placement::vm::tasks_in_vm(&a.common, &scenario, &plan, &cfg),
        Where::Host => {}
    }
    progress(
        a.duration,
        &format!("running {} guest(s) of \"{}\" under their reservations", scenario.guests.len(), scenario.name),
    );
    let results = with_loads(&a.common, || Ok(rtvirt_probe::tasks::run(&scenario, &plan, &cfg)?))?;
    match a.common.format {
        Format::Json => print_json(&results)?,
        Format::Table => {
            println!(
                "{:<8} {:<8} {:>7} {:>7} {:>8} {:>11} {:>11} {:>11}",
                "guest", "task", "jobs", "misses", "DSR", "resp p50", "resp p99", "resp max"
            );
            for t in &results.tasks {
                let us = |v: u64| format!("{:.0}us", v as f64 / 1e3);
                println!(
                    "{:<8} {:<8} {:>7} {:>7} {:>8.4} {:>11} {:>11} {:>11}",
                    t.guest,
                    t.name,
                    t.jobs,
                    t.misses,
                    t.dsr,
                    us(t.response_ns.p50),
                    us(t.response_ns.p99),
                    us(t.response_ns.max)
                );
            }
            for g in &results.guests {
                println!(
                    "{}: core {} reservation {} used {:.1}% CPU",
                    g.name,
                    g.extra["core"],
                    g.extra["reservation"],
                    g.utilisation * 100.0
                );
            }
            println!(
                "overall DSR {:.4} ({} jobs, {} misses)",
                results.extra["dsr"].as_f64().unwrap_or(0.0),
                results.extra["jobs"],
                results.extra["misses"]
            );
        }
    }
    let misses = results.extra["misses"].as_u64().unwrap_or(0);
    Ok(if misses > 0 && plan.guests.iter().all(|g| g.tasks.iter().all(|t| t.bound == "wcet")) {
        Outcome::Failed
    } else {
        Outcome::Ok
    })
}
