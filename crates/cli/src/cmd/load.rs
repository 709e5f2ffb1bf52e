//! `rtvirt load`: run an interference load on its own for a while and report what it achieved.

use super::measure::progress;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::placement::command_line::CommandLine;
use crate::placement::container;
use crate::placement::options::Where;
use clap::{Args, ValueEnum};
use rtvirt_model::results::Results;
use rtvirt_model::Nanos;
use rtvirt_probe::cpus;
use rtvirt_probe::load::{self, LoadKind, LoadSpec};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// TCP flood between a sender and a receiver (loopback, or the container's namespace).
    Net,
    /// UDP flood (1472-byte datagrams) between a sender and a receiver.
    NetUdp,
    /// Kernel stress: system calls, pipe wake-ups, short timer sleeps.
    Syscalls,
    /// LLC thrashing: memcpy over a buffer twice the last-level cache.
    Cache,
    /// CPU hogs (arithmetic busy loop at normal priority).
    Cpu,
}

#[derive(Args)]
pub struct LoadArgs {
    /// What kind of interference.
    #[arg(value_enum)]
    pub kind: Kind,
    /// CPUs to pin the workers to, round robin (default: not pinned).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Number of workers (default: one per CPU of --cpus, else 1).
    #[arg(long)]
    pub workers: Option<u32>,
    /// Total rate over all workers: ops/s for cpu and syscalls, bytes/s for cache and net
    /// (default: as fast as possible).
    #[arg(long)]
    pub rate: Option<f64>,
    /// How long to run.
    #[arg(long, value_parser = Nanos::parse, default_value = "10s")]
    pub duration: Nanos,
    /// Where to run: host, or a fresh container (netns + veth/bridge + cpuset cgroup).
    #[arg(long = "in", value_enum, default_value_t = Where::Host)]
    pub r#in: Where,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Allow more than 4 workers per CPU and runs over one hour.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: LoadArgs, line: CommandLine) -> CmdResult {
    rtvirt_os::signals::install();
    let kind = match args.kind {
        Kind::Net => LoadKind::Net,
        Kind::NetUdp => LoadKind::NetUdp,
        Kind::Syscalls => LoadKind::Syscalls,
        Kind::Cache => LoadKind::Cache,
        Kind::Cpu => LoadKind::Cpu,
    };
    let cpu_list = args.cpus.as_deref().map(|c| cpus::resolve("--cpus", Some(c))).transpose()?;
    let workers = args.workers.unwrap_or_else(|| cpu_list.as_ref().map(|c| c.len() as u32).unwrap_or(1));
    if workers == 0 {
        anyhow::bail!("--workers must be at least 1");
    }
    let spec = LoadSpec { kind, workers, cpus: cpu_list.clone(), rate: args.rate };
    spec.validate("--workers", args.force)?;
    rtvirt_probe::limits::check_duration("--duration", args.duration, args.force)?;
    if args.r#in == Where::Vm {
        anyhow::bail!("--in vm is not available for rtvirt load; use `rtvirt vm run -- load ...`");
    }
    if args.r#in == Where::Container {
        return container::rerun(&line, &cpu_list.unwrap_or_else(cpus::allowed));
    }
    progress(args.duration, &format!("running {} load ({workers} worker(s))", kind.as_str()));
    let report = load::run_for(&spec, args.duration)?;
    let mut r = Results::new("load", report.duration_ns);
    let mut env = rtvirt_probe::environment::collect();
    env.load.push(report.clone().into());
    r.environment = Some(env);
    match args.format {
        Format::Json => print_json(&r)?,
        Format::Table => {
            println!(
                "{} load: {} worker(s) on CPU(s) {} for {}",
                kind.as_str(),
                report.workers,
                report.cpus_ran_on,
                Nanos(report.duration_ns)
            );
            match report.bytes_per_s {
                Some(b) => println!("achieved {:.1} MB/s", b / 1e6),
                None => println!("achieved {:.0} {}/s", report.ops_per_s, report.unit),
            }
        }
    }
    Ok(Outcome::Ok)
}
