//! Calibrated CPU work: a dependent arithmetic chain whose speed is measured on the CPU it will
//! run on, so that a job of E ns of execution time burns about E ns of CPU on an idle core.

use crate::rt;

/// Iterations of [`burn`] per nanosecond, measured on the calling thread's CPU: the fastest of
/// several trials (the least disturbed one).
pub fn calibrate() -> f64 {
    const ITERS: u64 = 200_000;
    burn(ITERS); // warm up
    let best = (0..7)
        .map(|_| {
            let t0 = rt::thread_cpu_ns();
            burn(ITERS);
            (rt::thread_cpu_ns() - t0).max(1)
        })
        .min()
        .unwrap_or(1);
    ITERS as f64 / best as f64
}

/// Burn `iters` iterations of dependent integer work.
#[inline(never)]
pub fn burn(iters: u64) -> u64 {
    let mut x = 0x243f_6a88_85a3_08d3u64;
    for _ in 0..iters {
        x = x.rotate_left(5) ^ x.wrapping_mul(0x9e37_79b9);
    }
    std::hint::black_box(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_work_takes_about_the_requested_time() {
        let per_ns = calibrate();
        assert!(per_ns > 0.0);
        let want = 2_000_000u64;
        // Best of a few trials: a noisy machine slows work down, never speeds it up.
        let got = (0..5)
            .map(|_| {
                let t0 = rt::thread_cpu_ns();
                burn((want as f64 * per_ns) as u64);
                rt::thread_cpu_ns() - t0
            })
            .min()
            .unwrap();
        assert!(got > want / 2 && got < want * 3, "{got} ns for {want} ns of work");
    }
}
