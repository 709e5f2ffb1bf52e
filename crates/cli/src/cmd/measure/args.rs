//! The arguments of `rtvirt measure`: one struct per measurement (the options every
//! measurement shares, where it runs and under which load, are `placement::options::Common`).

use crate::placement::options::Common;
use clap::{Args, Subcommand};
use rtvirt_model::Nanos;
use rtvirt_probe::net::{arrivals::Arrivals, Protocol};
use rtvirt_probe::rt::LinuxPolicy;
use std::path::PathBuf;

#[derive(Args)]
pub struct MeasureArgs {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Subcommand)]
pub enum What {
    /// Timer wake-up latency per CPU (cyclictest's job): pinned RT threads, absolute sleeps,
    /// every missed period counted.
    Timer(Box<TimerArgs>),
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

#[derive(Args)]
#[command(
    disable_help_flag = true,
    after_help = "Latency = actual wake-up - programmed time (CLOCK_MONOTONIC, absolute clock_nanosleep). A wake-up \
that comes after further activations were due counts each of them as a sample with its own lateness (missed_periods). \
Memory is locked and /dev/cpu_dma_latency held at 0 during the run; every setting is restored.

cyclictest's options mean what they mean there: -p 95, -i 200 (a bare number is microseconds), -D 60 (a bare number \
is seconds; 1m, 1h, 1d too), -a 0-7:2 (the CPUs, one measuring thread each), -t N (the first N of them), -h 400 (a \
cyclictest histogram of 400 1-us rows on stdout), -m (memory is always locked) and -q are accepted. -h is the \
histogram, as in cyclictest: help is --help.

Examples:
  rtvirt measure timer -p 95 -i 200 -D 10 -h 400 > hist.txt
  rtvirt measure timer --cpus 1 --duration 60s --histogram-file hist.txt
  rtvirt measure timer --policy deadline --interval 500us --load syscalls:2@0 --format json
  rtvirt measure timer --in container --interval-report 1s --format json
  rtvirt measure timer --cpus 1 --duration 30s --explain --trace late.json
  rtvirt measure timer --cpus 1 --duration 1h --break 500us --break-trace late.trace
  rtvirt measure timer --cpus 1 --duration 1h --until-confident --max 100us --horizon 12h --format json > run.json"
)]
pub struct TimerArgs {
    /// CPUs to measure on, one thread each, e.g. 1-3 or 0-7:2 (default: every CPU this process
    /// may use). -a without a list: every CPU.
    #[arg(short = 'a', long, visible_alias = "affinity", num_args = 0..=1, default_missing_value = "")]
    pub cpus: Option<String>,
    /// Measure with the first N of --cpus only (cyclictest's -t; one thread per CPU).
    #[arg(short = 't', long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub threads: Option<usize>,
    /// Wake-up period; a bare number is microseconds (cyclictest's -i).
    #[arg(short = 'i', long, value_parser = parse_microseconds, default_value = "1ms")]
    pub interval: Nanos,
    /// Real-time priority for fifo/rr (1..98; 99 needs --force).
    #[arg(short = 'p', long, default_value_t = 90)]
    pub priority: u32,
    /// Scheduling policy of the measuring threads (deadline: SCHED_DEADLINE as cyclicdeadline,
    /// runtime = interval/10, deadline = period = interval, each CPU in its own exclusive cpuset).
    #[arg(long, value_parser = parse_policy, default_value = "fifo")]
    pub policy: LinuxPolicy,
    /// How long to measure; a bare number is seconds, m/h/d minutes, hours, days (cyclictest's -D).
    #[arg(short = 'D', long, value_parser = parse_seconds, default_value = "10s")]
    pub duration: Nanos,
    /// cyclictest's -h N: print a cyclictest histogram of N rows of 1 us (later samples are its
    /// overflows) instead of the table. A value that is not a number is a file to write the
    /// histogram to (as --histogram-file).
    #[arg(short = 'h', long, value_name = "N", value_parser = parse_histogram)]
    pub histogram: Option<HistogramOption>,
    /// Also write a cyclictest-compatible histogram (1 us rows, one column per CPU) to FILE.
    #[arg(long, value_name = "FILE")]
    pub histogram_file: Option<PathBuf>,
    /// Also write the run to FILE as `cyclictest --json=FILE` writes it (rt-tests' keys: per
    /// thread its histogram in us rows up to -h N, cycles, min, max, avg, cpu, node).
    #[arg(long = "json", value_name = "FILE")]
    pub json_file: Option<PathBuf>,
    /// cyclictest's -n (clock_nanosleep): accepted; rtvirt always sleeps with clock_nanosleep.
    #[arg(short = 'n', long = "nanosleep", hide = true)]
    pub nanosleep: bool,
    /// cyclictest's -S (one thread per CPU, one priority): accepted; it is rtvirt's default.
    #[arg(short = 'S', long = "smp", hide = true)]
    pub smp: bool,
    /// cyclictest's -l LOOPS: refused with the -D that gives as many wake-ups.
    #[arg(short = 'l', long = "loops", hide = true, value_name = "LOOPS")]
    pub loops: Option<String>,
    /// Stream per-interval statistics as JSON lines on stdout (stalled threads are flagged).
    #[arg(long, value_parser = parse_nanos, value_name = "D")]
    pub interval_report: Option<Nanos>,
    /// Accepted for cyclictest's sake: memory is always locked.
    #[arg(short = 'm', long = "mlockall")]
    pub lock_memory: bool,
    /// No progress note on stderr (cyclictest's -q; results are printed once, at the end).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Explain the late wake-ups from a kernel trace (tracefs instance of rtvirt's own): each
    /// one split into timer IRQ delay, IRQs, softirqs, threads that ran first, wake-up,
    /// unexplained; a summary ranked by total time (section `explain` of the results).
    #[arg(long)]
    pub explain: bool,
    /// Explain wake-ups later than LAT (default: the run's p99). Implies --explain.
    #[arg(long, value_parser = parse_nanos, value_name = "LAT")]
    pub explain_above: Option<Nanos>,
    /// Also trace the measuring threads' own clock_nanosleep entries and returns (filtered to
    /// them in the kernel): splits `return` into kernel and user space and explains a wake-up
    /// whose switch-in the trace lacks. Costs more: while on, every system call of every task on
    /// the host takes the kernel's slow path (here about +2.5 us per measured wake-up). Implies
    /// --explain.
    #[arg(long)]
    pub explain_syscalls: bool,
    /// Stop the run at the first wake-up later than LAT, explain it and keep the whole raw trace
    /// (cyclictest -b) in --break-trace. Implies --explain.
    #[arg(long = "break", visible_alias = "stop-at", value_parser = parse_nanos, value_name = "LAT")]
    pub break_at: Option<Nanos>,
    /// rtla's --on-threshold: what to do when --break (--stop-at) stopped the run: trace (keep
    /// the trace, as --break does), shell,command=CMD or signal,num=N,pid=PID|parent. Repeatable.
    #[arg(long, value_name = "ACTION", requires = "break_at")]
    pub on_threshold: Vec<String>,
    /// rtla's --on-end: what to do when the run ends: shell,command=CMD or signal,num=N,pid=PID.
    /// Repeatable.
    #[arg(long, value_name = "ACTION")]
    pub on_end: Vec<String>,
    /// With --break: the file the whole trace goes to, as text in ftrace's layout (default:
    /// rtvirt-break-PID.trace in the current directory). With --in vm the guest's trace comes
    /// back here (one file per guest kernel and load, their label in its name, when several).
    #[arg(long, value_name = "FILE", requires = "break_at")]
    pub break_trace: Option<PathBuf>,
    /// Internal (`--in vm --explain`, in the guest): the serial device over which the host tells
    /// its time.
    #[arg(long, hide = true, value_name = "DEVICE")]
    pub clock_sync: Option<PathBuf>,
    /// Measure until `rtvirt gate` decides for --max over --horizon, at most --duration: the
    /// gate is checked after 10 report intervals, then at elapsed times growing by 1.5x, and at
    /// the cap, each check at confidence 1 - (1 - C)/checks (Bonferroni); a sample above --max
    /// decides at once. Progress and the reason it stopped on stderr; exit 0 below the limit,
    /// 1 above, 3 undecided at the cap (as `rtvirt gate`). Reports every second unless
    /// --interval-report says otherwise; the intervals go into the results (for `rtvirt tail`).
    #[arg(long, requires_all = ["max", "horizon"])]
    pub until_confident: bool,
    /// With --until-confident: the latency limit.
    #[arg(long, value_parser = parse_nanos, value_name = "LAT", requires = "until_confident")]
    pub max: Option<Nanos>,
    /// With --until-confident: how long the limit must hold.
    #[arg(long, value_parser = parse_nanos, value_name = "D", requires = "until_confident")]
    pub horizon: Option<Nanos>,
    /// With --until-confident: confidence of the decision (all checks together).
    #[arg(long, default_value_t = 0.95, value_parser = crate::cmd::tail::parse_confidence, value_name = "C")]
    pub confidence: f64,
    /// Write the explained wake-ups as a Perfetto / Chrome trace (the track layout of
    /// `rtvirt simulate --trace`: a track per CPU, a track per measuring thread). Implies --explain.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// `-h N` (rows of a cyclictest histogram on stdout) or `--histogram FILE` (written there).
#[derive(Debug, Clone, PartialEq)]
pub enum HistogramOption {
    Rows(u64),
    File(PathBuf),
}

fn parse_histogram(text: &str) -> Result<HistogramOption, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("0 rows: expected a number of 1-us rows of at least 1 (cyclictest's -h N)".into()),
        Ok(n) => Ok(HistogramOption::Rows(n)),
        Err(_) => Ok(HistogramOption::File(PathBuf::from(text))),
    }
}

/// A duration; a bare number is microseconds (cyclictest's `-i`).
pub fn parse_microseconds(text: &str) -> Result<Nanos, String> {
    bare_number(text, "us")
}

/// A duration; a bare number is seconds (cyclictest's `-D`). Units as everywhere ([`Nanos::parse`]).
pub fn parse_seconds(text: &str) -> Result<Nanos, String> {
    bare_number(text, "s")
}

/// `text` as a duration, a bare number taken in `unit`.
fn bare_number(text: &str, unit: &str) -> Result<Nanos, String> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        Nanos::parse(&format!("{t}{unit}"))
    } else {
        Nanos::parse(t)
    }
}

impl TimerArgs {
    /// Whether a kernel trace is taken.
    pub fn explains(&self) -> bool {
        self.explain
            || self.explain_syscalls
            || self.explain_above.is_some()
            || self.break_at.is_some()
            || self.trace.is_some()
    }
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
    pub fn protocol(self) -> Protocol {
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
    /// Explain each request's path on this host from a kernel trace: host receive (IRQ or
    /// veth, NET_RX softirq, socket enqueue, wake-up), server, host send (section `explain`).
    #[arg(long)]
    pub explain: bool,
    /// Also trace rtvirt's threads' send and receive syscalls (filtered to them in the kernel):
    /// `server` then ends at the server's send syscall instead of its response's net_dev_queue.
    /// Costs more: while on, every system call of every task on the host takes the kernel's
    /// slow path. Implies --explain.
    #[arg(long)]
    pub explain_syscalls: bool,
    /// Internal (`measure net client --in vm --explain`, in the guest): the serial device over
    /// which the host tells its time.
    #[arg(long, hide = true, value_name = "DEVICE", requires = "explain")]
    pub clock_sync: Option<PathBuf>,
    /// Write the explained requests as a Perfetto / Chrome trace (the track layout of
    /// `rtvirt simulate --trace` of a network scenario: a track per CPU with the path segments,
    /// a track per measuring thread with its requests). Implies --explain.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

impl ServerArgs {
    /// Whether a kernel trace is taken.
    pub fn explains(&self) -> bool {
        self.explain || self.explain_syscalls || self.trace.is_some()
    }
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
  rtvirt measure net client --in container --arrivals poisson:1000   # host -> container over a bridge
  rtvirt measure net client --in container --explain --duration 5s   # each round trip's path, segment by segment
  rtvirt measure net client --in container --trace rtt.json          # the same, and a Perfetto trace of it

--stream measures bulk throughput instead (netperf TCP_STREAM/UDP_STREAM, iperf3): messages of --message-size \
as fast as the socket takes them (or paced to --bandwidth) for --duration; bandwidth per --report-interval and overall as sent and as the \
server received it, UDP loss, and the CPU time of the sending and the receiving thread.
  rtvirt measure net client --stream --tcp --duration 10s
  rtvirt measure net client --stream --udp --message-size 1472 --in container
  rtvirt measure net client --stream --udp --bandwidth 1G   # paced, as iperf3 -u -b 1G"
)]
pub struct ClientArgs {
    /// Server address and port (with --in container only the port is used).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub connect: std::net::SocketAddr,
    #[command(flatten)]
    pub proto: Proto,
    /// The server's address only, its port kept from --connect (sockperf's -i, netperf's -H).
    #[arg(short = 'i', long = "ip", short_alias = 'H', value_name = "ADDRESS")]
    pub ip: Option<std::net::IpAddr>,
    /// The server's port only (sockperf's -p).
    #[arg(short = 'p', long)]
    pub port: Option<u16>,
    /// Request (= response) size in bytes, at least 32 (sockperf's -m/--msg-size).
    #[arg(short = 'm', long, visible_alias = "msg-size", default_value_t = 64)]
    pub size: usize,
    /// Arrival process: uniform:MIN-MAX, poisson:RATE, fixed:RATE (requests/s) or back-to-back
    /// (closed loop). Paced latencies count from the intended send time.
    #[arg(long, value_parser = Arrivals::parse, default_value = "uniform:1ms-10ms")]
    pub arrivals: Arrivals,
    /// Requests per second, evenly paced (sockperf under-load's --mps: --arrivals fixed:N).
    #[arg(long, value_name = "N", conflicts_with = "arrivals")]
    pub mps: Option<f64>,
    /// How long to send requests; a bare number is seconds (sockperf's -t/--time, netperf's -l).
    #[arg(short = 't', long, visible_alias = "time", short_alias = 'l')]
    #[arg(value_parser = parse_seconds, default_value = "10s")]
    pub duration: Nanos,
    /// A request whose response does not come within this is a timeout (late or lost; missing
    /// ones are also lost); a TCP send blocked this long (server not reading) ends the sending.
    #[arg(long, value_parser = parse_nanos, default_value = "1s")]
    pub timeout: Nanos,
    /// Seed of the arrival process.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Explain each round trip's path on this host from a kernel trace: client send, host
    /// receive (bridge, veth, NET_RX softirq, socket enqueue, server wake-up), server, host send,
    /// client receive (section `explain`; with --in container the server's side is traced too).
    #[arg(long, conflicts_with = "stream")]
    pub explain: bool,
    /// Also trace rtvirt's threads' send and receive syscalls (filtered to them in the kernel):
    /// `server` then ends at the server's send syscall instead of its response's net_dev_queue.
    /// Costs more: while on, every system call of every task on the host takes the kernel's
    /// slow path. Implies --explain.
    #[arg(long, conflicts_with = "stream")]
    pub explain_syscalls: bool,
    /// Write the explained round trips as a Perfetto / Chrome trace (the track layout of
    /// `rtvirt simulate --trace` of a network scenario: a track per CPU with the path segments,
    /// a track per measuring thread with its requests). Implies --explain.
    #[arg(long, value_name = "FILE.json", conflicts_with = "stream")]
    pub trace: Option<PathBuf>,
    /// Measure bulk throughput (a stream) instead of round trips.
    #[arg(long)]
    pub stream: bool,
    /// With --stream: bytes per send (default: UDP 1472 - no fragmentation at MTU 1500, as
    /// netperf -m 1472; TCP 131072, as iperf3).
    #[arg(long, requires = "stream")]
    pub message_size: Option<usize>,
    /// With --stream: length of each reported interval (iperf3's -i).
    #[arg(long, value_parser = parse_nanos, default_value = "1s", requires = "stream")]
    pub report_interval: Nanos,
    /// With --stream: pace the sender to this many payload bits per second, K/M/G/T suffixes in
    /// powers of 1000 (iperf3's -b: 100M, 2.5G); without it, as fast as the socket takes.
    #[arg(long, short = 'b', value_name = "BITS_PER_SECOND", requires = "stream")]
    #[arg(value_parser = rtvirt_probe::net::stream::parse_bits_per_second)]
    pub bandwidth: Option<f64>,
    #[command(flatten)]
    pub common: Common,
}

impl ClientArgs {
    /// Whether a kernel trace is taken.
    pub fn explains(&self) -> bool {
        self.explain || self.explain_syscalls || self.trace.is_some()
    }
}

#[derive(Args)]
#[command(
    after_help = "Each guest is a process whose single vCPU thread runs under SCHED_DEADLINE (runtime = planned \
budget, deadline, period), pinned \
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
    /// Also count each task's jobs and misses per window of D (by release since the start), in
    /// the results' `intervals`: `rtvirt report` draws the DSR per window.
    #[arg(long, value_parser = parse_nanos, value_name = "D")]
    pub interval_report: Option<Nanos>,
    /// Explain each task's longest jobs from a kernel trace of the vCPU threads' CPUs: each
    /// job's response split into the guest's vCPU thread running, other threads, IRQs and
    /// softirqs, the release's wake-up, and the vCPU thread throttled (out of budget); section
    /// `explain` of the results, drawn by `rtvirt report`.
    #[arg(long)]
    pub explain: bool,
    /// Start the task sets so that the host's scheduler ticks fall TIME after their first release
    /// (e.g. 0ns, 1500us): under tick enforcement (no HRTICK) a reservation that runs out of
    /// budget overruns until the next tick, so results depend on this phase. Without it the run
    /// starts when it is ready; the phase it had is recorded (`tick_phase_ns`) either way, and
    /// `verify` simulates with it.
    #[arg(long, value_parser = rtvirt_model::Nanos::parse, value_name = "TIME")]
    pub tick_phase: Option<rtvirt_model::Nanos>,
    #[command(flatten)]
    pub common: Common,
}

pub fn parse_nanos(text: &str) -> Result<Nanos, String> {
    Nanos::parse(text)
}
fn parse_policy(text: &str) -> Result<LinuxPolicy, String> {
    LinuxPolicy::parse(text)
}
