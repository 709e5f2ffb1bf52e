//! Scenario sections used by the simulator: `[sim]` (engine settings, extra host threads) and
//! `[guest.vcpu]` (how a guest's vCPU thread is scheduled on the host).

use serde::Deserialize;

/// `[sim]`: simulator settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSim {}

/// `[guest.vcpu]`: the host-side scheduling of one guest's vCPU thread.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVcpu {}
