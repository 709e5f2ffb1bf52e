//! rtvirt's loop (plan -> deploy -> measure -> explain -> re-plan) as a library: what every front
//! end - the command line and the Python package - does the same way, above the crates of each
//! job. [`host_choice`]: the host a plan is for and the promise asked, as a user names them.

pub mod host_choice;
