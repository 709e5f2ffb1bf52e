//! Scenario section `[net]`: the simulated network path (NICs, IRQs, softirq, backends, flows).

use serde::Deserialize;

/// `[net]`: network topology and traffic of the simulator.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNet {}
