//! Re-running a measurement inside a fresh container.

use crate::cli_common::{CmdResult, Outcome};
use anyhow::Context as _;
use rtvirt_probe::{container::Container, cpus};

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
