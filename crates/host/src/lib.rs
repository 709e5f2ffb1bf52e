//! rtvirt-host: read and change a real host.
//!
//! - [`audit`]: RT-readiness checks with the raw values read from this machine (`rtvirt.audit/v1`).
//! - [`threads`]: discovery and labelling of the RT data path's threads (QMP, /proc).
//! - [`apply`]: plans and profiles -> lint -> journaled changes; [`journal`]: revert.
//! - [`sched`], [`cpuset`], [`procfs`], [`qmp`], [`cpulist`]: the OS interfaces underneath.

pub mod apply;
pub mod audit;
pub mod change;
pub mod cpulist;
pub mod cpuset;
pub mod error;
pub mod journal;
pub mod lint;
pub mod migrate;
pub mod procfs;
pub mod qmp;
pub mod render;
pub mod sched;
pub mod sysinfo;
pub mod threads;

pub use cpulist::CpuList;
pub use error::{HostError, KernelError, Result};
