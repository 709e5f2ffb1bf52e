//! What this host is now, read without measuring (no root needed): the key a calibration of it
//! holds for (kernel, boot, CPU model) and its CPUs and device interrupts. Shared by the
//! calibration, which records them, and [`crate::this_host`], which plans with them.

use rtvirt_model::hostmodel::{HostCpus, HostModel, IrqPlacement};
use rtvirt_os::sysinfo;

/// What a calibration holds for: this kernel, this boot, this CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    pub kernel: String,
    pub boot_id: String,
    pub cpu_model: String,
}

impl CacheKey {
    pub fn now() -> CacheKey {
        CacheKey { kernel: sysinfo::kernel_release(), boot_id: sysinfo::boot_id(), cpu_model: sysinfo::cpu_model() }
    }

    /// `<kernel>_<boot id>_<CPU model>.json`, every character but `[A-Za-z0-9.-]` as `_`.
    pub fn file_name(&self) -> String {
        let clean = |s: &str, n: usize| -> String {
            s.chars().take(n).map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
        };
        format!("{}_{}_{}.json", clean(&self.kernel, 64), clean(&self.boot_id, 40), clean(&self.cpu_model, 64))
    }

    /// The key a model's `environment` records (`rtvirt host calibrate` writes it), if complete.
    pub fn of(model: &HostModel) -> Option<CacheKey> {
        let get = |k: &str| model.environment.get(k)?.as_str().map(str::to_string);
        Some(CacheKey { kernel: get("kernel")?, boot_id: get("boot_id")?, cpu_model: get("cpu_model")? })
    }
}

/// The host's CPUs as read now (no root needed): online, `nohz_full`, and each device interrupt
/// (an IRQ with a handler) with the CPUs that take it and those it may go to.
pub fn live_cpus() -> HostCpus {
    HostCpus {
        online: sysinfo::online_cpus().iter().collect(),
        nohz_full: sysinfo::nohz_full_cpus().iter().collect(),
        irqs: sysinfo::irqs()
            .into_iter()
            .map(|i| IrqPlacement {
                irq: i.number,
                name: i.actions.join(","),
                cpus: i.effective.iter().collect(),
                allowed: i.affinity.iter().collect(),
            })
            .collect(),
    }
}
