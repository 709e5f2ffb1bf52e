//! QEMU guests from the host's side, shared by `rtvirt vm` and `--in vm`: the guest image and
//! accelerator, host loads around a guest, a job in each guest kernel x host load (the Abeni 2023
//! matrix), a server in a guest with the client on the host, and the one-line-per-run table.

use super::command_line::{self, protocol_flag};
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::table::{micros, Table};
use anyhow::Context;
use clap::Args;
use rtvirt_model::results::{Environment, LoadReport, Results};
use rtvirt_model::Nanos;
use rtvirt_probe::load::{self, LoadSpec, RunningLoad};
use rtvirt_vm::accel::{self, AccelChoice, ProbeResult};
use rtvirt_vm::image::{self, Image, ImageSpec};
use rtvirt_vm::{measure, paths, Flavour, Guest, GuestConfig, GuestFile};
use std::time::Duration;

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
    /// Pin vCPU i to the i-th host CPU of this list (e.g. "1", "1,2", "2-5" or "0-7:2"; parts
    /// in the order given).
    #[arg(long, value_parser = parse_pin, default_value = "")]
    pub pin: PinCpus,
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

pub fn parse_flavour(text: &str) -> Result<Flavour, String> {
    match text {
        "rt" => Ok(Flavour::Rt),
        "nrt" => Ok(Flavour::Nrt),
        _ => Err(format!("\"{text}\" is not a guest kernel (expected rt or nrt)")),
    }
}

/// The image of `flavour` carrying this rtvirt binary (built or reused).
pub fn guest_image(flavour: Flavour) -> anyhow::Result<Image> {
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

pub fn to_duration(duration: Nanos) -> Duration {
    Duration::from_nanos(duration.0)
}

/// Resolve the accelerator for `image`, saying what was chosen and why.
fn choose_accel(guest_options: &GuestOpts, image: &Image) -> anyhow::Result<ProbeResult> {
    let r = accel::resolve(guest_options.accel, &paths::cache_dir(), image, to_duration(guest_options.probe_timeout))?;
    eprintln!("vm: accelerator {} ({}{})", r.accel.name(), r.reason, if r.cached { ", cached probe" } else { "" });
    if r.accel == rtvirt_vm::Accel::Tcg {
        eprintln!("vm: warning: {}", accel::TCG_WARNING);
    }
    Ok(r)
}

/// What a guest of `flavour` boots with: its image, and the configuration of `guest_options`
/// with the accelerator chosen for that image.
pub fn boot_config(flavour: Flavour, guest_options: &GuestOpts) -> anyhow::Result<(Image, GuestConfig)> {
    let image = guest_image(flavour)?;
    let accel = choose_accel(guest_options, &image)?.accel;
    let cfg = guest_config(guest_options, &guest_options.name, accel);
    Ok((image, cfg))
}

fn guest_config(guest_options: &GuestOpts, name: &str, accel: rtvirt_vm::Accel) -> GuestConfig {
    let mut c = GuestConfig::new(name, accel, to_duration(guest_options.timeout));
    c.vcpus = guest_options.vcpus;
    c.memory_mib = guest_options.memory;
    c.pin = guest_options.pin.0.clone();
    c.boot_timeout = to_duration(guest_options.boot_timeout);
    c.progress = Some(|line| eprintln!("vm: {line}"));
    c
}

/// A guest that only sleeps for `hold` (rounded up to seconds), once it is up.
pub fn hold_up(image: &Image, mut cfg: GuestConfig, hold: Nanos) -> anyhow::Result<Guest> {
    cfg.job_timeout = to_duration(hold) + Duration::from_secs(30);
    let secs = hold.0.div_ceil(1_000_000_000);
    let mut guest = Guest::start(image, &cfg, &format!("echo up; sleep {secs}"))?;
    guest.wait_for_output("up")?;
    Ok(guest)
}

/// Host loads that are stopped when dropped (also on errors).
pub struct HostLoads(Vec<RunningLoad>);

impl HostLoads {
    pub fn start(specs: &[LoadSpec]) -> anyhow::Result<HostLoads> {
        for s in specs {
            s.validate("--load", false)?;
        }
        Ok(HostLoads(load::start_all(specs)?))
    }

    /// Stop and report (the `environment.load` entries, tagged `"where": "host"`).
    pub fn stop(mut self) -> Vec<LoadReport> {
        let mut reports = load::stop_all(std::mem::take(&mut self.0));
        for r in &mut reports {
            r.r#where = Some("host".into());
        }
        reports
    }
}

impl Drop for HostLoads {
    fn drop(&mut self) {
        load::stop_all(std::mem::take(&mut self.0));
    }
}

pub fn load_label(specs: &[LoadSpec]) -> String {
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
pub fn measure_in_guest(
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
    // `--explain` (a clock line): the host traces the vCPU threads meanwhile
    let outcome = match cfg.clock_line {
        true => super::explain_host::measure_explained(image, cfg, args),
        false => measure::run(image, cfg, args).map_err(anyhow::Error::from),
    };
    let reports = running.stop();
    let mut m = outcome?;
    note_host_loads(&mut m.results, loads, reports);
    Ok(m)
}

/// Record in the environment of `results` the host loads that ran meanwhile: their reports and
/// their label (`host_load`); returns the environment, for further entries.
pub fn note_host_loads<'a>(
    results: &'a mut Results,
    loads: &[LoadSpec],
    reports: Vec<LoadReport>,
) -> &'a mut Environment {
    let env = results.environment.get_or_insert_with(Default::default);
    env.load.extend(reports);
    env.host_load = Some(load_label(loads));
    env
}

/// What every guest of a matrix runs: `rtvirt <args>`, with input files in `files/`.
pub struct Job {
    pub args: Vec<String>,
    pub files: Vec<GuestFile>,
    /// `--explain` in the guest: the host traces the vCPU threads meanwhile, answers the guest's
    /// clock line, and lays the host side beside the guest's causes (`explain_host`).
    pub explain: bool,
    /// `--trace FILE.json` of an explaining job: each cell's merged trace, written on the host.
    pub trace: Option<std::path::PathBuf>,
    /// Run the guest agent before the job (`--agent`): `host observe`/`host adapt` hear the
    /// job's tasks through the guest's agent port.
    pub agent: bool,
    /// A file the job writes that comes back to this host (`--break-trace`).
    pub bring_back: Option<BringBack>,
}

/// A file a guest's job writes, and where it goes on this host (one per cell of a matrix, the
/// cell's label in its name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BringBack {
    pub guest: String,
    pub host: std::path::PathBuf,
}

/// Abeni 2023: `job` in a guest of each kernel, without and with each host load. A cell that
/// fails (boot, hang, garbage) is reported in its own row and as its own JSON element (the cell's
/// label, the measurement's kind and its `"error"`) beside the cells that worked; the exit code
/// is then 2. After Ctrl-C the cells not yet run are reported as not run.
pub fn matrix(
    kernels: &[Flavour],
    loads: &[LoadSpec],
    guest: &GuestOpts,
    job: &Job,
    format: Format,
    out_dir: Option<&std::path::Path>,
) -> CmdResult {
    for l in loads {
        l.validate("--load", false)?; // a bad load is bad input, not a failed cell
    }
    let mut columns: Vec<Vec<LoadSpec>> = vec![Vec::new()];
    columns.extend(loads.iter().map(|l| vec![l.clone()]));
    let mut rows = Vec::new();
    let (mut failed, mut failures, mut unwritten) = (false, 0, Vec::new());
    for &flavour in kernels {
        let booted = boot_config(flavour, guest);
        for loads in &columns {
            let label = format!("vm/{}/{}", flavour.name(), load_label(loads));
            let several = kernels.len() * columns.len() > 1;
            let results = match matrix_cell(&booted, job, loads) {
                Ok(mut m) => {
                    failed |= m.rc == 1;
                    m.results.label = Some(label);
                    if let Some(wanted) = &job.bring_back {
                        unwritten.extend(write_brought_back(&mut m, wanted, several));
                    }
                    m.results
                }
                Err(e) => {
                    eprintln!("vm: cell {label} failed: {e:#}");
                    failures += 1;
                    failed_cell(label, job, &e)
                }
            };
            if let Some(dir) = out_dir {
                let path = dir.join(format!(
                    "vm-{}-{}.json",
                    flavour.name(),
                    load_label(loads).replace([':', '@', ',', '+'], "_")
                ));
                // A file that cannot be written loses nothing: the cell is in the output below.
                match std::fs::write(&path, serde_json::to_string_pretty(&results)?) {
                    Ok(()) => eprintln!("vm: wrote {}", path.display()),
                    Err(e) => unwritten.push(format!("{}: {e}", path.display())),
                }
            }
            if let Some(path) = &job.trace {
                super::explain_host::write_cell_trace(&results, path, several);
            }
            rows.push((flavour, load_label(loads), results));
        }
    }
    match format {
        Format::Json => print_json(&rows.iter().map(|r| &r.2).collect::<Vec<_>>())?,
        Format::Table => print_rows(&rows),
    }
    let mut problems = Vec::new();
    if failures > 0 {
        problems.push(format!(
            "{failures} of {} matrix cells failed (each cell's error is in its row and in its \"error\" field)",
            rows.len()
        ));
    }
    if !unwritten.is_empty() {
        problems.push(format!("cannot write {} (the results are above)", unwritten.join("; ")));
    }
    if !problems.is_empty() {
        anyhow::bail!("{}", problems.join("; "));
    }
    Ok(if failed { Outcome::Failed } else { Outcome::Ok })
}

/// One cell of the matrix: the job in a guest booted as `booted` says, under `loads`.
fn matrix_cell(
    booted: &anyhow::Result<(Image, GuestConfig)>,
    job: &Job,
    loads: &[LoadSpec],
) -> anyhow::Result<measure::Measured> {
    if rtvirt_os::signals::interrupted() {
        anyhow::bail!("not run: interrupted (Ctrl-C)");
    }
    let (image, cfg) = booted.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let bring_back = job.bring_back.as_ref().map(|b| b.guest.clone());
    let cfg =
        GuestConfig { files: job.files.clone(), clock_line: job.explain, agent: job.agent, bring_back, ..cfg.clone() };
    measure_in_guest(image, &cfg, loads, &job.args)
}

/// Write the file a cell's guest brought back where `wanted` says, and name it in the results
/// (`explain.break_trace_file`) instead of its path in the guest; what could not be written.
fn write_brought_back(m: &mut measure::Measured, wanted: &BringBack, several: bool) -> Option<String> {
    let file = m.file.take()?;
    let path = super::explain_host::cell_path(&wanted.host, m.results.label.as_deref(), several);
    if let Err(e) = std::fs::write(&path, &file.text) {
        return Some(format!("{}: {e}", path.display()));
    }
    eprintln!("vm: wrote {} (the guest's {})", path.display(), wanted.guest);
    if file.text.len() as u64 != file.guest_bytes {
        eprintln!(
            "vm: warning: {} holds {} of the guest's {} bytes (cut at {} MiB, or changed on the serial line)",
            path.display(),
            file.text.len(),
            file.guest_bytes,
            measure::MAX_FILE >> 20
        );
    }
    if let Some(e) = m.results.explain.as_mut().filter(|e| e.break_trace_file.as_deref() == Some(&wanted.guest)) {
        e.break_trace_file = Some(path.display().to_string());
    }
    None
}

/// The results document of a failed cell: its label, the measurement's kind (`measure timer`:
/// "timer") and the error.
fn failed_cell(label: String, job: &Job, error: &anyhow::Error) -> Results {
    let kind = match job.args.first().map(String::as_str) {
        Some("measure") => job.args.get(1).cloned().unwrap_or_default(),
        Some(command) => command.to_string(),
        None => String::new(),
    };
    let mut r = Results::new(&kind, 0);
    r.label = Some(label);
    r.error = Some(format!("{error:#}"));
    r
}

/// The guest options' documented defaults.
pub fn default_guest_opts() -> GuestOpts {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        guest: GuestOpts,
    }
    <Defaults as clap::Parser>::try_parse_from(["rtvirt"]).expect("defaults parse").guest
}

/// What the host's client does.
pub struct NetParams<'a> {
    pub tcp: bool,
    pub port: u16,
    pub duration: Nanos,
    pub loads: &'a [LoadSpec],
    pub client_args: &'a [String],
    /// `--explain`: the server in the guest explains its side too, merged into the client's.
    pub explain: bool,
    /// `--explain-syscalls`: both sides trace their send and receive syscalls too.
    pub explain_syscalls: bool,
    /// `--trace FILE.json` of an explaining client: written here, from the merged explanation.
    pub trace: Option<std::path::PathBuf>,
}

/// Extra time the guest's server runs beyond the client's duration (client start-up).
pub const SERVER_MARGIN: Nanos = Nanos::from_secs(3);

/// Server in a guest of `flavour`, client on the host for `a.duration` under `a.loads`.
pub fn net_in_guest(flavour: Flavour, guest: &GuestOpts, params: &NetParams, format: Format) -> CmdResult {
    let (image, cfg) = boot_config(flavour, guest)?;
    let accel = cfg.accel;
    let mut more: Vec<&str> = match params.explain {
        true => vec!["--explain", "--clock-sync", super::explain_host::GUEST_CLOCK_DEVICE],
        false => Vec::new(),
    };
    if params.explain_syscalls {
        more.push("--explain-syscalls");
    }
    let listen = format!("0.0.0.0:{}", params.port);
    let server = command_line::net_server(&listen, params.duration + SERVER_MARGIN, params.tcp, &more);
    let cfg = GuestConfig { clock_line: params.explain, ..cfg };
    // `--explain`: the guest's server relates its clock to the host's over its clock line
    let clock = params.explain.then(|| super::explain_host::answer_clock(&cfg.name));
    eprintln!(
        "vm: booting {} ({} kernel, {}, virtio-net{}) to serve {} on port {}",
        cfg.name,
        flavour,
        accel.name(),
        if rtvirt_vm::net::vhost_available() { " + vhost-net" } else { ", no vhost-net" },
        &protocol_flag(params.tcp)[2..],
        params.port
    );
    let (served, (mut client, client_rc, loads)) =
        measure::run_serving(&image, &cfg, &server, "listening on", |guest| {
            let ip = guest.guest_ip.clone().ok_or("the guest has no address")?;
            eprintln!(
                "vm: guest serving at {ip}:{}; host client for {} (host load {})",
                params.port,
                params.duration,
                load_label(params.loads)
            );
            let running = HostLoads::start(params.loads).map_err(|e| e.to_string())?;
            let client =
                run_host_client(&format!("{ip}:{}", params.port), params.duration, params.tcp, params.client_args);
            let reports = running.stop();
            let (results, rc) = client?;
            Ok::<_, String>((results, rc, reports))
        })?;
    let clock = clock.map(|c| c.finish());
    measure::annotate_from(&mut client, &served.results);
    let env = note_host_loads(&mut client, params.loads, loads);
    env.vhost_net = Some(rtvirt_vm::net::vhost_available());
    if params.explain {
        split_guest(&mut client, &served.results, clock);
    }
    if let (Some(e), Some(path)) = (&client.explain, &params.trace) {
        crate::explain::write_net_trace(e, "client", path)?;
    }
    match format {
        Format::Json => print_json(&client)?,
        Format::Table => {
            let explain = client.explain.take();
            print_rows(&[(flavour, load_label(params.loads), client)]);
            if let Some(e) = &explain {
                crate::explain::print_segments(e);
            }
        }
    }
    Ok(if client_rc == 1 { Outcome::Failed } else { Outcome::Ok })
}

/// Split the client's `guest` segments with the server's own explanation from the guest (or say
/// why they stay whole).
fn split_guest(client: &mut Results, guest: &Results, clock: Option<Result<u64, String>>) {
    let Some(e) = client.explain.as_mut() else { return };
    if let Some(Err(why)) = clock {
        e.limitations.push(format!("the guest's clock line was not answered: {why}"));
    }
    match &guest.explain {
        Some(g) => rtvirt_probe::explain::net::guest::split(e, g),
        None => e.limitations.push(
            "the server in the guest returned no explanation of its side: every `guest` segment stays whole".into(),
        ),
    }
}

/// Run `rtvirt measure net client` on the host against the guest; its results and exit status.
fn run_host_client(connect: &str, duration: Nanos, tcp: bool, extra: &[String]) -> Result<(Results, i32), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the rtvirt binary: {e}"))?;
    let out = std::process::Command::new(exe)
        .args(command_line::net_client(connect, duration, tcp, extra))
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

/// One line per measurement: guest kernel, host load, accelerator, latency (timer) or RTT (net);
/// task sets show their totals, failed cells their error, in the last column.
pub fn print_rows(rows: &[(Flavour, String, Results)]) {
    let header = ["guest", "host load", "accel", "kind", "samples", "min us", "mean us", "p99 us", "max us", ""];
    let mut table = Table::aligned(&header, |column| (4..9).contains(&column));
    let mut tcg = false;
    for (flavour, load, r) in rows {
        let accel = r.environment.as_ref().and_then(|e| e.accel.as_deref()).unwrap_or("?");
        tcg |= accel == "tcg";
        let mut cells = vec![flavour.name().to_string(), load.clone(), accel.to_string(), r.kind.clone()];
        cells.extend(summary_cells(r));
        table.row(cells);
    }
    table.print();
    if tcg {
        println!("note: {}", accel::TCG_WARNING);
    }
}

/// The cells after a row's kind: the latency (timer) or RTT (net) summary in us, else a note in
/// the last column (a task set's totals, a failed cell's first error line).
fn summary_cells(results: &Results) -> Vec<String> {
    let note = |text: String| vec![String::new(); 5].into_iter().chain([text]).collect();
    if let Some(error) = &results.error {
        let first: String = error.lines().next().unwrap_or("").chars().take(100).collect();
        return note(format!("FAILED: {first}"));
    }
    match results.latency_ns.as_ref().or(results.rtt_ns.as_ref()) {
        Some(s) => {
            vec![s.count.to_string(), micros(s.min as f64), micros(s.mean), micros(s.p99 as f64), micros(s.max as f64)]
        }
        None if results.kind == "tasks" => {
            let x = results.task_totals.clone().unwrap_or_default();
            let count = |c: Option<u64>| c.map_or("null".into(), |c| c.to_string());
            note(format!("jobs {} misses {} DSR {:.4}", count(x.jobs), count(x.misses), x.dsr.unwrap_or(f64::NAN)))
        }
        None => note("(no latency summary; use --format json)".into()),
    }
}

/// `--pin`'s host CPUs, in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PinCpus(pub Vec<usize>);

/// A CPU list for `--pin`: each comma-separated part in the kernel's list format (`3`, `2-5`,
/// `0-7:2`, read by rtvirt-os's `CpuList`), the parts kept in the order given.
fn parse_pin(text: &str) -> Result<PinCpus, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        cpus.extend(rtvirt_os::CpuList::parse(part)?.iter().map(|c| c as usize));
    }
    Ok(PinCpus(cpus))
}

#[cfg(test)]
mod bring_back_tests {
    use super::*;

    #[test]
    fn pin_takes_ranges_and_strides_in_the_order_given() {
        assert_eq!(parse_pin("3,1").unwrap().0, [3, 1]);
        assert_eq!(parse_pin("0-7:2,1").unwrap().0, [0, 2, 4, 6, 1]);
        assert!(parse_pin("x").is_err());
    }
    use rtvirt_model::results::{ExplainSection, Results};
    use rtvirt_vm::measure::{BroughtBack, Measured};

    fn measured(text: &str, guest_bytes: u64) -> Measured {
        let mut results = Results::new("timer", 1);
        results.label = Some("vm/rt/cpu:1".into());
        let explain = ExplainSection { break_trace_file: Some("/tmp/rtvirt-break.trace".into()), ..Default::default() };
        results.explain = Some(explain);
        Measured { results, rc: 0, file: Some(BroughtBack { text: text.into(), guest_bytes }) }
    }

    /// Each cell's file gets the cell's label in its name when there are several; the results
    /// then name the host's copy, not the guest's path.
    #[test]
    fn a_brought_back_file_is_written_per_cell_and_named_in_the_results() {
        let dir = tempfile::tempdir().unwrap();
        let wanted = BringBack { guest: "/tmp/rtvirt-break.trace".into(), host: dir.path().join("late.trace") };
        let mut m = measured("# tracer\n", 9);
        assert_eq!(write_brought_back(&mut m, &wanted, true), None);
        let path = dir.path().join("late-vm_rt_cpu_1.trace");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# tracer\n");
        let named = m.results.explain.as_ref().and_then(|e| e.break_trace_file.clone());
        assert_eq!(named.as_deref(), path.to_str());
        let mut single = measured("x", 1);
        assert_eq!(write_brought_back(&mut single, &wanted, false), None);
        assert_eq!(std::fs::read_to_string(&wanted.host).unwrap(), "x");
        let nowhere = BringBack { host: dir.path().join("missing/late.trace"), ..wanted };
        let unwritten = write_brought_back(&mut measured("x", 1), &nowhere, false).expect("a directory that is not");
        assert!(unwritten.contains("missing/late.trace"), "{unwritten}");
    }
}
