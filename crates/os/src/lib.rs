//! rtvirt-os: the operating-system layer that probe, host and vm share.
//!
//! - [`sched`]: scheduling attributes (`sched_setattr`/`sched_getattr`) and CPU affinity of one
//!   thread; [`migrate`]: make a thread sit on a CPU of its new affinity before SCHED_DEADLINE.
//! - [`cpulist`]: [`CpuList`], the kernel's CPU list format ("0-3,8", "0-7:2", "0-15:2/4").
//! - [`procfs`]: /proc (processes, threads, stat, cgroup membership, mounts);
//!   [`sysinfo`]: facts about the running host (online/isolated CPUs, kernel, IRQs, RT throttling).
//! - [`cgroup`]: cgroup v1/v2 hierarchies and cpuset partitions (one root domain per CPU), as
//!   journaled changes for `rtvirt host apply` and as guards for the length of a measurement.
//! - [`restore`]: [`Change`], the one restore primitive: each change carries the original value it
//!   replaces and puts it back on undo; [`Restorer`] undoes performed changes on drop.
//! - [`guard_journal`]: a guard's changes journaled (fsynced) before they are made, restored after
//!   a kill -9 by the next journaled guard or `rtvirt host revert`.
//! - [`tracefs`]: kernel tracing in an instance of rtvirt's own (journaled, removed after a kill
//!   -9 by the next run or `rtvirt host revert`), read from the per-CPU binary ring buffers.
//! - [`qmp`]: a small synchronous QMP client; [`signals`]: the process-wide Ctrl-C stop flag.
//! - [`trust`]: whether a state directory or a file in it may have been written by someone else.
//! - [`error`]: [`KernelError`] (errno in words) and [`OsError`].
//!
//! Invariant: only this crate performs the system calls that change scheduling or cgroup state
//! (sched_setattr, sched_setaffinity, cpuset/cgroup files), and every such change is restorable:
//! it is made through a [`Change`] that keeps the original value beside the new one (as rtla keeps
//! its `orig_*` values), or through a guard that restores on drop.
//!
//! Depends on no rtvirt crate; used by probe (guards for the length of a measurement), host
//! (journaled changes of `rtvirt host apply`), vm (QMP, vCPU pinning, the stop flag) and the cli.
//! Every wait on the kernel or QEMU is bounded; errors name the file or call and the errno in
//! words.

pub mod cgroup;
pub mod cpulist;
pub mod error;
pub mod guard_journal;
pub mod migrate;
pub mod procfs;
pub mod qmp;
pub mod restore;
pub mod sched;
pub mod signals;
pub mod sysinfo;
pub mod trace_mount;
pub mod tracefs;
pub mod trust;

pub use cpulist::CpuList;
pub use error::{KernelError, Op, OsError, Result};
pub use restore::{Change, Restorer, Undone};

/// Serialises unit tests that create exclusive cpusets (two cannot hold the same CPU).
#[cfg(test)]
pub(crate) static TEST_CPUSETS: std::sync::Mutex<()> = std::sync::Mutex::new(());
