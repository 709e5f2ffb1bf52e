//! The errors of guest images and guest runs. Every one is an environment/input problem for the
//! CLI (exit code 2); those that happen after QEMU started carry the tail of the guest console.

use std::path::PathBuf;

/// Errors of building images and running guests.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The unpacked Debian kernel package is not in the cache.
    #[error(
        "guest kernel '{flavour}' not found in {dir}: {why}\n  fetch it with scripts/setup.sh test, or by hand:\n    \
         {fetch}"
    )]
    KernelMissing { flavour: String, dir: PathBuf, why: String, fetch: String },
    /// A host tool the image or the guest needs is missing.
    #[error("{tool} not found ({why}); install it with scripts/setup.sh test (Debian package {package})")]
    ToolMissing { tool: String, package: String, why: String },
    /// Building the initramfs failed.
    #[error("cannot build guest image: {0}")]
    Image(String),
    /// QEMU could not be started.
    #[error("cannot start QEMU: {0}")]
    Spawn(String),
    /// The guest did not produce its results within the bound.
    #[error(
        "guest '{name}' did not finish within {bound_s:.0}s ({phase}); QEMU killed. Guest console (last lines):\n\
         {console_tail}"
    )]
    Timeout { name: String, bound_s: f64, phase: String, console_tail: String },
    /// QEMU exited before the guest delivered its results.
    #[error(
        "QEMU for guest '{name}' exited early ({status}) without results. QEMU stderr: {stderr}\nGuest console (last \
         lines):\n{console_tail}"
    )]
    EarlyExit { name: String, status: String, stderr: String, console_tail: String },
    /// The guest delivered something that is not what was asked for.
    #[error(
        "guest '{name}' returned garbage instead of results: {why}. Guest output (last lines):\n{output_tail}\nGuest \
         console (last lines):\n{console_tail}"
    )]
    Garbage { name: String, why: String, output_tail: String, console_tail: String },
    /// The run was interrupted by a signal (everything was torn down).
    #[error("interrupted by signal; guest '{name}' torn down")]
    Interrupted { name: String },
    /// Host networking (bridge, tap) could not be set up.
    #[error("guest network: {0}")]
    Net(String),
    /// Invalid request (bad name, bad sizes...).
    #[error("{0}")]
    Invalid(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl VmError {
    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> VmError {
        VmError::Io { what: what.into(), source }
    }
}

pub type Result<T> = std::result::Result<T, VmError>;
