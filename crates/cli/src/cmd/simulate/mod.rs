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

pub fn run(args: SimulateArgs) -> CmdResult {
    if let Some(sweep) = &args.sweep {
        return sweep::run_grid(sweep, &args);
    }
    if let Some(trace) = &args.trace {
        let inputs: Vec<&std::path::Path> =
            args.scenario.iter().chain(&args.plan).chain(&args.host_model).map(|p| p.as_path()).collect();
        crate::output_file::check("--trace", trace, &inputs)?;
    }
    let scenario = load_scenario(args.scenario.as_deref())?;
    if scenario.net.is_some() {
        if args.host_model.is_some() {
            return Err(InputError::field(
                "--host-model",
                "the scenario has a [net] section: the network-path simulator has its own cost model ([net]); a host \
                 model applies to scenarios without [net]",
            )
            .into());
        }
        if args.plan.is_some() {
            return Err(InputError::field(
                "--plan",
                "the scenario has a [net] section: the network-path simulator places and prioritises its threads from \
                 [net] itself; a plan applies to scenarios without [net]",
            )
            .into());
        }
        return net::run(&scenario, &args);
    }
    cpu::run(&scenario, &args)
}
