//! The environment a measurement ran in: kernel, preemption model, command line, CPU model,
//! clocksource, isolated CPUs, frequency governor, cpuidle driver, the CPU latency target
//! (/dev/cpu_dma_latency) when the environment was read, rtvirt version. Read from
//! /proc and /sys; anything unreadable is left out rather than guessed.

use rtvirt_model::results::Environment;
use rtvirt_model::vocab::MeasuredIn;

/// Environment variable through which a parent rtvirt tells a child it runs inside a container
/// or VM it created ("container", "vm"); default "host".
pub const ENV_VAR: &str = "RTVIRT_ENVIRONMENT";

/// Environment variable with a JSON description of that container or VM (recorded as
/// `environment.<in>`, e.g. `environment.container`).
pub const DETAIL_VAR: &str = "RTVIRT_ENVIRONMENT_DETAIL";

/// Collect the environment of this machine (loads are added by the caller).
pub fn collect() -> Environment {
    let mut env = Environment {
        r#in: Some(std::env::var(ENV_VAR).map_or(MeasuredIn::Host, |w| MeasuredIn::from(w.as_str()))),
        kernel: kernel(),
        preemption: preemption(),
        cmdline: read("/proc/cmdline"),
        cpu_model: cpu_model(),
        clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        isolated_cpus: read("/sys/devices/system/cpu/isolated").map(|s| if s.is_empty() { "none".into() } else { s }),
        governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").or(Some("none (no cpufreq)".into())),
        cpuidle_driver: read("/sys/devices/system/cpu/cpuidle/current_driver"),
        rtvirt_version: Some(rtvirt_model::VERSION.into()),
        ..Default::default()
    };
    env.sched_rt_runtime_us = read("/proc/sys/kernel/sched_rt_runtime_us");
    if let Ok(text) = std::env::var(DETAIL_VAR) {
        // Only containers describe themselves so far; a description that does not read is kept
        // out rather than guessed.
        if env.r#in == Some(MeasuredIn::Container) {
            env.container = serde_json::from_str(&text).ok();
        }
    }
    env.online_cpus = Some(crate::cpus::format_list(&crate::cpus::online()));
    // Whoever holds it (this run, cyclictest, another measurement) keeps CPUs out of deep
    // idle states, which shortens every wake-up on the machine: part of the environment.
    env.cpu_dma_latency_us = crate::rt::DmaLatency::current_us().map(i64::from);
    env
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn kernel() -> Option<String> {
    let release = read("/proc/sys/kernel/osrelease")?;
    let version = read("/proc/sys/kernel/version").unwrap_or_default();
    Some(format!("{release} {version}").trim().to_string())
}

/// "PREEMPT_RT", or "PREEMPT_DYNAMIC (<mode>)" with the active dynamic mode, or the static model.
fn preemption() -> Option<String> {
    let version = read("/proc/sys/kernel/version").unwrap_or_default();
    if version.contains("PREEMPT_RT") || read("/sys/kernel/realtime").as_deref() == Some("1") {
        return Some("PREEMPT_RT".into());
    }
    let mode = read("/sys/kernel/debug/sched/preempt").and_then(|s| active_mode(&s));
    if version.contains("PREEMPT_DYNAMIC") {
        return Some(match mode {
            Some(m) => format!("PREEMPT_DYNAMIC ({m})"),
            None => "PREEMPT_DYNAMIC (mode unknown: debugfs not mounted)".into(),
        });
    }
    for m in ["PREEMPT_LAZY", "PREEMPT ", "PREEMPT_VOLUNTARY"] {
        if version.contains(m) {
            return Some(m.trim().into());
        }
    }
    Some("none (server)".into())
}

/// "full" from "none voluntary (full) lazy".
fn active_mode(text: &str) -> Option<String> {
    text.split_whitespace().find(|w| w.starts_with('(')).map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_this_machine() {
        let e = collect();
        assert!(e.kernel.is_some());
        assert!(e.preemption.is_some());
        assert!(e.clocksource.is_some());
        assert_eq!(e.rtvirt_version.as_deref(), Some(rtvirt_model::VERSION));
        assert!(e.r#in.is_some());
        if crate::rt::is_root() {
            let us = e.cpu_dma_latency_us.unwrap();
            assert!((0..=crate::rt::NO_DMA_LATENCY_REQUEST as i64).contains(&us), "{us}");
        }
    }

    #[test]
    fn parses_dynamic_mode() {
        assert_eq!(active_mode("none voluntary (full) lazy").as_deref(), Some("full"));
        assert_eq!(active_mode("none voluntary full"), None);
    }
}
