//! Ctrl-C / SIGTERM: the first signal only raises a flag that every measuring loop polls, so runs
//! stop early and every guard (cgroups, namespaces, scheduling, dma latency) is dropped normally.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Install the SIGINT/SIGTERM/SIGHUP handlers (idempotent).
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Whether the user asked to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Ask a child process we started to stop (SIGTERM): rtvirt children stop measuring, drop their
/// guards and exit normally.
pub fn terminate(pid: u32) {
    // SAFETY: kill has no memory effects; the caller passes the id of its own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}
