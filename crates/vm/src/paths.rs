//! Where rtvirt-vm keeps things on the host.
//!
//! - cache (kernel packages, built images, accelerator probe): `$RTVIRT_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/rtvirt`, else `$HOME/.cache/rtvirt` (scripts/setup.sh uses the same rule):
//!   `debs/*.deb`, `kernels/<flavour>/` (the unpacked package: `boot/vmlinuz-*`, `boot/config-*`,
//!   `lib/modules/<version>/`), `images/<flavour>/{initramfs.cpio,key}`, `accel.json`.
//! - runtime (one directory per running guest, read by `rtvirt host threads --vm NAME`):
//!   `$RTVIRT_RUN_DIR`, else `/run/rtvirt`: `vm/<name>/{owner,guest.json,qmp.sock,qemu.pid,console.log,
//!   output.log}`; see [`crate::runtime`].

use std::path::PathBuf;

/// The cache directory (not created).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RTVIRT_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("rtvirt");
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty()).unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache").join("rtvirt")
}

/// The runtime directory holding one sub-directory per running guest (not created).
pub fn run_dir() -> PathBuf {
    match std::env::var_os("RTVIRT_RUN_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from("/run/rtvirt"),
    }
}

/// The runtime directory of the guest called `name`.
pub fn guest_run_dir(name: &str) -> PathBuf {
    run_dir().join("vm").join(name)
}
