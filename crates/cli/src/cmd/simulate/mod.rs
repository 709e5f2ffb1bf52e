//! `rtvirt simulate`: scenario [+ plan] -> deterministic simulation results (and a trace), or a
//! parallel sweep over scenarios x rho x seeds. One module per kind of run: [`cpu`] (the host's
//! CPU scheduling of vCPUs and tasks), [`net`] (scenarios with a `[net]` section), [`sweep`].

mod args;
mod cpu;
mod net;
mod sweep;

pub use args::SimulateArgs;

use crate::cli_common::{load_scenario, CmdResult};
use rtvirt_model::InputError;

pub fn run(a: SimulateArgs) -> CmdResult {
    if let Some(sweep) = &a.sweep {
        return sweep::run_grid(sweep, &a);
    }
    if let Some(trace) = &a.trace {
        let inputs: Vec<&std::path::Path> = a.scenario.iter().chain(&a.plan).map(|p| p.as_path()).collect();
        crate::output_file::check("--trace", trace, &inputs)?;
    }
    let scenario = load_scenario(a.scenario.as_deref())?;
    if scenario.net.is_some() {
        if a.plan.is_some() {
            return Err(InputError::field(
                "--plan",
                "the scenario has a [net] section: the network-path simulator places and prioritises its threads from \
                 [net] itself; a plan applies to scenarios without [net]",
            )
            .into());
        }
        return net::run(&scenario, &a);
    }
    cpu::run(&scenario, &a)
}
