//! The `rtvirt` binary: argument parsing and wiring only. Each job's command lives in
//! `cmd/<job>.rs`; the work itself is done by the library crates.

mod cli_common;
mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// rtvirt makes real-time workloads in virtual machines and containers predictable:
/// plan reservations, simulate the host, configure real threads, measure real latency.
#[derive(Parser)]
#[command(name = "rtvirt", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "Exit codes: 0 success; 1 the thing planned/measured/checked failed (e.g. unschedulable); 2 usage or input error.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compute per-vCPU CPU reservations (budget/period/deadline) and cores for a scenario.
    Plan(cmd::plan::PlanArgs),
    /// Write a readable report (HTML with SVG charts, or Markdown) from results and plan files.
    Report(cmd::report::ReportArgs),
    /// Minimal QEMU guests (Debian rt/non-rt kernel + busybox): build images, run rtvirt
    /// measurements inside, the SEEDS 4 guest-kernel x host-load matrix.
    Vm(cmd::vm::VmArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Plan(a) => cmd::plan::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Vm(a) => cmd::vm::run(a),
    };
    cli_common::finish(outcome)
}
