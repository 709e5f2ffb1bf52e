//! One core's reservations fitted under its cap by criticality: guests in order (most critical
//! first) each get the largest budget, up to what they ask, that the core's exact admission
//! ([`admits`]: the cap, then the EDF processor-demand test of Baruah, Rosier & Howell 1990 - the
//! planner's own) accepts next to the guests already fitted and the rest at their minimum budget.
//! Keeping room for every guest's minimum means a guest is degraded, never evicted. This is the
//! supervisor of adaptive reservations (AQuoSA, Palopoli et al. 2009), with a stated criticality
//! order instead of proportional compression and the exact admission instead of a sum of
//! bandwidths.

use crate::interface::Interface;
use crate::partition::admits;

/// The controller charges no enforcement overrun to co-located servers: it plans without a host
/// model, as `rtvirt plan` does without `--host-model`.
const NO_OVERRUN: u64 = 0;

/// The granted reservation per request (same order, most critical first); None when not even
/// every guest at its minimum budget fits.
pub fn fit_core(requests: &[Interface], cap: f64, min_budget: u64) -> Option<Vec<Interface>> {
    let floor = |i: &Interface| Interface { budget: min_budget.min(i.budget), ..*i };
    let mut granted: Vec<Interface> = Vec::with_capacity(requests.len());
    for (k, want) in requests.iter().enumerate() {
        let others: Vec<_> = granted
            .iter()
            .chain(requests[k + 1..].iter().map(floor).collect::<Vec<_>>().iter())
            .map(|i| i.as_task())
            .collect();
        let fits = |b: u64| admits(&others, Interface { budget: b, ..*want }.as_task(), cap, NO_OVERRUN);
        let least = floor(want).budget;
        if !fits(least) {
            return None;
        }
        granted.push(Interface { budget: largest(least, want.budget, fits), ..*want });
    }
    Some(granted)
}

/// Largest `b` in `[lo, hi]` with `fits(b)`, given `fits(lo)` (admission is monotone in the budget).
fn largest(lo: u64, hi: u64, fits: impl Fn(u64) -> bool) -> u64 {
    if fits(hi) {
        return hi;
    }
    let (mut lo, mut hi) = (lo, hi - 1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prm(period: u64, budget: u64) -> Interface {
        Interface { period, budget, deadline: period }
    }

    #[test]
    fn the_most_critical_keeps_its_request_the_rest_share_what_is_left() {
        let got = fit_core(&[prm(100, 60), prm(100, 60)], 0.95, 1).unwrap();
        assert_eq!(got, vec![prm(100, 60), prm(100, 35)]);
        // room is kept for the minimum of the later ones
        let got = fit_core(&[prm(100, 95), prm(100, 60)], 0.95, 5).unwrap();
        assert_eq!(got, vec![prm(100, 90), prm(100, 5)]);
        assert_eq!(fit_core(&[prm(100, 60), prm(100, 60)], 0.95, 50), None);
    }
}
