//! Shared by the vm_* tests: run rtvirt under a watchdog, guards that kill a child rtvirt (and
//! everything in its process group) when a test fails, and a check that a guest left nothing
//! behind.
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Bound on one rtvirt run of these tests (a TCG boot plus a short measurement, with a wide margin
/// for a loaded machine). rtvirt has its own bounds; this one holds even if they fail.
pub const BOUND: Duration = Duration::from_secs(300);

/// After SIGTERM (rtvirt tears its guest down), how long before SIGKILL.
const GRACE: Duration = Duration::from_secs(15);

pub fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

/// The arguments of `rtvirt vm COMMAND` for a TCG guest called `name` that may take 150 s to
/// boot, followed by `rest`.
pub fn tcg_guest<'a>(command: &'a str, name: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["vm", command, "--accel", "tcg", "--name", name, "--boot-timeout", "150s"];
    args.extend_from_slice(rest);
    args
}

/// Run rtvirt with `args` within [`BOUND`]; (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    Running::spawn(rtvirt().args(args)).wait(BOUND)
}

/// A child rtvirt in its own process group (stdout and stderr piped). Dropped while it still runs
/// (a failed assertion, the watchdog), its group gets SIGTERM - rtvirt tears its guest down -
/// then SIGKILL after a grace period (QEMU dies with rtvirt through PR_SET_PDEATHSIG).
pub struct Running {
    pub child: Child,
    /// Stderr read so far by [`Running::stderr_line`], and the reader of the rest.
    stderr_seen: String,
    stderr_rest: Option<std::thread::JoinHandle<String>>,
}

impl Running {
    pub fn spawn(cmd: &mut Command) -> Running {
        let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn().expect("start rtvirt");
        Running { child, stderr_seen: String::new(), stderr_rest: None }
    }

    /// Read stderr up to the first line starting with `prefix` (a status line such as a
    /// server's "listening on"); that line. The rest of stderr is still collected by `wait`.
    pub fn stderr_line(&mut self, prefix: &str) -> String {
        let mut reader = std::io::BufReader::new(self.child.stderr.take().expect("stderr read once"));
        let mut found = String::new();
        loop {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
                break;
            }
            self.stderr_seen.push_str(&line);
            if line.starts_with(prefix) {
                found = line;
                break;
            }
        }
        self.stderr_rest = Some(drain(Some(reader)));
        assert!(!found.is_empty(), "no stderr line starts with {prefix:?}:\n{}", self.stderr_seen);
        found
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Wait for the end within `bound`, collecting the output; past the bound, kill the group and
    /// fail the test with what was printed.
    pub fn wait(mut self, bound: Duration) -> (i32, String, String) {
        let stderr = self.stderr_rest.take().unwrap_or_else(|| drain(self.child.stderr.take()));
        let readers = [drain(self.child.stdout.take()), stderr];
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break Some(s);
            }
            if t0.elapsed() > bound {
                self.stop();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let [out, rest] = readers.map(|r| r.join().unwrap_or_default());
        let err = std::mem::take(&mut self.stderr_seen) + &rest;
        match status {
            Some(s) => (s.code().unwrap_or(-1), out, err),
            None => {
                panic!("rtvirt ran over the test bound of {bound:?} and was killed\nstdout:\n{out}\nstderr:\n{err}")
            }
        }
    }

    /// SIGTERM to the group, SIGKILL after [`GRACE`]; reap.
    fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let group = -(self.child.id() as i32);
        // SAFETY: plain kill(2) on our child's process group.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > GRACE {
                // SAFETY: as above.
                unsafe { libc::kill(group, libc::SIGKILL) };
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Read `pipe` (if any) to its end in a thread: what it carried, as text.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// No QEMU process named `name`, no runtime directory, no rtvirt bridge/tap of a dead owner.
pub fn assert_nothing_left(name: &str) {
    for p in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let cmd = String::from_utf8_lossy(&std::fs::read(p.path().join("cmdline")).unwrap_or_default()).into_owned();
        assert!(
            !(cmd.contains("qemu-system") && cmd.contains(&format!("{name},debug-threads"))),
            "leftover QEMU for {name}: {cmd}"
        );
    }
    assert!(!std::path::Path::new("/run/rtvirt/vm").join(name).exists(), "runtime dir of {name} left behind");
    for iface in std::fs::read_dir("/sys/class/net").unwrap().filter_map(|e| e.ok()) {
        let n = iface.file_name().into_string().unwrap();
        for prefix in ["rtvbr", "rtvtap"] {
            if let Some(pid) = n.strip_prefix(prefix).and_then(|p| p.parse::<u32>().ok()) {
                assert!(
                    std::path::Path::new(&format!("/proc/{pid}")).exists(),
                    "interface {n} left by dead process {pid}"
                );
            }
        }
    }
}
