//! This host, live: what the planner needs to know about the host it runs on.

use rtvirt_model::hostmodel::{HostCpus, IrqPlacement};
use rtvirt_os::sysinfo;

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
