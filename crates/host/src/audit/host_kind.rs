//! Checks that depend on what this host is: a VM or bare metal (the CPU's `hypervisor` flag, DMI,
//! /sys/hypervisor), its CPU vendor (KVM's pause-loop exiting is `kvm_intel.ple_gap` on Intel and
//! `kvm_amd.pause_filter_count` on AMD), and the settings tuned's realtime profiles make that the
//! other checks do not cover (watchdogs, vmstat interval, skew_tick, KubeVirt's realtime node
//! condition).

use super::{Check, Status};
use rtvirt_os::procfs::read_opt;
use rtvirt_os::sysinfo::cmdline_param;
use std::path::Path;

/// What /proc/cpuinfo, DMI and /sys/hypervisor say about the machine.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Machine {
    /// `vendor_id` of the first CPU ("GenuineIntel", "AuthenticAMD").
    pub vendor: String,
    /// The CPU's `hypervisor` flag: this kernel runs in a VM.
    pub hypervisor_flag: bool,
    /// DMI `sys_vendor` and `product_name` ("QEMU Standard PC ..."), when there is DMI.
    pub dmi: Option<String>,
    /// /sys/hypervisor/type ("xen"), when present.
    pub hypervisor_type: Option<String>,
}

impl Machine {
    /// The machine this runs on.
    pub fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let dmi = ["sys_vendor", "product_name"]
            .iter()
            .filter_map(|f| read_opt(format!("/sys/class/dmi/id/{f}")))
            .filter(|v| !v.trim().is_empty())
            .collect::<Vec<_>>();
        Machine {
            dmi: (!dmi.is_empty()).then(|| dmi.join(" ")),
            hypervisor_type: read_opt("/sys/hypervisor/type"),
            ..Machine::from_cpuinfo(&cpuinfo)
        }
    }

    /// Vendor and hypervisor flag from /proc/cpuinfo's text (its first CPU).
    pub fn from_cpuinfo(cpuinfo: &str) -> Machine {
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        let flags = field("flags").unwrap_or_default();
        Machine {
            vendor: field("vendor_id").unwrap_or_default(),
            hypervisor_flag: flags.split_whitespace().any(|f| f == "hypervisor"),
            ..Machine::default()
        }
    }

    /// Whether this kernel runs in a virtual machine, and what says so.
    pub fn virtual_machine(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.hypervisor_flag {
            why.push("the CPU's hypervisor flag".to_string());
        }
        let vm_dmi = ["QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Microsoft Corporation", "Amazon EC2", "Google"];
        if let Some(d) = self.dmi.as_ref().filter(|d| vm_dmi.iter().any(|v| d.contains(v))) {
            why.push(format!("DMI \"{d}\""));
        }
        if let Some(t) = &self.hypervisor_type {
            why.push(format!("/sys/hypervisor/type {t}"));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// `host_is_vm`: warn when this host is itself a VM (every figure measured here then includes the
/// outer hypervisor's scheduling, steal time and halt-polling).
pub fn host_is_vm(m: &Machine) -> Check {
    let source = "/proc/cpuinfo flags; /sys/class/dmi/id/{sys_vendor,product_name}; /sys/hypervisor/type";
    match m.virtual_machine() {
        Some(why) => Check::new("host_is_vm", Status::Warn, format!("virtual machine ({why})"), source),
        None => {
            Check::new("host_is_vm", Status::Pass, "bare metal (no hypervisor flag, DMI or hypervisor type)", source)
        }
    }
}

/// The KVM module parameter that turns pause-loop exiting off on this vendor, and its module.
pub fn ple_parameter(vendor: &str) -> Option<(&'static str, &'static str)> {
    match vendor {
        "GenuineIntel" => Some(("kvm_intel", "ple_gap")),
        "AuthenticAMD" | "HygonGenuine" => Some(("kvm_amd", "pause_filter_count")),
        _ => None,
    }
}

/// The KVM advice for this machine: the vendor's pause-loop setting, and what a VM host means.
pub fn kvm_fix(m: &Machine, modules: &[String]) -> String {
    let mut fix = String::from("For RT guests: kvm.kvmclock_periodic_sync=N; ");
    match ple_parameter(&m.vendor) {
        Some((module, param)) => {
            fix += &format!("{module}.{param}=0 (pause-loop exiting off on this {} CPU", m.vendor);
            if !modules.is_empty() && !modules.iter().any(|l| l == module) {
                fix += &format!("; {module} is not loaded here: {}", modules.join(", "));
            }
            fix += "); ";
        }
        None => fix += &format!("no pause-loop setting known for CPU vendor {:?}; ", m.vendor),
    }
    fix += "tune halt_poll_ns to the guest's wake-up pattern; keep lapic_timer_advance on.";
    let loaded = modules.join(", ");
    if m.virtual_machine().is_some() {
        fix += &format!(
            " This host is itself a VM (modules: {}): nested guests' latencies add the outer hypervisor's; its \
             settings are not visible here.",
            if loaded.is_empty() { "none" } else { &loaded }
        );
    }
    fix
}

/// The KVM vendor modules loaded (kvm_intel, kvm_amd, kvm_pvm, ...).
pub fn kvm_modules() -> Vec<String> {
    let entries = std::fs::read_dir("/sys/module").into_iter().flatten().flatten();
    let mut names: Vec<String> =
        entries.filter_map(|e| e.file_name().to_str().map(str::to_string)).filter(|n| n.starts_with("kvm_")).collect();
    names.sort();
    names
}

/// `watchdogs`: the NMI and soft-lockup watchdogs interrupt every CPU periodically.
pub fn watchdogs(cmdline: &str) -> Check {
    let (nmi, soft) = ("/proc/sys/kernel/nmi_watchdog", "/proc/sys/kernel/watchdog");
    let read = |p: &str| read_opt(p).unwrap_or_else(|| "absent".into());
    let (n, s) = (read(nmi), read(soft));
    let off_on_cmdline = ["nowatchdog", "nosoftlockup"].iter().any(|k| cmdline.split_whitespace().any(|w| w == *k));
    let on = |v: &str| v == "1";
    let status = if on(&n) || (on(&s) && !off_on_cmdline) { Status::Warn } else { Status::Pass };
    Check::new("watchdogs", status, format!("nmi_watchdog={n} watchdog={s}"), format!("{nmi}; {soft}; cmdline"))
}

/// `stat_interval`: vmstat's per-CPU work runs every vm.stat_interval seconds (default 1).
pub fn stat_interval() -> Check {
    let path = "/proc/sys/vm/stat_interval";
    match read_opt(path) {
        None => Check::new("stat_interval", Status::Skip, "none", format!("{path} absent")),
        Some(v) => {
            let ok = v.trim().parse::<u64>().is_ok_and(|s| s >= 10);
            Check::new("stat_interval", if ok { Status::Pass } else { Status::Warn }, v, path)
        }
    }
}

/// `skew_tick`: with skew_tick=1 the CPUs' ticks are offset, so they do not contend for jiffies.
pub fn skew_tick(cmdline: &str) -> Check {
    let v = cmdline_param(cmdline, "skew_tick");
    let ok = v.as_deref() == Some("1");
    Check::new(
        "skew_tick",
        if ok { Status::Pass } else { Status::Warn },
        v.unwrap_or_else(|| "none".into()),
        "/proc/cmdline",
    )
}

/// `kubevirt_realtime`: KubeVirt schedules realtime VMs only on nodes it labels
/// `kubevirt.io/realtime`, which it does when `kernel.sched_rt_runtime_us` is -1: then the
/// kernel's SCHED_DEADLINE admission control is off too.
pub fn kubevirt_realtime() -> Check {
    let path = "/proc/sys/kernel/sched_rt_runtime_us";
    match read_opt(path) {
        None => Check::new("kubevirt_realtime", Status::Skip, "none", format!("{path} absent")),
        Some(v) if v.trim() == "-1" => Check::new(
            "kubevirt_realtime",
            Status::Warn,
            "-1: a KubeVirt realtime node; SCHED_DEADLINE admission off",
            path,
        ),
        Some(v) => Check::new(
            "kubevirt_realtime",
            Status::Pass,
            format!("{v}: not a KubeVirt realtime node; SCHED_DEADLINE admission on"),
            path,
        ),
    }
}

/// `stalld`: the starvation daemon boosts starved threads (SCHED_DEADLINE) - a guard for FIFO
/// layouts, and a disturbance on the CPUs of reservations.
pub fn stalld() -> Check {
    let running = std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
        let comm = e.path().join("comm");
        Path::new(&comm).exists() && read_opt(&comm).is_some_and(|c| c == "stalld")
    });
    match running {
        true => Check::new("stalld", Status::Warn, "running", "/proc/*/comm"),
        false => Check::new("stalld", Status::Pass, "not running", "/proc/*/comm"),
    }
}

/// What a container's RT threads meet: the cgroup version and whether RT group scheduling
/// (`CONFIG_RT_GROUP_SCHED`, off at boot with `rt_group_sched=0` or its DEFAULT_DISABLED option)
/// gives each cgroup its own RT runtime, 0 by default for a new one.
pub struct ContainerRt {
    pub cgroup2: bool,
    /// `CONFIG_RT_GROUP_SCHED` (None: no /proc/config.gz).
    pub rt_group_sched: Option<String>,
    pub default_disabled: Option<String>,
    /// `rt_group_sched=` on the kernel command line.
    pub cmdline: Option<String>,
}

impl ContainerRt {
    fn read(cmdline: &str) -> ContainerRt {
        use rtvirt_os::sysinfo::kconfig;
        ContainerRt {
            cgroup2: Path::new("/sys/fs/cgroup/cgroup.controllers").exists(),
            rt_group_sched: kconfig("CONFIG_RT_GROUP_SCHED"),
            default_disabled: kconfig("CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED"),
            cmdline: cmdline_param(cmdline, "rt_group_sched"),
        }
    }

    /// Whether RT group scheduling is on (None: unknown).
    fn on(&self) -> Option<bool> {
        let built = self.rt_group_sched.as_deref()? == "y";
        let off_by_default = self.default_disabled.as_deref() == Some("y");
        Some(built && self.cmdline.as_deref().map_or(!off_by_default, |v| v == "1"))
    }

    fn check(&self) -> Check {
        let found = format!(
            "cgroup {}, CONFIG_RT_GROUP_SCHED={}{}",
            if self.cgroup2 { "v2" } else { "v1" },
            self.rt_group_sched.as_deref().unwrap_or("unknown"),
            self.cmdline.as_ref().map_or(String::new(), |v| format!(", rt_group_sched={v}"))
        );
        let source = "/sys/fs/cgroup; /proc/config.gz; /proc/cmdline";
        match self.on() {
            Some(false) => Check::new("container_rt", Status::Pass, found, source),
            Some(true) => Check::new("container_rt", Status::Warn, found, source),
            None => Check::new("container_rt", Status::Warn, found + " (no /proc/config.gz)", source),
        }
    }
}

/// `container_rt`: whether RT threads of containers can run without a cgroup RT runtime of their own.
pub fn container_rt(cmdline: &str) -> Check {
    ContainerRt::read(cmdline).check()
}

#[cfg(test)]
mod tests {
    use super::*;

    const AMD_VM: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu vme hypervisor lm\n";
    const INTEL_METAL: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme vmx lm\n";

    #[test]
    fn the_advice_names_the_vendors_own_setting() {
        let amd = Machine::from_cpuinfo(AMD_VM);
        let fix = kvm_fix(&amd, &["kvm_pvm".into()]);
        assert!(fix.contains("kvm_amd.pause_filter_count=0") && !fix.contains("kvm_intel"), "{fix}");
        assert!(fix.contains("kvm_amd is not loaded here: kvm_pvm"), "{fix}");
        assert!(fix.contains("itself a VM") && fix.contains("kvm_pvm"), "{fix}");
        let intel = Machine::from_cpuinfo(INTEL_METAL);
        let fix = kvm_fix(&intel, &["kvm_intel".into()]);
        assert!(fix.contains("kvm_intel.ple_gap=0") && !fix.contains("kvm_amd") && !fix.contains("VM"), "{fix}");
    }

    #[test]
    fn rt_group_scheduling_is_on_when_built_and_not_switched_off() {
        let c = |built: &str, disabled: &str, cmdline: Option<&str>| ContainerRt {
            cgroup2: true,
            rt_group_sched: Some(built.into()),
            default_disabled: Some(disabled.into()),
            cmdline: cmdline.map(String::from),
        };
        assert_eq!(c("y", "n", None).check().status, Status::Warn);
        assert_eq!(c("y", "y", None).check().status, Status::Pass);
        assert_eq!(c("y", "y", Some("1")).check().status, Status::Warn);
        assert_eq!(c("y", "n", Some("0")).check().status, Status::Pass);
        assert_eq!(c("n", "n", None).check().status, Status::Pass);
        let unknown = ContainerRt { rt_group_sched: None, ..c("n", "n", None) };
        assert!(unknown.check().found.contains("unknown"));
    }

    #[test]
    fn a_vm_is_told_by_its_flag_dmi_or_hypervisor_type() {
        assert!(Machine::from_cpuinfo(AMD_VM).virtual_machine().unwrap().contains("hypervisor flag"));
        assert_eq!(Machine::from_cpuinfo(INTEL_METAL).virtual_machine(), None);
        let dmi =
            Machine { dmi: Some("QEMU Standard PC (Q35 + ICH9, 2009)".into()), ..Machine::from_cpuinfo(INTEL_METAL) };
        assert!(dmi.virtual_machine().unwrap().contains("QEMU"));
        let xen = Machine { hypervisor_type: Some("xen".into()), ..Machine::from_cpuinfo(INTEL_METAL) };
        assert!(xen.virtual_machine().unwrap().contains("xen"));
        let metal = Machine { dmi: Some("Dell Inc. PowerEdge R750".into()), ..Machine::from_cpuinfo(INTEL_METAL) };
        assert_eq!(host_is_vm(&metal).status, Status::Pass);
    }
}
