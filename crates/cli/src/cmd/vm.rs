//! `rtvirt vm`: minimal QEMU guests (Debian kernel + busybox initramfs carrying this rtvirt
//! binary) and rtvirt measurements inside them. Wiring only: the work is in rtvirt-vm (guest) and
//! rtvirt-probe (host loads).

use super::measure::Common;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use anyhow::Context;
use clap::{Args, Subcommand};
use rtvirt_model::results::{Environment, Results};
use rtvirt_model::Nanos;
use rtvirt_probe::load::{self, LoadSpec, RunningLoad};
use rtvirt_vm::accel::{self, AccelChoice, ProbeResult};
use rtvirt_vm::image::{self, Image, ImageSpec};
use rtvirt_vm::{measure, paths, runtime, Flavour, Guest, GuestConfig, GuestFile};
use std::time::Duration;

/// The `--in vm` options of `rtvirt measure` (flattened into its common options).
#[derive(Args, Clone)]
pub struct InVmOpts {
    /// With --in vm: bound on QEMU start + guest kernel boot + init.
    #[arg(long, value_parser = Nanos::parse, default_value = "60s")]
    pub boot_timeout: Nanos,
    /// With --in vm: bound on the measurement in each guest (default: its --duration + 2 min).
    #[arg(long, value_parser = Nanos::parse)]
    pub job_timeout: Option<Nanos>,
}

/// Margin of the derived job bound over the measurement's duration: rtvirt starting in the
/// guest, calibration, set-up and teardown (slow under TCG).
const JOB_MARGIN: Nanos = Nanos::from_secs(120);

/// The job bound of an `--in vm` measurement of `duration`: `--job-timeout` if given, else the
/// duration plus [`JOB_MARGIN`].
fn job_bound(duration: Nanos, given: Option<Nanos>) -> Nanos {
    given.unwrap_or(Nanos(duration.0.saturating_add(JOB_MARGIN.0)))
}

#[derive(Args)]
#[command(after_help = "\
Guests boot the Debian cloud (nrt) or rt (PREEMPT_RT) kernel fetched by scripts/setup.sh into \
the cache (~/.cache/rtvirt, or $RTVIRT_CACHE_DIR), with an initramfs holding busybox and this \
rtvirt binary. Running guests are listed under /run/rtvirt/vm/<name>/ (QMP socket, QEMU pid, \
vCPU threads) for `rtvirt host threads --vm NAME`.\n\n\
Examples:\n  \
rtvirt vm image --kernel all\n  \
rtvirt vm run --kernel rt -- measure timer --duration 5s\n  \
rtvirt vm run --name g1 --hold 60s &   rtvirt host threads --vm g1\n  \
rtvirt vm matrix --load host:syscalls:2 -- measure timer --duration 10s")]
pub struct VmArgs {
    #[command(subcommand)]
    pub action: VmAction,
}

#[derive(Subcommand)]
pub enum VmAction {
    /// Build (or reuse) the guest image of a kernel: kernel + initramfs with busybox and rtvirt.
    Image(ImageArgs),
    /// Boot a guest, run an rtvirt command in it (or just hold it up), tear it down.
    Run(RunArgs),
    /// SEEDS 4: the same measurement for each guest kernel x host load, as one table.
    Matrix(MatrixArgs),
    /// Network round trips to a guest: server in the guest, client on the host, over a tap on a
    /// bridge and virtio-net (vhost-net when available) - the bridged path of SEEDS 1 and 3.
    Net(NetArgs),
    /// Find out (bounded boot) whether KVM can boot a guest here; otherwise TCG is used.
    ProbeAccel(ProbeAccelArgs),
    /// List running rtvirt guests (name, QEMU pid, QMP socket, vCPU threads).
    List(ListArgs),
}

/// `--kernel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelArg {
    /// Debian cloud kernel (voluntary preemption).
    Nrt,
    /// Debian PREEMPT_RT kernel.
    Rt,
    /// Both (image only).
    All,
}

#[derive(Args)]
pub struct ImageArgs {
    #[arg(long, value_enum, default_value_t = KernelArg::Nrt)]
    pub kernel: KernelArg,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// How to boot a guest (shared by run and matrix).
#[derive(Args, Clone)]
pub struct GuestOpts {
    /// Accelerator: auto = KVM if a bounded boot probe succeeds (cached), else TCG.
    /// TCG timings are not representative of real hardware.
    #[arg(long, default_value = "auto", value_parser = AccelChoice::parse)]
    pub accel: AccelChoice,
    /// Guest vCPUs.
    #[arg(long, default_value_t = 1)]
    pub vcpus: u32,
    /// Guest memory in MiB (locked with -overcommit mem-lock=on).
    #[arg(long, default_value_t = 512)]
    pub memory: u32,
    /// Pin vCPU i to the i-th host CPU of this list (e.g. "1" or "1,2").
    #[arg(long, value_delimiter = ',')]
    pub pin: Vec<usize>,
    /// Guest name (QEMU -name, /run/rtvirt/vm/<name>/).
    #[arg(long, default_value = "rtvirt-guest")]
    pub name: String,
    /// Bound on QEMU start + kernel boot + init.
    #[arg(long, default_value = "60s", value_parser = Nanos::parse)]
    pub boot_timeout: Nanos,
    /// Bound on the command run in the guest.
    #[arg(long, default_value = "300s", value_parser = Nanos::parse)]
    pub timeout: Nanos,
    /// Bound on the KVM boot probe of --accel auto.
    #[arg(long, default_value = "10s", value_parser = Nanos::parse)]
    pub probe_timeout: Nanos,
}

#[derive(Args)]
pub struct RunArgs {
    /// Guest kernel.
    #[arg(long, value_enum, default_value_t = KernelArg::Nrt)]
    pub kernel: KernelArg,
    #[command(flatten)]
    pub guest: GuestOpts,
    /// Host interference while the guest runs: [host:]KIND[:N][@CPUS] (net, net-udp, syscalls,
    /// cache, cpu), repeatable. For load inside the guest, pass --load to the guest command.
    #[arg(long = "load", value_parser = parse_host_load)]
    pub loads: Vec<LoadSpec>,
    /// Give the guest a virtio-net NIC on a host bridge (host 10.213.N.1, guest 10.213.N.2).
    #[arg(long)]
    pub net: bool,
    /// Only boot the guest and keep it up this long (for `rtvirt host threads --vm NAME`).
    #[arg(long, value_parser = Nanos::parse, conflicts_with = "guest_args")]
    pub hold: Option<Nanos>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The rtvirt command to run in the guest (after `--`), e.g. `measure timer --duration 5s`;
    /// `--format json` is added. Its results come back with the guest's environment.
    #[arg(last = true, value_name = "GUEST_ARGS")]
    pub guest_args: Vec<String>,
}

#[derive(Args)]
pub struct MatrixArgs {
    /// Guest kernels (rows).
    #[arg(long, value_delimiter = ',', default_values = ["nrt", "rt"], value_parser = parse_flavour)]
    pub kernels: Vec<Flavour>,
    /// Host loads (columns, besides "none"): [host:]KIND[:N][@CPUS], repeatable.
    #[arg(long = "load", value_parser = parse_host_load)]
    pub loads: Vec<LoadSpec>,
    #[command(flatten)]
    pub guest: GuestOpts,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write each cell's results to DIR/vm-<kernel>-<load>.json (for `rtvirt report`).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<std::path::PathBuf>,
    /// The rtvirt measurement run in every guest (after `--`).
    #[arg(last = true, value_name = "GUEST_ARGS", default_values = ["measure", "timer", "--duration", "10s"])]
    pub guest_args: Vec<String>,
}

#[derive(Args)]
pub struct NetArgs {
    /// Guest kernel.
    #[arg(long, value_enum, default_value_t = KernelArg::Nrt)]
    pub kernel: KernelArg,
    #[command(flatten)]
    pub guest: GuestOpts,
    /// TCP instead of UDP.
    #[arg(long)]
    pub tcp: bool,
    /// Port the guest's server listens on.
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
    /// How long the host's client sends requests.
    #[arg(long, default_value = "10s", value_parser = Nanos::parse)]
    pub duration: Nanos,
    /// Host interference during the client's run: [host:]KIND[:N][@CPUS], repeatable.
    #[arg(long = "load", value_parser = parse_host_load)]
    pub loads: Vec<LoadSpec>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// More options for the host's `rtvirt measure net client` (after `--`), e.g.
    /// `--arrivals uniform:1ms-10ms --size 64`.
    #[arg(last = true, value_name = "CLIENT_ARGS")]
    pub client_args: Vec<String>,
}

#[derive(Args)]
pub struct ProbeAccelArgs {
    /// Bound on the KVM boot.
    #[arg(long, default_value = "10s", value_parser = Nanos::parse)]
    pub timeout: Nanos,
    /// Probe again even if a cached result exists.
    #[arg(long)]
    pub refresh: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args)]
pub struct ListArgs {
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn parse_flavour(text: &str) -> Result<Flavour, String> {
    match text {
        "rt" => Ok(Flavour::Rt),
        "nrt" => Ok(Flavour::Nrt),
        _ => Err(format!("\"{text}\" is not a guest kernel (expected rt or nrt)")),
    }
}

/// `--load`: a host load, optionally prefixed `host:`.
fn parse_host_load(text: &str) -> Result<LoadSpec, String> {
    if text.starts_with("guest:") {
        return Err("loads inside the guest belong to the guest command: put `--load KIND` after `--`".into());
    }
    LoadSpec::parse(text.strip_prefix("host:").unwrap_or(text))
}

pub fn run(a: VmArgs) -> CmdResult {
    match a.action {
        VmAction::Image(a) => image_cmd(a),
        VmAction::Run(a) => run_cmd(a),
        VmAction::Matrix(a) => matrix_cmd(a),
        VmAction::Net(a) => net_cmd(a),
        VmAction::ProbeAccel(a) => probe_accel_cmd(a),
        VmAction::List(a) => list_cmd(a),
    }
}

fn flavours(k: KernelArg) -> Vec<Flavour> {
    match k {
        KernelArg::Nrt => vec![Flavour::Nrt],
        KernelArg::Rt => vec![Flavour::Rt],
        KernelArg::All => Flavour::ALL.to_vec(),
    }
}

fn single_flavour(k: KernelArg) -> anyhow::Result<Flavour> {
    match k {
        KernelArg::All => {
            anyhow::bail!("--kernel all is for `vm image`; `vm run` boots one kernel (use `vm matrix` for both)")
        }
        k => Ok(flavours(k)[0]),
    }
}

/// The image of `flavour` carrying this rtvirt binary (built or reused).
fn guest_image(flavour: Flavour) -> anyhow::Result<Image> {
    let cache = paths::cache_dir();
    let exe = std::env::current_exe().context("cannot find the rtvirt binary to put in the guest")?;
    let spec = ImageSpec::standard(&cache, flavour, Some(exe))?;
    let img = image::build(&cache, &spec)?;
    eprintln!(
        "vm: image {} {} ({:.1} MiB, {})",
        flavour,
        img.kernel_version,
        img.size_bytes as f64 / 1048576.0,
        if img.rebuilt { "built" } else { "cached" }
    );
    Ok(img)
}

fn image_cmd(a: ImageArgs) -> CmdResult {
    let images = flavours(a.kernel).into_iter().map(guest_image).collect::<anyhow::Result<Vec<_>>>()?;
    match a.format {
        Format::Json => print_json(&images)?,
        Format::Table => {
            println!("{:<5} {:<22} {:>9} {:<8} {:<16} initramfs", "kernel", "version", "size MiB", "state", "key");
            for i in &images {
                println!(
                    "{:<5} {:<22} {:>9.1} {:<8} {:<16} {}",
                    i.flavour.name(),
                    i.kernel_version,
                    i.size_bytes as f64 / 1048576.0,
                    if i.rebuilt { "built" } else { "cached" },
                    i.key,
                    i.initramfs.display()
                );
            }
        }
    }
    Ok(Outcome::Ok)
}

fn to_duration(n: Nanos) -> Duration {
    Duration::from_nanos(n.0)
}

/// Resolve the accelerator for `image`, saying what was chosen and why.
fn choose_accel(o: &GuestOpts, image: &Image) -> anyhow::Result<ProbeResult> {
    let r = accel::resolve(o.accel, &paths::cache_dir(), image, to_duration(o.probe_timeout))?;
    eprintln!("vm: accelerator {} ({}{})", r.accel.name(), r.reason, if r.cached { ", cached probe" } else { "" });
    if r.accel == rtvirt_vm::Accel::Tcg {
        eprintln!("vm: warning: {}", accel::TCG_WARNING);
    }
    Ok(r)
}

/// What a guest of `flavour` boots with: its image, and the configuration of `o` with the
/// accelerator chosen for that image.
fn boot_config(flavour: Flavour, o: &GuestOpts) -> anyhow::Result<(Image, GuestConfig)> {
    let image = guest_image(flavour)?;
    let accel = choose_accel(o, &image)?.accel;
    let cfg = guest_config(o, &o.name, accel);
    Ok((image, cfg))
}

fn guest_config(o: &GuestOpts, name: &str, accel: rtvirt_vm::Accel) -> GuestConfig {
    let mut c = GuestConfig::new(name, accel, to_duration(o.timeout));
    c.vcpus = o.vcpus;
    c.memory_mib = o.memory;
    c.pin = o.pin.clone();
    c.boot_timeout = to_duration(o.boot_timeout);
    c.progress = Some(|line| eprintln!("vm: {line}"));
    c
}

/// Host loads that are stopped when dropped (also on errors).
struct HostLoads(Vec<RunningLoad>);

impl HostLoads {
    fn start(specs: &[LoadSpec]) -> anyhow::Result<HostLoads> {
        for s in specs {
            s.validate("--load", false)?;
        }
        Ok(HostLoads(load::start_all(specs)?))
    }

    /// Stop and report (the `environment.load` entries, tagged `"where": "host"`).
    fn stop(mut self) -> Vec<serde_json::Value> {
        let mut reports = load::stop_all(std::mem::take(&mut self.0));
        for r in &mut reports {
            if let Some(m) = r.as_object_mut() {
                m.insert("where".into(), "host".into());
            }
        }
        reports
    }
}

impl Drop for HostLoads {
    fn drop(&mut self) {
        load::stop_all(std::mem::take(&mut self.0));
    }
}

fn load_label(specs: &[LoadSpec]) -> String {
    if specs.is_empty() {
        return "none".into();
    }
    specs
        .iter()
        .map(|s| {
            let cpus = s
                .cpus
                .as_ref()
                .map(|c| format!("@{}", c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")))
                .unwrap_or_default();
            format!("{}:{}{cpus}", s.kind.as_str(), s.workers)
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// Boot, measure under `loads`, return the annotated results and the guest's exit status.
fn measure_in_guest(
    image: &Image,
    cfg: &GuestConfig,
    loads: &[LoadSpec],
    args: &[String],
) -> anyhow::Result<measure::Measured> {
    eprintln!(
        "vm: booting {} ({} kernel, {}, host load {}) to run: rtvirt {}",
        cfg.name,
        image.flavour,
        cfg.accel.name(),
        load_label(loads),
        args.join(" ")
    );
    let running = HostLoads::start(loads)?;
    let outcome = measure::run(image, cfg, args);
    let reports = running.stop();
    let mut m = outcome?;
    note_host_loads(&mut m.results, loads, reports);
    Ok(m)
}

/// Record in `r`'s environment the host loads that ran meanwhile: their reports and their label
/// (`host_load`); returns the environment, for further entries.
fn note_host_loads<'a>(r: &'a mut Results, loads: &[LoadSpec], reports: Vec<serde_json::Value>) -> &'a mut Environment {
    let env = r.environment.get_or_insert_with(Default::default);
    env.load.extend(reports);
    env.extra.insert("host_load".into(), load_label(loads).into());
    env
}

fn run_cmd(a: RunArgs) -> CmdResult {
    let flavour = single_flavour(a.kernel)?;
    let (image, mut cfg) = boot_config(flavour, &a.guest)?;
    cfg.network = a.net;
    if let Some(hold) = a.hold {
        return hold_guest(&image, cfg, hold, a.format);
    }
    if a.guest_args.is_empty() {
        anyhow::bail!("nothing to run: give the guest command after `--` (e.g. `-- measure timer --duration 5s`) or --hold DURATION");
    }
    let m = measure_in_guest(&image, &cfg, &a.loads, &a.guest_args)?;
    match a.format {
        Format::Json => print_json(&m.results)?,
        Format::Table => print_rows(&[(flavour, load_label(&a.loads), m.results.clone())]),
    }
    Ok(if m.rc == 1 { Outcome::Failed } else { Outcome::Ok })
}

/// Boot a guest that only sleeps, print where to find it, keep it up for `hold`.
fn hold_guest(image: &Image, mut cfg: GuestConfig, hold: Nanos, format: Format) -> CmdResult {
    cfg.job_timeout = to_duration(hold) + Duration::from_secs(30);
    let secs = hold.0.div_ceil(1_000_000_000);
    let mut guest = Guest::start(image, &cfg, &format!("echo up; sleep {secs}"))?;
    guest.wait_for_output("up")?;
    let rec = guest.record().clone();
    match format {
        Format::Json => print_json(&rec)?,
        Format::Table => {
            println!(
                "guest {} up ({} kernel {}, {}), holding for {}",
                rec.name, rec.kernel, rec.kernel_version, rec.accel, hold
            );
            println!("  QEMU pid      {}", rec.pid);
            println!("  QMP socket    {}", rec.qmp_socket.display());
            println!("  vCPU threads  {:?}", rec.vcpu_threads);
            if let (Some(b), Some(ip)) = (&rec.bridge, &rec.guest_ip) {
                println!("  network       bridge {b}, tap {}, guest {ip}", rec.tap.as_deref().unwrap_or("?"));
            }
            println!("  runtime dir   {}", guest.dir().display());
        }
    }
    use std::io::Write;
    std::io::stdout().flush()?;
    guest.wait_done()?;
    eprintln!("vm: guest {} shut down", rec.name);
    Ok(Outcome::Ok)
}

fn matrix_cmd(a: MatrixArgs) -> CmdResult {
    if let Some(dir) = &a.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create --out-dir {}", dir.display()))?;
    }
    let job = Job { args: a.guest_args.clone(), files: Vec::new() };
    matrix(&a.kernels, &a.loads, &a.guest, &job, a.format, a.out_dir.as_deref())
}

/// What every guest of a matrix runs: `rtvirt <args>`, with input files in `files/`.
struct Job {
    args: Vec<String>,
    files: Vec<GuestFile>,
}

/// SEEDS 4: `job` in a guest of each kernel, without and with each host load.
fn matrix(
    kernels: &[Flavour],
    loads: &[LoadSpec],
    guest: &GuestOpts,
    job: &Job,
    format: Format,
    out_dir: Option<&std::path::Path>,
) -> CmdResult {
    let mut columns: Vec<Vec<LoadSpec>> = vec![Vec::new()];
    columns.extend(loads.iter().map(|l| vec![l.clone()]));
    let mut rows = Vec::new();
    let mut failed = false;
    for &flavour in kernels {
        let (image, cfg) = boot_config(flavour, guest)?;
        let cfg = GuestConfig { files: job.files.clone(), ..cfg };
        for loads in &columns {
            let mut m = measure_in_guest(&image, &cfg, loads, &job.args)?;
            m.results.label = Some(format!("vm/{}/{}", flavour.name(), load_label(loads)));
            if let Some(dir) = out_dir {
                let path = dir.join(format!(
                    "vm-{}-{}.json",
                    flavour.name(),
                    load_label(loads).replace([':', '@', ',', '+'], "_")
                ));
                std::fs::write(&path, serde_json::to_string_pretty(&m.results)?)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                eprintln!("vm: wrote {}", path.display());
            }
            failed |= m.rc == 1;
            rows.push((flavour, load_label(loads), m.results));
        }
    }
    match format {
        Format::Json => print_json(&rows.iter().map(|r| &r.2).collect::<Vec<_>>())?,
        Format::Table => print_rows(&rows),
    }
    Ok(if failed { Outcome::Failed } else { Outcome::Ok })
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

/// The guest options' documented defaults.
fn default_guest_opts() -> GuestOpts {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        guest: GuestOpts,
    }
    <Defaults as clap::Parser>::try_parse_from(["rtvirt"]).expect("defaults parse").guest
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

/// What the host's client does.
struct NetParams<'a> {
    tcp: bool,
    port: u16,
    duration: Nanos,
    loads: &'a [LoadSpec],
    client_args: &'a [String],
}

/// Extra time the guest's server runs beyond the client's duration (client start-up).
const SERVER_MARGIN: Nanos = Nanos::from_secs(3);

fn net_cmd(a: NetArgs) -> CmdResult {
    let flavour = single_flavour(a.kernel)?;
    let params =
        NetParams { tcp: a.tcp, port: a.port, duration: a.duration, loads: &a.loads, client_args: &a.client_args };
    net_in_guest(flavour, &a.guest, &params, a.format)
}

/// Server in a guest of `flavour`, client on the host for `a.duration` under `a.loads`.
fn net_in_guest(flavour: Flavour, guest: &GuestOpts, a: &NetParams, format: Format) -> CmdResult {
    let (image, cfg) = boot_config(flavour, guest)?;
    let accel = cfg.accel;
    let proto = if a.tcp { "--tcp" } else { "--udp" };
    let server: Vec<String> = [
        "measure",
        "net",
        "server",
        "--listen",
        &format!("0.0.0.0:{}", a.port),
        "--duration",
        &(a.duration + SERVER_MARGIN).to_string(),
        proto,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    eprintln!(
        "vm: booting {} ({} kernel, {}, virtio-net{}) to serve {} on port {}",
        cfg.name,
        flavour,
        accel.name(),
        if rtvirt_vm::net::vhost_available() { " + vhost-net" } else { ", no vhost-net" },
        &proto[2..],
        a.port
    );
    let (served, (mut client, client_rc, loads)) =
        measure::run_serving(&image, &cfg, &server, "listening on", |guest| {
            let ip = guest.guest_ip.clone().ok_or("the guest has no address")?;
            eprintln!(
                "vm: guest serving at {ip}:{}; host client for {} (host load {})",
                a.port,
                a.duration,
                load_label(a.loads)
            );
            let running = HostLoads::start(a.loads).map_err(|e| e.to_string())?;
            let client = run_host_client(&format!("{ip}:{}", a.port), a.duration, proto, a.client_args);
            let reports = running.stop();
            let (results, rc) = client?;
            Ok::<_, String>((results, rc, reports))
        })?;
    measure::annotate_from(&mut client, &served.results);
    let env = note_host_loads(&mut client, a.loads, loads);
    env.extra.insert("vhost_net".into(), rtvirt_vm::net::vhost_available().into());
    match format {
        Format::Json => print_json(&client)?,
        Format::Table => print_rows(&[(flavour, load_label(a.loads), client)]),
    }
    Ok(if client_rc == 1 { Outcome::Failed } else { Outcome::Ok })
}

/// Run `rtvirt measure net client` on the host against the guest; its results and exit status.
fn run_host_client(connect: &str, duration: Nanos, proto: &str, extra: &[String]) -> Result<(Results, i32), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the rtvirt binary: {e}"))?;
    let out = std::process::Command::new(exe)
        .args([
            "measure",
            "net",
            "client",
            "--connect",
            connect,
            "--duration",
            &duration.to_string(),
            proto,
            "--format",
            "json",
        ])
        .args(extra)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the client: {e}"))?;
    let rc = out.status.code().unwrap_or(-1);
    if rc != 0 && rc != 1 {
        return Err(format!("`rtvirt measure net client` exited with status {rc}"));
    }
    let r: Results =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("client printed no results document: {e}"))?;
    Ok((r, rc))
}

/// One line per measurement: guest kernel, host load, accelerator, latency (timer) or RTT (net).
fn print_rows(rows: &[(Flavour, String, Results)]) {
    println!(
        "{:<6} {:<16} {:<5} {:<6} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "guest", "host load", "accel", "kind", "samples", "min us", "mean us", "p99 us", "max us"
    );
    let mut tcg = false;
    for (flavour, load, r) in rows {
        let accel = r.environment.as_ref().and_then(|e| e.extra.get("accel")).and_then(|v| v.as_str()).unwrap_or("?");
        tcg |= accel == "tcg";
        let us = |ns: f64| format!("{:.1}", ns / 1000.0);
        match r.latency_ns.as_ref().or(r.rtt_ns.as_ref()) {
            Some(s) => println!(
                "{:<6} {:<16} {:<5} {:<6} {:>9} {:>10} {:>10} {:>10} {:>10}",
                flavour.name(),
                load,
                accel,
                r.kind,
                s.count,
                us(s.min as f64),
                us(s.mean),
                us(s.p99 as f64),
                us(s.max as f64)
            ),
            None if r.kind == "tasks" => {
                let x = &r.extra;
                println!(
                    "{:<6} {:<16} {:<5} {:<6} jobs {} misses {} DSR {:.4}",
                    flavour.name(),
                    load,
                    accel,
                    r.kind,
                    x["jobs"],
                    x["misses"],
                    x["dsr"].as_f64().unwrap_or(f64::NAN)
                );
            }
            None => println!(
                "{:<6} {:<16} {:<5} {:<6} (no latency summary; use --format json)",
                flavour.name(),
                load,
                accel,
                r.kind
            ),
        }
    }
    if tcg {
        println!("note: {}", accel::TCG_WARNING);
    }
}

fn probe_accel_cmd(a: ProbeAccelArgs) -> CmdResult {
    let cache = paths::cache_dir();
    let image = guest_image(Flavour::Nrt)?;
    if a.refresh {
        let _ = std::fs::remove_file(cache.join("accel.json"));
    }
    let r = accel::resolve(AccelChoice::Auto, &cache, &image, to_duration(a.timeout))?;
    match a.format {
        Format::Json => print_json(
            &serde_json::json!({ "accel": r.accel, "reason": r.reason, "host": r.host_key, "cached": r.cached }),
        )?,
        Format::Table => {
            println!("accelerator: {}", r.accel.name());
            println!("reason:      {}{}", r.reason, if r.cached { " (cached; --refresh to probe again)" } else { "" });
            println!("host:        {}", r.host_key);
            if r.accel == rtvirt_vm::Accel::Tcg {
                println!("note:        {}", accel::TCG_WARNING);
            }
        }
    }
    Ok(Outcome::Ok)
}

fn list_cmd(a: ListArgs) -> CmdResult {
    let guests = runtime::list();
    match a.format {
        Format::Json => print_json(&guests)?,
        Format::Table => {
            println!("{:<20} {:>8} {:<5} {:<4} {:<24} qmp", "name", "qemu pid", "accel", "kern", "vcpu threads");
            for g in &guests {
                println!(
                    "{:<20} {:>8} {:<5} {:<4} {:<24} {}",
                    g.name,
                    g.pid,
                    g.accel,
                    g.kernel,
                    format!("{:?}", g.vcpu_threads),
                    g.qmp_socket.display()
                );
            }
        }
    }
    Ok(Outcome::Ok)
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
        assert!(runtime::check_name(&opts.name).is_ok());
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
