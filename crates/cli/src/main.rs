//! The `rtvirt` binary: argument parsing and wiring only. Each job's command lives in
//! `cmd/<job>` (a file, or a folder with one module per concept); where a measurement runs (this
//! host, a container, QEMU guests) is the placement driver's, `placement/`; the work itself is
//! done by the library crates. Every table for people is printed by `table`, every progress bar
//! drawn by `progress`.

mod cli_common;
mod cmd;
mod explain;
mod output_file;
mod placement;
mod plan_host;
mod progress;
mod table;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use placement::command_line::CommandLine;
use std::process::ExitCode;

/// rtvirt makes real-time workloads in virtual machines and containers predictable:
/// plan reservations, simulate the host, configure real threads, measure real latency.
#[derive(Parser)]
#[command(name = "rtvirt", version, propagate_version = true, max_term_width = 100)]
#[command(
    after_help = "Exit codes: 0 success; 1 the thing planned/measured/checked failed (e.g. unschedulable); 2 usage or \
                  input error; 3 the data cannot decide (gate)."
)]
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
    /// Read other tools' outputs (cyclictest, rtla, oslat, sockperf, netperf, iperf3) as
    /// rtvirt results, to compare them with rtvirt's in a report.
    Import(cmd::import::ImportArgs),
    /// Write a table of results files (tasks, guests, cores, flows, latency, histogram,
    /// intervals) as CSV or Parquet: the tables the Python package gives as DataFrames.
    Export(cmd::export::ExportArgs),
    /// The main job end to end: plan the default scenario, simulate it, measure this host, report.
    Demo(cmd::demo::DemoArgs),
    /// Simulate the host and its guests (deterministic): deadline misses, DSR, response times.
    Simulate(cmd::simulate::SimulateArgs),
    /// Measure for real: timer wake-up latency, network round trips, periodic task sets under
    /// reservations; on the host or in a container, optionally under interference (--load).
    Measure(cmd::measure::MeasureArgs),
    /// Run an interference load (net flood, kernel stress, cache thrashing, CPU hogs) and report
    /// what it achieved.
    Load(cmd::load::LoadArgs),
    /// Minimal QEMU guests (Debian rt/non-rt kernel + busybox): build images, run rtvirt
    /// measurements inside, the Abeni 2023 guest-kernel x host-load matrix.
    Vm(cmd::vm::VmArgs),
    /// Configure a real host: audit it for RT guests, list the RT data path's threads, apply
    /// plans/profiles to real threads (journaled) and revert them.
    Host(cmd::host::HostArgs),
    /// Check a plan's prediction against a measurement: run the task sets under the plan's
    /// reservations on this host, simulate the same, compare DSR and response times per task
    /// (exit 1 when they disagree beyond the tolerance).
    Verify(cmd::verify::VerifyArgs),
    /// The tail of latency samples: how large a sample gets over a horizon (return level with a
    /// confidence interval, extreme-value fit), and whether the model applies.
    Tail(cmd::tail::TailArgs),
    /// Check a latency limit over a horizon against samples (exit 0 pass, 1 fail, 3 cannot tell
    /// yet, with the measurement length that would).
    Gate(cmd::tail::GateArgs),
    /// Run a study: a matrix of repeated measurements (where x host configuration x load x
    /// measurement, N runs each), the host configured and reverted around each cell; resumable.
    Study(cmd::study::StudyArgs),
    /// Inside a guest: report the guest's real-time tasks (SCHED_DEADLINE/FIFO/RR threads, job
    /// execution times through the job API or schedstat) to the host over the virtio-serial port
    /// org.rtvirt.agent, for `rtvirt host observe` and `rtvirt host adapt`.
    GuestAgent(cmd::observe::GuestAgentArgs),
}

fn main() -> ExitCode {
    let (cli, line) = parse();
    quiet_broken_pipe_panics();
    match std::panic::catch_unwind(move || run(cli, line)) {
        Ok(outcome) => cli_common::finish(outcome),
        Err(payload) if is_broken_pipe(payload.as_ref()) => ExitCode::from(EXIT_BROKEN_PIPE),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// The parsed command line (as `Cli::parse` does), and the command as given, for re-running it
/// in a container or a guest.
fn parse() -> (Cli, CommandLine) {
    let command = Cli::command();
    let matches = command.clone().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut Cli::command()).exit());
    (cli, CommandLine::from_matches(&command, &matches))
}

fn run(cli: Cli, line: CommandLine) -> cli_common::CmdResult {
    match cli.command {
        Command::Plan(a) => cmd::plan::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Simulate(a) => cmd::simulate::run(a),
        Command::Measure(a) => cmd::measure::run(a, line),
        Command::Load(a) => cmd::load::run(a, line),
        Command::Vm(a) => cmd::vm::run(a),
        Command::Host(a) => cmd::host::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Tail(a) => cmd::tail::run_tail(a),
        Command::Gate(a) => cmd::tail::run_gate(a),
        Command::Study(a) => cmd::study::run(a, &check_command_line),
        Command::GuestAgent(a) => cmd::observe::run_guest_agent(a),
    }
}

/// Whether `rtvirt ARGS` parses (a study checks its runs' command lines before running any).
fn check_command_line(args: &[String]) -> Result<(), String> {
    let argv = std::iter::once("rtvirt".to_string()).chain(args.iter().cloned());
    Cli::try_parse_from(argv).map(|_| ()).map_err(|e| e.to_string())
}

/// What a shell reports for a process killed by SIGPIPE (128 + 13).
const EXIT_BROKEN_PIPE: u8 = 141;

/// A reader that closes stdout early (`rtvirt plan --format json | head`) makes `println!` panic
/// with "Broken pipe". SIGPIPE stays ignored (sockets to peers that went away must give EPIPE,
/// not kill a measurement); instead the panic unwinds silently, so every cleanup guard on the way
/// (RT settings, cpusets, namespaces) still runs, and the process exits with 141.
fn quiet_broken_pipe_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe(info.payload()) {
            default(info);
        }
    }));
}

fn is_broken_pipe(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    text.contains("failed printing to stdout") && text.contains("Broken pipe")
}
