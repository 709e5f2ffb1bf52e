//! One run of a study cell: this binary re-run as a child (`rtvirt measure ... --format json`)
//! with its results read from stdout, so that every placement, load and measurement works in a
//! study exactly as on the command line. A net measurement on the host gets a server of its own
//! on loopback for the run. On Ctrl-C the child is stopped (SIGTERM; from a terminal it gets the
//! SIGINT too), cleans up, and the run counts as not done.

use rtvirt_model::results::Results;
use rtvirt_model::Nanos;
use std::io::{BufRead, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How a run ended.
pub enum Ended {
    Done(Box<Results>),
    Failed(String),
    Interrupted,
}

/// How long a run may take beyond its duration (start-up, calibration, a guest's boot) before
/// it is stopped.
const RUN_MARGIN: Nanos = Nanos::from_secs(300);

/// Run `rtvirt ARGS` (a server for it first when `server` says so).
pub fn run(args: &[String], server: Option<ServerNeed>, duration: Nanos) -> Ended {
    let mut args = args.to_vec();
    let server = match server.map(|need| start_server(need, duration)).transpose() {
        Ok(s) => s,
        Err(e) => return Ended::Failed(e),
    };
    if let Some(s) = &server {
        args.extend(["--connect".into(), s.address.clone()]);
    }
    let ended = run_child(&args, Nanos(duration.0 + RUN_MARGIN.0));
    if let Some(mut s) = server {
        stop(&mut s.child);
    }
    ended
}

/// A net measurement on the host needs a server: TCP or UDP.
#[derive(Clone, Copy)]
pub struct ServerNeed {
    pub tcp: bool,
}

struct Server {
    child: Child,
    address: String,
}

fn exe() -> std::path::PathBuf {
    std::env::current_exe().unwrap_or_else(|_| "rtvirt".into())
}

fn start_server(need: ServerNeed, duration: Nanos) -> Result<Server, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port for the server: {e}"))?
        .port();
    let address = format!("127.0.0.1:{port}");
    let serve_for = Nanos(duration.0 + 30_000_000_000);
    let argv = crate::placement::command_line::net_server(&address, serve_for, need.tcp, &["--format", "json"]);
    let mut child = Command::new(exe())
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let mut line = String::new();
    let _ = std::io::BufReader::new(child.stderr.take().expect("piped")).read_line(&mut line);
    if !line.starts_with("listening on") {
        stop(&mut child);
        return Err(format!("the server did not start: {}", line.trim()));
    }
    Ok(Server { child, address })
}

/// Stop a child (SIGTERM: it stops, cleans up and exits) and wait for it.
fn stop(child: &mut Child) {
    rtvirt_os::signals::terminate(child.id());
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn run_child(args: &[String], bound: Nanos) -> Ended {
    let mut child =
        match Command::new(exe()).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()
        {
            Ok(c) => c,
            Err(e) => return Ended::Failed(format!("cannot start rtvirt: {e}")),
        };
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + Duration::from_nanos(bound.0);
    let status = loop {
        if rtvirt_os::signals::interrupted() {
            stop(&mut child);
            return Ended::Interrupted;
        }
        if Instant::now() > deadline {
            stop(&mut child);
            return Ended::Failed(format!("no results within {bound}: stopped"));
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Ended::Failed(format!("cannot wait for rtvirt: {e}")),
        }
    };
    let (out, err) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    let last_error = || err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
    if status.code() == Some(130) || rtvirt_os::signals::interrupted() {
        return Ended::Interrupted;
    }
    if !status.success() && status.code() != Some(1) {
        return Ended::Failed(format!("exit {}: {}", status.code().unwrap_or(-1), last_error()));
    }
    // `--in vm` timer and tasks print the guest-kernel x host-load matrix (no load first, then
    // each load): the cell's run is its last row.
    let document = match serde_json::from_str::<Results>(&out) {
        Ok(r) => Ok(r),
        Err(e) => serde_json::from_str::<Vec<Results>>(&out).ok().and_then(|mut rows| rows.pop()).ok_or(e),
    };
    match document {
        Ok(r) if r.interrupted => Ended::Interrupted,
        Ok(r) if r.error.is_some() => Ended::Failed(r.error.unwrap_or_default()),
        Ok(r) => Ended::Done(Box::new(r)),
        Err(e) => Ended::Failed(format!("its output is not a results document ({e}); {}", last_error())),
    }
}
