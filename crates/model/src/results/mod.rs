//! Results of simulations and real measurements, one versioned schema (`rtvirt.results/v1`) so
//! that reports can put them side by side. A document has a `kind` ("simulation", "timer",
//! "net", "net-server", "tasks", "netsim", ...) and the typed sections that kind fills
//! ([`sections`], [`environment`]); absent sections are omitted. JSON is read and written only
//! here (`wire.rs`): producers fill the types, readers read the types, and fields this version
//! does not know are kept in `extra` and written back as read. `docs/schema/results.schema.json`
//! is generated from these types (see [`crate::schema`]).

mod document;
pub mod environment;
pub mod explain;
pub mod sections;
mod serde_fns;
mod wire;

pub use document::{CoreResult, CpuLatency, FlowResult, GuestResult, Results, TaskResult, VcpuResult, RESULTS_SCHEMA};
pub use wire::{is_known_field, KnownFields};

pub use environment::{ContainerDetail, Environment, LoadReport, VcpuPinning};
pub use explain::{
    Cause, CauseKind, CauseSummary, ClockSync, ExplainSection, ExplainedSample, PathSegment, SegmentSummary,
};
pub use sections::{
    CpuInterval, Dom0Stats, HistogramBucket, HostThread, Interval, NetSection, NetServerSection, PlanSummary,
    Reservation, ReservationChange, Segment, SegmentStats, ServerStats, SimulationSection, Stall, StreamInterval,
    StreamReceipt, StreamSection, TaskTotals, TaskWindow, TimerSection, XenDomain, XenSection,
};

#[cfg(test)]
mod tests;
