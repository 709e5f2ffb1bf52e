//! Guest kernels: the Debian `linux-image-cloud-amd64` (non-RT, "nrt") and `linux-image-rt-amd64`
//! (PREEMPT_RT, "rt") packages, unpacked with `dpkg-deb -x` into `<cache>/kernels/<flavour>/`
//! by scripts/setup.sh. This module finds the kernel image, its config and its modules there.

use crate::error::{Result, VmError};
use std::path::{Path, PathBuf};

/// Which guest kernel: Abeni 2023 compares non-RT and PREEMPT_RT guests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavour {
    /// Debian's PREEMPT_RT kernel (`linux-image-rt-amd64`).
    Rt,
    /// Debian's cloud kernel (`linux-image-cloud-amd64`, voluntary preemption).
    Nrt,
}

impl Flavour {
    /// Both flavours, non-RT first (the order of the Abeni 2023 table).
    pub const ALL: [Flavour; 2] = [Flavour::Nrt, Flavour::Rt];

    /// "rt" or "nrt" (directory names, CLI values).
    pub fn name(self) -> &'static str {
        match self {
            Flavour::Rt => "rt",
            Flavour::Nrt => "nrt",
        }
    }

    /// The Debian metapackage that provides this kernel.
    pub fn package(self) -> &'static str {
        match self {
            Flavour::Rt => "linux-image-rt-amd64",
            Flavour::Nrt => "linux-image-cloud-amd64",
        }
    }

    /// The shell commands that fetch and unpack the package into `cache`.
    pub fn fetch_commands(self, cache: &Path) -> String {
        let debs = cache.join("debs");
        let dest = cache.join("kernels").join(self.name());
        format!(
            "mkdir -p {debs} {dest} && cd {debs} && apt-get download \"$(apt-cache depends {pkg} | awk '/Depends: \
             linux-image-[0-9]/{{print $2; exit}}')\" && dpkg-deb -x \"$(ls -t \
             {debs}/linux-image-*-{deb_flavour}-amd64_*.deb | head -1)\" {dest}",
            debs = debs.display(),
            dest = dest.display(),
            pkg = self.package(),
            deb_flavour = if self == Flavour::Rt { "rt" } else { "cloud" },
        )
    }
}

impl std::fmt::Display for Flavour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An unpacked guest kernel package.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub flavour: Flavour,
    /// e.g. "6.1.0-56-rt-amd64"
    pub version: String,
    pub vmlinuz: PathBuf,
    pub config: PathBuf,
    /// `lib/modules/<version>/`
    pub modules_dir: PathBuf,
}

impl Kernel {
    /// Find the kernel of `flavour` under `<cache>/kernels/<flavour>/`.
    pub fn locate(cache: &Path, flavour: Flavour) -> Result<Kernel> {
        let root = cache.join("kernels").join(flavour.name());
        let missing = |why: String| VmError::KernelMissing {
            flavour: flavour.name().into(),
            dir: root.clone(),
            why,
            fetch: flavour.fetch_commands(cache),
        };
        let boot = root.join("boot");
        let entries = std::fs::read_dir(&boot).map_err(|e| missing(format!("cannot read {}: {e}", boot.display())))?;
        let mut versions: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("vmlinuz-")).map(str::to_owned))
            .collect();
        versions.sort();
        let version = versions.pop().ok_or_else(|| missing(format!("no vmlinuz-* in {}", boot.display())))?;
        let k = Kernel {
            flavour,
            vmlinuz: boot.join(format!("vmlinuz-{version}")),
            config: boot.join(format!("config-{version}")),
            modules_dir: root.join("lib").join("modules").join(&version),
            version,
        };
        for p in [&k.config, &k.modules_dir] {
            if !p.exists() {
                return Err(missing(format!("{} is missing (incomplete unpack?)", p.display())));
            }
        }
        Ok(k)
    }

    /// The kernel's preemption model from its config ("PREEMPT_RT", "PREEMPT", "voluntary", "none").
    pub fn preemption(&self) -> Result<String> {
        let text = std::fs::read_to_string(&self.config)
            .map_err(|e| VmError::io(format!("reading {}", self.config.display()), e))?;
        Ok(preemption_of_config(&text).to_string())
    }
}

/// The preemption model a kernel config selects.
pub fn preemption_of_config(config: &str) -> &'static str {
    let set = |opt: &str| config.lines().any(|l| l.trim() == format!("CONFIG_{opt}=y"));
    if set("PREEMPT_RT") {
        "PREEMPT_RT"
    } else if set("PREEMPT") {
        "PREEMPT"
    } else if set("PREEMPT_VOLUNTARY") {
        "voluntary"
    } else {
        "none"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_model_from_config() {
        assert_eq!(preemption_of_config("CONFIG_PREEMPT_RT=y\nCONFIG_HZ=250\n"), "PREEMPT_RT");
        assert_eq!(preemption_of_config("# CONFIG_PREEMPT_RT is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n"), "voluntary");
        assert_eq!(preemption_of_config("CONFIG_PREEMPT=y\n"), "PREEMPT");
        assert_eq!(preemption_of_config(""), "none");
    }

    #[test]
    fn missing_kernel_says_how_to_fetch_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = Kernel::locate(dir.path(), Flavour::Rt).unwrap_err().to_string();
        assert!(e.contains("guest kernel 'rt' not found"), "{e}");
        assert!(
            e.contains("apt-get download") && e.contains("linux-image-rt-amd64") && e.contains("dpkg-deb -x"),
            "{e}"
        );
    }
}
