//! Facts about the running host that audit, lint and apply share: CPUs online and isolated, kernel
//! version, RT throttling, IRQs with their actions and affinities, the boot command line.

use crate::cpulist::CpuList;
use crate::procfs::read_opt;
use std::collections::BTreeMap;
use std::path::Path;

pub const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Online CPUs (/sys/devices/system/cpu/online).
pub fn online_cpus() -> CpuList {
    cpu_list_file("online")
}

/// CPUs isolated from the scheduler domains (isolcpus=), /sys/devices/system/cpu/isolated.
pub fn isolated_cpus() -> CpuList {
    cpu_list_file("isolated")
}

/// CPUs whose tick stops while one task runs (nohz_full=), /sys/devices/system/cpu/nohz_full
/// (empty when the kernel has no such file or none is set).
pub fn nohz_full_cpus() -> CpuList {
    cpu_list_file("nohz_full")
}

fn cpu_list_file(name: &str) -> CpuList {
    read_opt(Path::new(CPU_DIR).join(name)).and_then(|s| CpuList::parse(&s).ok()).unwrap_or_default()
}

/// Whether this host is itself a virtual machine (the CPU's `hypervisor` flag in /proc/cpuinfo).
pub fn is_virtual_machine() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
        info.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

/// The kernel release, e.g. "6.18.44-fc-v669".
pub fn kernel_release() -> String {
    read_opt("/proc/sys/kernel/osrelease").unwrap_or_default()
}

/// This boot's id (/proc/sys/kernel/random/boot_id), new at every boot.
pub fn boot_id() -> String {
    read_opt("/proc/sys/kernel/random/boot_id").unwrap_or_default()
}

/// The CPU's model as /proc/cpuinfo names it ("model name", else "Hardware" or "cpu model"), or
/// "" when it does not.
pub fn cpu_model() -> String {
    let info = read_opt("/proc/cpuinfo").unwrap_or_default();
    ["model name", "Hardware", "cpu model"]
        .iter()
        .find_map(|key| {
            info.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key).then(|| v.trim().to_string())
            })
        })
        .unwrap_or_default()
}

/// (major, minor) of the running kernel.
pub fn kernel_version() -> (u32, u32) {
    parse_version(&kernel_release())
}

fn parse_version(release: &str) -> (u32, u32) {
    let mut it = release.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Linux 6.12 replaced RT throttling by a per-CPU deadline "fair server" for SCHED_OTHER tasks.
pub fn has_fair_server() -> bool {
    kernel_version() >= (6, 12)
}

pub const DEBUGFS: &str = "/sys/kernel/debug";

/// Read files under /sys/kernel/debug (paths relative to it). When debugfs is not mounted, it is
/// mounted in a private mount namespace of a child process (`unshare --mount`, util-linux), which
/// disappears with the child: the host's mounts are not changed. Returns how it was read.
pub fn debugfs_read(rel: &[String]) -> Result<(Vec<String>, &'static str), String> {
    debugfs_read_any(rel).map_err(|err| {
        let lockdown = if err.contains("Operation not permitted") {
            "; kernel lockdown restricts debugfs (see kernel_lockdown(7))"
        } else {
            ""
        };
        format!("{err}{lockdown}")
    })
}

fn debugfs_read_any(rel: &[String]) -> Result<(Vec<String>, &'static str), String> {
    if Path::new(DEBUGFS).join("sched").is_dir() {
        let v: Result<Vec<String>, String> = rel
            .iter()
            .map(|r| {
                std::fs::read_to_string(Path::new(DEBUGFS).join(r))
                    .map(|s| s.trim().to_string())
                    .map_err(|e| format!("{DEBUGFS}/{r}: {e}"))
            })
            .collect();
        return v.map(|v| (v, "mounted debugfs"));
    }
    let cats: Vec<String> = rel.iter().map(|r| format!("cat {DEBUGFS}/{r} && echo @@END@@")).collect();
    let script = format!("mount -t debugfs none {DEBUGFS} && {}", cats.join(" && "));
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if !out.status.success() {
        return Err(format!("private debugfs mount: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok((
        text.split("@@END@@").map(|s| s.trim().to_string()).take(rel.len()).collect(),
        "debugfs mounted in a private mount namespace",
    ))
}

/// One CPU's fair server (Linux >= 6.12): the deadline server that runs SCHED_OTHER tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FairServer {
    pub runtime_ns: u64,
    pub period_ns: u64,
}

impl FairServer {
    /// The kernel's default: 50 ms every 1 s.
    pub const DEFAULT: FairServer = FairServer { runtime_ns: 50_000_000, period_ns: 1_000_000_000 };
}

impl std::fmt::Display for FairServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} ns", self.runtime_ns, self.period_ns)
    }
}

/// The debugfs files (relative to [`DEBUGFS`]) of these CPUs' fair servers: runtime, period for
/// each CPU in turn.
pub fn fair_server_files(cpus: &[u32]) -> Vec<String> {
    cpus.iter()
        .flat_map(|c| [format!("sched/fair_server/cpu{c}/runtime"), format!("sched/fair_server/cpu{c}/period")])
        .collect()
}

/// The fair servers of this host, as far as they can be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FairServers {
    /// Linux < 6.12: there is none.
    #[default]
    Absent,
    /// Per CPU, read from debugfs `sched/fair_server/cpuN/{runtime,period}`.
    Read(BTreeMap<u32, FairServer>),
    /// The kernel has them but their settings cannot be read (why): assumed at the default.
    Unreadable(String),
}

impl FairServers {
    /// Read the fair servers of the online CPUs (debugfs, privately mounted if need be).
    pub fn of_this_host() -> FairServers {
        if !has_fair_server() {
            return FairServers::Absent;
        }
        let cpus: Vec<u32> = online_cpus().iter().collect();
        match debugfs_read(&fair_server_files(&cpus)) {
            Ok((v, _)) => FairServers::parse(&cpus, &v),
            Err(e) => FairServers::Unreadable(e),
        }
    }

    /// From the values of runtime, period for each CPU in turn.
    pub fn parse(cpus: &[u32], values: &[String]) -> FairServers {
        let mut map = BTreeMap::new();
        for (c, rp) in cpus.iter().zip(values.chunks(2)) {
            match (rp[0].parse(), rp.get(1).and_then(|p| p.parse().ok())) {
                (Ok(runtime_ns), Some(period_ns)) => map.insert(*c, FairServer { runtime_ns, period_ns }),
                _ => return FairServers::Unreadable(format!("cpu{c}: runtime/period {rp:?} are not numbers")),
            };
        }
        FairServers::Read(map)
    }

    /// The fair server that is active (runtime > 0) on `cpu`; an unreadable one is assumed active
    /// at the default 50 ms / 1 s.
    pub fn active_on(&self, cpu: u32) -> Option<FairServer> {
        match self {
            FairServers::Absent => None,
            FairServers::Read(m) => m.get(&cpu).copied().filter(|f| f.runtime_ns > 0),
            FairServers::Unreadable(_) => Some(FairServer::DEFAULT),
        }
    }

    /// Where the values come from, for messages.
    pub fn source(&self) -> String {
        match self {
            FairServers::Absent => "Linux < 6.12: no fair server".into(),
            FairServers::Read(_) => format!("{DEBUGFS}/sched/fair_server/cpuN/runtime"),
            FairServers::Unreadable(why) => {
                format!("fair server settings unreadable ({why}), assumed at the default 50 ms/1 s")
            }
        }
    }
}

/// kernel.sched_rt_runtime_us (-1: no RT throttling and no SCHED_DEADLINE admission control).
pub fn rt_runtime_us() -> Option<i64> {
    read_opt("/proc/sys/kernel/sched_rt_runtime_us")?.parse().ok()
}

/// kernel.sched_rt_period_us.
pub fn rt_period_us() -> Option<i64> {
    read_opt("/proc/sys/kernel/sched_rt_period_us")?.parse().ok()
}

/// kernel.sched_deadline_period_min_us: the shortest SCHED_DEADLINE period the kernel accepts.
pub fn deadline_period_min_us() -> Option<u64> {
    read_opt("/proc/sys/kernel/sched_deadline_period_min_us")?.parse().ok()
}

/// kernel.sched_deadline_period_max_us: the longest.
pub fn deadline_period_max_us() -> Option<u64> {
    read_opt("/proc/sys/kernel/sched_deadline_period_max_us")?.parse().ok()
}

/// The per-CPU deadline bandwidth the kernel admits (rt_runtime/rt_period), None when admission
/// control is disabled.
pub fn dl_bandwidth_cap() -> Option<f64> {
    match (rt_runtime_us()?, rt_period_us()?) {
        (r, p) if r >= 0 && p > 0 => Some(r as f64 / p as f64),
        _ => None,
    }
}

/// The boot command line.
pub fn cmdline() -> String {
    read_opt("/proc/cmdline").unwrap_or_default()
}

/// The value of `key=` on the boot command line (last occurrence wins, as in the kernel), or
/// Some("") for a bare flag.
pub fn cmdline_param(cmdline: &str, key: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .filter_map(|w| {
            if w == key {
                Some(String::new())
            } else {
                w.strip_prefix(key)?.strip_prefix('=').map(str::to_string)
            }
        })
        .next_back()
}

/// One hardware interrupt with its handlers and CPU affinity.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Irq {
    pub number: u32,
    /// Handler names (/sys/kernel/irq/N/actions), e.g. "virtio1-req.0", "eth0-rx-0".
    pub actions: Vec<String>,
    pub affinity: CpuList,
    pub effective: CpuList,
}

impl Irq {
    /// Does one of this IRQ's handlers belong to `device` ("eth1" matches "eth1", "eth1-rx-0", "eth1:..")?
    pub fn serves(&self, device: &str) -> bool {
        self.actions
            .iter()
            .any(|a| a == device || a.strip_prefix(device).is_some_and(|r| r.starts_with(['-', '.', ':', '@'])))
    }
}

/// Every IRQ with a /proc/irq/N directory and at least one handler.
pub fn irqs() -> Vec<Irq> {
    let mut v: Vec<Irq> = std::fs::read_dir("/proc/irq")
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()).filter_map(irq).collect())
        .unwrap_or_default();
    v.sort_by_key(|i| i.number);
    v
}

/// One IRQ by number (None if it has no handler).
pub fn irq(number: u32) -> Option<Irq> {
    let actions: Vec<String> = read_opt(format!("/sys/kernel/irq/{number}/actions"))?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if actions.is_empty() {
        return None;
    }
    let list =
        |f: &str| read_opt(format!("/proc/irq/{number}/{f}")).and_then(|s| CpuList::parse(&s).ok()).unwrap_or_default();
    Some(Irq { number, actions, affinity: list("smp_affinity_list"), effective: list("effective_affinity_list") })
}

/// A `CONFIG_*` value from /proc/config.gz (None if the kernel does not expose its config).
pub fn kconfig(name: &str) -> Option<String> {
    use std::io::Read;
    let gz = std::fs::read("/proc/config.gz").ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text).ok()?;
    let prefix = format!("{name}=");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .or_else(|| text.lines().any(|l| l == format!("# {name} is not set")).then(|| "n".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions_and_cmdline() {
        assert_eq!(parse_version("6.18.44-fc-v669"), (6, 18));
        assert_eq!(parse_version("5.10.0-rt"), (5, 10));
        let c = "quiet isolcpus=1-3 rcu_nocb_poll isolcpus=2";
        assert_eq!(cmdline_param(c, "isolcpus").as_deref(), Some("2"));
        assert_eq!(cmdline_param(c, "rcu_nocb_poll").as_deref(), Some(""));
        assert_eq!(cmdline_param(c, "nohz_full"), None);
    }

    #[test]
    fn fair_servers_from_debugfs_values() {
        let v: Vec<String> = ["50000000", "1000000000", "0", "1000000000"].map(String::from).to_vec();
        let f = FairServers::parse(&[0, 1], &v);
        assert_eq!(f.active_on(0), Some(FairServer::DEFAULT));
        assert_eq!(f.active_on(1), None, "runtime 0: the fair server is off on CPU 1");
        assert_eq!(f.active_on(2), None);
        assert!(matches!(FairServers::parse(&[0], &["x".into(), "1".into()]), FairServers::Unreadable(_)));
        assert_eq!(FairServers::Unreadable("no debugfs".into()).active_on(5), Some(FairServer::DEFAULT));
        assert_eq!(FairServers::Absent.active_on(0), None);
    }

    #[test]
    fn irq_device_matching() {
        let i = Irq {
            number: 1,
            actions: vec!["eth1-rx-0".into()],
            affinity: CpuList::default(),
            effective: CpuList::default(),
        };
        assert!(i.serves("eth1"));
        assert!(!i.serves("eth"));
        assert!(!i.serves("eth10"));
    }

    #[test]
    fn reads_this_hosts_cpus_and_irqs() {
        assert!(!online_cpus().is_empty());
        // the kernel's defaults, not changed on this host
        assert_eq!((deadline_period_min_us(), deadline_period_max_us()), (Some(100), Some(4_194_304)));
        assert_eq!(boot_id().len(), 36, "{}", boot_id());
        assert!(!cpu_model().is_empty());
        for i in irqs() {
            assert!(!i.actions.is_empty());
        }
    }
}
