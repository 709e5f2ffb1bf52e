//! The decision log of `rtvirt host adapt` (`--log FILE.jsonl`): one JSON object per line, one
//! line per event - the run's start (each guest's planned reservation), every change of a
//! reservation (observed demand, old and new reservation, the reason), a guest that ended (its
//! bandwidth released), the run's end.

use crate::observe::Reservation;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdaptEvent {
    /// The plan is in force; `new` is the guest's planned reservation.
    Start,
    /// The reservation changed from `old` to `new`.
    Change,
    /// The guest's vCPU thread ended: its bandwidth is released to the others on its core.
    Ended,
    /// The run ended; `old` is the reservation in force until then. The run restores every
    /// setting it made (the plan's apply too).
    End,
}

/// One line of the decision log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdaptRecord {
    /// Since the start of the run.
    pub time_ns: u64,
    pub guest: String,
    pub event: AdaptEvent,
    /// Observed demand as a bandwidth (share of a core), when the event rests on observations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Reservation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<Reservation>,
    /// Why, in words.
    pub reason: String,
    /// Where the demand came from: `agent` (job execution times) or `host_inference` (the vCPU's
    /// CPU time per server period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::observe::Source>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn schema_file_is_the_generated_one() {
        crate::schema::check_committed::<super::AdaptRecord>("adapt-log").unwrap();
    }
}
