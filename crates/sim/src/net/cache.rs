//! Shared last-level-cache interference: how much slower a thread's next run is because other
//! threads streamed bytes through the LLC since it last ran.
//!
//! Model (the random-replacement "cache footprint" decay of Thiebaut & Stone, *Footprints in the
//! Cache*, ACM TOCS 5(4), 1987): a thread whose working set is `W` bytes finds a fraction
//! `1 - exp(-B / C)` of it evicted after others brought `B` new bytes into a cache of `C` bytes,
//! and pays one miss per evicted line when it re-reads it. The penalty therefore grows with the
//! bytes copied by others since the thread last ran and is capped by its footprint `W`.
//! This is what makes the guest segment of Garcia Alvarado 2019 grow with the time since the RT server last
//! ran, and makes fewer copies (socket outsourcing) pollute less.

use rtvirt_model::scenario::net::CacheModel;
use rtvirt_model::Nanos;

const LINE_BYTES: f64 = 64.0;

/// Extra CPU time of a thread with `footprint_kib` of working set after `others_bytes` bytes were
/// copied by other threads since it last ran.
pub fn reload_penalty(model: &CacheModel, footprint_kib: f64, others_bytes: f64) -> Nanos {
    if !model.enabled || footprint_kib <= 0.0 || others_bytes <= 0.0 {
        return Nanos::ZERO;
    }
    let evicted = 1.0 - (-others_bytes / (model.llc_kib * 1024.0)).exp();
    let lines = footprint_kib * 1024.0 / LINE_BYTES * evicted;
    Nanos((lines * model.miss.0 as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn no_traffic_no_penalty_and_cap_at_footprint() {
        let m = CacheModel::default();
        assert_eq!(reload_penalty(&m, 16.0, 0.0), Nanos::ZERO);
        let cap = (16.0 * 1024.0 / 64.0 * m.miss.0 as f64) as u64;
        let huge = reload_penalty(&m, 16.0, 1e12).0;
        assert!(huge <= cap && huge + 1 >= cap, "{huge} vs {cap}");
        assert_eq!(reload_penalty(&CacheModel { enabled: false, ..m }, 16.0, 1e9), Nanos::ZERO);
    }

    proptest! {
        #[test]
        fn monotone_in_bytes_and_footprint(b1 in 0f64..1e9, b2 in 0f64..1e9, w in 0f64..64.0) {
            let m = CacheModel::default();
            let (lo, hi) = if b1 <= b2 { (b1, b2) } else { (b2, b1) };
            prop_assert!(reload_penalty(&m, w, lo) <= reload_penalty(&m, w, hi));
            prop_assert!(reload_penalty(&m, w, hi) <= reload_penalty(&m, w * 2.0, hi));
        }
    }
}
