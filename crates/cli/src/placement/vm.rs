//! `--in vm`: a measurement run in QEMU guests (timer and tasks: each guest kernel x host load;
//! net: a server in a guest).

use super::guests::{
    boot_config, default_guest_opts, matrix, net_in_guest, note_host_loads, parse_flavour, GuestOpts, HostLoads, Job,
    NetParams, SERVER_MARGIN,
};
use super::options::Common;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use anyhow::Context;
use rtvirt_model::Nanos;
use rtvirt_vm::{measure, Flavour, GuestFile};

/// Margin of the derived job bound over the measurement's duration: rtvirt starting in the
/// guest, calibration, set-up and teardown (slow under TCG).
const JOB_MARGIN: Nanos = Nanos::from_secs(120);

/// The job bound of an `--in vm` measurement of `duration`: `--job-timeout` if given, else the
/// duration plus [`JOB_MARGIN`].
fn job_bound(duration: Nanos, given: Option<Nanos>) -> Nanos {
    given.unwrap_or(Nanos(duration.0.saturating_add(JOB_MARGIN.0)))
}

/// The hook of `rtvirt measure timer --in vm [--guest-kernel rt,nrt] [--load host:KIND]`: the
/// same command run in guests of each kernel (both by default) x host load (none + each --load),
/// as one table - the SEEDS 4 matrix - with default guest options bounded by `duration` (see
/// `rtvirt vm matrix` for more control).
pub fn measure_in_vm(common: &Common, duration: Nanos) -> CmdResult {
    let kernels = parse_kernels(&common.guest_kernel)?;
    let job = Job { args: guest_args_from(std::env::args().skip(1)), files: Vec::new() };
    matrix(&kernels, &common.load, &hook_guest_opts(common, duration), &job, common.format, None)
}

/// The hook of `rtvirt measure tasks [SCENARIO] [--plan PLAN] --in vm`: the task sets run in a
/// guest of each --guest-kernel (both by default) x host load, under `plan` (made on the host),
/// with as many vCPUs as the plan's cores; the scenario file (and its samples files) and the
/// plan travel into the guest as files.
pub fn tasks_in_vm(
    common: &Common,
    scenario: &rtvirt_model::scenario::Scenario,
    plan: &rtvirt_model::plan::Plan,
    cfg: &rtvirt_probe::tasks::TasksConfig,
) -> CmdResult {
    let kernels = parse_kernels(&common.guest_kernel)?;
    let mut files = vec![GuestFile { name: "plan.json".into(), data: serde_json::to_vec_pretty(plan)? }];
    let mut args: Vec<String> = vec!["measure".into(), "tasks".into()];
    if let Some(source) = &scenario.source {
        files.extend(scenario_files(scenario, source)?);
        args.push(files[1].guest_path());
    }
    args.extend([
        "--plan".into(),
        files[0].guest_path(),
        "--duration".into(),
        cfg.duration.to_string(),
        "--seed".into(),
        cfg.seed.to_string(),
    ]);
    if cfg.force {
        args.push("--force".into());
    }
    let mut opts = hook_guest_opts(common, cfg.duration);
    opts.vcpus = plan.guests.iter().filter_map(|g| g.core).max().map_or(1, |c| c + 1);
    matrix(&kernels, &common.load, &opts, &Job { args, files }, common.format, None)
}

/// The scenario file and the execution-time samples files it names, as guest files: the
/// scenario becomes `files/scenario.toml`, samples files keep their paths relative to it (so
/// they must be below the scenario's directory).
fn scenario_files(
    scenario: &rtvirt_model::scenario::Scenario,
    source: &std::path::Path,
) -> anyhow::Result<Vec<GuestFile>> {
    let read = |p: &std::path::Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    let mut files = vec![GuestFile { name: "scenario.toml".into(), data: read(source)? }];
    let base = source.parent().unwrap_or(std::path::Path::new(""));
    for task in scenario.guests.iter().flat_map(|g| &g.tasks) {
        if let rtvirt_model::exec::ExecModel::Samples(s) = &task.exec {
            let below = s
                .path
                .strip_prefix(base)
                .ok()
                .filter(|r| r.components().all(|c| matches!(c, std::path::Component::Normal(_))));
            let Some(name) = below.and_then(|r| r.to_str()).filter(|n| *n != "scenario.toml") else {
                anyhow::bail!(
                    "{}: task {}: --in vm carries samples files only from below the scenario's directory (found {})",
                    source.display(),
                    task.name,
                    s.path.display()
                );
            };
            if !files.iter().any(|f| f.name == name) {
                files.push(GuestFile { name: name.into(), data: read(&s.path)? });
            }
        }
    }
    Ok(files)
}

/// The hook of `rtvirt measure net client --in vm`: a server in a guest, this client on the host.
pub fn client_in_vm(common: &Common, net: (bool, u16, Nanos)) -> CmdResult {
    let (tcp, port, duration) = net;
    let flavour = one_kernel(&common.guest_kernel)?;
    let client_args = client_args_from(std::env::args().skip(1));
    let params = NetParams { tcp, port, duration, loads: &common.load, client_args: &client_args };
    net_in_guest(flavour, &hook_guest_opts(common, duration + SERVER_MARGIN), &params, common.format)
}

/// The hook of `rtvirt measure net server --in vm`: the server runs in a networked guest (tap on
/// a host bridge), its address is printed, and it is held for `duration` (the server's own) or
/// until Ctrl-C; then the guest is torn down. Host loads run meanwhile.
pub fn server_in_vm(common: &Common, port: u16, tcp: bool, service_time: Nanos, duration: Nanos) -> CmdResult {
    let flavour = one_kernel(&common.guest_kernel)?;
    let opts = hook_guest_opts(common, duration);
    let (image, cfg) = boot_config(flavour, &opts)?;
    let accel = cfg.accel;
    let proto = if tcp { "--tcp" } else { "--udp" };
    let mut args: Vec<String> = [
        "measure",
        "net",
        "server",
        "--listen",
        &format!("0.0.0.0:{port}"),
        proto,
        "--service-time",
        &service_time.to_string(),
        "--duration",
        &duration.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if common.force {
        args.push("--force".into());
    }
    eprintln!(
        "vm: booting {} ({} kernel, {}, virtio-net) to serve {} on port {port}",
        cfg.name,
        flavour,
        accel.name(),
        &proto[2..]
    );
    let running = HostLoads::start(&common.load)?;
    let served = measure::serve(&image, &cfg, &args, "listening on", |guest| {
        let ip = guest.guest_ip.as_deref().unwrap_or("?");
        println!(
            "listening on {ip}:{port} ({}) in guest {} ({} kernel, {}); serving for {duration} or until Ctrl-C",
            &proto[2..],
            guest.name,
            flavour,
            accel.name()
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
    });
    let reports = running.stop();
    let Some(mut m) = served? else {
        eprintln!("vm: stopped by signal; guest {} torn down (its server counts went with it)", cfg.name);
        return Ok(Outcome::Ok);
    };
    note_host_loads(&mut m.results, &common.load, reports);
    match common.format {
        Format::Json => print_json(&m.results)?,
        Format::Table => println!("served: {}", m.results.extra.get("server").cloned().unwrap_or_default()),
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

/// The options of `rtvirt measure` that stay on the host with `--in vm`.
const HOST_SIDE_OPTIONS: &[&str] = &["--in", "--guest-kernel", "--load", "--format", "--boot-timeout", "--job-timeout"];

/// This command's arguments without the options that stay on the host: what the guest runs.
fn guest_args_from(args: impl Iterator<Item = String>) -> Vec<String> {
    strip_options(args, HOST_SIDE_OPTIONS, &[])
}

/// Extra client options of `measure net client --in vm` for the host's client (without the
/// subcommand and the options `vm net` sets itself).
fn client_args_from(args: impl Iterator<Item = String>) -> Vec<String> {
    let rest = strip_options(args, &[HOST_SIDE_OPTIONS, &["--connect", "--duration"]].concat(), &["--udp", "--tcp"]);
    rest.into_iter().skip_while(|a| !a.starts_with('-')).collect()
}

/// `args` without the `with_value` options (`--x V` or `--x=V`) and the `flags`.
fn strip_options(args: impl Iterator<Item = String>, with_value: &[&str], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let name = a.split('=').next().unwrap_or("");
        if with_value.contains(&name) {
            if !a.contains('=') {
                args.next();
            }
        } else if !flags.contains(&a.as_str()) {
            out.push(a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> impl Iterator<Item = String> + '_ {
        line.split_whitespace().map(str::to_string)
    }

    #[test]
    fn host_side_options_are_removed_from_the_guest_command() {
        assert_eq!(
            guest_args_from(args("measure timer --in vm --duration 5s --guest-kernel=rt --load host:syscalls --format json --interval 1ms")),
            ["measure", "timer", "--duration", "5s", "--interval", "1ms"]
        );
        assert_eq!(
            client_args_from(args(
                "measure net client --in=vm --tcp --connect 1.2.3.4:9 --arrivals poisson:100 --duration 3s --size 64"
            )),
            ["--arrivals", "poisson:100", "--size", "64"]
        );
    }

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
        // they stay on the host
        assert_eq!(
            guest_args_from(args("measure timer --in vm --boot-timeout 150s --job-timeout=20min --duration 10min")),
            ["measure", "timer", "--duration", "10min"]
        );
    }
}
