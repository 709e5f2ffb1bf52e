//! Host side of the guest network: a Linux bridge `rtvbr<pid>` with the host address, and the
//! guest's tap `rtvtap<pid>` attached to it (QEMU creates the tap itself, non-persistent, so it
//! disappears with QEMU). The bridge is removed by its guard's `Drop`; bridges of rtvirt
//! processes that died without cleaning up are swept before a new one is made. Uses `ip`
//! (iproute2). Addresses: 10.213.N.1 (host) / 10.213.N.2 (guest), N the first /24 not in use.

use crate::error::{Result, VmError};
use std::process::Command;

/// Prefix of the bridges this module creates (followed by the owner's pid).
pub const BRIDGE_PREFIX: &str = "rtvbr";
/// Prefix of guest taps (followed by the owner's pid).
pub const TAP_PREFIX: &str = "rtvtap";

/// A bridge with an address on the host, removed on drop.
#[derive(Debug)]
pub struct Bridge {
    pub name: String,
    pub host_ip: String,
    pub guest_ip: String,
    pub prefix_len: u8,
}

/// Run `ip` with `args`.
fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip").args(args).output().map_err(|e| VmError::ToolMissing {
        tool: "ip".into(),
        package: "iproute2".into(),
        why: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(VmError::Net(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Names of network interfaces on the host.
fn interfaces() -> Vec<String> {
    std::fs::read_dir("/sys/class/net")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default()
}

/// Delete bridges left by rtvirt processes that no longer exist.
pub fn sweep_stale() {
    for name in interfaces() {
        let Some(pid) = name.strip_prefix(BRIDGE_PREFIX).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !crate::runtime::process_alive(pid) {
            let _ = ip(&["link", "del", &name]);
        }
    }
}

/// The first 10.213.N.0/24 that no host address uses.
fn free_subnet() -> Result<u8> {
    let addrs = ip(&["-4", "-o", "addr", "show"])?;
    (1..=254u8)
        .find(|n| !addrs.contains(&format!("10.213.{n}.")))
        .ok_or_else(|| VmError::Net("no free 10.213.N.0/24 subnet".into()))
}

/// An exclusive lock, across processes, on choosing a subnet (held until dropped).
fn subnet_lock() -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let dir = crate::paths::run_dir().join("vm");
    let io = |e| VmError::Net(format!("cannot lock {}/subnet.lock: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(io)?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("subnet.lock"))
        .map_err(io)?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    Ok(f)
}

impl Bridge {
    /// Create `rtvbr<pid>` (deleting a stale one of ours first) with the host address, up.
    pub fn create() -> Result<Bridge> {
        sweep_stale();
        let name = format!("{BRIDGE_PREFIX}{}", std::process::id());
        let _ = ip(&["link", "del", &name]);
        // two guests started at once must not both find the same subnet free
        let _choosing = subnet_lock()?;
        let n = free_subnet()?;
        let bridge =
            Bridge { name, host_ip: format!("10.213.{n}.1"), guest_ip: format!("10.213.{n}.2"), prefix_len: 24 };
        ip(&["link", "add", &bridge.name, "type", "bridge"])?;
        // From here on, Drop removes the bridge.
        ip(&["addr", "add", &format!("{}/{}", bridge.host_ip, bridge.prefix_len), "dev", &bridge.name])?;
        ip(&["link", "set", &bridge.name, "up"])?;
        Ok(bridge)
    }

    /// Attach a tap (created by QEMU) to the bridge and bring it up.
    pub fn attach(&self, tap: &str) -> Result<()> {
        ip(&["link", "set", tap, "master", &self.name])?;
        ip(&["link", "set", tap, "up"])?;
        Ok(())
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.name]);
    }
}

/// Whether the interface exists.
pub fn exists(name: &str) -> bool {
    std::path::Path::new("/sys/class/net").join(name).exists()
}

/// The tap name of the guest owned by this process.
pub fn tap_name() -> String {
    format!("{TAP_PREFIX}{}", std::process::id())
}

/// Whether vhost-net can be used (the device node exists).
pub fn vhost_available() -> bool {
    std::path::Path::new("/dev/vhost-net").exists()
}

/// Interfaces whose names start with rtvirt's prefixes (for leak checks).
pub fn leftover_interfaces() -> Vec<String> {
    interfaces().into_iter().filter(|n| n.starts_with(BRIDGE_PREFIX) || n.starts_with(TAP_PREFIX)).collect()
}
