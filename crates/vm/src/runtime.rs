//! The runtime record of a running guest, for other rtvirt commands (`rtvirt host threads --vm
//! NAME`, `rtvirt host apply`) and for people:
//!
//! ```text
//! $RTVIRT_RUN_DIR (default /run/rtvirt)/vm/<name>/
//!     guest.json    GuestRecord: QEMU pid, QMP socket, accelerator, vCPU thread ids, network
//!     qmp.sock      QMP socket of QEMU (`query-cpus-fast` lists vCPU thread ids)
//!     qemu.pid      QEMU's pid (written by QEMU)
//!     console.log   the guest's first serial port (kernel + init)
//!     output.log    the guest's second serial port (job output between markers)
//!     qemu.stderr   QEMU's own messages
//!     agent.sock    the guest agent's virtio-serial port (guests started with an agent)
//! ```
//! The directory exists exactly while the guest runs: it is removed at teardown, and a stale one
//! (its QEMU pid gone) is replaced when a guest of the same name starts.
//! A directory is claimed atomically: made under a private name with an `owner` file, then
//! renamed into place; the name of a live owner is refused.

use crate::paths;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `guest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestRecord {
    pub name: String,
    /// QEMU's pid.
    pub pid: u32,
    pub qmp_socket: PathBuf,
    /// "kvm" or "tcg".
    pub accel: String,
    pub vcpus: u32,
    pub memory_mib: u32,
    /// "rt" or "nrt".
    pub kernel: String,
    pub kernel_version: String,
    /// Host thread ids of vCPU 0, 1, ... (empty until QMP answered).
    #[serde(default)]
    pub vcpu_threads: Vec<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_ip: Option<String>,
    /// The rtvirt process that owns the guest.
    pub owner_pid: u32,
}

impl GuestRecord {
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join("guest.json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self).expect("serializable"))?;
        std::fs::rename(tmp, dir.join("guest.json"))
    }

    pub fn read(dir: &Path) -> Option<GuestRecord> {
        serde_json::from_str(&std::fs::read_to_string(dir.join("guest.json")).ok()?).ok()
    }

    /// Whether the QEMU process of this record still exists.
    pub fn alive(&self) -> bool {
        process_alive(self.pid)
    }
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// The running guest called `name`, if any.
pub fn find(name: &str) -> Option<GuestRecord> {
    GuestRecord::read(&paths::guest_run_dir(name)).filter(GuestRecord::alive)
}

/// Every running guest.
pub fn list() -> Vec<GuestRecord> {
    let Ok(entries) = std::fs::read_dir(paths::run_dir().join("vm")) else { return Vec::new() };
    let mut out: Vec<GuestRecord> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| GuestRecord::read(&e.path()))
        .filter(GuestRecord::alive)
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Guest names become directory, QEMU and interface-name parts: keep them tame.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!("invalid guest name {name:?}: use 1-32 characters from A-Z a-z 0-9 - _"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("rt-guest_1").is_ok());
        for bad in ["", "a/b", "a,b", "-x", &"x".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn liveness_of_processes() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(u32::MAX - 1));
    }
}
