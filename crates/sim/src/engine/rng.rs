//! Seeded random streams: one independent PCG stream per (seed, stream id), so that adding a
//! task or a flow does not change the draws of the others, and results are byte-identical for the
//! same seed whatever the number of threads running sweeps.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rtvirt_model::Nanos;

/// A deterministic random stream.
#[derive(Debug, Clone)]
pub struct SimRng(Pcg64Mcg);

impl SimRng {
    /// Stream `stream` of run `seed` (SplitMix64-mixed so nearby ids give unrelated streams).
    pub fn new(seed: u64, stream: u64) -> SimRng {
        let mixed = splitmix64(seed ^ splitmix64(stream.wrapping_add(0x9E37_79B9_7F4A_7C15)));
        SimRng(Pcg64Mcg::seed_from_u64(mixed))
    }

    /// Uniform integer in [lo, hi] (inclusive).
    pub fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        use rand::RngExt;
        if lo >= hi {
            lo
        } else {
            self.0.random_range(lo..=hi)
        }
    }

    /// Uniform duration in [lo, hi].
    pub fn uniform_nanos(&mut self, lo: Nanos, hi: Nanos) -> Nanos {
        Nanos(self.uniform(lo.0, hi.0))
    }

    /// Exponentially distributed duration with the given mean (Poisson arrivals).
    pub fn exponential(&mut self, mean: Nanos) -> Nanos {
        use rand::RngExt;
        let u: f64 = self.0.random::<f64>();
        Nanos((-(1.0 - u).ln() * mean.0 as f64).round() as u64)
    }

    /// Uniform f64 in [0, 1).
    pub fn unit(&mut self) -> f64 {
        use rand::RngExt;
        self.0.random::<f64>()
    }

    /// The underlying generator (for `ExecModel::draw` and rand_distr distributions).
    pub fn inner(&mut self) -> &mut impl Rng {
        &mut self.0
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_same_draws() {
        let a: Vec<u64> = (0..10)
            .map({
                let mut r = SimRng::new(1, 2);
                move |_| r.uniform(0, 1000)
            })
            .collect();
        let b: Vec<u64> = (0..10)
            .map({
                let mut r = SimRng::new(1, 2);
                move |_| r.uniform(0, 1000)
            })
            .collect();
        let c: Vec<u64> = (0..10)
            .map({
                let mut r = SimRng::new(1, 3);
                move |_| r.uniform(0, 1000)
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut r = SimRng::new(7, 0);
        let n = 20_000;
        let mean = (0..n).map(|_| r.exponential(Nanos(1000)).0).sum::<u64>() as f64 / n as f64;
        assert!((mean - 1000.0).abs() < 30.0, "{mean}");
    }
}
