//! rtvirt-probe: real measurement on Linux: timer, network, periodic task workloads, interference loads.
