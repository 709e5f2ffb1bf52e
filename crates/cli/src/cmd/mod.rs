//! One module per `rtvirt` job.

pub mod plan;
