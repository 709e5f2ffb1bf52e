//! How to run a guest: [`GuestConfig`] (vCPUs, memory, accelerator, timeouts, pinning) and the
//! [`GuestFile`]s handed to its job.

use crate::error::{Result, VmError};
use crate::init;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the guest's CPU is emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Hardware virtualization: timings mean something.
    Kvm,
    /// Binary translation: works everywhere, timings are NOT representative of real hardware.
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// How to run a guest.
#[derive(Debug, Clone)]
pub struct GuestConfig {
    pub name: String,
    pub vcpus: u32,
    pub memory_mib: u32,
    pub accel: Accel,
    /// From QEMU start until the job starts (kernel boot + init).
    pub boot_timeout: Duration,
    /// From the job's start until its end marker.
    pub job_timeout: Duration,
    /// Give the guest a virtio-net NIC on a fresh host bridge.
    pub network: bool,
    /// Pin vCPU i to host CPU `pin[i]` (sched_setaffinity on the vCPU threads).
    pub pin: Vec<usize>,
    pub qemu: PathBuf,
    /// Called with a line of progress when the guest starts its job ("booted in 4.2s").
    pub progress: Option<fn(&str)>,
    /// Input files of the job (scenario, plan): the guest finds them in `files/<name>`.
    pub files: Vec<GuestFile>,
    /// A third serial port (`/dev/ttyS2` in the guest) on the Unix socket `clock.sock` of the
    /// guest's runtime directory, for the guest to ask the host's time ([`crate::clock`]).
    pub clock_line: bool,
    /// A virtio-serial port `org.rtvirt.agent` on the Unix socket `agent.sock` of the guest's
    /// runtime directory, and `rtvirt guest-agent` started in the guest before the job
    /// ([`crate::agent`]).
    pub agent: bool,
    /// A file the job writes (its path in the guest, without quotes or newlines): after the job
    /// it comes back on the job's output behind the results (`measure::Measured::file`).
    pub bring_back: Option<String>,
}

/// A file handed to the guest's job (as a QEMU fw_cfg entry, see [`crate::init`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestFile {
    /// Path in the guest's `files/` directory: `/`-separated components of letters, digits, `.`,
    /// `-`, `_` (none starting with `.`), at most [`GuestFile::MAX_NAME`] bytes (fw_cfg names
    /// are limited to 55 bytes with their prefix).
    pub name: String,
    pub data: Vec<u8>,
}

impl GuestFile {
    pub const MAX_NAME: usize = 44;
    /// Bound on all files of one guest together.
    pub const MAX_TOTAL: usize = 4 << 20;

    /// The job's path of this file (relative to its working directory).
    pub fn guest_path(&self) -> String {
        format!("{}/{}", init::FILES_DIR, self.name)
    }

    /// Where the files of a guest are written on the host, for QEMU to hand them in: `files/` of
    /// the guest's runtime directory `dir`.
    pub(crate) fn host_dir(dir: &Path) -> PathBuf {
        dir.join("files")
    }

    pub(crate) fn check(files: &[GuestFile]) -> Result<()> {
        for f in files {
            let component_ok = |c: &str| {
                !c.is_empty()
                    && !c.starts_with('.')
                    && c.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            };
            if f.name.len() > Self::MAX_NAME || !f.name.split('/').all(component_ok) {
                return Err(VmError::Invalid(format!(
                    "guest file name {:?}: expected at most {} bytes of letters, digits, '.', '-', '_' in \
                     '/'-separated parts",
                    f.name,
                    Self::MAX_NAME
                )));
            }
            if files.iter().filter(|other| other.name == f.name).count() > 1 {
                return Err(VmError::Invalid(format!("guest file name {:?} given twice", f.name)));
            }
        }
        let total: usize = files.iter().map(|f| f.data.len()).sum();
        if total > Self::MAX_TOTAL {
            return Err(VmError::Invalid(format!(
                "guest files too large ({total} bytes, limit {} bytes)",
                Self::MAX_TOTAL
            )));
        }
        Ok(())
    }
}

impl GuestConfig {
    /// Defaults: 1 vCPU, 512 MiB, 60 s to boot, `job_timeout` for the job, no network.
    pub fn new(name: &str, accel: Accel, job_timeout: Duration) -> GuestConfig {
        GuestConfig {
            name: name.into(),
            vcpus: 1,
            memory_mib: 512,
            accel,
            boot_timeout: Duration::from_secs(60),
            job_timeout,
            network: false,
            pin: Vec::new(),
            qemu: PathBuf::from("qemu-system-x86_64"),
            progress: None,
            files: Vec::new(),
            clock_line: false,
            agent: false,
            bring_back: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, len: usize) -> GuestFile {
        GuestFile { name: name.into(), data: vec![b'x'; len] }
    }

    #[test]
    fn guest_file_names_and_sizes_are_checked() {
        assert!(GuestFile::check(&[file("plan.json", 10), file("scenario.toml", 10)]).is_ok());
        assert_eq!(file("plan.json", 1).guest_path(), "files/plan.json");
        assert!(GuestFile::check(&[file("data/frames.csv", 10)]).is_ok());
        for bad in ["", "../x", "a//b", "/a", "a b", ".hidden", "a/.b", &"n".repeat(45)] {
            let e = GuestFile::check(&[file(bad, 1)]).unwrap_err().to_string();
            assert!(e.contains("guest file name"), "{bad}: {e}");
        }
        assert!(GuestFile::check(&[file("a", 1), file("a", 1)]).unwrap_err().to_string().contains("twice"));
        assert!(GuestFile::check(&[file("big", GuestFile::MAX_TOTAL + 1)])
            .unwrap_err()
            .to_string()
            .contains("too large"));
    }
}
