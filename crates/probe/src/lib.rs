//! rtvirt-probe: real measurement on Linux, the real-world counterpart of the simulator. Every
//! result is an `rtvirt.results/v1` document (rtvirt-model) with the environment it ran in.
//!
//! - [`agent`]: `rtvirt guest-agent`, the guest side of `rtvirt host observe`: the guest's RT tasks
//!   and their job execution times, reported to the host over virtio-serial.
//! - [`calibrate`]: this host's costs as an `rtvirt.hostmodel/v1` host model (`rtvirt host calibrate`).
//! - [`timer`]: timer wake-up latency, cyclictest-style (`timer::run(&TimerConfig)`);
//!   [`cyclictest_json`] its run as the JSON file of `cyclictest --json`.
//! - [`net`]: UDP/TCP request/response server and client with open-loop paced arrivals.
//! - [`tasks`]: periodic task sets of planned guests under real SCHED_DEADLINE reservations.
//! - [`load`]: interference loads (network flood, system calls, cache thrashing, CPU hogs).
//! - [`container`]: a network namespace + veth/bridge + cgroup to run a measurement inside.
//! - [`environment`]: what a result records about the machine.
//! - [`explain`]: the causes of late wake-ups from a kernel trace of rtvirt's own (`--explain`).
//! - plumbing: [`rt`] (scheduling policies and pinning through rtvirt-os, mlockall,
//!   cpu_dma_latency, runaway guard), [`cpus`], [`error`], [`limits`] (the one rule for run
//!   lengths). The OS calls that change scheduling or cgroups (exclusive cpusets, container
//!   cgroups), and the Ctrl-C flag, are rtvirt-os's.
//!
//! Entry points (used by the cli, `rtvirt demo` and rtvirt-vm's guests): [`timer::run`] ->
//! [`timer::TimerRun`] (results + per-CPU histograms); [`net::server::Server::bind`] then
//! `serve(&stop)`; [`net::client::run`]; [`tasks::run`] (scenario + plan -> results);
//! [`load::start`] -> [`load::RunningLoad`] (`stop()` gives what the load achieved);
//! [`container::Container::create`] then `command(exe)`; [`environment::collect`].
//!
//! Invariants: probe measures, it does no analysis (explain's split of a wake-up into causes is
//! reading the trace, done while it streams so that memory stays bounded) and does not depend on rtvirt-host; whatever
//! it changes on the host (scheduling, exclusive cpusets, `cpu_dma_latency`, namespaces) is held
//! by a guard that restores it on drop, also on Ctrl-C (the stop flag is polled, never a signal
//! handler doing work) and after a failure halfway; a runaway real-time thread is demoted by
//! [`rt::Watchdog`]. What each measurement does: docs/measure.md.

pub mod agent;
pub mod calibrate;
pub mod container;
pub mod cpus;
pub mod cyclictest_json;
pub mod environment;
pub mod error;
pub mod explain;
pub mod limits;
pub mod live;
pub mod load;
pub mod net;
pub mod rt;
pub mod tasks;
pub mod this_host;
pub mod tick;
pub mod timer;

pub use error::{Error, Result};

/// Serialises unit tests that create exclusive cpusets (two cannot hold the same CPU).
#[cfg(test)]
pub(crate) static TEST_CPUSETS: std::sync::Mutex<()> = std::sync::Mutex::new(());
