//! `rtvirt measure tasks`: a scenario's periodic task sets under their planned reservations.

use super::args::TasksArgs;
use super::output::progress;
use crate::cli_common::{load_scenario, print_json, CmdResult, Format, Outcome};
use crate::placement::command_line::CommandLine;
use crate::placement::options::Common;
use crate::placement::vm::GuestJob;
use crate::placement::{drive, Measurement};
use crate::table::Table;
use anyhow::Context as _;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_probe::tasks::TasksConfig;
use rtvirt_report::units::fmt_ns;
use rtvirt_vm::GuestFile;
use std::net::SocketAddr;
use std::path::Path;

/// A scenario with its plan (read, or made here), ready to run.
struct Tasks {
    args: TasksArgs,
    scenario: Scenario,
    plan: Plan,
    config: TasksConfig,
}

pub fn run(args: TasksArgs, line: CommandLine) -> CmdResult {
    let scenario = load_scenario(args.scenario.as_deref())?;
    let plan = match (&args.plan, args.rho) {
        (Some(_), Some(_)) => anyhow::bail!("--rho applies when planning here; a --plan file was already planned"),
        (Some(path), None) => {
            let p = Plan::from_file(path)?;
            p.check_matches(&scenario).map_err(|e| e.in_file(path))?;
            p
        }
        (None, rho) => {
            if let Some(r) = rho {
                if !(r > 0.0 && r <= 1.0) {
                    anyhow::bail!("--rho {r}: expected 0 < rho <= 1");
                }
            }
            // the one planning path, for this host (or $RTVIRT_HOST; other hosts: plan with
            // `rtvirt plan --host` and pass --plan)
            let host = crate::plan_host::HostArgs::default();
            crate::plan_host::plan(&scenario, &host, Default::default(), rho)?.0.plan
        }
    };
    let config = TasksConfig {
        duration: args.duration,
        seed: args.seed,
        force: args.common.force,
        state_dir: Some(rtvirt_host::journal::default_state_dir()),
        window: args.interval_report,
        explain: args.explain,
        tick_phase: args.tick_phase,
    };
    drive(Tasks { args, scenario, plan, config }, line)
}

impl Measurement for Tasks {
    fn common(&self) -> &Common {
        &self.args.common
    }

    fn duration(&self) -> Nanos {
        self.args.duration
    }

    fn container_cpus(&self) -> Vec<u32> {
        planned_cores(&self.plan).collect()
    }

    /// The task sets run under the plan made on the host, with as many vCPUs as the plan's
    /// highest core + 1 (over every vCPU of a guest of several); the scenario file (and its
    /// samples files) and the plan travel as files.
    fn guest_job(&self, line: CommandLine) -> anyhow::Result<GuestJob> {
        let plan = GuestFile { name: "plan.json".into(), data: serde_json::to_vec_pretty(&self.plan)? };
        let mut line = line.without(&["rho"]).with_option("plan", "plan", plan.guest_path());
        let mut files = vec![plan];
        match &self.scenario.source.path {
            Some(source) => {
                files.extend(scenario_files(&self.scenario, source)?);
                line = line.with_positional("scenario", files[1].guest_path());
            }
            None => line = line.without(&["scenario"]),
        }
        let vcpus = planned_cores(&self.plan).max().map_or(1, |c| c + 1);
        Ok(GuestJob { line, files, vcpus, explain: false, trace: None, bring_back: None })
    }

    fn measure(&mut self, _server: Option<SocketAddr>) -> anyhow::Result<Results> {
        let s = &self.scenario;
        progress(
            self.args.duration,
            &format!("running {} guest(s) of \"{}\" under their reservations", s.guests.len(), s.name),
        );
        Ok(rtvirt_probe::tasks::run(s, &self.plan, &self.config)?)
    }

    fn report(&self, results: &Results) -> CmdResult {
        match self.args.common.format {
            Format::Json => print_json(results)?,
            Format::Table => {
                let header = ["guest", "task", "jobs", "misses", "DSR", "resp p50", "resp p99", "resp max"];
                let mut table = Table::new(&header, 2);
                for t in &results.tasks {
                    let us = |v: u64| format!("{:.0}us", v as f64 / 1e3);
                    table.row([
                        t.guest.clone(),
                        t.name.clone(),
                        t.jobs.to_string(),
                        t.misses.to_string(),
                        format!("{:.4}", t.dsr),
                        us(t.response_ns.p50),
                        us(t.response_ns.p99),
                        us(t.response_ns.max),
                    ]);
                }
                table.print();
                for g in &results.guests {
                    let reservation = g.reservation.as_ref().map_or("none".into(), |r| {
                        format!(
                            "{} every {} (deadline {})",
                            fmt_ns(r.runtime_ns as f64),
                            fmt_ns(r.period_ns as f64),
                            fmt_ns(r.deadline_ns as f64)
                        )
                    });
                    println!(
                        "{}: core {} reservation {reservation} used {:.1}% CPU",
                        g.name,
                        g.core.map_or("-".into(), |c| c.to_string()),
                        g.utilisation * 100.0
                    );
                }
                let totals = results.task_totals.clone().unwrap_or_default();
                println!(
                    "overall DSR {:.4} ({} jobs, {} misses)",
                    totals.dsr.unwrap_or(0.0),
                    totals.jobs.unwrap_or(0),
                    totals.misses.unwrap_or(0)
                );
            }
        }
        let misses = results.task_totals.as_ref().and_then(|t| t.misses).unwrap_or(0);
        let wcet_budgets = self.plan.guests.iter().all(|g| g.tasks.iter().all(|t| t.bound == "wcet"));
        Ok(if misses > 0 && wcet_budgets { Outcome::Failed } else { Outcome::Ok })
    }
}

/// The core of every planned vCPU (a guest of one vCPU: its core), in plan order.
fn planned_cores(plan: &Plan) -> impl Iterator<Item = u32> + '_ {
    plan.guests.iter().flat_map(|g| g.vcpu_plans()).filter_map(|v| v.core)
}

/// The scenario file and the execution-time samples files it names, as guest files: the
/// scenario becomes `files/scenario.toml`, samples files keep their paths relative to it (so
/// they must be below the scenario's directory).
fn scenario_files(scenario: &Scenario, source: &Path) -> anyhow::Result<Vec<GuestFile>> {
    let read = |p: &std::path::Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    let mut files = vec![GuestFile { name: "scenario.toml".into(), data: read(source)? }];
    let base = source.parent().unwrap_or(std::path::Path::new(""));
    for task in scenario.guests.iter().flat_map(|g| &g.tasks) {
        if let rtvirt_model::exec::ExecModel::Samples(s) = &task.exec {
            let below = s
                .path
                .strip_prefix(base)
                .ok()
                .filter(|r| r.components().all(|c| matches!(c, std::path::Component::Normal(_))));
            let Some(name) = below.and_then(|r| r.to_str()).filter(|n| *n != "scenario.toml") else {
                anyhow::bail!(
                    "{}: task {}: --in vm carries samples files only from below the scenario's directory (found {})",
                    source.display(),
                    task.name,
                    s.path.display()
                );
            };
            if !files.iter().any(|f| f.name == name) {
                files.push(GuestFile { name: name.into(), data: read(&s.path)? });
            }
        }
    }
    Ok(files)
}
