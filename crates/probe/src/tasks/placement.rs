//! Where a vCPU runs its tasks, as taken from the plan ([`Placement`]).

use crate::rt::Reservation;

/// A vCPU's reservation, core and tasks as taken from the plan.
#[derive(Debug, Clone)]
pub(super) struct Placement {
    pub id: u32,
    pub core: u32,
    pub reservation: Reservation,
    /// Indices of the guest's tasks it runs.
    pub tasks: Vec<usize>,
}
