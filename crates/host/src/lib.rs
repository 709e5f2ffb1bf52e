//! rtvirt-host: the configure job on a real host (the OS calls underneath are rtvirt-os).
//!
//! - [`audit`]: RT-readiness checks with the raw values read from this machine (`rtvirt.audit/v1`).
//! - [`threads`]: discovery and labelling of the RT data path's threads (QMP, /proc).
//! - [`apply`]: plans and profiles -> [`lint`] -> journaled `rtvirt_os::Change`s; [`journal`]:
//!   revert; [`render`]: text tables; [`error`]: errors of the configure job.
//!
//! For other crates (e.g. `rtvirt vm`): `threads::discover(&Target::Qmp(socket))`,
//! `apply::apply_plan(&plan, &[Binding::parse_vm("g=SOCKET")?], &[], &opts, &mut |_| {})`,
//! `journal::revert(&state_dir)`.

pub mod apply;
pub mod audit;
pub mod error;
pub mod journal;
pub mod lint;
pub mod render;
pub mod threads;

pub use error::{HostError, Result};
