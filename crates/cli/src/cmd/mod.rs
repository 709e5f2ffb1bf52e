//! One module per `rtvirt` job.

pub mod netsim;
pub mod plan;
pub mod report;
pub mod demo;
pub mod simulate;
pub mod vm;
pub mod measure;
pub mod load;
pub mod host;
