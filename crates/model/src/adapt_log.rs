//! The decision log of `rtvirt host adapt` (`--log FILE.jsonl`): one JSON object per line, one
//! line per event - the run's start (each guest's planned reservation), every change of a
//! reservation (observed demand, old and new reservation, the reason), a guest that ended (its
//! bandwidth released), the run's end. [`AdaptLog`] reads a log back (`rtvirt report
//! --adapt-log`) and turns it into each guest's reservation series, the shape `simulate --adapt`
//! gives its results.

use crate::input::{read_text, InputKind};
use crate::observe::Reservation;
use crate::results::{self, ReservationChange};
use crate::InputError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

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

/// Which way a reservation changed (a change's `reason` says why in words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Observed demand rose: the reservation grew.
    Grow,
    /// Observed demand fell: the reservation shrank.
    Shrink,
    /// The core could not give what the guest wanted: it got less, after the guests kept first.
    Degraded,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Grow => "grow",
            ChangeKind::Shrink => "shrink",
            ChangeKind::Degraded => "degraded",
        }
    }
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
    /// Which way a `change` went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeKind>,
}

/// The most lines a decision log read back may hold (a 1 h run at 10 ms steps is 360,000 rounds;
/// the rate limit makes changes far fewer).
pub const MAX_RECORDS: usize = 1_000_000;

/// A decision log read back, in line order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AdaptLog {
    pub records: Vec<AdaptRecord>,
}

/// One guest's reservations over a run, read from its decision log.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestSeries {
    pub guest: String,
    /// The planned reservation (reason "plan"), then every change, in time order.
    pub changes: Vec<ReservationChange>,
    /// When the guest's series ends: its `ended` or the run's `end`, else its last record.
    pub end_ns: u64,
}

impl AdaptLog {
    /// Read `path` (bounded like a results file); errors are located by file and line.
    pub fn from_file(path: &Path) -> Result<AdaptLog, InputError> {
        AdaptLog::from_text(&read_text(path, InputKind::Results)?).map_err(|e| e.in_file(path))
    }

    /// One [`AdaptRecord`] per non-blank line.
    pub fn from_text(text: &str) -> Result<AdaptLog, InputError> {
        let mut records = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            if records.len() == MAX_RECORDS {
                return Err(InputError::new(format!("more than {MAX_RECORDS} records")).at_line(i + 1, 1));
            }
            let r: AdaptRecord = serde_json::from_str(line).map_err(|e| {
                InputError::new(format!("not an `rtvirt host adapt` decision log record: {e}"))
                    .at_line(i + 1, e.column())
            })?;
            records.push(r);
        }
        if records.is_empty() {
            return Err(InputError::new("an empty decision log: expected the JSON lines of `rtvirt host adapt --log`"));
        }
        Ok(AdaptLog { records })
    }

    /// Each guest's series, in the order the guests first appear.
    pub fn guests(&self) -> Vec<GuestSeries> {
        let mut out: Vec<GuestSeries> = Vec::new();
        for r in &self.records {
            let i = match out.iter().position(|g| g.guest == r.guest) {
                Some(i) => i,
                None => {
                    out.push(GuestSeries { guest: r.guest.clone(), changes: Vec::new(), end_ns: r.time_ns });
                    out.len() - 1
                }
            };
            let g = &mut out[i];
            g.end_ns = g.end_ns.max(r.time_ns);
            if let Some(c) = change_of(r) {
                g.changes.push(c);
            }
        }
        out
    }
}

impl GuestSeries {
    /// The reserved bandwidth averaged over time from the first record to `end_ns`.
    pub fn bandwidth_mean(&self) -> Option<f64> {
        let first = self.changes.first()?;
        let span = self.end_ns.saturating_sub(first.at_ns);
        if span == 0 {
            return Some(first.bandwidth);
        }
        let ends = self.changes.iter().skip(1).map(|c| c.at_ns).chain([self.end_ns]);
        let area: f64 =
            self.changes.iter().zip(ends).map(|(c, end)| c.bandwidth * end.saturating_sub(c.at_ns) as f64).sum();
        Some(area / span as f64)
    }
}

/// The reservation in force from a `start` or `change` record on.
fn change_of(r: &AdaptRecord) -> Option<ReservationChange> {
    let new = r.new?;
    let reason = match (r.event, r.change) {
        (AdaptEvent::Start, _) => "plan",
        (AdaptEvent::Change, Some(kind)) => kind.as_str(),
        (AdaptEvent::Change, None) if r.old.is_some_and(|o| o.bandwidth() > new.bandwidth()) => "shrink",
        (AdaptEvent::Change, None) => "grow",
        (AdaptEvent::Ended | AdaptEvent::End, _) => return None,
    };
    Some(ReservationChange {
        at_ns: r.time_ns,
        reservation: results::Reservation {
            deadline_ns: new.deadline_ns,
            period_ns: new.period_ns,
            runtime_ns: new.runtime_ns,
        },
        bandwidth: new.bandwidth(),
        demand: r.demand,
        reason: reason.into(),
        detail: (r.event == AdaptEvent::Change).then(|| r.reason.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_file_is_the_generated_one() {
        crate::schema::check_committed::<super::AdaptRecord>("adapt-log").unwrap();
    }

    const LOG: &str = r#"{"time_ns":0,"guest":"g1","event":"start","new":{"runtime_ns":2000000,"deadline_ns":10000000,"period_ns":10000000},"reason":"the plan"}
{"time_ns":2000000000,"guest":"g1","event":"change","demand":0.35,"old":{"runtime_ns":2000000,"deadline_ns":10000000,"period_ns":10000000},"new":{"runtime_ns":4000000,"deadline_ns":10000000,"period_ns":10000000},"reason":"observed demand rose above the reservation","source":"agent","change":"grow"}

{"time_ns":3000000000,"guest":"g1","event":"change","demand":0.1,"old":{"runtime_ns":4000000,"deadline_ns":10000000,"period_ns":10000000},"new":{"runtime_ns":3000000,"deadline_ns":10000000,"period_ns":10000000},"reason":"observed demand fell below the reservation"}
{"time_ns":4000000000,"guest":"g1","event":"end","old":{"runtime_ns":3000000,"deadline_ns":10000000,"period_ns":10000000},"reason":"the run ended"}
"#;

    #[test]
    fn a_log_becomes_the_guests_reservation_series_with_its_time_average() {
        let log = AdaptLog::from_text(LOG).unwrap();
        let g = &log.guests()[0];
        let steps: Vec<(u64, f64, &str)> =
            g.changes.iter().map(|c| (c.at_ns / 1_000_000_000, c.bandwidth, c.reason.as_str())).collect();
        assert_eq!(steps, [(0, 0.2, "plan"), (2, 0.4, "grow"), (3, 0.3, "shrink")], "an old line without `change`");
        assert_eq!(g.changes[1].demand, Some(0.35));
        assert_eq!(g.end_ns, 4_000_000_000);
        // 0.2 for 2 s, 0.4 for 1 s, 0.3 for 1 s over 4 s
        assert!((g.bandwidth_mean().unwrap() - 0.275).abs() < 1e-12);
    }

    #[test]
    fn bad_lines_are_located_and_an_empty_log_is_refused() {
        let bad = LOG.replacen("\"event\":\"end\"", "\"event\":\"later\"", 1);
        let e = AdaptLog::from_text(&bad).unwrap_err();
        assert_eq!(e.at.line_col.map(|(l, _)| l), Some(5), "{e}");
        assert!(AdaptLog::from_text("\n \n").unwrap_err().to_string().contains("empty decision log"));
        assert!(AdaptLog::from_text("{}").is_err());
    }
}
