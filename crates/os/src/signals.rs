//! Ctrl-C / SIGTERM: the first signal only raises a flag that every measuring loop polls, so runs
//! stop early and every guard (cgroups, namespaces, scheduling, dma latency) is dropped normally.
//! One flag for the whole process: probe, vm and the CLI read the same one.

use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Install the SIGINT/SIGTERM/SIGHUP handlers (idempotent).
pub fn install() {
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        let _ = unsafe { signal::sigaction(sig, &action) };
    }
}

/// Whether the user asked to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Ask a child process we started to stop (SIGTERM): rtvirt children stop measuring, drop their
/// guards and exit normally; QEMU shuts its guest down.
pub fn terminate(pid: u32) {
    let _ = signal::kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
}
