//! One module per `rtvirt` job.

pub mod adapt;
pub mod demo;
mod exact_edf;
pub mod export;
pub mod host;
pub mod import;
pub mod load;
pub mod measure;
pub mod observe;
pub mod plan;
pub mod report;
pub mod simulate;
pub mod study;
pub mod tail;
pub mod verify;
pub mod vm;
