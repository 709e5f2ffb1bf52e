//! The arguments of `rtvirt simulate`.

use crate::cli_common::Format;
use clap::Args;
use rtvirt_model::{InputError, Nanos};
use rtvirt_sim::engine::trace::{TraceWindow, MAX_TRACE_EVENTS};
use std::path::PathBuf;

#[derive(Args)]
#[command(after_help = "The host, the vCPU policies (fifo, rr, deadline, other, credit, rtds, ds, ps, supply) \
and extra host threads come from the scenario's [sim] and [guest.vcpu] sections (see docs/simulate.md); \
without [guest.vcpu] a vCPU is a SCHED_OTHER thread on core (guest index mod cores). \
--plan turns every vCPU into a SCHED_DEADLINE reservation from `rtvirt plan --format json`.\n\n\
Same scenario + same seed = byte-identical results. Deadline misses are results, not errors: \
the exit code is 0 unless the input is wrong (2).\n\n\
Examples:\n  rtvirt simulate scenarios/sim_policies.toml --duration 5s --trace trace.json\n  \
rtvirt plan s.toml --format json > plan.json && rtvirt simulate s.toml --plan plan.json --format json\n  \
rtvirt simulate --sweep experiments/seeds5_dsr_vs_rho.sweep.toml --threads 2")]
pub struct SimulateArgs {
    /// Scenario file (TOML). Without it (and without --sweep), the embedded default scenario.
    #[arg(conflicts_with = "sweep")]
    pub scenario: Option<PathBuf>,
    /// Apply a plan (rtvirt.plan/v1 JSON) as SCHED_DEADLINE reservations of the vCPU threads.
    #[arg(long, value_name = "PLAN.json")]
    pub plan: Option<PathBuf>,
    /// A host model (`rtvirt.hostmodel/v1`, from `rtvirt host calibrate`): its measured costs are
    /// charged (per server period, release latency drawn from its p50/p99/max, enforcement
    /// overrun, cache reload per preemption, task switches); see docs/simulate.md.
    #[arg(long, value_name = "FILE.json")]
    pub host_model: Option<PathBuf>,
    /// Adapt the reservations online from the jobs' observed demand, with the scenario's
    /// `[adapt]` settings (defaults without it; see docs/adapt.md): the controller of `rtvirt host
    /// adapt` on the simulated vCPUs. Starts from --plan, else from the scenario planned as
    /// `rtvirt plan` would.
    #[arg(long)]
    pub adapt: bool,
    /// Simulated horizon, e.g. 10s (default: the scenario's [sim] duration, else 10s).
    #[arg(long, value_parser = parse_nanos)]
    pub duration: Option<Nanos>,
    /// Random seed (default: the scenario's [sim] seed, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the host's ticks fall after the first release (default: the scenario's [sim]
    /// tick_phase, else 0): with tick enforcement a budget overrun lasts until the next tick, so
    /// results depend on it; `measure tasks` records the phase its run had.
    #[arg(long, value_parser = Nanos::parse, value_name = "TIME")]
    pub tick_phase: Option<Nanos>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write a Chrome trace-event JSON (open it in https://ui.perfetto.dev): a track per core
    /// (which host thread runs) and per guest (which task runs).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Start of the traced window.
    #[arg(long, value_parser = parse_nanos, default_value = "0s")]
    pub trace_from: Nanos,
    /// Length of the traced window.
    #[arg(long, value_parser = parse_nanos, default_value = "1s")]
    pub trace_window: Nanos,
    /// Most events kept in the trace (at most 20000000); later ones are counted as dropped.
    #[arg(long, default_value_t = 1_000_000)]
    pub trace_max_events: usize,
    /// Run a grid of simulations described by a sweep file (scenarios x rho x seeds).
    #[arg(long, value_name = "SWEEP.toml")]
    pub sweep: Option<PathBuf>,
    /// Worker threads for --sweep: 1 to 1024 (default: all cores), never more than the sweep's
    /// cells. Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
}

fn parse_nanos(text: &str) -> Result<Nanos, String> {
    Nanos::parse(text)
}

impl SimulateArgs {
    /// The traced window of `--trace`, `--trace-from`, `--trace-window` and `--trace-max-events`
    /// (None without `--trace`).
    pub fn trace_window(&self) -> Result<Option<TraceWindow>, InputError> {
        if self.trace.is_none() {
            return Ok(None);
        }
        if self.trace_max_events == 0 || self.trace_max_events > MAX_TRACE_EVENTS {
            return Err(InputError::field(
                "--trace-max-events",
                format!(
                    "{}: expected 1..{MAX_TRACE_EVENTS} (a larger trace would not fit in memory)",
                    self.trace_max_events
                ),
            ));
        }
        if self.trace_window.0 == 0 {
            return Err(InputError::field("--trace-window", "zero window: expected a positive duration"));
        }
        let to = self.trace_from.checked_add(self.trace_window).unwrap_or(Nanos::MAX);
        Ok(Some(TraceWindow { from: self.trace_from, to, max_events: self.trace_max_events }))
    }
}
