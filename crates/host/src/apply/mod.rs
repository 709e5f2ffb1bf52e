//! `apply`: turn a plan (`rtvirt.plan/v1`) or a profile (`rtvirt.profile/v1`) into journaled
//! changes on real threads, IRQs, devices and cgroups. Everything is resolved and validated first
//! (bad input: nothing changed), then the lint runs on the state the apply would produce, then
//! each change is journaled and made; a failure rolls back what this apply changed.

pub mod admission;
pub mod plan;
pub mod profile;
mod run;

pub use admission::{Admission, KernelBandwidthCap, Server};
pub use plan::apply_plan;
pub use profile::{apply_profile, Profile};

pub use run::{ApplyError, ApplyOptions, ApplyReport, Binding, GuestSource, APPLY_SCHEMA};
