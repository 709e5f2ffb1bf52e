//! rtvirt's loop (plan -> deploy -> measure -> explain -> re-plan) as a library: what every front
//! end - the command line and the Python package - does the same way, above the crates of each
//! job. [`host_choice`]: the host a plan is for and the promise asked, as a user names them;
//! [`planning`]: the plan every front end makes (the one planning path, and a tick host's promise
//! checked by simulation); [`prediction`]: the simulation a task run is compared with.

pub mod host_choice;
pub mod planning;
pub mod prediction;
