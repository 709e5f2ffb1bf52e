//! Errors of OS calls: [`KernelError`] (a failed system call with the kernel's errno translated
//! into words: why SCHED_DEADLINE said EBUSY, what EPERM means here...) and [`OsError`], which
//! adds unreadable files, QMP failures and missing kernel features.

use std::fmt;
use std::path::PathBuf;

/// A failed system call on a thread or file, with the errno it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError {
    /// What rtvirt was doing, e.g. "sched_setattr(SCHED_DEADLINE 1ms/10ms/10ms) on thread 1234".
    pub what: String,
    pub errno: i32,
    /// Which operation, to choose the explanation.
    pub op: Op,
}

/// The kinds of kernel operation whose errors rtvirt explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    SetSchedDeadline,
    SetSchedOther,
    GetSched,
    SetAffinity,
    GetAffinity,
    WriteFile,
    MoveToCgroup,
    CreateCgroup,
}

impl KernelError {
    pub fn new(op: Op, what: impl Into<String>, errno: i32) -> Self {
        KernelError { what: what.into(), errno, op }
    }

    /// The kernel's answer in words: why this errno happens for this operation and what to do.
    pub fn explain(&self) -> String {
        use Op::*;
        match (self.errno, self.op) {
            (libc::ESRCH, _) => "the thread no longer exists (stale PID/TID: the process exited)".into(),
            (libc::EBUSY, SetSchedDeadline) => {
                "SCHED_DEADLINE admission control refused the reservation: the deadline bandwidth of the thread's root \
                 domain would exceed sched_rt_runtime_us/sched_rt_period_us per CPU; lower the budgets, spread the \
                 guests over more cores, or check `rtvirt host threads` for other deadline threads"
                    .into()
            }
            (libc::EBUSY, SetAffinity) => {
                "a SCHED_DEADLINE thread's affinity must cover its whole root domain; to pin it to one core it must \
                 live in a cpuset partition (exclusive cpuset with its own root domain), which `rtvirt host apply` \
                 sets up"
                    .into()
            }
            (libc::EBUSY, MoveToCgroup) | (libc::EBUSY, WriteFile) | (libc::EBUSY, CreateCgroup) => {
                "the cgroup/cpuset change would break an exclusive cpuset or the deadline bandwidth already admitted \
                 there (another partition or deadline task holds these CPUs)"
                    .into()
            }
            (libc::EPERM, SetSchedDeadline) => "SCHED_DEADLINE was refused: either rtvirt lacks CAP_SYS_NICE (run as \
                                                root), or the thread's affinity does not span its whole root domain (a \
                                                pinned thread needs a cpuset partition of exactly its CPUs)"
                .into(),
            (libc::EPERM, _) | (libc::EACCES, _) => "permission denied: changing other processes' scheduling, \
                                                     affinity, IRQs and cgroups needs root (CAP_SYS_NICE, \
                                                     CAP_SYS_ADMIN)"
                .into(),
            (libc::EINVAL, SetSchedDeadline) => "invalid SCHED_DEADLINE parameters: the kernel needs 1024 ns <= \
                                                 runtime <= deadline <= period, the period within \
                                                 kernel.sched_deadline_period_min_us..max_us, and no SCHED_DEADLINE \
                                                 inside a cgroup with RT group scheduling"
                .into(),
            (libc::EINVAL, SetSchedOther) => "invalid policy/priority: FIFO and RR need priority 1..99, the other \
                                              policies priority 0"
                .into(),
            (libc::EINVAL, SetAffinity) => {
                "the CPU list contains no online CPU the thread may use (check its cpuset)".into()
            }
            (libc::EINVAL, CreateCgroup) => "the cpuset was refused: its CPU is already held by another exclusive \
                                             cpuset (another partition, e.g. a running rtvirt measurement or a \
                                             container), or the CPU/memory node list is invalid"
                .into(),
            (libc::EINVAL, WriteFile) | (libc::EINVAL, MoveToCgroup) => {
                "the kernel rejected the value for this file".into()
            }
            (libc::EOPNOTSUPP, WriteFile) => "the device or kernel does not support this setting (e.g. threaded NAPI \
                                              on a device without NAPI instances)"
                .into(),
            (libc::ENOSPC, MoveToCgroup) => "the cpuset has no CPUs or memory nodes set".into(),
            _ => std::io::Error::from_raw_os_error(self.errno).to_string(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = std::io::Error::from_raw_os_error(self.errno);
        write!(
            f,
            "{} failed: {} ({})",
            self.what,
            self.explain(),
            errno_name(self.errno).unwrap_or_else(|| name.to_string())
        )
    }
}

impl std::error::Error for KernelError {}

/// The symbolic name of the errnos rtvirt explains.
fn errno_name(errno: i32) -> Option<String> {
    let name = match errno {
        libc::EBUSY => "EBUSY",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::ESRCH => "ESRCH",
        libc::EACCES => "EACCES",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSPC => "ENOSPC",
        libc::ENOENT => "ENOENT",
        _ => return None,
    };
    Some(name.to_string())
}

/// Everything the OS layer can fail with. Callers (probe, host, vm) map it into their own errors.
#[derive(Debug, thiserror::Error)]
pub enum OsError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("QMP {socket}: {message}")]
    Qmp { socket: PathBuf, message: String },
    /// The kernel lacks what is needed (no cpuset controller mounted, a partition refused...).
    #[error("{0}")]
    Unsupported(String),
}

impl OsError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        OsError::Io { path: path.into(), source }
    }
}

pub type Result<T, E = OsError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_errnos_are_explained_per_operation() {
        let busy = KernelError::new(Op::SetSchedDeadline, "sched_setattr on thread 1", libc::EBUSY).to_string();
        assert!(busy.contains("admission control refused") && busy.contains("EBUSY"), "{busy}");
        let pinned = KernelError::new(Op::SetAffinity, "sched_setaffinity on thread 1", libc::EBUSY).to_string();
        assert!(pinned.contains("root domain") && pinned.contains("cpuset partition"), "{pinned}");
        let perm = KernelError::new(Op::SetSchedDeadline, "x", libc::EPERM).to_string();
        assert!(perm.contains("CAP_SYS_NICE") && perm.contains("root domain"), "{perm}");
        let inval = KernelError::new(Op::SetSchedDeadline, "x", libc::EINVAL).to_string();
        assert!(inval.contains("runtime <= deadline <= period"), "{inval}");
    }
}
