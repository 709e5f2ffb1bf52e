//! rtvirt-vm: boot minimal QEMU guests and run rtvirt measurements inside them (the guest side
//! of Abeni 2023: cyclictest-style timer latency in RT and non-RT guests under host load;
//! also the guest end of `measure net`).
//!
//! - [`kernel`]: the Debian guest kernels (cloud = non-RT, rt = PREEMPT_RT) unpacked in the cache.
//! - [`modules`]: the kernel modules the guest loads, with dependencies from `.modinfo`.
//! - [`image`]: kernel + initramfs (busybox, `/init`, modules, rtvirt + its libraries), cached
//!   by the hash of its inputs.
//! - [`init`]: the guest `/init` and the job protocol (kernel command line in, serial port out).
//! - [`config`]: how to run a guest (vCPUs, memory, accelerator, timeouts, files for its job).
//! - [`guest`]: one QEMU run with bounded waits and a guard that always tears everything down.
//! - [`net`]: host bridge + tap for guests with a virtio-net NIC.
//! - [`accel`]: KVM if a bounded boot probe succeeds, else TCG (recorded, with a warning).
//! - [`measure`]: `rtvirt measure ...` inside a guest -> annotated `rtvirt.results/v1`.
//! - [`agent`]: the guest agent's virtio-serial port and its start in the guest (`host observe`).
//! - [`clock`]: the host's end of the guest's clock line (`--in vm --explain`).
//! - [`runtime`]: `/run/rtvirt/vm/<name>/` records of running guests (for `rtvirt host`).
//! - [`qemu`]: QEMU's command line, vCPU pinning.
//! - plumbing: [`console`], [`paths`], [`error`]; QMP, vCPU pinning and Ctrl-C/SIGTERM handling
//!   (one flag for the whole process) are rtvirt-os's.
//!
//! Entry points: [`image::build`] (cached), [`guest::Guest::start`] with a
//! [`GuestConfig`] then `wait_done()`, or [`measure::run`] for one measurement in one
//! guest; [`runtime`] for the records `rtvirt host` reads. Which guests a measurement needs and
//! the host loads around them are the cli's placement driver's (`crates/cli/src/placement`).
//!
//! Invariants: depends on rtvirt-model and rtvirt-os only; every wait (boot, job, QEMU exit) is
//! bounded; the [`guest::Guest`] guard always removes QEMU, its bridge and tap and the runtime
//! directory, also on error and Ctrl-C. User guide: docs/measure.md (QEMU guests).

pub mod accel;
pub mod agent;
pub mod clock;
pub mod config;
pub mod console;
pub mod error;
pub mod guest;
pub mod image;
pub mod init;
pub mod kernel;
pub mod measure;
pub mod modules;
pub mod net;
pub mod paths;
pub mod qemu;
pub mod runtime;

pub use config::{Accel, GuestConfig, GuestFile};
pub use error::{Result, VmError};
pub use guest::{Guest, JobOutput};
pub use kernel::Flavour;
