//! `HostError`: everything that can go wrong in the configure job: bad input, a failed OS call
//! (rtvirt-os, with the kernel's errno in words), the journal, a rolled-back apply.

use rtvirt_model::InputError;
use rtvirt_os::{KernelError, OsError};
use std::path::PathBuf;

/// Errors of the host crate. Every one is reported with exit code 2 by the CLI.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Input(#[from] InputError),
    /// A system call, file or QMP request of rtvirt-os failed.
    #[error(transparent)]
    Os(#[from] OsError),
    #[error("journal {path}: {message}")]
    Journal { path: PathBuf, message: String },
    /// The apply failed and what had been changed was rolled back.
    #[error("{cause}; everything already changed was rolled back ({undone} change(s) undone)")]
    RolledBack { cause: Box<HostError>, undone: usize },
}

impl HostError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HostError::Os(OsError::io(path, source))
    }
    pub fn input(message: impl Into<String>) -> Self {
        HostError::Input(InputError::new(message))
    }
}

impl From<KernelError> for HostError {
    fn from(e: KernelError) -> Self {
        HostError::Os(OsError::Kernel(e))
    }
}

pub type Result<T, E = HostError> = std::result::Result<T, E>;
