//! `rtvirt measure timer|net|tasks`: real measurements (rtvirt-probe), on the host or
//! `--in container`, with optional `--load` interference; results are `rtvirt.results/v1`.

use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use rtvirt_model::results::Results;
use rtvirt_model::stats::Summary;
use rtvirt_model::Nanos;
use rtvirt_probe::load::{self, LoadSpec};
use rtvirt_probe::net::{arrivals::Arrivals, client, server, Protocol};
use rtvirt_probe::{container::Container, cpus, rt::Policy, timer};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args)]
pub struct MeasureArgs {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Subcommand)]
pub enum What {
    /// Timer wake-up latency per CPU (cyclictest's job): pinned RT threads, absolute sleeps,
    /// every missed period counted.
    Timer(TimerArgs),
    /// Request/response latency over UDP or TCP (server and client), paced or back-to-back.
    #[command(subcommand)]
    Net(NetWhat),
    /// Periodic task sets of a scenario's guests, each guest a process whose vCPU thread runs
    /// under its planned SCHED_DEADLINE reservation on its planned core: jobs, misses, DSR,
    /// response times.
    Tasks(TasksArgs),
    /// Internal: one guest of `measure tasks` (started by it; talks JSON lines on stdin/stdout).
    #[command(hide = true)]
    TasksWorker,
}

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
    /// --guest-kernel with each host --load (the SEEDS 4 matrix); `measure net client` reaches a
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
    pub vm: super::vm::InVmOpts,
}

#[derive(Args)]
#[command(
    after_help = "Latency = actual wake-up - programmed time (CLOCK_MONOTONIC, absolute clock_nanosleep). A wake-up \
that comes after further activations were due counts each of them as a sample with its own lateness (missed_periods). \
Memory is locked and /dev/cpu_dma_latency held at 0 during the run; every setting is restored.

Examples:
  rtvirt measure timer --cpus 1 --duration 60s --histogram hist.txt
  rtvirt measure timer --policy deadline --interval 500us --load syscalls:2@0 --format json
  rtvirt measure timer --in container --interval-report 1s --format json"
)]
pub struct TimerArgs {
    /// CPUs to measure on, one thread each (default: every CPU this process may use).
    #[arg(long)]
    pub cpus: Option<String>,
    /// Wake-up period.
    #[arg(long, value_parser = parse_nanos, default_value = "1ms")]
    pub interval: Nanos,
    /// Real-time priority for fifo/rr (1..98; 99 needs --force).
    #[arg(long, default_value_t = 90)]
    pub priority: u32,
    /// Scheduling policy of the measuring threads (deadline: SCHED_DEADLINE as cyclicdeadline,
    /// runtime = interval/10, deadline = period = interval, each CPU in its own exclusive cpuset).
    #[arg(long, value_parser = parse_policy, default_value = "fifo")]
    pub policy: Policy,
    /// How long to measure.
    #[arg(long, value_parser = parse_nanos, default_value = "10s")]
    pub duration: Nanos,
    /// Also write a cyclictest-compatible histogram (1 us bins, one column per CPU) to FILE.
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,
    /// Stream per-interval statistics as JSON lines on stdout (stalled threads are flagged).
    #[arg(long, value_parser = parse_nanos, value_name = "D")]
    pub interval_report: Option<Nanos>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Subcommand)]
pub enum NetWhat {
    /// Echo requests until --duration has passed (or Ctrl-C). Binds loopback by default.
    Server(ServerArgs),
    /// Send requests and measure round trips. With --in container, a server is started in a
    /// fresh container and the client on the host reaches it over the bridge.
    Client(ClientArgs),
}

#[derive(Args, Clone, Copy)]
#[group(multiple = false)]
pub struct Proto {
    /// UDP (default).
    #[arg(long)]
    pub udp: bool,
    /// TCP (4-byte length framing, TCP_NODELAY).
    #[arg(long)]
    pub tcp: bool,
}

impl Proto {
    fn protocol(self) -> Protocol {
        if self.tcp {
            Protocol::Tcp
        } else {
            Protocol::Udp
        }
    }
}

#[derive(Args)]
pub struct ServerArgs {
    /// Address and port to listen on (with --in container, the container's address is used).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: std::net::SocketAddr,
    #[command(flatten)]
    pub proto: Proto,
    /// Time to wait before answering each request.
    #[arg(long, value_parser = parse_nanos, default_value = "0ns")]
    pub service_time: Nanos,
    /// How long to serve.
    #[arg(long, value_parser = parse_nanos, default_value = "60s")]
    pub duration: Nanos,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
#[command(
    after_help = "Paced arrivals are open loop: latency counts from each request's intended send time (no coordinated \
omission); back-to-back is closed loop (sockperf ping-pong). Responses (UDP and TCP) also carry kernel software \
timestamps (SO_TIMESTAMPING): rtt_kernel_ns (kernel TX stamp of the request -> kernel RX stamp of the response, \
from the error queue), rtt_kernel_rx_ns (user send -> kernel RX) and rx_wakeup_ns (kernel RX -> read).

Examples:
  rtvirt measure net server --listen 127.0.0.1:9000 &
  rtvirt measure net client --connect 127.0.0.1:9000 --arrivals uniform:1ms-10ms --duration 30s
  rtvirt measure net client --tcp --arrivals back-to-back --size 64
  rtvirt measure net client --in container --arrivals poisson:1000   # host -> container over a bridge"
)]
pub struct ClientArgs {
    /// Server address and port (with --in container only the port is used).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub connect: std::net::SocketAddr,
    #[command(flatten)]
    pub proto: Proto,
    /// Request (= response) size in bytes, at least 32.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Arrival process: uniform:MIN-MAX, poisson:RATE, fixed:RATE (requests/s) or back-to-back
    /// (closed loop). Paced latencies count from the intended send time.
    #[arg(long, value_parser = Arrivals::parse, default_value = "uniform:1ms-10ms")]
    pub arrivals: Arrivals,
    /// How long to send requests.
    #[arg(long, value_parser = parse_nanos, default_value = "10s")]
    pub duration: Nanos,
    /// A request whose response does not come within this is a timeout (late or lost; missing
    /// ones are also lost); a TCP send blocked this long (server not reading) ends the sending.
    #[arg(long, value_parser = parse_nanos, default_value = "1s")]
    pub timeout: Nanos,
    /// Seed of the arrival process.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
#[command(
    after_help = "Each guest is a process whose single vCPU thread runs under SCHED_DEADLINE (runtime = planned budget, deadline, period), pinned \
to its planned core (each core in its own exclusive cpuset), running the guest's tasks under a user-level EDF/FP \
scheduler with calibrated CPU work drawn from each task's execution-time model. Exit code 1 if a plan made \
with WCET budgets misses deadlines.

Examples:
  rtvirt plan --format json > plan.json && rtvirt measure tasks --plan plan.json --duration 30s
  rtvirt measure tasks scenario.toml --rho 0.5 --format json"
)]
pub struct TasksArgs {
    /// Scenario file (TOML). Without it, the embedded default scenario is used.
    pub scenario: Option<PathBuf>,
    /// Plan (JSON from `rtvirt plan --format json`). Without it, the scenario is planned here.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// When planning here: one rho for every task (overrides the scenario's rhos); without it,
    /// the scenario's rhos (or WCET).
    #[arg(long)]
    pub rho: Option<f64>,
    /// How long to run the task sets.
    #[arg(long, value_parser = parse_nanos, default_value = "10s")]
    pub duration: Nanos,
    /// Seed of the execution-time draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub common: Common,
}

pub fn parse_nanos(s: &str) -> Result<Nanos, String> {
    Nanos::parse(s)
}
fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s)
}
/// `--load`; an optional `host:` prefix says where it runs (the host), e.g. with `--in vm`.
pub fn parse_load(s: &str) -> Result<LoadSpec, String> {
    LoadSpec::parse(s.strip_prefix("host:").unwrap_or(s))
}

pub fn run(a: MeasureArgs) -> CmdResult {
    rtvirt_probe::signals::install();
    match a.what {
        What::Timer(t) => run_timer(t),
        What::Net(NetWhat::Server(s)) => run_server(s),
        What::Net(NetWhat::Client(c)) => run_client(c),
        What::Tasks(t) => run_tasks(t),
        What::TasksWorker => std::process::exit(rtvirt_probe::tasks::worker::worker_main()),
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

/// Re-run this very command inside a fresh container (`--in host` there), forwarding its output
/// and exit code; the container is removed whatever happens.
pub fn rerun_in_container(cpu_list: &[u32]) -> CmdResult {
    let exe = std::env::current_exe().context("cannot find the rtvirt executable")?;
    let container = Container::create(cpu_list)?;
    eprintln!(
        "rtvirt: container {} (netns {}, bridge {} {}, cpuset {})",
        container.name,
        container.netns,
        container.bridge,
        container.host_addr,
        cpus::format_list(cpu_list)
    );
    let mut child =
        container.command(&exe)?.args(args_inside()).spawn().context("cannot start rtvirt inside the container")?;
    let status = wait_forwarding_interrupt(&mut child)?;
    drop(container);
    match status.code() {
        Some(0) => Ok(Outcome::Ok),
        Some(1) => Ok(Outcome::Failed),
        _ => Err(anyhow::anyhow!("the measurement inside the container failed ({status})")),
    }
}

/// Wait for a child; on Ctrl-C/SIGTERM ask it to stop (it finishes cleanly and reports).
fn wait_forwarding_interrupt(child: &mut std::process::Child) -> anyhow::Result<std::process::ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait().context("waiting for rtvirt inside the container")? {
            return Ok(status);
        }
        if rtvirt_probe::signals::interrupted() && !forwarded {
            rtvirt_probe::signals::terminate(child.id());
            forwarded = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// This process's arguments with `--in container` replaced by `--in host`.
fn args_inside() -> Vec<String> {
    let mut out = Vec::new();
    let mut args = std::env::args().skip(1).peekable();
    while let Some(a) = args.next() {
        if a == "--in" && args.peek().map(String::as_str) == Some("container") {
            args.next();
            out.extend(["--in".to_string(), "host".to_string()]);
        } else if a == "--in=container" {
            out.push("--in=host".into());
        } else {
            out.push(a);
        }
    }
    out
}

fn run_timer(a: TimerArgs) -> CmdResult {
    let cpu_list = cpus::resolve("--cpus", a.cpus.as_deref())?;
    let cfg = timer::TimerConfig {
        cpus: cpu_list.clone(),
        interval: a.interval,
        priority: a.priority,
        policy: a.policy,
        duration: a.duration,
        interval_report: a.interval_report,
        force: a.common.force,
    };
    cfg.validate()?;
    match a.common.r#in {
        Where::Container => return rerun_in_container(&cpu_list),
        Where::Vm => return super::vm::measure_in_vm(&a.common, a.duration),
        Where::Host => {}
    }
    progress(
        a.duration,
        &format!(
            "measuring timer latency on CPU(s) {} ({} every {})",
            cpus::format_list(&cpu_list),
            a.policy.as_str(),
            a.interval
        ),
    );
    let mut hists = Vec::new();
    let results = with_loads(&a.common, || {
        let run = timer::run_with_reports(&cfg, &mut |rep| {
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string(rep).unwrap_or_default());
        })?;
        hists = run.per_cpu;
        Ok(run.results)
    })?;
    if let Some(path) = &a.histogram {
        let mut f =
            std::fs::File::create(path).with_context(|| format!("cannot write histogram {}", path.display()))?;
        timer::write_cyclictest_histogram(&mut f, &hists)
            .with_context(|| format!("cannot write histogram {}", path.display()))?;
    }
    let mut rows: Vec<(String, &Summary)> =
        results.cpus.iter().map(|c| (format!("cpu {}", c.cpu), &c.latency_ns)).collect();
    if let Some(all) = &results.latency_ns {
        rows.push(("all".into(), all));
    }
    let footer = format!("missed periods: {}", results.extra.get("missed_periods").cloned().unwrap_or_default());
    output(&results, a.common.format, a.interval_report.is_some(), "timer latency", &rows, &footer)?;
    Ok(Outcome::Ok)
}

fn run_tasks(a: TasksArgs) -> CmdResult {
    let scenario = crate::cli_common::load_scenario(a.scenario.as_deref())?;
    let plan = match (&a.plan, a.rho) {
        (Some(_), Some(_)) => anyhow::bail!("--rho applies when planning here; a --plan file was already planned"),
        (Some(path), None) => {
            let p = rtvirt_model::plan::Plan::from_file(path)?;
            p.check_matches(&scenario).map_err(|e| e.in_file(path))?;
            p
        }
        (None, rho) => {
            if let Some(r) = rho {
                if !(r > 0.0 && r <= 1.0) {
                    anyhow::bail!("--rho {r}: expected 0 < rho <= 1");
                }
            }
            let opts = rtvirt_analysis::planner::PlanOptions::default();
            rtvirt_analysis::planner::plan_at(&scenario, &opts, rho).plan
        }
    };
    let cfg = rtvirt_probe::tasks::TasksConfig { duration: a.duration, seed: a.seed, force: a.common.force };
    match a.common.r#in {
        Where::Container => {
            return rerun_in_container(&plan.guests.iter().filter_map(|g| g.core).collect::<Vec<u32>>())
        }
        Where::Vm => return super::vm::tasks_in_vm(&a.common, &scenario, &plan, &cfg),
        Where::Host => {}
    }
    progress(
        a.duration,
        &format!("running {} guest(s) of \"{}\" under their reservations", scenario.guests.len(), scenario.name),
    );
    let results = with_loads(&a.common, || Ok(rtvirt_probe::tasks::run(&scenario, &plan, &cfg)?))?;
    match a.common.format {
        Format::Json => print_json(&results)?,
        Format::Table => {
            println!(
                "{:<8} {:<8} {:>7} {:>7} {:>8} {:>11} {:>11} {:>11}",
                "guest", "task", "jobs", "misses", "DSR", "resp p50", "resp p99", "resp max"
            );
            for t in &results.tasks {
                let us = |v: u64| format!("{:.0}us", v as f64 / 1e3);
                println!(
                    "{:<8} {:<8} {:>7} {:>7} {:>8.4} {:>11} {:>11} {:>11}",
                    t.guest,
                    t.name,
                    t.jobs,
                    t.misses,
                    t.dsr,
                    us(t.response_ns.p50),
                    us(t.response_ns.p99),
                    us(t.response_ns.max)
                );
            }
            for g in &results.guests {
                println!(
                    "{}: core {} reservation {} used {:.1}% CPU",
                    g.name,
                    g.extra["core"],
                    g.extra["reservation"],
                    g.utilisation * 100.0
                );
            }
            println!(
                "overall DSR {:.4} ({} jobs, {} misses)",
                results.extra["dsr"].as_f64().unwrap_or(0.0),
                results.extra["jobs"],
                results.extra["misses"]
            );
        }
    }
    let misses = results.extra["misses"].as_u64().unwrap_or(0);
    Ok(if misses > 0 && plan.guests.iter().all(|g| g.tasks.iter().all(|t| t.bound == "wcet")) {
        Outcome::Failed
    } else {
        Outcome::Ok
    })
}

fn run_server(a: ServerArgs) -> CmdResult {
    if a.duration > Nanos::from_secs(86_400) && !a.common.force {
        anyhow::bail!("--duration {} is more than a day; add --force", a.duration);
    }
    match a.common.r#in {
        Where::Container => return rerun_in_container(&cpus::allowed()),
        Where::Vm => {
            return super::vm::server_in_vm(&a.common, a.listen.port(), a.proto.tcp, a.service_time, a.duration)
        }
        Where::Host => {}
    }
    let listen = inside_container_listen(a.listen);
    let cfg = server::ServerConfig { listen, protocol: a.proto.protocol(), service_time_ns: a.service_time.0 };
    let srv = server::Server::bind(&cfg)?;
    println!("listening on {} ({})", srv.local_addr(), cfg.protocol.as_str());
    let stop = AtomicBool::new(false);
    let end = rtvirt_probe::rt::now_ns() + a.duration.0;
    let results = with_loads(&a.common, || {
        std::thread::scope(|s| {
            s.spawn(|| {
                while rtvirt_probe::rt::now_ns() < end && !rtvirt_probe::signals::interrupted() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                stop.store(true, Ordering::SeqCst);
            });
            srv.serve(&stop)
        })?;
        let mut r = Results::new("net-server", a.duration.0);
        r.extra.insert("protocol".into(), cfg.protocol.as_str().into());
        r.extra.insert("listen".into(), srv.local_addr().to_string().into());
        r.extra.insert("server".into(), srv.stats.to_json());
        r.environment = Some(rtvirt_probe::environment::collect());
        Ok(r)
    })?;
    match a.common.format {
        Format::Json => print_json(&results)?,
        Format::Table => println!("served: {}", results.extra["server"]),
    }
    Ok(Outcome::Ok)
}

/// Inside a container started by rtvirt, a loopback listen address becomes the container's own
/// address (so that the host can reach it over the bridge).
fn inside_container_listen(listen: std::net::SocketAddr) -> std::net::SocketAddr {
    let detail = std::env::var(rtvirt_probe::environment::DETAIL_VAR)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    match detail.as_ref().and_then(|d| d["container_addr"].as_str()).and_then(|a| a.parse::<std::net::IpAddr>().ok()) {
        Some(ip) if listen.ip().is_loopback() => std::net::SocketAddr::new(ip, listen.port()),
        _ => listen,
    }
}

fn run_client(a: ClientArgs) -> CmdResult {
    let mut cfg = client::ClientConfig {
        connect: a.connect,
        protocol: a.proto.protocol(),
        size: a.size,
        arrivals: a.arrivals,
        duration: a.duration,
        timeout: a.timeout,
        seed: a.seed,
    };
    cfg.validate()?;
    progress(
        a.duration,
        &format!("measuring {} round trips to {} ({})", cfg.protocol.as_str(), cfg.connect, cfg.arrivals),
    );
    let results = match a.common.r#in {
        Where::Host => with_loads(&a.common, || Ok(client::run(&cfg)?))?,
        Where::Container => with_loads(&a.common, || client_to_container(&mut cfg))?,
        Where::Vm => return super::vm::client_in_vm(&a.common, (a.proto.tcp, a.connect.port(), a.duration)),
    };
    let rows = vec![("rtt".to_string(), results.rtt_ns.as_ref().expect("client results have rtt"))];
    let x = &results.extra;
    let footer = format!(
        "requests {} responses {} lost {} timeouts {}; rate requested {} achieved {:.1}/s",
        x["requests"],
        x["responses"],
        x["lost"],
        x["timeouts"],
        x["requested_rate"],
        x["achieved_rate"].as_f64().unwrap_or(0.0)
    );
    output(&results, a.common.format, false, "round-trip time", &rows, &footer)?;
    Ok(Outcome::Ok)
}

/// Start a server in a fresh container and run the client from the host over the bridge.
fn client_to_container(cfg: &mut client::ClientConfig) -> anyhow::Result<Results> {
    use std::io::BufRead;
    let container = Container::create(&cpus::allowed())?;
    let exe = std::env::current_exe().context("cannot find the rtvirt executable")?;
    let serve_for = Nanos(cfg.duration.0 + cfg.timeout.0 + 5_000_000_000);
    let proto = format!("--{}", cfg.protocol.as_str());
    let listen = format!("{}:{}", container.container_addr, cfg.connect.port());
    let mut child = container
        .command(&exe)?
        .args([
            "measure",
            "net",
            "server",
            "--listen",
            &listen,
            &proto,
            "--duration",
            &serve_for.to_string(),
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("cannot start the server in the container")?;
    let mut first = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().expect("piped"));
    out.read_line(&mut first).ok();
    let result = if first.starts_with("listening on") {
        cfg.connect = listen.parse().expect("valid address");
        client::run(cfg).map_err(anyhow::Error::from)
    } else {
        Err(anyhow::anyhow!("the server in the container did not start"))
    };
    rtvirt_probe::signals::terminate(child.id());
    let _ = child.wait();
    let mut r = result?;
    if let Some(env) = r.environment.as_mut() {
        env.extra.insert("peer".into(), "server in a container, over a veth pair and a Linux bridge".into());
        env.extra.insert("container".into(), container.describe());
    }
    drop(container);
    Ok(r)
}

/// A one-line note on stderr for runs longer than two seconds.
pub fn progress(duration: Nanos, what: &str) {
    if duration > Nanos::from_secs(2) {
        eprintln!("rtvirt: {what} for {duration}...");
    }
}

/// Print results: JSON (compact when it follows JSON lines), or a table of summaries.
pub fn output(
    r: &Results,
    format: Format,
    lines: bool,
    title: &str,
    rows: &[(String, &Summary)],
    footer: &str,
) -> anyhow::Result<()> {
    match format {
        Format::Json if lines => println!("{}", serde_json::to_string(r)?),
        Format::Json => print_json(r)?,
        Format::Table => {
            println!("{title} (ns)");
            println!(
                "{:<8} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                "", "count", "min", "mean", "sd", "p50", "p90", "p99", "p99.9", "p99.99", "max"
            );
            for (name, s) in rows {
                let pct = |key: &str, v: u64| {
                    format!("{v}{}", if s.low_confidence.iter().any(|k| k == key) { "*" } else { "" })
                };
                println!(
                    "{name:<8} {:>9} {:>9} {:>10.0} {:>9.0} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                    s.count,
                    s.min,
                    s.mean,
                    s.sd,
                    pct("p50", s.p50),
                    pct("p90", s.p90),
                    pct("p99", s.p99),
                    pct("p999", s.p999),
                    pct("p9999", s.p9999),
                    s.max
                );
            }
            println!("{footer}");
            if rows.iter().any(|(_, s)| !s.low_confidence.is_empty()) {
                println!("* too few samples for this percentile (fewer than 10 beyond it)");
            }
            if let Some(env) = &r.environment {
                println!(
                    "in {} | {} | {} | clocksource {}",
                    env.r#in.as_deref().unwrap_or("?"),
                    env.kernel.as_deref().unwrap_or("?"),
                    env.preemption.as_deref().unwrap_or("?"),
                    env.clocksource.as_deref().unwrap_or("?")
                );
                for l in &env.load {
                    println!("load: {l}");
                }
            }
        }
    }
    Ok(())
}
