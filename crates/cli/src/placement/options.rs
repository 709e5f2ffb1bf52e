//! The options every measurement shares: where it runs (`--in host|container|vm`), under which
//! interference (`--load`), the output format, `--force`, and the `--in vm` guest options.

use crate::cli_common::Format;
use clap::{Args, ValueEnum};
use rtvirt_model::Nanos;
use rtvirt_probe::load::LoadSpec;

/// Where the measurement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Where {
    /// Directly on this host.
    #[default]
    Host,
    /// In a container rtvirt creates (network namespace, veth pair on a bridge, cgroup with a
    /// cpuset) and removes afterwards, also on failure or Ctrl-C.
    Container,
    /// In QEMU guests (crates/vm): `measure timer` and `measure tasks` run in a guest of each
    /// --guest-kernel with each host --load (the Abeni 2023 matrix); `measure net client` reaches a
    /// server in a guest; `measure net server` serves from a guest.
    Vm,
}

/// Options every measurement shares.
#[derive(Args, Clone)]
pub struct Common {
    /// Where to run: host, or a fresh container (netns + veth/bridge + cpuset cgroup).
    #[arg(long = "in", value_enum, default_value_t = Where::Host)]
    pub r#in: Where,
    /// Interference while measuring: KIND[:N][@CPUS] with KIND net|net-udp|syscalls|cache|cpu
    /// (e.g. `cpu:2@0`, `cache`, `net@1`); repeatable. Loads run where the measurement runs
    /// (inside the container with --in container, on the host with --in vm). What they achieved
    /// is recorded in environment.load.
    #[arg(long = "load", value_name = "KIND[:N][@CPUS]", value_parser = parse_load)]
    pub load: Vec<LoadSpec>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Allow priority 99, intervals below 50us, more than 4 load workers per CPU, runs over 1 hour.
    #[arg(long)]
    pub force: bool,
    /// With --in vm: guest kernel(s), rt and/or nrt (default: both for timer and tasks; net
    /// needs one).
    #[arg(long, value_delimiter = ',')]
    pub guest_kernel: Vec<String>,
    #[command(flatten)]
    pub vm: InVmOpts,
}

/// `--load`; an optional `host:` prefix says where it runs (the host), e.g. with `--in vm`.
pub fn parse_load(text: &str) -> Result<LoadSpec, String> {
    LoadSpec::parse(text.strip_prefix("host:").unwrap_or(text))
}

/// The `--in vm` options of `rtvirt measure` (flattened into its common options).
#[derive(Args, Clone)]
pub struct InVmOpts {
    /// With --in vm: bound on QEMU start + guest kernel boot + init.
    #[arg(long, value_parser = Nanos::parse, default_value = "60s")]
    pub boot_timeout: Nanos,
    /// With --in vm: bound on the measurement in each guest (default: its --duration + 2 min).
    #[arg(long, value_parser = Nanos::parse)]
    pub job_timeout: Option<Nanos>,
    /// With --in vm: run the guest agent (`rtvirt guest-agent`) beside the measurement, on the
    /// guest's virtio-serial port (/run/rtvirt/vm/rtvirt-measure-PID/agent.sock): `measure tasks`
    /// reports each job's execution time to it, for `rtvirt host observe` and `rtvirt host adapt`.
    #[arg(long)]
    pub agent: bool,
}
