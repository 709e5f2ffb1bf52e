//! The placement driver: where a measurement runs - on this host, in a fresh container, or in
//! QEMU guests (`--in host|container|vm`) - with its interference loads around it. Every
//! measurement of `rtvirt measure` implements [`Measurement`] (measure here, report, and what it
//! needs elsewhere) and is run by [`drive`]; a new measurement gets the three placements by
//! implementing it, without touching the container or VM code.
//!
//! - [`options`]: the options every measurement shares (`--in`, `--load`, `--format`, ...).
//! - [`command_line`]: every command line run elsewhere, made from the parsed arguments.
//! - [`container`]: this command re-run in a container; a peer server in a container.
//! - [`vm`]: this command in guests of each kernel x host load; a server in a guest.
//! - [`guests`]: QEMU guests from the host's side, shared with `rtvirt vm`.
//!
//! It lives in the cli crate, not in rtvirt-vm: placing is not VM-specific (containers and host
//! loads are rtvirt-probe's), and it re-runs this binary's own command line, which only the cli
//! knows; rtvirt-vm stays the library of one guest's life.

pub mod command_line;
pub mod container;
pub mod explain_host;
pub mod guests;
pub mod options;
pub mod vm;

use crate::cli_common::CmdResult;
use command_line::CommandLine;
use options::{Common, Where};
use rtvirt_model::results::Results;
use rtvirt_model::Nanos;
use rtvirt_probe::load;
use std::net::SocketAddr;
use vm::GuestJob;

/// A measurement as the placement driver sees it.
pub trait Measurement {
    /// The options every measurement shares (where it runs, loads, format, force).
    fn common(&self) -> &Common;
    /// How long it measures (bounds a guest's job, a peer server's time).
    fn duration(&self) -> Nanos;
    /// The CPUs of its container (the container's cpuset): by default every CPU this process
    /// may use.
    fn container_cpus(&self) -> Vec<u32> {
        rtvirt_probe::cpus::allowed()
    }
    /// Whether it is one end of a client/server pair.
    fn role(&self) -> Role {
        Role::Whole
    }
    /// What each guest runs with `--in vm`: by default this very command, without the options
    /// that stay on the host, on one vCPU.
    fn guest_job(&self, line: CommandLine) -> anyhow::Result<GuestJob> {
        Ok(GuestJob { line, files: Vec::new(), vcpus: 1, explain: false, trace: None, bring_back: None })
    }
    /// Measure here (the loads already run); a client gets the address of its peer server
    /// when one was placed for it (`None`: its own `--connect`).
    fn measure(&mut self, server: Option<SocketAddr>) -> anyhow::Result<Results>;
    /// Print the results in the chosen format; `Failed` when the thing measured failed.
    fn report(&self, results: &Results) -> CmdResult;
}

/// Which end of a client/server pair a measurement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The whole measurement runs where it is placed (timer, tasks).
    Whole,
    /// A server: in a container it runs there whole; in a guest it serves from a networked
    /// guest until its duration ends.
    Server { port: u16, tcp: bool },
    /// A client: it stays on this host and a peer server on `port` is placed instead.
    Client { port: u16, tcp: bool, timeout: Nanos },
}

/// Run `measurement`, given on the command line as `line`, where its `--in` says.
pub fn drive(mut measurement: impl Measurement, line: CommandLine) -> CmdResult {
    let common = measurement.common().clone();
    match (common.r#in, measurement.role()) {
        (Where::Host, _) => {
            let results = with_loads(&common, || measurement.measure(None))?;
            measurement.report(&results)
        }
        (Where::Container, Role::Client { port, tcp, timeout }) => {
            let serve_for = Nanos(measurement.duration().0 + timeout.0 + 5_000_000_000);
            let results = with_loads(&common, || {
                container::with_server(port, tcp, serve_for, |server| measurement.measure(Some(server)))
            })?;
            measurement.report(&results)
        }
        (Where::Container, _) => container::rerun(&line, &measurement.container_cpus()),
        (Where::Vm, Role::Whole) => {
            let duration = measurement.duration();
            vm::in_guests(measurement.guest_job(vm::guest_line(line))?, &common, duration)
        }
        (Where::Vm, Role::Server { port, tcp }) => {
            vm::serve(vm::guest_line(line), port, tcp, &common, measurement.duration())
        }
        (Where::Vm, Role::Client { port, tcp, .. }) => vm::client(&line, port, tcp, &common, measurement.duration()),
    }
}

/// Run the loads of `common` around `body`, recording what they achieved in the result.
pub fn with_loads(common: &Common, body: impl FnOnce() -> anyhow::Result<Results>) -> anyhow::Result<Results> {
    for l in &common.load {
        l.validate("--load", common.force)?;
    }
    let running = load::start_all(&common.load)?;
    let out = body();
    let achieved = load::stop_all(running);
    let mut r = out?;
    if let Some(env) = r.environment.as_mut() {
        env.load.extend(achieved);
    }
    Ok(r)
}
