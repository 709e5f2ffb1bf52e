//! One QEMU guest run: start QEMU on an image with a job, wait for the job's output within
//! bounds, and tear everything down - QEMU, its tap, the bridge, the runtime directory - in the
//! guard's `Drop`, whatever happened (error, timeout, signal, panic). QEMU also gets
//! `PR_SET_PDEATHSIG(SIGKILL)`, so it dies if rtvirt is killed outright, and its own process
//! group, so a terminal Ctrl-C reaches rtvirt (which then tears down) rather than QEMU alone.

use crate::config::{Accel, GuestConfig, GuestFile};
use crate::console::{self, Progress};
use crate::error::{Result, VmError};
use crate::image::Image;
use crate::net::{self, Bridge};
use crate::runtime::{self, GuestRecord};
use crate::{init, paths};
use rtvirt_os::qmp::Qmp;
use rtvirt_os::signals;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What the job printed, and how long things took.
#[derive(Debug, Clone)]
pub struct JobOutput {
    pub stdout: String,
    pub rc: i32,
    /// From QEMU start to the job's begin marker.
    pub boot_time: Duration,
    /// From the begin marker to the end marker.
    pub job_time: Duration,
    pub console_tail: String,
}

/// A running guest; dropping it tears everything down.
pub struct Guest {
    cfg: GuestConfig,
    dir: PathBuf,
    child: Option<Child>,
    nonce: String,
    record: GuestRecord,
    bridge: Option<Bridge>,
    started: Instant,
    begun: Option<Instant>,
}

/// Poll interval of the wait loops.
const POLL: Duration = Duration::from_millis(25);

/// Bound on QEMU creating its QMP socket and answering on it. QEMU greets a QMP client only once
/// its machine is set up (ROMs, kernel and initramfs loaded); on this 2-core machine under a
/// parallel build that took more than 10 s. Each try waits [`QMP_TRY`], then QEMU's liveness is
/// checked before the next.
const QMP_BOUND: Duration = Duration::from_secs(60);
/// Bound on one QMP answer while waiting for QEMU's first.
const QMP_TRY: Duration = Duration::from_secs(2);

impl Guest {
    /// Start QEMU running `job` (a shell script) in `image`.
    pub fn start(image: &Image, cfg: &GuestConfig, job: &str) -> Result<Guest> {
        runtime::check_name(&cfg.name).map_err(VmError::Invalid)?;
        if cfg.vcpus == 0 || cfg.memory_mib < 128 {
            return Err(VmError::Invalid(format!(
                "guest needs at least 1 vCPU and 128 MiB (got {} vCPUs, {} MiB)",
                cfg.vcpus, cfg.memory_mib
            )));
        }
        GuestFile::check(&cfg.files)?;
        signals::install();
        let dir = claim_run_dir(&cfg.name)?;
        let nonce = format!("{:x}-{:x}", std::process::id(), now_nanos());
        let mut guest = Guest {
            cfg: cfg.clone(),
            dir: dir.clone(),
            child: None,
            nonce,
            record: GuestRecord {
                name: cfg.name.clone(),
                pid: 0,
                qmp_socket: dir.join("qmp.sock"),
                accel: cfg.accel.name().into(),
                vcpus: cfg.vcpus,
                memory_mib: cfg.memory_mib,
                kernel: image.flavour.name().into(),
                kernel_version: image.kernel_version.clone(),
                vcpu_threads: Vec::new(),
                tap: None,
                bridge: None,
                guest_ip: None,
                owner_pid: std::process::id(),
            },
            bridge: None,
            started: Instant::now(),
            begun: None,
        };
        // From here on, Drop cleans up whatever was made.
        if cfg.network {
            let b = Bridge::create()?;
            guest.record.bridge = Some(b.name.clone());
            guest.record.tap = Some(net::tap_name());
            guest.record.guest_ip = Some(b.guest_ip.clone());
            guest.bridge = Some(b);
        }
        let ip = guest.bridge.as_ref().map(|b| (format!("{}/{}", b.guest_ip, b.prefix_len), b.host_ip.clone()));
        let job = if cfg.agent { crate::agent::with_agent(job) } else { job.to_string() };
        let cmdline = init::kernel_cmdline(&job, &guest.nonce, ip.as_ref().map(|(g, h)| (g.as_str(), h.as_str())))?;
        if !cfg.files.is_empty() {
            let files = GuestFile::host_dir(&dir);
            std::fs::create_dir(&files).map_err(|e| VmError::io(format!("creating {}", files.display()), e))?;
            for f in &cfg.files {
                let path = files.join(&f.name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| VmError::io(format!("creating {}", parent.display()), e))?;
                }
                std::fs::write(&path, &f.data)
                    .map_err(|e| VmError::io(format!("writing {}/{}", files.display(), f.name), e))?;
            }
        }
        let args = crate::qemu::qemu_args(image, cfg, &dir, &cmdline, guest.record.tap.as_deref());
        let stderr =
            std::fs::File::create(dir.join("qemu.stderr")).map_err(|e| VmError::io("creating qemu.stderr", e))?;
        let mut cmd = Command::new(&cfg.qemu);
        cmd.args(&args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr).process_group(0);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            VmError::Spawn(format!("{}: {e} (install qemu-system-x86 with scripts/setup.sh test)", cfg.qemu.display()))
        })?;
        guest.record.pid = child.id();
        guest.child = Some(child);
        guest.started = Instant::now();
        guest.write_record()?;
        guest.after_start()?;
        Ok(guest)
    }

    /// Attach the tap, learn the vCPU threads over QMP, pin them, record them.
    fn after_start(&mut self) -> Result<()> {
        if let Some(tap) = self.record.tap.clone() {
            self.wait_until("QEMU creating its tap", Duration::from_secs(10), |_| net::exists(&tap))?;
            self.bridge.as_ref().expect("a tap implies a bridge").attach(&tap)?;
        }
        let sock = self.record.qmp_socket.clone();
        self.wait_until("QEMU opening its QMP socket", QMP_BOUND, |_| sock.exists())?;
        // QEMU creates the socket file a moment before it listens: retry. If QEMU exited early
        // (which also closes QMP), poll() reports that, with its stderr and the console.
        let t0 = Instant::now();
        let (threads, kvm) = loop {
            match query_qmp(&sock) {
                Ok(v) => break v,
                Err(e) => {
                    self.poll()?;
                    if t0.elapsed() > QMP_BOUND {
                        return Err(VmError::Spawn(format!(
                            "QEMU did not answer on QMP within {} s: {e}",
                            QMP_BOUND.as_secs()
                        )));
                    }
                    std::thread::sleep(POLL * 4);
                }
            }
        };
        self.record.vcpu_threads = threads;
        if (self.cfg.accel == Accel::Kvm) != kvm {
            return Err(VmError::Spawn(format!(
                "QEMU did not enable the requested accelerator {}",
                self.cfg.accel.name()
            )));
        }
        crate::qemu::pin_threads(&self.record.vcpu_threads, &self.cfg.pin)?;
        self.write_record()
    }

    fn write_record(&self) -> Result<()> {
        self.record.write(&self.dir).map_err(|e| VmError::io(format!("writing {}/guest.json", self.dir.display()), e))
    }

    /// The runtime record (pid, QMP socket, vCPU threads, network).
    pub fn record(&self) -> &GuestRecord {
        &self.record
    }

    /// The runtime directory of this guest.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Wait until the job's output contains `needle` (e.g. a server's "ready" line).
    pub fn wait_for_output(&mut self, needle: &str) -> Result<()> {
        loop {
            match self.poll()? {
                Progress::Running(out) if out.contains(needle) => return Ok(()),
                Progress::Done { stdout, .. } => {
                    return if stdout.contains(needle) {
                        Ok(())
                    } else {
                        Err(self.garbage(&format!("the job ended without printing {needle:?}"), &stdout))
                    };
                }
                _ => std::thread::sleep(POLL),
            }
        }
    }

    /// Wait until the guest console (kernel, init, the job's stderr) contains `needle`, e.g. a
    /// server's "listening on" line.
    pub fn wait_for_console(&mut self, needle: &str) -> Result<()> {
        let path = self.dir.join("console.log");
        loop {
            if let Progress::Done { stdout, .. } = self.poll()? {
                return Err(self.garbage(&format!("the job ended before the console showed {needle:?}"), &stdout));
            }
            let console = std::fs::read(&path).unwrap_or_default();
            if String::from_utf8_lossy(&console).contains(needle) {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Wait for the job's end marker; the guest then powers off.
    pub fn wait_done(&mut self) -> Result<JobOutput> {
        loop {
            if let Progress::Done { stdout, rc } = self.poll()? {
                let begun = self.begun.unwrap_or(self.started);
                return Ok(JobOutput {
                    stdout,
                    rc,
                    boot_time: begun - self.started,
                    job_time: begun.elapsed(),
                    console_tail: self.console_tail(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// One look at the guest: its progress, or the error that ends the run.
    fn poll(&mut self) -> Result<Progress> {
        if signals::interrupted() {
            return Err(VmError::Interrupted { name: self.cfg.name.clone() });
        }
        let log = std::fs::read(self.dir.join("output.log")).unwrap_or_default();
        let progress = console::progress(&String::from_utf8_lossy(&log), &self.nonce);
        if !matches!(progress, Progress::Booting) && self.begun.is_none() {
            self.begun = Some(Instant::now());
            if let Some(report) = self.cfg.progress {
                report(&format!(
                    "guest {} booted in {:.1}s, running its job (bound {:.0}s)",
                    self.cfg.name,
                    self.started.elapsed().as_secs_f64(),
                    self.cfg.job_timeout.as_secs_f64()
                ));
            }
        }
        if matches!(progress, Progress::Done { .. }) {
            return Ok(progress);
        }
        if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
            return Err(VmError::EarlyExit {
                name: self.cfg.name.clone(),
                status: status.to_string(),
                stderr: self.qemu_stderr(),
                console_tail: self.console_tail(),
            });
        }
        let (phase, since, bound) = match self.begun {
            None => ("booting", self.started, self.cfg.boot_timeout),
            Some(t) => ("running the job", t, self.cfg.job_timeout),
        };
        if since.elapsed() > bound {
            self.stop();
            return Err(VmError::Timeout {
                name: self.cfg.name.clone(),
                bound_s: bound.as_secs_f64(),
                phase: phase.into(),
                console_tail: self.console_tail(),
            });
        }
        Ok(progress)
    }

    /// Poll `cond` (given elapsed time) until true, within `bound`, failing on early exit.
    fn wait_until(&mut self, what: &str, bound: Duration, mut cond: impl FnMut(Duration) -> bool) -> Result<()> {
        let t0 = Instant::now();
        while !cond(t0.elapsed()) {
            self.poll()?;
            if t0.elapsed() > bound {
                return Err(VmError::Timeout {
                    name: self.cfg.name.clone(),
                    bound_s: bound.as_secs_f64(),
                    phase: what.into(),
                    console_tail: self.console_tail(),
                });
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// A "garbage" error for this guest.
    pub fn garbage(&self, why: &str, output: &str) -> VmError {
        garbage_error(&self.cfg.name, why, output, self.console_tail())
    }

    pub fn console_tail(&self) -> String {
        console::tail(&self.dir.join("console.log"), console::TAIL_LINES)
    }

    fn qemu_stderr(&self) -> String {
        let t = std::fs::read_to_string(self.dir.join("qemu.stderr")).unwrap_or_default();
        let t = t.trim();
        if t.is_empty() {
            "(none)".into()
        } else {
            t.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | ")
        }
    }

    /// Stop QEMU: SIGTERM, then SIGKILL after 2 s; reap it.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        if child.try_wait().ok().flatten().is_none() {
            signals::terminate(child.id());
            let t0 = Instant::now();
            while child.try_wait().ok().flatten().is_none() {
                if t0.elapsed() > Duration::from_secs(2) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.stop();
        self.bridge.take(); // removes the bridge (the tap went with QEMU)
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// vCPU thread ids (in vCPU index order) and whether KVM is on, over QMP.
fn query_qmp(sock: &Path) -> rtvirt_os::Result<(Vec<i32>, bool)> {
    let mut qmp = Qmp::connect_with_timeout(sock, QMP_TRY)?;
    let mut vcpus = qmp.vcpus()?;
    vcpus.sort_by_key(|v| v.index);
    let kvm = qmp.kvm_enabled()?;
    Ok((vcpus.into_iter().map(|v| v.thread_id as i32).collect(), kvm))
}

/// A "garbage" error with the tails of the output and console.
pub fn garbage_error(name: &str, why: &str, output: &str, console_tail: String) -> VmError {
    let clean = console::printable(output);
    let lines: Vec<&str> = clean.lines().collect();
    let output_tail = lines[lines.len().saturating_sub(10)..]
        .iter()
        .map(|l| format!("    {}", truncate(l, 200)))
        .collect::<Vec<_>>()
        .join("\n");
    VmError::Garbage {
        name: name.into(),
        why: why.into(),
        output_tail: if output_tail.is_empty() { "    (empty)".into() } else { output_tail },
        console_tail,
    }
}

fn truncate(text: &str, count: usize) -> String {
    if text.chars().count() <= count {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(count).collect::<String>())
    }
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// Claim the runtime directory of `name` atomically: it is made (with an `owner` file holding this
/// process's id) under a private name and renamed into place, which fails while another run owns
/// it. A stale one (owner gone) is replaced; a live one is refused.
fn claim_run_dir(name: &str) -> Result<PathBuf> {
    let dir = paths::guest_run_dir(name);
    let parent = dir.parent().expect("guest dirs live under vm/");
    let io = |what: &str, e| VmError::io(format!("{what} {}", dir.display()), e);
    std::fs::create_dir_all(parent).map_err(|e| io("creating the parent of", e))?;
    let stage = parent.join(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir(&stage).map_err(|e| io("staging", e))?;
    std::fs::write(stage.join("owner"), std::process::id().to_string()).map_err(|e| io("staging", e))?;
    for _ in 0..3 {
        if std::fs::rename(&stage, &dir).is_ok() {
            return Ok(dir);
        }
        if let Some(owner) = run_dir_owner(&dir).filter(|&pid| runtime::process_alive(pid)) {
            let _ = std::fs::remove_dir_all(&stage);
            let qemu = GuestRecord::read(&dir).map(|r| format!(", QEMU pid {}", r.pid)).unwrap_or_default();
            return Err(VmError::Invalid(format!(
                "a guest named '{name}' is already running (rtvirt pid {owner}{qemu}); choose another --name"
            )));
        }
        let _ = std::fs::remove_dir_all(&dir); // stale: its owner is gone
    }
    let _ = std::fs::remove_dir_all(&stage);
    Err(VmError::Invalid(format!("cannot claim {} (another run keeps taking it)", dir.display())))
}

/// The rtvirt process owning a runtime directory (from its `owner` file, else its record).
fn run_dir_owner(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join("owner"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .or_else(|| GuestRecord::read(dir).map(|r| r.owner_pid))
}
