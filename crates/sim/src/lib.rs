//! rtvirt-sim: deterministic discrete-event simulator of virtualized hosts.
