//! `--in vm`: a measurement in QEMU guests. A whole measurement (timer, tasks) runs in a guest
//! of each `--guest-kernel` x host load (none + each `--load`), as one table - the Abeni 2023
//! matrix; a net server serves from a networked guest; a net client stays on this host and
//! reaches a server in a guest. The guests get the documented default options, a name of this
//! process and a job bound derived from the measurement's duration (see `rtvirt vm` for more
//! control).

use super::command_line::{protocol_flag, CommandLine};
use super::guests::{
    boot_config, default_guest_opts, matrix, net_in_guest, note_host_loads, parse_flavour, GuestOpts, HostLoads, Job,
    NetParams, SERVER_MARGIN,
};
use super::options::Common;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use rtvirt_model::Nanos;
use rtvirt_vm::{measure, Flavour, GuestFile};

/// What a guest runs: `rtvirt <line>` with `files` in its `files/`, on `vcpus` vCPUs.
pub struct GuestJob {
    pub line: CommandLine,
    pub files: Vec<GuestFile>,
    pub vcpus: u32,
    /// The guest explains its late samples: the host side is added (`explain_host`).
    pub explain: bool,
    /// `--trace FILE.json`, written on the host from the merged explanation.
    pub trace: Option<std::path::PathBuf>,
    /// A file the job writes that comes back to this host.
    pub bring_back: Option<super::guests::BringBack>,
}

/// Margin of the derived job bound over the measurement's duration: rtvirt starting in the
/// guest, calibration, set-up and teardown (slow under TCG).
const JOB_MARGIN: Nanos = Nanos::from_secs(120);

/// The job bound of an `--in vm` measurement of `duration`: `--job-timeout` if given, else the
/// duration plus [`JOB_MARGIN`].
fn job_bound(duration: Nanos, given: Option<Nanos>) -> Nanos {
    given.unwrap_or(Nanos(duration.0.saturating_add(JOB_MARGIN.0)))
}

/// The ids of the options of `rtvirt measure` that stay on the host with `--in vm`.
const HOST_SIDE: &[&str] = &["in", "guest_kernel", "load", "format", "boot_timeout", "job_timeout", "agent"];

/// What a guest runs of this command: `line` without the options that stay on the host.
pub fn guest_line(line: CommandLine) -> CommandLine {
    line.without(HOST_SIDE)
}

/// `job` in a guest of each `--guest-kernel` (both by default) x host load, bounded by `duration`.
pub fn in_guests(job: GuestJob, common: &Common, duration: Nanos) -> CmdResult {
    let kernels = parse_kernels(&common.guest_kernel)?;
    let opts = job_guest_opts(&job, common, duration);
    let job = Job {
        args: job.line.argv_text()?,
        files: job.files,
        explain: job.explain,
        trace: job.trace,
        agent: common.vm.agent,
        bring_back: job.bring_back,
    };
    matrix(&kernels, &common.load, &opts, &job, common.format, None)
}

/// The guest options of `job`: its vCPUs, and a job bound that also covers bringing its file
/// back over the serial line (unless `--job-timeout` is given).
fn job_guest_opts(job: &GuestJob, common: &Common, duration: Nanos) -> GuestOpts {
    let mut opts = hook_guest_opts(common, duration);
    opts.vcpus = job.vcpus;
    if job.bring_back.is_some() && common.vm.job_timeout.is_none() {
        let transfer = measure::MAX_FILE_TIME.as_nanos() as u64;
        opts.timeout = Nanos(opts.timeout.0.saturating_add(transfer));
    }
    opts
}

/// A client on this host (`line`, run as a child process without its host-side options) against
/// a server on `port` in a networked guest.
/// With `--explain` (or `--trace`) the server in the guest explains its side too and the host
/// splits each round trip's `guest` segment with it; the trace is then written here, merged.
pub fn client(line: &CommandLine, port: u16, tcp: bool, common: &Common, duration: Nanos) -> CmdResult {
    let flavour = one_kernel(&common.guest_kernel)?;
    let explain_syscalls = line.has("explain_syscalls");
    let explain = line.has("explain") || line.has("trace") || explain_syscalls;
    let trace = line.value("trace").map(std::path::PathBuf::from);
    let client_args = client_arguments(line)?;
    let loads = &common.load;
    let params = NetParams { tcp, port, duration, loads, client_args: &client_args, explain, explain_syscalls, trace };
    net_in_guest(flavour, &hook_guest_opts(common, duration + SERVER_MARGIN), &params, common.format)
}

/// The options of the client `line` for the client on the host, without those that stay on
/// the host and those `net_in_guest` sets itself (`--trace` becomes `--explain`: the trace is
/// written once the guest's side is merged).
pub fn client_arguments(line: &CommandLine) -> anyhow::Result<Vec<String>> {
    let mut line = line.clone().without(HOST_SIDE).without(&["connect", "duration", "udp", "tcp"]);
    if line.has("trace") {
        line = line.without(&["trace"]).with_flag("explain", "explain");
    }
    line.arguments_text()
}

/// A server (`line`, listening on `port` of all the guest's addresses) in a networked guest (tap
/// on a host bridge): its address is printed, and it is held for `duration` (the server's own)
/// or until Ctrl-C; then the guest is torn down. Host loads run meanwhile.
pub fn serve(line: CommandLine, port: u16, tcp: bool, common: &Common, duration: Nanos) -> CmdResult {
    let flavour = one_kernel(&common.guest_kernel)?;
    let opts = hook_guest_opts(common, duration);
    let (image, cfg) = boot_config(flavour, &opts)?;
    let accel = cfg.accel;
    let protocol = &protocol_flag(tcp)[2..];
    let args = line.with_option("listen", "listen", format!("0.0.0.0:{port}")).argv_text()?;
    eprintln!(
        "vm: booting {} ({} kernel, {}, virtio-net) to serve {protocol} on port {port}",
        cfg.name,
        flavour,
        accel.name()
    );
    let running = HostLoads::start(&common.load)?;
    let served = measure::serve(&image, &cfg, &args, "listening on", |guest| {
        let ip = guest.guest_ip.as_deref().unwrap_or("?");
        // A status line: stderr, so that stdout holds only the results.
        eprintln!(
            "listening on {ip}:{port} ({protocol}) in guest {} ({} kernel, {}); serving for {duration} or until Ctrl-C",
            guest.name,
            flavour,
            accel.name()
        );
    });
    let reports = running.stop();
    let Some(mut m) = served? else {
        eprintln!("vm: stopped by signal; guest {} torn down (its server counts went with it)", cfg.name);
        return Ok(Outcome::Ok);
    };
    note_host_loads(&mut m.results, &common.load, reports);
    match common.format {
        Format::Json => print_json(&m.results)?,
        Format::Table => println!(
            "served: {}",
            serde_json::to_string(&m.results.net_server.as_ref().and_then(|s| s.server.as_ref()))?
        ),
    }
    Ok(if m.rc == 1 { Outcome::Failed } else { Outcome::Ok })
}

/// The one guest kernel of the net hooks.
fn one_kernel(values: &[String]) -> anyhow::Result<Flavour> {
    match parse_kernels(values)?[..] {
        [flavour] => Ok(flavour),
        _ => {
            anyhow::bail!("--in vm for net measures one guest: choose it with --guest-kernel rt or --guest-kernel nrt")
        }
    }
}

/// `--guest-kernel` values (none: both).
fn parse_kernels(values: &[String]) -> anyhow::Result<Vec<Flavour>> {
    if values.is_empty() {
        return Ok(Flavour::ALL.to_vec());
    }
    values.iter().map(|v| parse_flavour(v).map_err(|e| anyhow::anyhow!("--guest-kernel: {e}"))).collect()
}

/// The guest options of the `--in vm` hooks: the documented defaults, with a guest name of this
/// process (`rtvirt-measure-PID`), so that concurrent `--in vm` runs do not compete for one name,
/// `--boot-timeout`, and the job bound derived from the measurement's `duration` (or
/// `--job-timeout`).
fn hook_guest_opts(common: &Common, duration: Nanos) -> GuestOpts {
    GuestOpts {
        name: format!("rtvirt-measure-{}", std::process::id()),
        boot_timeout: common.vm.boot_timeout,
        timeout: job_bound(duration, common.vm.job_timeout),
        ..default_guest_opts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_kernels_default_to_both_and_are_checked() {
        assert_eq!(parse_kernels(&[]).unwrap(), [Flavour::Nrt, Flavour::Rt]);
        assert_eq!(parse_kernels(&["rt".into()]).unwrap(), [Flavour::Rt]);
        assert!(parse_kernels(&["xen".into()]).unwrap_err().to_string().contains("--guest-kernel"));
        assert_eq!(default_guest_opts().vcpus, 1);
        let opts = hook_guest_opts(&common(&["--in", "vm"]), Nanos::from_secs(10));
        assert_eq!(opts.name, format!("rtvirt-measure-{}", std::process::id()));
        assert!(rtvirt_vm::runtime::check_name(&opts.name).is_ok());
        assert!(one_kernel(&[]).unwrap_err().to_string().contains("--guest-kernel rt or --guest-kernel nrt"));
        assert_eq!(one_kernel(&["rt".into()]).unwrap(), Flavour::Rt);
    }

    fn common(args: &[&str]) -> Common {
        #[derive(clap::Parser)]
        struct C {
            #[command(flatten)]
            common: Common,
        }
        <C as clap::Parser>::try_parse_from(std::iter::once("rtvirt").chain(args.iter().copied())).unwrap().common
    }

    #[test]
    fn the_job_bound_follows_the_duration_unless_given() {
        assert_eq!(job_bound(Nanos::from_secs(600), None), Nanos::from_secs(720), "10 min + the 2 min margin");
        assert_eq!(job_bound(Nanos::from_secs(1), None), Nanos::from_secs(121));
        assert_eq!(job_bound(Nanos(u64::MAX), None), Nanos(u64::MAX));
        assert_eq!(job_bound(Nanos::from_secs(600), Some(Nanos::from_secs(5))), Nanos::from_secs(5));
        let opts = hook_guest_opts(&common(&["--in", "vm"]), Nanos::from_secs(600));
        assert_eq!((opts.timeout, opts.boot_timeout), (Nanos::from_secs(720), Nanos::from_secs(60)));
        let opts =
            hook_guest_opts(&common(&["--boot-timeout", "150s", "--job-timeout", "60min"]), Nanos::from_secs(600));
        assert_eq!((opts.timeout, opts.boot_timeout), (Nanos::from_secs(3600), Nanos::from_secs(150)));
    }

    #[test]
    fn a_file_to_bring_back_extends_the_job_bound_unless_given() {
        let line = CommandLine::default();
        let mut job = GuestJob { line, files: Vec::new(), vcpus: 2, explain: false, trace: None, bring_back: None };
        let ten = Nanos::from_secs(10);
        assert_eq!(job_guest_opts(&job, &common(&[]), ten).timeout, Nanos::from_secs(130));
        assert_eq!(job_guest_opts(&job, &common(&[]), ten).vcpus, 2);
        job.bring_back = Some(super::super::guests::BringBack { guest: "/tmp/x".into(), host: "x".into() });
        assert_eq!(job_guest_opts(&job, &common(&[]), ten).timeout, Nanos::from_secs(130 + 90), "+ the transfer");
        let given = job_guest_opts(&job, &common(&["--job-timeout", "5s"]), ten);
        assert_eq!(given.timeout, Nanos::from_secs(5), "the user's bound is the bound");
    }
}
