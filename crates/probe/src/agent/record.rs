//! One job record of the job-boundary API, however it came (ring or datagram).

/// One job as a task reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDone {
    pub name: String,
    pub tid: u32,
    pub period_ns: u64,
    pub deadline_ns: u64,
    pub exec_ns: u64,
}
