//! The audit checks: each reads the real files of this host and judges the value.

use super::{host_kind, Check, Status};
use crate::threads;
use rtvirt_os::cpulist::CpuList;
use rtvirt_os::procfs::{self, read_opt};
use rtvirt_os::sysinfo::{self, cmdline_param, debugfs_read, CPU_DIR, DEBUGFS};
use std::path::Path;

pub fn all() -> Vec<Check> {
    let cmdline = sysinfo::cmdline();
    let isolated = sysinfo::isolated_cpus();
    let machine = host_kind::Machine::read();
    vec![
        host_kind::host_is_vm(&machine),
        preemption(&cmdline),
        rt_throttling(),
        fair_server(&isolated),
        isolcpus(&cmdline, &isolated),
        nohz_full(&isolated),
        rcu_nocbs(&cmdline),
        rcu_nocb_poll(&cmdline),
        irqaffinity(&cmdline, &isolated),
        governor(),
        cpuidle(&cmdline),
        thp(),
        hugepages(),
        ksm(),
        irqbalance(),
        irq_affinity_isolated(&isolated),
        threaded_napi(),
        kthread_priorities(),
        smt(&isolated),
        timer_migration(),
        kvm(&machine),
        cpuset_partitions(),
        clocksource(),
        hrtick(),
        deadline_periods(),
        host_kind::watchdogs(&cmdline),
        host_kind::stat_interval(),
        host_kind::skew_tick(&cmdline),
        host_kind::stalld(),
        host_kind::kubevirt_realtime(),
        host_kind::container_rt(&cmdline),
    ]
}

/// "none" for an empty value.
fn or_none(s: &str) -> String {
    if s.trim().is_empty() || s.trim() == "(null)" {
        "none".into()
    } else {
        s.trim().to_string()
    }
}

fn pass_if(ok: bool) -> Status {
    if ok {
        Status::Pass
    } else {
        Status::Warn
    }
}

pub use rtvirt_os::sysinfo::kconfig;

/// The PREEMPT_DYNAMIC mode: debugfs (selected in parentheses), else preempt= on the command
/// line, else the Kconfig default.
fn preempt_dynamic_mode(cmdline: &str) -> (String, String) {
    let path = format!("{DEBUGFS}/sched/preempt");
    match debugfs_read(&["sched/preempt".to_string()]) {
        Ok((v, how)) => {
            let s = &v[0];
            let mode = s
                .split_whitespace()
                .find_map(|w| w.strip_prefix('(')?.strip_suffix(')').map(str::to_string))
                .unwrap_or_else(|| s.clone());
            (mode, format!("{path} ({how}): {s:?}"))
        }
        Err(e) => {
            let why = format!("{path} unreadable ({e})");
            if let Some(m) = cmdline_param(cmdline, "preempt") {
                return (m.clone(), format!("{why}; /proc/cmdline preempt={m}"));
            }
            for (cfg, mode) in [
                ("CONFIG_PREEMPT_NONE", "none"),
                ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
                ("CONFIG_PREEMPT", "full"),
                ("CONFIG_PREEMPT_LAZY", "lazy"),
            ] {
                if kconfig(cfg).as_deref() == Some("y") {
                    return (
                        mode.into(),
                        format!("{why}; no preempt= on /proc/cmdline; boot default {cfg}=y from /proc/config.gz"),
                    );
                }
            }
            ("unknown".into(), format!("{why}; no preempt= and no /proc/config.gz"))
        }
    }
}

fn preemption(cmdline: &str) -> Check {
    let version = read_opt("/proc/sys/kernel/version").unwrap_or_default();
    let realtime = read_opt("/sys/kernel/realtime").as_deref() == Some("1") || version.contains("PREEMPT_RT");
    let src = format!("/proc/sys/kernel/version: {version:?}");
    if realtime {
        return Check::new("preemption", Status::Pass, "PREEMPT_RT", format!("{src}; /sys/kernel/realtime"));
    }
    if version.contains("PREEMPT_DYNAMIC") {
        let (mode, how) = preempt_dynamic_mode(cmdline);
        return Check::new("preemption", Status::Warn, format!("PREEMPT_DYNAMIC ({mode})"), format!("{src}; {how}"));
    }
    let found = ["PREEMPT_LAZY", "PREEMPT", "PREEMPT_VOLUNTARY"]
        .into_iter()
        .find(|m| version.split_whitespace().any(|w| w == *m))
        .unwrap_or("none");
    Check::new("preemption", Status::Warn, found, src)
}

fn rt_throttling() -> Check {
    let path = "/proc/sys/kernel/sched_rt_runtime_us";
    let raw = read_opt(path).unwrap_or_else(|| "unreadable".into());
    let period = read_opt("/proc/sys/kernel/sched_rt_period_us").unwrap_or_default();
    let status = if raw == "-1" { Status::Warn } else { Status::Pass };
    let note = if raw == "-1" { "; -1: RT throttling off and SCHED_DEADLINE admission control disabled" } else { "" };
    Check::new("rt_throttling", status, raw, format!("{path}; sched_rt_period_us = {period}{note}"))
}

fn fair_server(isolated: &CpuList) -> Check {
    let release = sysinfo::kernel_release();
    if !sysinfo::has_fair_server() {
        return Check::new(
            "fair_server",
            Status::Skip,
            "none",
            format!("/proc/sys/kernel/osrelease = {release} (< 6.12: no fair server)"),
        );
    }
    let cpus: Vec<u32> = sysinfo::online_cpus().iter().collect();
    match debugfs_read(&sysinfo::fair_server_files(&cpus)) {
        Ok((v, how)) => {
            let values: Vec<String> = cpus
                .iter()
                .zip(v.chunks(2))
                .map(|(c, rp)| format!("cpu{c}={}/{}", rp[0], rp.get(1).map(String::as_str).unwrap_or("?")))
                .collect();
            let zero_on_isolated = !isolated.is_empty()
                && cpus.iter().zip(v.chunks(2)).all(|(c, rp)| !isolated.contains(*c) || rp[0] == "0");
            Check::new(
                "fair_server",
                pass_if(zero_on_isolated),
                values.join(","),
                format!("{DEBUGFS}/sched/fair_server/cpuN/{{runtime,period}} in ns ({how})"),
            )
        }
        Err(e) => Check::new(
            "fair_server",
            Status::Warn,
            format!("unreadable ({e})"),
            format!(
                "{DEBUGFS}/sched/fair_server/cpuN/runtime; kernel {release} >= 6.12 has a fair server (default \
                 50000000/1000000000 ns per CPU) but its settings cannot be read"
            ),
        ),
    }
}

/// isolcpus=[flag,...,]CPULIST split into its flags and CPU list.
fn isolcpus_param(v: &str) -> (Vec<&str>, &str) {
    let parts: Vec<&str> = v.split(',').collect();
    let n = parts.iter().take_while(|p| p.chars().next().is_some_and(|c| c.is_ascii_alphabetic())).count();
    let list_start = parts[..n].iter().map(|p| p.len() + 1).sum::<usize>().min(v.len());
    (parts[..n].to_vec(), &v[list_start..])
}

/// /sys/devices/system/cpu/isolated shows only the CPUs isolated from the scheduler domains
/// (isolcpus= with no flag or with `domain`); `found` also shows the command line's isolcpus=
/// when it has one, so that e.g. isolcpus=nohz,managed_irq,2-3 is not reported as "none".
fn isolcpus(cmdline: &str, isolated: &CpuList) -> Check {
    let sys = or_none(&isolated.to_string());
    let source = "/sys/devices/system/cpu/isolated (domain-isolated CPUs); /proc/cmdline isolcpus=";
    let Some(param) = cmdline_param(cmdline, "isolcpus") else {
        return Check::new("isolcpus", pass_if(!isolated.is_empty()), sys, format!("{source}: not given"));
    };
    let (flags, list) = isolcpus_param(&param);
    let domain = flags.is_empty() || flags.contains(&"domain");
    let note = if domain {
        String::new()
    } else {
        format!("; flags {} without `domain`: those CPUs are still load-balanced", flags.join(","))
    };
    Check::new(
        "isolcpus",
        pass_if(!isolated.is_empty() && domain),
        format!("{sys} (isolcpus={param})"),
        format!("{source}{param} (CPU list {}){note}", or_none(list)),
    )
}

fn nohz_full(isolated: &CpuList) -> Check {
    let path = Path::new(CPU_DIR).join("nohz_full");
    match read_opt(&path) {
        Some(raw) => {
            let cpus = CpuList::parse(&or_none(&raw).replace("none", "")).unwrap_or_default();
            let ok = !cpus.is_empty() && isolated.is_subset(&cpus);
            Check::new("nohz_full", pass_if(ok), or_none(&raw), path.display().to_string())
        }
        None => {
            let cfg = kconfig("CONFIG_NO_HZ_FULL").unwrap_or_else(|| "unknown".into());
            Check::new(
                "nohz_full",
                Status::Warn,
                "none",
                format!("{} absent; CONFIG_NO_HZ_FULL={cfg} (/proc/config.gz)", path.display()),
            )
        }
    }
}

fn rcu_nocbs(cmdline: &str) -> Check {
    let v = cmdline_param(cmdline, "rcu_nocbs");
    let cfg = kconfig("CONFIG_RCU_NOCB_CPU").unwrap_or_else(|| "unknown".into());
    let found = match v.as_deref() {
        None => "none".to_string(),
        // A bare flag (Linux >= 5.17): every CPU can be offloaded, none is at boot.
        Some("") => "rcu_nocbs (no CPU list)".to_string(),
        Some(list) => list.to_string(),
    };
    let note = if v.as_deref() == Some("") {
        "; bare rcu_nocbs: no CPU is offloaded at boot, CPUs can be switched at run time (cpuset)"
    } else {
        ""
    };
    Check::new("rcu_nocbs", pass_if(v.is_some()), found, format!("/proc/cmdline; CONFIG_RCU_NOCB_CPU={cfg}{note}"))
}

fn rcu_nocb_poll(cmdline: &str) -> Check {
    let set = cmdline_param(cmdline, "rcu_nocb_poll").is_some();
    let status = if cmdline_param(cmdline, "rcu_nocbs").is_none() { Status::Skip } else { pass_if(set) };
    Check::new(
        "rcu_nocb_poll",
        status,
        if set { "set" } else { "none" },
        "/proc/cmdline (only meaningful with rcu_nocbs=)",
    )
}

fn irqaffinity(cmdline: &str, isolated: &CpuList) -> Check {
    let v = cmdline_param(cmdline, "irqaffinity");
    let default = read_opt("/proc/irq/default_smp_affinity").unwrap_or_default();
    let ok = v.as_deref().and_then(|s| CpuList::parse(s).ok()).is_some_and(|c| c.intersection(isolated).is_empty());
    Check::new(
        "irqaffinity",
        pass_if(ok),
        or_none(v.as_deref().unwrap_or("")),
        format!("/proc/cmdline; /proc/irq/default_smp_affinity = {default}"),
    )
}

fn governor() -> Check {
    let cpus = sysinfo::online_cpus();
    let govs: Vec<(u32, String)> = cpus
        .iter()
        .filter_map(|c| read_opt(format!("{CPU_DIR}/cpu{c}/cpufreq/scaling_governor")).map(|g| (c, g)))
        .collect();
    if govs.is_empty() {
        return Check::new(
            "governor",
            Status::Skip,
            "none",
            format!(
                "{CPU_DIR}/cpu*/cpufreq/scaling_governor absent (no cpufreq driver: the frequency is not scaled by \
                 this kernel)"
            ),
        );
    }
    let all_same = govs.iter().all(|(_, g)| *g == govs[0].1);
    let found = if all_same {
        govs[0].1.clone()
    } else {
        govs.iter().map(|(c, g)| format!("cpu{c}={g}")).collect::<Vec<_>>().join(",")
    };
    Check::new(
        "governor",
        pass_if(govs.iter().all(|(_, g)| g == "performance")),
        found,
        format!("{CPU_DIR}/cpu*/cpufreq/scaling_governor"),
    )
}

fn cpuidle(cmdline: &str) -> Check {
    let driver = read_opt(format!("{CPU_DIR}/cpuidle/current_driver")).unwrap_or_default();
    let idle = cmdline_param(cmdline, "idle");
    let states: Vec<String> = (0..16)
        .map_while(|i| {
            let d = format!("{CPU_DIR}/cpu0/cpuidle/state{i}");
            let name = read_opt(format!("{d}/name"))?;
            let disabled = read_opt(format!("{d}/disable")).as_deref() == Some("1");
            let lat = read_opt(format!("{d}/latency")).unwrap_or_default();
            Some(format!("{name}{}({lat}us)", if disabled { "[disabled]" } else { "" }))
        })
        .collect();
    let deep_enabled = states.iter().skip(1).any(|s| !s.contains("[disabled]"));
    let keys = [
        "idle",
        "processor.max_cstate",
        "intel_idle.max_cstate",
        "cpuidle_haltpoll.force",
        "haltpoll.guest_halt_poll_ns",
    ];
    let limits: Vec<String> =
        keys.iter().filter_map(|k| cmdline_param(cmdline, k).map(|v| format!("{k}={v}"))).collect();
    let ok = idle.as_deref() == Some("poll") || driver.is_empty() || !deep_enabled;
    Check::new(
        "cpuidle",
        pass_if(ok),
        or_none(&driver),
        format!(
            "{CPU_DIR}/cpuidle/current_driver; cpu0 states: {}; cmdline: {}",
            or_none(&states.join(", ")),
            or_none(&limits.join(" "))
        ),
    )
}

fn thp() -> Check {
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    match read_opt(path) {
        None => Check::new("thp", Status::Skip, "none", format!("{path} absent (no THP)")),
        Some(raw) => {
            let sel = raw
                .split_whitespace()
                .find_map(|w| w.strip_prefix('[')?.strip_suffix(']').map(str::to_string))
                .unwrap_or(raw.clone());
            Check::new("thp", pass_if(sel != "always"), sel, format!("{path}: {raw:?}"))
        }
    }
}

fn hugepages() -> Check {
    let raw = read_opt("/proc/sys/vm/nr_hugepages").unwrap_or_else(|| "0".into());
    let size = read_opt("/proc/meminfo")
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("Hugepagesize:"))
                .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_default();
    Check::new("hugepages", pass_if(raw != "0"), raw, format!("/proc/sys/vm/nr_hugepages; Hugepagesize {size}"))
}

fn ksm() -> Check {
    let path = "/sys/kernel/mm/ksm/run";
    match read_opt(path) {
        None => Check::new("ksm", Status::Skip, "none", format!("{path} absent (no KSM)")),
        Some(raw) => Check::new("ksm", pass_if(raw != "1"), raw, path),
    }
}

fn irqbalance() -> Check {
    let pids: Vec<u32> =
        procfs::pids().into_iter().filter(|&p| procfs::stat(p).is_ok_and(|s| s.comm == "irqbalance")).collect();
    let found = if pids.is_empty() {
        "not running".to_string()
    } else {
        format!("running (pid {})", pids.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
    };
    Check::new("irqbalance", pass_if(pids.is_empty()), found, "/proc/*/stat comm")
}

fn irq_affinity_isolated(isolated: &CpuList) -> Check {
    if isolated.is_empty() {
        return Check::new(
            "irq_affinity_isolated",
            Status::Skip,
            "none",
            "no isolated CPUs (/sys/devices/system/cpu/isolated)",
        );
    }
    let hits: Vec<String> = sysinfo::irqs()
        .iter()
        .filter(|i| !i.effective.intersection(isolated).is_empty())
        .map(|i| format!("{}:{}", i.number, i.effective))
        .collect();
    Check::new(
        "irq_affinity_isolated",
        pass_if(hits.is_empty()),
        or_none(&hits.join(",")),
        format!("/proc/irq/*/effective_affinity_list against isolated {isolated}"),
    )
}

fn threaded_napi() -> Check {
    let mut devs: Vec<(String, String)> = std::fs::read_dir("/sys/class/net")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|d| d != "lo")
                .filter_map(|d| read_opt(format!("/sys/class/net/{d}/threaded")).map(|v| (d, v)))
                .collect()
        })
        .unwrap_or_default();
    devs.sort();
    if devs.is_empty() {
        return Check::new(
            "threaded_napi",
            Status::Skip,
            "none",
            "/sys/class/net/*/threaded absent (Linux < 5.12 or no NIC)",
        );
    }
    let found = devs.iter().map(|(d, v)| format!("{d}={v}")).collect::<Vec<_>>().join(",");
    Check::new("threaded_napi", pass_if(devs.iter().any(|(_, v)| v != "0")), found, "/sys/class/net/*/threaded")
}

fn kthread_priorities() -> Check {
    let ts: Vec<threads::ThreadInfo> =
        threads::kernel_threads().into_iter().filter(|t| t.role.is_percpu_kthread()).collect();
    let found = ts.iter().map(|t| format!("{}={}", t.comm, t.sched)).collect::<Vec<_>>().join(",");
    let too_high = ts.iter().any(|t| t.sched.is_rt() && t.sched.priority > 49);
    let present: Vec<&str> =
        ["ksoftirqd", "ktimers", "rcuc"].into_iter().filter(|k| ts.iter().any(|t| t.role.name() == *k)).collect();
    Check::new(
        "kthread_priorities",
        pass_if(!too_high),
        or_none(&found),
        format!("sched_getattr on {} (/proc/*/stat comm)", present.join(", ")),
    )
}

fn smt(isolated: &CpuList) -> Check {
    let control = read_opt(format!("{CPU_DIR}/smt/control")).unwrap_or_else(|| "none".into());
    if matches!(control.as_str(), "notsupported" | "notimplemented" | "none") {
        return Check::new("smt", Status::Skip, control, format!("{CPU_DIR}/smt/control (no SMT siblings)"));
    }
    let split: Vec<String> = sysinfo::online_cpus()
        .iter()
        .filter_map(|c| read_opt(format!("{CPU_DIR}/cpu{c}/topology/thread_siblings_list")))
        .filter_map(|s| CpuList::parse(&s).ok())
        .filter(|sib| sib.len() > 1 && !sib.intersection(isolated).is_empty() && !sib.is_subset(isolated))
        .map(|sib| sib.to_string())
        .collect();
    let ok = control != "on" || (split.is_empty() && !isolated.is_empty());
    Check::new(
        "smt",
        pass_if(ok),
        control,
        format!(
            "{CPU_DIR}/smt/control; siblings split between isolated and housekeeping: {}",
            or_none(&split.join(" "))
        ),
    )
}

fn timer_migration() -> Check {
    let path = "/proc/sys/kernel/timer_migration";
    match read_opt(path) {
        None => Check::new("timer_migration", Status::Skip, "none", format!("{path} absent")),
        Some(raw) => Check::new("timer_migration", pass_if(raw == "0"), raw, path),
    }
}

fn kvm(machine: &host_kind::Machine) -> Check {
    let dir = Path::new("/sys/module/kvm/parameters");
    if !dir.is_dir() {
        return Check::new("kvm", Status::Skip, "none", "/sys/module/kvm absent (KVM not loaded)");
    }
    let params = ["halt_poll_ns", "kvmclock_periodic_sync", "lapic_timer_advance", "lapic_timer_advance_ns"];
    let mut found: Vec<String> =
        params.iter().filter_map(|p| read_opt(dir.join(p)).map(|v| format!("kvm.{p}={v}"))).collect();
    let modules = host_kind::kvm_modules();
    found.extend(
        [("kvm_intel", "ple_gap"), ("kvm_amd", "pause_filter_count")]
            .iter()
            .filter_map(|(m, p)| read_opt(format!("/sys/module/{m}/parameters/{p}")).map(|v| format!("{m}.{p}={v}"))),
    );
    found.push(format!("modules: {}", if modules.is_empty() { "none".into() } else { modules.join(" ") }));
    let periodic_sync = read_opt(dir.join("kvmclock_periodic_sync"));
    let vendor = format!("; CPU vendor {}", or_none(&machine.vendor));
    Check::new(
        "kvm",
        pass_if(!matches!(periodic_sync.as_deref(), Some("Y") | Some("1"))),
        found.join(","),
        dir.display().to_string() + &vendor,
    )
    .with_fix(host_kind::kvm_fix(machine, &modules))
}

fn cpuset_partitions() -> Check {
    match rtvirt_os::cgroup::Hierarchy::find("cpuset") {
        Some(h) => Check::new("cpuset_partitions", Status::Pass, h.describe(), "/proc/mounts"),
        None => Check::new(
            "cpuset_partitions",
            Status::Fail,
            "none",
            "/proc/mounts: no cgroup v1 cpuset mount and no cgroup2 mount with the cpuset controller",
        ),
    }
}

fn clocksource() -> Check {
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let raw = read_opt(path).unwrap_or_else(|| "none".into());
    Check::new("clocksource", pass_if(raw == "tsc"), raw, path)
}

fn hrtick() -> Check {
    let config = kconfig("CONFIG_SCHED_HRTICK");
    let config_text = format!("CONFIG_SCHED_HRTICK={}", config.as_deref().unwrap_or("unknown (no /proc/config.gz)"));
    if config.as_deref() == Some("n") {
        return Check::new("hrtick", Status::Warn, "not built", config_text);
    }
    match debugfs_read(&["sched/features".to_string()]) {
        Ok((v, how)) => {
            let features: Vec<&str> = v.first().map(|s| s.split_whitespace().collect()).unwrap_or_default();
            let (found, status) = hrtick_state(&features);
            Check::new("hrtick", status, found, format!("{how} sched/features; {config_text}"))
        }
        Err(e) => {
            Check::new("hrtick", Status::Warn, "unknown: tick assumed", format!("sched/features: {e}; {config_text}"))
        }
    }
}

/// HRTICK_DL (HRTICK on kernels without it) on or off in the scheduler's features.
fn hrtick_state(features: &[&str]) -> (String, Status) {
    let name = if features.iter().any(|f| f.ends_with("HRTICK_DL")) { "HRTICK_DL" } else { "HRTICK" };
    match features.contains(&name) {
        true => (name.to_string(), Status::Pass),
        false => (format!("NO_{name}"), Status::Warn),
    }
}

fn deadline_periods() -> Check {
    let (min, max) = ("/proc/sys/kernel/sched_deadline_period_min_us", "/proc/sys/kernel/sched_deadline_period_max_us");
    match (read_opt(min), read_opt(max)) {
        (Some(lo), Some(hi)) => {
            Check::new("deadline_periods", Status::Pass, format!("{lo} us .. {hi} us"), format!("{min}; {max}"))
        }
        _ => {
            Check::new("deadline_periods", Status::Skip, "none", format!("{min}: absent (kernel < 6.8: 100 us .. 4 s)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrtick_is_read_from_the_features_either_name() {
        assert_eq!(
            hrtick_state(&["GENTLE_FAIR_SLEEPERS", "NO_HRTICK", "NO_HRTICK_DL"]),
            ("NO_HRTICK_DL".into(), Status::Warn)
        );
        assert_eq!(hrtick_state(&["NO_HRTICK", "HRTICK_DL"]), ("HRTICK_DL".into(), Status::Pass));
        assert_eq!(hrtick_state(&["HRTICK"]), ("HRTICK".into(), Status::Pass));
        assert_eq!(hrtick_state(&[]), ("NO_HRTICK".into(), Status::Warn));
    }

    #[test]
    fn isolcpus_flags_and_list() {
        assert_eq!(isolcpus_param("2-3"), (vec![], "2-3"));
        assert_eq!(isolcpus_param("nohz,managed_irq,2-3"), (vec!["nohz", "managed_irq"], "2-3"));
        assert_eq!(isolcpus_param("domain,1"), (vec!["domain"], "1"));
        let c = isolcpus("quiet isolcpus=nohz,2-3", &CpuList::default());
        assert_eq!((c.found.as_str(), c.status), ("none (isolcpus=nohz,2-3)", Status::Warn));
        assert!(c.source.contains("without `domain`"), "{}", c.source);
        let c = isolcpus("isolcpus=1", &CpuList::parse("1").unwrap());
        assert_eq!((c.found.as_str(), c.status), ("1 (isolcpus=1)", Status::Pass));
        assert_eq!(isolcpus("quiet", &CpuList::default()).found, "none");
    }

    #[test]
    fn a_bare_rcu_nocbs_is_reported_as_found() {
        let c = rcu_nocbs("quiet rcu_nocbs");
        assert_eq!((c.found.as_str(), c.status), ("rcu_nocbs (no CPU list)", Status::Pass));
        assert_eq!(rcu_nocbs("rcu_nocbs=1-3").found, "1-3");
        assert_eq!((rcu_nocbs("quiet").found.as_str(), rcu_nocbs("quiet").status), ("none", Status::Warn));
    }
}
