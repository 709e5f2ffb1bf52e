//! rtvirt-host: read and change a real host.
//!
//! - [`audit`]: RT-readiness checks with the raw values read from this machine (`rtvirt.audit/v1`).
//! - [`threads`]: discovery and labelling of the RT data path's threads (QMP, /proc).
//! - [`apply`]: plans and profiles -> [`lint`] -> journaled [`change`]s; [`journal`]: revert.
//! - [`sched`], [`cpuset`], [`migrate`], [`procfs`], [`sysinfo`], [`qmp`], [`cpulist`]: the OS
//!   interfaces underneath; [`render`]: text tables; [`error`]: errors with errno in words.
//!
//! For other crates (e.g. `rtvirt vm`): `threads::discover(&Target::Qmp(socket))`,
//! `apply::apply_plan(&plan, &[Binding::parse_vm("g=SOCKET")?], &[], &opts, &mut |_| {})`,
//! `journal::revert(&state_dir)`.

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
