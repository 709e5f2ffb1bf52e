//! `rtvirt vm`: minimal QEMU guests (Debian kernel + busybox initramfs carrying this rtvirt
//! binary) and rtvirt measurements inside them. Wiring only: the work is in rtvirt-vm (guest),
//! `placement::guests` (guests from the host's side) and rtvirt-probe (host loads).

use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::placement::guests::{
    self, boot_config, guest_image, load_label, matrix, measure_in_guest, net_in_guest, parse_flavour, print_rows,
    to_duration, GuestOpts, Job, NetParams,
};
use crate::table::Table;
use anyhow::Context;
use clap::{Args, Subcommand};
use rtvirt_model::Nanos;
use rtvirt_probe::load::LoadSpec;
use rtvirt_vm::accel::{self, AccelChoice};
use rtvirt_vm::image::Image;
use rtvirt_vm::{paths, runtime, Flavour, GuestConfig};

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
    /// Abeni 2023: the same measurement for each guest kernel x host load, as one table.
    Matrix(MatrixArgs),
    /// Network round trips to a guest: server in the guest, client on the host, over a tap on a
    /// bridge and virtio-net (vhost-net when available) - the bridged path of Garcia Alvarado 2019 and 3.
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
    /// Run the guest agent (`rtvirt guest-agent`) in the guest on a virtio-serial port, for
    /// `rtvirt host observe --vm NAME` and `rtvirt host adapt` (its socket: agent.sock in the
    /// guest's runtime directory); `measure tasks` in the guest reports each job to it.
    #[arg(long)]
    pub agent: bool,
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

/// `--load`: a host load, optionally prefixed `host:`.
fn parse_host_load(text: &str) -> Result<LoadSpec, String> {
    if text.starts_with("guest:") {
        return Err("loads inside the guest belong to the guest command: put `--load KIND` after `--`".into());
    }
    LoadSpec::parse(text.strip_prefix("host:").unwrap_or(text))
}

pub fn run(args: VmArgs) -> CmdResult {
    match args.action {
        VmAction::Image(args) => image_cmd(args),
        VmAction::Run(args) => run_cmd(args),
        VmAction::Matrix(args) => matrix_cmd(args),
        VmAction::Net(args) => net_cmd(args),
        VmAction::ProbeAccel(args) => probe_accel_cmd(args),
        VmAction::List(args) => list_cmd(args),
    }
}

fn flavours(argument: KernelArg) -> Vec<Flavour> {
    match argument {
        KernelArg::Nrt => vec![Flavour::Nrt],
        KernelArg::Rt => vec![Flavour::Rt],
        KernelArg::All => Flavour::ALL.to_vec(),
    }
}

fn single_flavour(argument: KernelArg) -> anyhow::Result<Flavour> {
    match argument {
        KernelArg::All => {
            anyhow::bail!("--kernel all is for `vm image`; `vm run` boots one kernel (use `vm matrix` for both)")
        }
        argument => Ok(flavours(argument)[0]),
    }
}

fn image_cmd(args: ImageArgs) -> CmdResult {
    let images = flavours(args.kernel).into_iter().map(guest_image).collect::<anyhow::Result<Vec<_>>>()?;
    match args.format {
        Format::Json => print_json(&images)?,
        Format::Table => {
            let header = ["kernel", "version", "size MiB", "state", "key", "initramfs"];
            let mut table = Table::aligned(&header, |column| column == 2);
            for i in &images {
                table.row([
                    i.flavour.name().to_string(),
                    i.kernel_version.to_string(),
                    format!("{:.1}", i.size_bytes as f64 / 1048576.0),
                    (if i.rebuilt { "built" } else { "cached" }).to_string(),
                    i.key.to_string(),
                    i.initramfs.display().to_string(),
                ]);
            }
            table.print();
        }
    }
    Ok(Outcome::Ok)
}

fn run_cmd(args: RunArgs) -> CmdResult {
    let flavour = single_flavour(args.kernel)?;
    let (image, mut cfg) = boot_config(flavour, &args.guest)?;
    cfg.network = args.net;
    cfg.agent = args.agent;
    if let Some(hold) = args.hold {
        return hold_guest(&image, cfg, hold, args.format);
    }
    if args.guest_args.is_empty() {
        anyhow::bail!(
            "nothing to run: give the guest command after `--` (e.g. `-- measure timer --duration 5s`) or --hold \
             DURATION"
        );
    }
    let m = measure_in_guest(&image, &cfg, &args.loads, &args.guest_args)?;
    match args.format {
        Format::Json => print_json(&m.results)?,
        Format::Table => print_rows(&[(flavour, load_label(&args.loads), m.results.clone())]),
    }
    Ok(if m.rc == 1 { Outcome::Failed } else { Outcome::Ok })
}

/// Boot a guest that only sleeps, print where to find it, keep it up for `hold`.
fn hold_guest(image: &Image, cfg: GuestConfig, hold: Nanos, format: Format) -> CmdResult {
    let mut guest = guests::hold_up(image, cfg, hold)?;
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

fn matrix_cmd(args: MatrixArgs) -> CmdResult {
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create --out-dir {}", dir.display()))?;
        crate::output_file::check("--out-dir", &dir.join("vm-write-check.json"), &[])?;
    }
    let job = Job {
        args: args.guest_args.clone(),
        files: Vec::new(),
        explain: false,
        trace: None,
        agent: false,
        bring_back: None,
    };
    matrix(&args.kernels, &args.loads, &args.guest, &job, args.format, args.out_dir.as_deref())
}

fn net_cmd(args: NetArgs) -> CmdResult {
    let flavour = single_flavour(args.kernel)?;
    let params = NetParams {
        tcp: args.tcp,
        port: args.port,
        duration: args.duration,
        loads: &args.loads,
        client_args: &args.client_args,
        explain: false,
        explain_syscalls: false,
        trace: None,
    };
    net_in_guest(flavour, &args.guest, &params, args.format)
}

fn probe_accel_cmd(args: ProbeAccelArgs) -> CmdResult {
    let cache = paths::cache_dir();
    let image = guest_image(Flavour::Nrt)?;
    if args.refresh {
        let _ = std::fs::remove_file(cache.join("accel.json"));
    }
    let r = accel::resolve(AccelChoice::Auto, &cache, &image, to_duration(args.timeout))?;
    match args.format {
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

fn list_cmd(args: ListArgs) -> CmdResult {
    let guests = runtime::list();
    match args.format {
        Format::Json => print_json(&guests)?,
        Format::Table => {
            let header = ["name", "qemu pid", "accel", "kern", "vcpu threads", "qmp"];
            let mut table = Table::aligned(&header, |column| column == 1);
            for g in &guests {
                table.row([
                    g.name.to_string(),
                    g.pid.to_string(),
                    g.accel.to_string(),
                    g.kernel.to_string(),
                    format!("{:?}", g.vcpu_threads),
                    g.qmp_socket.display().to_string(),
                ]);
            }
            table.print();
        }
    }
    Ok(Outcome::Ok)
}
