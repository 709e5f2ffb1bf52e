//! `rtvirt measure timer`: timer wake-up latency per CPU.

use super::args::TimerArgs;
use super::output::{output, progress};
use crate::cli_common::{CmdResult, Outcome};
use crate::placement::options::Where;
use crate::placement::{container::rerun_in_container, with_loads};
use anyhow::Context as _;
use rtvirt_model::stats::Summary;
use rtvirt_probe::{cpus, timer};

pub fn run(a: TimerArgs) -> CmdResult {
    let cpu_list = cpus::resolve("--cpus", a.cpus.as_deref())?;
    let cfg = timer::TimerConfig {
        cpus: cpu_list.clone(),
        interval: a.interval,
        priority: a.priority,
        policy: a.policy,
        duration: a.duration,
        interval_report: a.interval_report,
        force: a.common.force,
    };
    cfg.validate()?;
    match a.common.r#in {
        Where::Container => return rerun_in_container(&cpu_list),
        Where::Vm => return crate::placement::vm::measure_in_vm(&a.common, a.duration),
        Where::Host => {}
    }
    progress(
        a.duration,
        &format!(
            "measuring timer latency on CPU(s) {} ({} every {})",
            cpus::format_list(&cpu_list),
            a.policy.as_str(),
            a.interval
        ),
    );
    let mut hists = Vec::new();
    let results = with_loads(&a.common, || {
        let run = timer::run_with_reports(&cfg, &mut |rep| {
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string(rep).unwrap_or_default());
        })?;
        hists = run.per_cpu;
        Ok(run.results)
    })?;
    if let Some(path) = &a.histogram {
        let mut f =
            std::fs::File::create(path).with_context(|| format!("cannot write histogram {}", path.display()))?;
        timer::write_cyclictest_histogram(&mut f, &hists)
            .with_context(|| format!("cannot write histogram {}", path.display()))?;
    }
    let mut rows: Vec<(String, &Summary)> =
        results.cpus.iter().map(|c| (format!("cpu {}", c.cpu), &c.latency_ns)).collect();
    if let Some(all) = &results.latency_ns {
        rows.push(("all".into(), all));
    }
    let footer = format!("missed periods: {}", results.extra.get("missed_periods").cloned().unwrap_or_default());
    output(&results, a.common.format, a.interval_report.is_some(), "timer latency", &rows, &footer)?;
    Ok(Outcome::Ok)
}
