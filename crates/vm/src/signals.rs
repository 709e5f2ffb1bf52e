//! Interrupt handling while a guest runs: SIGINT, SIGTERM and SIGHUP set a flag that every wait
//! loop polls, so that the guest guards (QEMU, tap, bridge, runtime directory) are torn down by
//! their `Drop` before the command returns its error, instead of the process dying with QEMU and
//! a bridge left behind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Install the handlers (once per process).
pub fn install() {
    INSTALL.call_once(|| {
        use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
        let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            // SAFETY: the handler only stores to an atomic (async-signal-safe).
            unsafe {
                let _ = sigaction(sig, &action);
            }
        }
    });
}

/// Whether one of the signals arrived since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
