//! rtvirt-vm: boot minimal QEMU guests (Debian kernel + busybox initramfs) and run rtvirt
//! measurements inside them (SEEDS.md section 4 methodology).

pub mod error;
pub mod image;
pub mod init;
pub mod kernel;
pub mod modules;
pub mod paths;

pub use error::{Result, VmError};
pub use kernel::Flavour;
pub mod console;
pub mod guest;
pub mod net;
pub mod qmp;
pub mod runtime;
pub mod signals;

pub use guest::{Accel, Guest, GuestConfig, JobOutput};
