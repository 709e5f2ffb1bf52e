//! `rtvirt measure net server|client`: request/response round trips over UDP or TCP.

use super::args::{ClientArgs, ServerArgs};
use super::output::{output, progress};
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::explain;
use crate::placement::command_line::CommandLine;
use crate::placement::options::Common;
use crate::placement::{drive, Measurement, Role};
use rtvirt_model::results::{NetServerSection, Results};
use rtvirt_model::Nanos;
use rtvirt_probe::explain::net::events::READER_THREAD;
use rtvirt_probe::explain::net::{NetExplainer, Side};
use rtvirt_probe::explain::ExplainConfig;
use rtvirt_probe::net::{client, server};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

/// A server: echoes requests for its duration (or until Ctrl-C).
struct Server {
    args: ServerArgs,
}

pub fn run_server(args: ServerArgs, line: CommandLine) -> CmdResult {
    rtvirt_probe::limits::check_duration("--duration", args.duration, args.common.force)?;
    if let Some(path) = &args.trace {
        crate::output_file::check("--trace", path, &[])?;
    }
    drive(Server { args }, line)
}

impl Measurement for Server {
    fn common(&self) -> &Common {
        &self.args.common
    }

    fn duration(&self) -> Nanos {
        self.args.duration
    }

    fn role(&self) -> Role {
        Role::Server { port: self.args.listen.port(), tcp: self.args.proto.tcp }
    }

    fn measure(&mut self, _server: Option<SocketAddr>) -> anyhow::Result<Results> {
        let a = &self.args;
        let listen = inside_container_listen(a.listen);
        let cfg = server::ServerConfig { listen, protocol: a.proto.protocol(), service_time_ns: a.service_time.0 };
        let mut srv = server::Server::bind(&cfg)?;
        let config = || ExplainConfig { clock_sync: a.clock_sync.clone(), ..explain_config(a.explain_syscalls) };
        let mut explainer = a.explains().then(|| NetExplainer::start(config(), Side::Server));
        if let Some(e) = explainer.as_mut() {
            e.set_run_start(rtvirt_probe::rt::now_ns());
            srv.explain_to(e.sink());
        }
        // A status line: stderr, so that stdout holds only the results (JSON that reads back).
        eprintln!("listening on {} ({})", srv.local_addr(), cfg.protocol.as_str());
        let (stop, served_all) = (AtomicBool::new(false), AtomicBool::new(false));
        let end = rtvirt_probe::rt::now_ns() + a.duration.0;
        let (served, explained) = std::thread::scope(|s| {
            s.spawn(|| {
                while rtvirt_probe::rt::now_ns() < end && !rtvirt_os::signals::interrupted() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                stop.store(true, Ordering::SeqCst);
            });
            let reader = explainer.map(|e| {
                std::thread::Builder::new()
                    .name(READER_THREAD.into())
                    .spawn_scoped(s, || e.run(&served_all))
                    .expect("spawn the trace reader")
            });
            let served = srv.serve(&stop);
            stop.store(true, Ordering::SeqCst);
            served_all.store(true, Ordering::Release);
            (served, reader.map(|h| h.join()))
        });
        served?;
        let mut r = Results::new("net-server", a.duration.0);
        r.explain = explained.transpose().map_err(|_| anyhow::anyhow!("the trace reader panicked"))?;
        r.net_server = Some(NetServerSection {
            listen: Some(srv.local_addr().to_string()),
            protocol: Some(cfg.protocol.as_str().into()),
            server: Some(srv.stats.snapshot()),
        });
        r.environment = Some(rtvirt_probe::environment::collect());
        Ok(r)
    }

    fn report(&self, results: &Results) -> CmdResult {
        match self.args.common.format {
            Format::Json => print_json(results)?,
            Format::Table => {
                println!("served: {}", served(results)?);
                if let Some(e) = &results.explain {
                    explain::print_segments(e);
                }
            }
        }
        if let (Some(e), Some(path)) = (&results.explain, &self.args.trace) {
            explain::write_net_trace(e, "server", path)?;
        }
        Ok(Outcome::Ok)
    }
}

/// Where the tracing instance is journaled; whether syscalls are traced too.
fn explain_config(syscalls: bool) -> ExplainConfig {
    ExplainConfig { syscalls, ..ExplainConfig::new(rtvirt_host::journal::default_state_dir()) }
}

/// What a server saw, as its table line shows it (the counts as JSON).
fn served(results: &Results) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&results.net_server.as_ref().and_then(|s| s.server.as_ref()))?)
}

/// Inside a container started by rtvirt, a loopback listen address becomes the container's own
/// address (so that the host can reach it over the bridge).
fn inside_container_listen(listen: std::net::SocketAddr) -> std::net::SocketAddr {
    let detail = std::env::var(rtvirt_probe::environment::DETAIL_VAR)
        .ok()
        .and_then(|t| serde_json::from_str::<rtvirt_model::results::ContainerDetail>(&t).ok());
    match detail.and_then(|d| d.container_addr.parse::<std::net::IpAddr>().ok()) {
        Some(ip) if listen.ip().is_loopback() => std::net::SocketAddr::new(ip, listen.port()),
        _ => listen,
    }
}

/// A client: sends requests to its server (or to a peer server placed for it) and measures the
/// round trips.
struct Client {
    args: ClientArgs,
    config: client::ClientConfig,
}

pub fn run_client(mut args: ClientArgs, line: CommandLine) -> CmdResult {
    // sockperf's and netperf's spellings: -i/-H address, -p port, --mps rate
    if let Some(ip) = args.ip {
        args.connect.set_ip(ip);
    }
    if let Some(port) = args.port {
        args.connect.set_port(port);
    }
    if let Some(rate) = args.mps {
        args.arrivals = rtvirt_probe::net::arrivals::Arrivals::Fixed { rate };
    }
    let config = client::ClientConfig {
        connect: args.connect,
        protocol: args.proto.protocol(),
        size: args.size,
        arrivals: args.arrivals,
        duration: args.duration,
        timeout: args.timeout,
        seed: args.seed,
        force: args.common.force,
    };
    config.validate()?;
    if let Some(path) = &args.trace {
        crate::output_file::check("--trace", path, &[])?;
    }
    progress(
        args.duration,
        &format!("measuring {} round trips to {} ({})", config.protocol.as_str(), config.connect, config.arrivals),
    );
    drive(Client { args, config }, line)
}

impl Measurement for Client {
    fn common(&self) -> &Common {
        &self.args.common
    }

    fn duration(&self) -> Nanos {
        self.args.duration
    }

    fn role(&self) -> Role {
        let a = &self.args;
        Role::Client { port: a.connect.port(), tcp: a.proto.tcp, timeout: a.timeout }
    }

    fn measure(&mut self, server: Option<SocketAddr>) -> anyhow::Result<Results> {
        if let Some(server) = server {
            self.config.connect = server;
        }
        let explain = self.args.explains().then(|| explain_config(self.args.explain_syscalls));
        Ok(client::run_explained(&self.config, explain.as_ref())?)
    }

    fn report(&self, results: &Results) -> CmdResult {
        let rows = vec![("rtt".to_string(), results.rtt_ns.as_ref().expect("client results have rtt"))];
        let x = results.net.clone().unwrap_or_default();
        let count = |c: Option<u64>| c.map_or("-".into(), |c| c.to_string());
        let requested = x.requested_rate.flatten().map_or("back-to-back".into(), |r| format!("{r:.1}/s"));
        let footer = format!(
            "requests {} responses {} lost {} timeouts {}; rate requested {requested} achieved {:.1}/s",
            count(x.requests),
            count(x.responses),
            count(x.lost),
            count(x.timeouts),
            x.achieved_rate.unwrap_or(0.0)
        );
        output(results, self.args.common.format, false, "round-trip time", &rows, &footer)?;
        if let (Some(e), Format::Table) = (&results.explain, self.args.common.format) {
            explain::print_segments(e);
        }
        if let (Some(e), Some(path)) = (&results.explain, &self.args.trace) {
            explain::write_net_trace(e, "client", path)?;
        }
        Ok(Outcome::Ok)
    }
}
