//! `rtvirt plan`: scenario -> per-guest reservations and cores.

use crate::cli_common::{load_scenario, CmdResult, Format, Outcome};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct PlanArgs {
    /// Scenario file (TOML). Without it, the embedded default scenario is used.
    pub scenario: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: PlanArgs) -> CmdResult {
    let s = load_scenario(a.scenario.as_deref())?;
    for g in &s.guests {
        let u: f64 = g.tasks.iter().map(|t| t.utilisation()).sum();
        println!("{:<12} {:>3} tasks  U(wcet) = {u:.3}", g.name, g.tasks.len());
    }
    Ok(Outcome::Ok)
}
