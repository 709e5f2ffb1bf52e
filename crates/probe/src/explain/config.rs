//! What an explainer is asked to do ([`ExplainConfig`]).

use rtvirt_model::Nanos;
use std::path::PathBuf;

/// How to explain.
#[derive(Debug, Clone)]
pub struct ExplainConfig {
    /// Explain wake-ups later than this (None: the run's p99).
    pub above: Option<Nanos>,
    /// Stop the run at the first wake-up later than this, and explain it.
    pub break_at: Option<Nanos>,
    /// With `break_at`: where the whole raw trace is written when a wake-up breaks the run.
    pub break_trace: Option<PathBuf>,
    /// In a guest of `--in vm`: the serial device over which the host tells its time
    /// ([`super::clock_sync`]), so that the host can add what the vCPU threads went through.
    pub clock_sync: Option<PathBuf>,
    /// Where the tracing instance is journaled (rtvirt host's state directory).
    pub state_dir: PathBuf,
    /// Ring buffer per CPU.
    pub buffer_kb: u32,
    /// Explained samples kept (the worst).
    pub max_samples: usize,
    /// Also trace the measuring threads' syscalls: `clock_nanosleep` ([`super::decode::SYSCALL_EVENTS`]) of
    /// `measure timer`, send and receive ([`super::net::events::SYSCALL_EVENTS`]) of `measure net`.
    pub syscalls: bool,
}

impl ExplainConfig {
    pub fn new(state_dir: PathBuf) -> ExplainConfig {
        ExplainConfig {
            above: None,
            break_at: None,
            break_trace: None,
            clock_sync: None,
            state_dir,
            buffer_kb: 4096,
            max_samples: 1000,
            syscalls: false,
        }
    }
}
