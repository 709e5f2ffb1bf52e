//! One module per `rtvirt` job.

pub mod plan;
pub mod report;
pub mod vm;
