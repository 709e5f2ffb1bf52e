//! `rtvirt host observe` (each guest's real-time demand, learned from the host and the guest
//! agent: rtvirt-host's `observe`) and `rtvirt guest-agent` (the agent itself, rtvirt-probe's
//! `agent`): wiring only.

use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::table::{micros, Table};
use anyhow::Context;
use clap::Args;
use rtvirt_host::apply::{Binding, GuestSource};
use rtvirt_host::observe::{self, GuestObserver};
use rtvirt_model::observe::{AgentState, Observation, Source};
use rtvirt_model::{InputError, Nanos};
use std::path::PathBuf;

#[derive(Args)]
pub struct ObserveArgs {
    /// A guest to observe: NAME (the QEMU started with `-name NAME`, e.g. by `rtvirt vm`) or
    /// NAME=QMP_SOCKET; repeatable. A guest started by rtvirt with `--agent` is heard through its
    /// agent port as well.
    #[arg(long = "vm", value_name = "NAME[=QMP]", required_unless_present = "pids")]
    pub vms: Vec<String>,
    /// A thread standing for a guest's vCPU (any process, e.g. a container's): NAME=TID; repeatable.
    #[arg(long = "pid", value_name = "NAME=TID")]
    pub pids: Vec<String>,
    /// The agent port (QEMU virtio-serial chardev socket) of a guest not started by rtvirt:
    /// NAME=SOCKET; repeatable.
    #[arg(long = "agent", value_name = "NAME=SOCKET")]
    pub agents: Vec<String>,
    /// How long to observe (at most 1h; Ctrl-C ends early with what was learned).
    #[arg(long, default_value = "10s", value_parser = Nanos::parse)]
    pub duration: Nanos,
    /// Host inference: one demand sample per vCPU thread and window (1ms..10s).
    #[arg(long, default_value = "100ms", value_parser = Nanos::parse)]
    pub window: Nanos,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: ObserveArgs) -> CmdResult {
    check_bounds(args.duration, args.window)?;
    let mut guests = observers(&args.vms, &args.pids, &args.agents)?;
    eprintln!("observe: {} guest(s) for {}", guests.len(), args.duration);
    let o = observe::run(&mut guests, args.duration.0, args.window.0);
    match args.format {
        Format::Json => print_json(&o)?,
        Format::Table => print_table(&o),
    }
    Ok(Outcome::Ok)
}

fn check_bounds(duration: Nanos, window: Nanos) -> Result<(), InputError> {
    if duration.0 == 0 || duration > rtvirt_model::scenario::MAX_TIMING {
        return Err(InputError::field("--duration", format!("{duration}: expected more than 0 and at most 1h")));
    }
    if window < Nanos::from_ms(1) || window > Nanos::from_secs(10) {
        return Err(InputError::field("--window", format!("{window}: expected 1ms..10s")));
    }
    Ok(())
}

/// One observer per `--vm` and `--pid`, with its agent port: `--agent NAME=SOCKET`, else the
/// rtvirt guest's.
pub fn observers(vms: &[String], pids: &[String], agents: &[String]) -> anyhow::Result<Vec<GuestObserver>> {
    let sockets = parse_agents(agents)?;
    let mut bindings: Vec<(&String, Binding)> = Vec::new();
    for spec in vms {
        bindings.push((spec, Binding::parse_vm(spec)?));
    }
    for spec in pids {
        bindings.push((spec, Binding::parse_pid(spec)?));
    }
    let mut out = Vec::new();
    for (spec, binding) in bindings {
        if out.iter().any(|g: &GuestObserver| g.name == binding.guest) {
            return Err(InputError::field("--vm", format!("guest \"{}\" given twice", binding.guest)).into());
        }
        let threads = binding.threads().with_context(|| format!("guest {spec}"))?;
        let g = GuestObserver::new(&binding.guest, &threads, agent_socket(&binding, &sockets));
        if g.vcpus.is_empty() {
            return Err(InputError::field("--vm", format!("guest \"{}\": no vCPU thread found", binding.guest)).into());
        }
        out.push(g);
    }
    Ok(out)
}

/// `--agent NAME=SOCKET` options.
pub fn parse_agents(agents: &[String]) -> Result<Vec<(String, PathBuf)>, InputError> {
    agents
        .iter()
        .map(|spec| {
            spec.split_once('=')
                .filter(|(n, p)| !n.is_empty() && !p.is_empty())
                .map(|(n, p)| (n.to_string(), PathBuf::from(p)))
                .ok_or_else(|| InputError::field("--agent", format!("\"{spec}\": expected NAME=SOCKET")))
        })
        .collect()
}

/// A guest's agent port: given with `--agent`; else beside its QMP socket (`--vm NAME=QMP` of
/// an rtvirt guest: both are in its runtime directory); else the one of the rtvirt guest of
/// that name.
pub fn agent_socket(binding: &Binding, sockets: &[(String, PathBuf)]) -> Option<PathBuf> {
    if let Some((_, p)) = sockets.iter().find(|(n, _)| *n == binding.guest) {
        return Some(p.clone());
    }
    let named = rtvirt_vm::paths::guest_run_dir(&binding.guest);
    let dirs = match &binding.source {
        GuestSource::Qmp(qmp) => vec![qmp.parent().map(PathBuf::from).unwrap_or_default(), named],
        GuestSource::VmName => vec![named],
        GuestSource::Thread(_) => Vec::new(),
    };
    dirs.iter().map(|d| rtvirt_vm::agent::socket(d)).find(|s| s.exists())
}

fn print_table(o: &Observation) {
    let mut t = Table::new(
        &["guest", "task", "source", "policy", "period us", "deadline us", "mean us", "p99 us", "max us", "samples"],
        4,
    );
    for g in &o.guests {
        for task in &g.tasks {
            t.row([
                g.name.clone(),
                task.name.clone(),
                match task.source {
                    Source::Agent => "agent".to_string(),
                    Source::HostInference => "host".to_string(),
                },
                task.policy.clone(),
                micros(task.period_ns as f64),
                micros(task.deadline_ns as f64),
                micros(task.exec.mean),
                micros(task.exec.p99 as f64),
                micros(task.exec.max as f64),
                task.samples.to_string(),
            ]);
        }
    }
    t.print();
    for g in &o.guests {
        let c = &g.agent.counters;
        let state = match g.agent.state {
            AgentState::Absent => "absent",
            AgentState::Reporting => "reporting",
            AgentState::Vanished => "vanished (host inference)",
        };
        let vcpus: Vec<String> = g
            .vcpus
            .iter()
            .map(|v| format!("vCPU {} {:.1}%{}", v.vcpu, v.utilisation * 100.0, if v.ended { " ended" } else { "" }))
            .collect();
        println!(
            "{}: agent {state}: {} lines, {} accepted ({} clamped), {} refused; {}",
            g.name,
            c.lines,
            c.accepted,
            c.clamped,
            c.refused(),
            vcpus.join(", ")
        );
    }
}

#[derive(Args)]
pub struct GuestAgentArgs {
    /// Where to write the reports: a file, FIFO, character device or Unix stream socket
    /// [default: the virtio-serial port named org.rtvirt.agent].
    #[arg(long, value_name = "PATH")]
    pub port: Option<PathBuf>,
    /// The job-boundary API's datagram socket (tasks send `NAME TID PERIOD_NS DEADLINE_NS EXEC_NS`),
    /// and its ring PATH.ring. Only a stale socket and ring an agent left there are replaced.
    #[arg(long, value_name = "PATH", default_value = rtvirt_probe::agent::jobs::DEFAULT_SOCKET)]
    pub api_socket: PathBuf,
    /// How often to report (10ms..10s).
    #[arg(long, default_value = "200ms", value_parser = Nanos::parse)]
    pub interval: Nanos,
    /// Stop after this long [default: until Ctrl-C/SIGTERM].
    #[arg(long, value_parser = Nanos::parse)]
    pub duration: Option<Nanos>,
}

pub fn run_guest_agent(args: GuestAgentArgs) -> CmdResult {
    if args.interval < Nanos::from_ms(10) || args.interval > Nanos::from_secs(10) {
        return Err(InputError::field("--interval", format!("{}: expected 10ms..10s", args.interval)).into());
    }
    let cfg = rtvirt_probe::agent::AgentConfig {
        port: args.port,
        api_socket: args.api_socket,
        interval: std::time::Duration::from_nanos(args.interval.0),
        duration: args.duration.map(|d| std::time::Duration::from_nanos(d.0)),
    };
    let s = rtvirt_probe::agent::run(&cfg)?;
    eprintln!(
        "guest-agent: {} lines sent, {} dropped by the port; {} jobs through the API ({} malformed; {} the ring \
         had no room for, {} lost in it)",
        s.lines, s.dropped, s.api_jobs, s.api_malformed, s.ring_full, s.ring_lost
    );
    Ok(Outcome::Ok)
}
