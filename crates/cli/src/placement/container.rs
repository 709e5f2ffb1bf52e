//! `--in container`: this command re-run inside a fresh container (network namespace, veth pair
//! on a bridge, cpuset cgroup), or, for a client, a peer server in one; the container is removed
//! whatever happens.

use super::command_line::{self, CommandLine};
use crate::cli_common::{CmdResult, Outcome};
use anyhow::Context as _;
use rtvirt_model::results::Results;
use rtvirt_model::Nanos;
use rtvirt_probe::{container::Container, cpus};
use std::net::SocketAddr;

/// Re-run `line` inside a fresh container on `cpu_list` (`--in host` there, the default),
/// forwarding its output and exit code.
pub fn rerun(line: &CommandLine, cpu_list: &[u32]) -> CmdResult {
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
    let inside = line.clone().without(&["in"]).argv();
    let mut child =
        container.command(&exe)?.args(inside).spawn().context("cannot start rtvirt inside the container")?;
    let status = wait_forwarding_interrupt(&mut child)?;
    drop(container);
    match status.code() {
        Some(0) => Ok(Outcome::Ok),
        Some(1) => Ok(Outcome::Failed),
        _ => Err(anyhow::anyhow!("the measurement inside the container failed ({status})")),
    }
}

/// Start a net server on `port` in a fresh container for `serve_for`, run `client` from this
/// host against it over the bridge, and note the peer in the client's results.
pub fn with_server(
    port: u16,
    tcp: bool,
    serve_for: Nanos,
    client: impl FnOnce(SocketAddr) -> anyhow::Result<Results>,
) -> anyhow::Result<Results> {
    let container = Container::create(&cpus::allowed())?;
    let exe = std::env::current_exe().context("cannot find the rtvirt executable")?;
    let listen = SocketAddr::new(container.container_addr.into(), port);
    let mut child = container
        .command(&exe)?
        .args(command_line::net_server(&listen.to_string(), serve_for, tcp, &["--format", "json"]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot start the server in the container")?;
    let result = if server_listening(child.stderr.take().expect("piped stderr")) {
        client(listen)
    } else {
        Err(anyhow::anyhow!("the server in the container did not start (its error is above)"))
    };
    rtvirt_os::signals::terminate(child.id());
    let _ = child.wait();
    let mut r = result?;
    if let Some(env) = r.environment.as_mut() {
        env.peer = Some("server in a container, over a veth pair and a Linux bridge".into());
        env.container = Some(container.describe());
    }
    drop(container);
    Ok(r)
}

/// How long a server started by rtvirt may take to say it listens.
const SERVER_START_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Forward a server's stderr to ours (on a thread, until it ends) and wait until it says
/// "listening on" (a status line: stderr): false if it ended first, did not say so within
/// [`SERVER_START_BOUND`], or Ctrl-C came.
fn server_listening(stderr: std::process::ChildStderr) -> bool {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if line.starts_with("listening on") {
                let _ = tx.send(());
            }
        }
    });
    let bound = std::time::Instant::now() + SERVER_START_BOUND;
    while std::time::Instant::now() < bound && !rtvirt_os::signals::interrupted() {
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(()) => return true,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return false,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    false
}

/// Wait for a child; on Ctrl-C/SIGTERM ask it to stop (it finishes cleanly and reports).
fn wait_forwarding_interrupt(child: &mut std::process::Child) -> anyhow::Result<std::process::ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait().context("waiting for rtvirt inside the container")? {
            return Ok(status);
        }
        if rtvirt_os::signals::interrupted() && !forwarded {
            rtvirt_os::signals::terminate(child.id());
            forwarded = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
