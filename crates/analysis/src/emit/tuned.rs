//! `--emit tuned`: a tuned profile (`tuned.conf`, in a profile directory such as
//! /etc/tuned/rtvirt/) that includes tuned's realtime-virtual-host profile and isolates exactly
//! the cores the plan puts guests' vCPUs on.
//!
//! realtime-virtual-host reads `isolated_cores` from /etc/tuned/realtime-virtual-host-variables.conf;
//! a child profile's `[variables]` override it, and its `[sysctl]` override the included
//! profiles' options. The profile sets `kernel.sched_rt_runtime_us` back to 950000: tuned's
//! realtime profile sets -1, which also switches off SCHED_DEADLINE admission control that the
//! plan's reservations rely on (`rtvirt host lint`: `dl_admission_disabled`). Every value is
//! rtvirt's (core numbers, constants); the guest names are not written.

use super::words::{housekeeping, used_cores};
use rtvirt_model::plan::Plan;
use std::fmt::Write;

/// The kernel's stock RT/deadline admission limit per second (us), kept by the profile.
pub const SCHED_RT_RUNTIME_US: u32 = 950_000;

/// `tuned.conf` of the profile.
pub fn profile(plan: &Plan) -> String {
    let cores: Vec<String> = used_cores(plan).iter().map(u32::to_string).collect();
    let cores = cores.join(",");
    let mut s = String::new();
    let _ = writeln!(s, "# rtvirt plan --emit tuned: the host of this plan, tuned for real-time guests.");
    let _ = writeln!(
        s,
        "# Install: mkdir -p /etc/tuned/rtvirt && cp tuned.conf /etc/tuned/rtvirt/ && tuned-adm profile rtvirt"
    );
    let _ =
        writeln!(s, "# (realtime-virtual-host comes with tuned-profiles-nfv-host or tuned-profiles-realtime), then");
    let _ = writeln!(s, "# reboot: isolcpus, nohz_full and rcu_nocbs are kernel command-line settings.");
    match housekeeping(plan) {
        Some(free) => {
            let _ = writeln!(s, "# Cores left to the host (housekeeping, emulator and I/O threads): {free}.");
        }
        None => {
            let _ = writeln!(s, "# WARNING: the plan uses every core; keep one for the host (plan with --cores N-1).");
        }
    }
    let _ = writeln!(s, "\n[main]");
    let _ = writeln!(s, "summary=rtvirt plan: real-time KVM host, the guests' vCPU cores {cores} isolated");
    let _ = writeln!(s, "include=realtime-virtual-host");
    let _ = writeln!(s, "\n[variables]");
    let _ = writeln!(s, "# The cores the plan puts the guests' vCPUs on. realtime-virtual-host isolates them:");
    let _ = writeln!(s, "# isolcpus (realtime), nohz_full and rcu_nocbs (realtime-virtual-host), IRQs and kernel");
    let _ = writeln!(s, "# threads moved off them, irqbalance banned from them.");
    let _ = writeln!(s, "isolated_cores={cores}");
    let _ = writeln!(s, "# Y: isolcpus=managed_irq,... also keeps managed IRQs off those cores (realtime's variable).");
    let _ = writeln!(s, "isolate_managed_irq=Y");
    let _ = writeln!(s, "\n[sysctl]");
    let _ = writeln!(s, "# realtime sets -1, which also disables SCHED_DEADLINE admission control; the plan's");
    let _ = writeln!(s, "# reservations are admitted against the stock limit (0.95 per core, less the fair server).");
    let _ = writeln!(s, "kernel.sched_rt_runtime_us={SCHED_RT_RUNTIME_US}");
    s
}
