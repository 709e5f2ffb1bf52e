//! The probe's error type: bad user values, missing privileges, and OS calls that failed, each
//! with a message that says what was being done. The CLI maps every variant to exit code 2.

use rtvirt_model::InputError;
use rtvirt_os::{KernelError, OsError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A value given by the user is wrong (CPU list, address, duration, plan...).
    #[error(transparent)]
    Input(#[from] InputError),
    /// The operation needs privileges the process does not have.
    #[error("{0} (run as root, or with CAP_SYS_NICE / CAP_NET_ADMIN / CAP_IPC_LOCK as needed)")]
    Permission(String),
    /// An OS call failed.
    #[error("{context}: {err}")]
    Os { context: String, err: std::io::Error },
    /// Anything else that stops a measurement (a peer vanished, a child failed...).
    #[error("{0}")]
    Failed(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error of the last OS call, with what was being done; EPERM/EACCES become `Permission`.
    pub fn last_os(context: impl Into<String>) -> Error {
        Error::os(context, std::io::Error::last_os_error())
    }

    pub fn os(context: impl Into<String>, source: std::io::Error) -> Error {
        let context = context.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => Error::Permission(format!("{context}: {source}")),
            _ => Error::Os { context, err: source },
        }
    }

    /// A failed system call as a probe error: what was being done, the kernel's reason in words,
    /// and the errno (EPERM/EACCES become `Permission`).
    pub fn kernel(context: &str, error: &KernelError) -> Error {
        Error::os(format!("{context}: {}", error.explain()), std::io::Error::from_raw_os_error(error.errno))
    }

    /// A bad user value for a named option.
    pub fn input(option: &str, message: impl Into<String>) -> Error {
        Error::Input(InputError::field(option, message))
    }
}

impl From<OsError> for Error {
    fn from(error: OsError) -> Error {
        match error {
            OsError::Kernel(k) => Error::kernel(&k.what, &k),
            OsError::Io { path, source } => Error::os(format!("cannot read {}", path.display()), source),
            other => Error::Failed(other.to_string()),
        }
    }
}

/// Attach a context to an io::Result.
pub trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::os(what(), e))
    }
}
