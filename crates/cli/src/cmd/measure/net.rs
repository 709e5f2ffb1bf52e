//! `rtvirt measure net server|client`: request/response round trips over UDP or TCP.

use super::args::{ClientArgs, ServerArgs};
use super::output::{output, progress};
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::placement::options::Where;
use crate::placement::{container::rerun_in_container, with_loads};
use anyhow::Context as _;
use rtvirt_model::results::Results;
use rtvirt_model::Nanos;
use rtvirt_probe::net::{client, server};
use rtvirt_probe::{container::Container, cpus};
use std::sync::atomic::{AtomicBool, Ordering};

pub fn run_server(a: ServerArgs) -> CmdResult {
    if a.duration > Nanos::from_secs(86_400) && !a.common.force {
        anyhow::bail!("--duration {} is more than a day; add --force", a.duration);
    }
    match a.common.r#in {
        Where::Container => return rerun_in_container(&cpus::allowed()),
        Where::Vm => {
            return crate::placement::vm::server_in_vm(
                &a.common,
                a.listen.port(),
                a.proto.tcp,
                a.service_time,
                a.duration,
            )
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

pub fn run_client(a: ClientArgs) -> CmdResult {
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
        Where::Vm => return crate::placement::vm::client_in_vm(&a.common, (a.proto.tcp, a.connect.port(), a.duration)),
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
