//! Xen Dom0 inter-domain communication (SEEDS 2). Placeholder replaced below.
use rtvirt_model::results::Results;
use rtvirt_model::scenario::net::XenNet;

pub fn run(_x: &XenNet, seed: u64) -> Results {
    let mut r = Results::new("netsim", 0);
    r.seed = Some(seed);
    r
}
