//! The bounds every section's times and sizes are checked against.

use crate::duration::Nanos;
use crate::error::InputError;

/// Default per-core bandwidth cap: SCHED_DEADLINE's default admission limit (950 ms / 1 s).
pub const DEFAULT_BANDWIDTH_CAP: f64 = 0.95;

/// Most host cores a scenario (or `rtvirt plan --cores`) may declare: a fleet of 100,000 guests
/// planned as one host of as many cores (issue 43). Work per core is a few hundred bytes and
/// constant time per placement step; the vCPUs of one guest stay within [`MAX_VCPUS`].
pub const MAX_CORES: u32 = 131_072;

/// Most vCPUs of one guest (KVM's and QEMU's q35 limit): the work of planning a guest grows with
/// its vCPUs, which a file states in one number.
pub const MAX_VCPUS: u32 = 4096;

/// Longest accepted period, offset or reservation parameter in a scenario: one hour. Real-time
/// periods are far shorter (SCHED_DEADLINE itself caps periods at ~4 s by default); the bound
/// keeps time arithmetic (release k = offset + k * period over a 30-day horizon) far from u64
/// overflow.
pub const MAX_TIMING: Nanos = Nanos::from_secs(3600);

/// Longest simulated horizon (`[sim] duration`, `[net] duration`, `--duration`). Memory is
/// bounded whatever the horizon (streaming statistics); the limit keeps a typo ("10000h") from
/// starting a run that would take days.
pub const MAX_HORIZON: Nanos = Nanos::from_secs(30 * 24 * 3600);

/// `duration` when it is a positive horizon of at most [`MAX_HORIZON`], else an error naming
/// `field`.
pub fn check_horizon(duration: Nanos, field: &str) -> Result<Nanos, InputError> {
    if duration.0 == 0 || duration > MAX_HORIZON {
        return Err(InputError::field(
            field,
            format!("{duration}: expected a positive horizon of at most {MAX_HORIZON} (30 days)"),
        ));
    }
    Ok(duration)
}

/// `duration` when it is at most [`MAX_TIMING`], else an error naming `field`.
pub fn check_timing(duration: Nanos, field: &str) -> Result<Nanos, InputError> {
    if duration > MAX_TIMING {
        return Err(InputError::field(field, format!("{duration}: expected at most {MAX_TIMING} (1 hour)")));
    }
    Ok(duration)
}
