//! The candidate thresholds of the crate's threshold rule, shared by the fit of the samples and
//! the fit of declustered maxima ([`crate::decluster`]).

/// The candidate thresholds, as the fraction of samples above them.
pub const THRESHOLD_FRACTIONS: [f64; 7] = [0.10, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001];

/// The smallest value leaving at most `k` samples strictly above it, and how many it leaves.
pub fn level_leaving(sorted: &[(u64, u64)], k: u64) -> (u64, u64) {
    let mut above = 0u64;
    for &(v, c) in sorted.iter().rev() {
        if above + c > k {
            return (v, above);
        }
        above += c;
    }
    (sorted.first().map_or(0, |&(v, _)| v), above - sorted.first().map_or(0, |&(_, c)| c))
}
