//! The host a command plans for and the promise it asks (`--host`, `--host-model`, `--hard`,
//! `--quantile`): the flags every planning command shares, turned into the one planning path's
//! request (`rtvirt_analysis::requests`).

use clap::Args;
use rtvirt_analysis::planner::PlanOptions;
use rtvirt_analysis::requests::{Guarantee, PlanHost, PlanRequest};
use rtvirt_loop::host_choice::HostChoice;
use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::InputError;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone, Default)]
pub struct HostArgs {
    /// The host to plan for: "this" (this host's kernel limits, CPUs and interrupts, and its last
    /// `rtvirt host calibrate` if one was made on this kernel and boot, else the default costs),
    /// "ideal" (no overheads charged, any period, CPUs 0..n), or a preset: "stock" (a stock
    /// kernel, tick enforcement), "preempt-rt" (a tuned PREEMPT_RT host). Default: $RTVIRT_HOST,
    /// else "this".
    #[arg(long = "host", value_name = "HOST", conflicts_with = "host_model")]
    pub host: Option<String>,
    /// A host model file (rtvirt.hostmodel/v1 from `rtvirt host calibrate`): its costs are charged
    /// and its kernel limits kept.
    #[arg(long, value_name = "FILE.json")]
    pub host_model: Option<PathBuf>,
    /// Promise the worst case: charge the largest host costs seen (every miss bound 0 while the
    /// host stays within them) instead of their quantile.
    #[arg(long, conflicts_with = "quantile")]
    pub hard: bool,
    /// Charge the host's costs at this quantile (0.5 <= Q < 1): each task's miss bound is
    /// (1 - rho) + (1 - Q). Default 0.99.
    #[arg(long, value_name = "Q")]
    pub quantile: Option<f64>,
}

impl HostArgs {
    /// The flags as the loop's host choice.
    pub fn choice(&self) -> HostChoice {
        HostChoice {
            host: self.host.clone(),
            host_model: self.host_model.clone(),
            hard: self.hard,
            quantile: self.quantile,
            field: "--",
        }
    }

    /// `--host`, else $RTVIRT_HOST (None: neither, this host).
    pub fn host_name(&self) -> Option<String> {
        self.choice().host_name()
    }

    /// A host was named (`--host`, `--host-model` or $RTVIRT_HOST).
    pub fn named(&self) -> bool {
        self.host_model.is_some() || self.host_name().is_some()
    }

    /// The promise asked for.
    pub fn guarantee(&self) -> Result<Guarantee, InputError> {
        self.choice().guarantee()
    }

    /// The host's model as the simulator charges it (None: the ideal host).
    pub fn model(&self) -> Result<Option<HostModel>, InputError> {
        Ok(self.resolve(None, 1)?.model)
    }

    /// The host, placing on `cores` of its CPUs (notes about this host's calibration on stderr).
    pub fn resolve(&self, state_dir: Option<&Path>, cores: u32) -> Result<PlanHost, InputError> {
        let resolved = self.choice().resolve(state_dir, cores)?;
        for note in &resolved.notes {
            eprintln!("rtvirt: {note}");
        }
        Ok(resolved.host)
    }

    /// The files these flags read.
    pub fn inputs(&self) -> impl Iterator<Item = &Path> {
        self.host_model.iter().map(PathBuf::as_path)
    }
}

/// A request for `scenario` on `host` with the user's `options` and `guarantee`.
pub fn request<'a>(
    scenario: &'a Scenario,
    host: &'a PlanHost,
    options: PlanOptions,
    guarantee: Guarantee,
) -> PlanRequest<'a> {
    PlanRequest { options, guarantee, ..PlanRequest::new(scenario, host) }
}

/// The cores a plan of `scenario` may use (`--cores`, else the scenario's).
pub fn cores(scenario: &Scenario, options: &PlanOptions) -> u32 {
    options.cores.unwrap_or(scenario.host.cores)
}

/// Plan `scenario` as every command does when it plans itself: the host of `host_args`, the
/// user's options, the promise asked; errors located in the host-model file when they are its.
pub fn plan(
    scenario: &Scenario,
    host_args: &HostArgs,
    options: PlanOptions,
    uniform_rho: Option<f64>,
) -> anyhow::Result<(rtvirt_analysis::planner::Planned, PlanHost)> {
    let host = host_args.resolve(None, cores(scenario, &options))?;
    let guarantee = host_args.guarantee()?;
    let req = PlanRequest { uniform_rho, ..request(scenario, &host, options, guarantee) };
    let planned = rtvirt_loop::planning::plan(&req).map_err(|e| located(e, host_args))?;
    Ok((planned, host))
}

/// An error about a host-model field, located in its file.
pub fn located(e: InputError, host_args: &HostArgs) -> InputError {
    match &host_args.host_model {
        Some(path) if e.at.file.is_none() && is_host_model_field(&e) => located_in_json(e, path),
        _ => e,
    }
}

fn is_host_model_field(e: &InputError) -> bool {
    matches!(e.at.field.as_deref(), Some("server_overhead_ns" | "context_switch_ns"))
}

/// An error about a field of a JSON file, with the line and column of the field's key when the
/// file writes it (a field it omits has its default: the file alone is named).
pub fn located_in_json(e: InputError, path: &Path) -> InputError {
    let key = e.at.field.clone().map(|f| format!("\"{f}\""));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let at = key
        .and_then(|k| text.lines().enumerate().find_map(|(i, line)| line.find(&k).map(|column| (i + 1, column + 1))));
    let e = e.in_file(path);
    match at {
        Some((line, column)) => e.at_line(line, column),
        None => e,
    }
}
