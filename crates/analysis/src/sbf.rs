//! Supply bound functions: the least CPU time a resource is guaranteed to give in any window of
//! length `t`, and their linear lower bounds.
//!
//! - Explicit-deadline periodic (EDP) resource `(Pi, Theta, Delta)`: Easwaran, Anand & Lee 2007,
//!   Eq. (1): `sbf(t) = y Theta + max(0, t - x - y Pi)` for `t >= Delta - Theta`, else 0, with
//!   `x = Pi + Delta - 2 Theta`, `y = floor((t - (Delta - Theta)) / Pi)`; linear bound Eq. (2):
//!   `lsbf(t) = (Theta / Pi) (t - x)`.
//! - Periodic resource model (PRM) `(Pi, Theta)` of Shin & Lee 2003, Eq. (1) (Theorem 1's sbf),
//!   is the EDP resource with `Delta = Pi` (one formula: `x = 2 (Pi - Theta)`); its linear bound is
//!   Shin & Lee 2003, Eq. (3).
//! - A dedicated processor supplies `sbf(t) = t`.

/// A resource the analysis can check demand against.
pub trait Supply {
    /// Least supply in any window of length `t` (ns).
    fn sbf(&self, t: u64) -> u64;
    /// `(rate, delay)` such that `sbf(t) >= rate * (t - delay)` for all t.
    fn linear(&self) -> (f64, f64);
}

/// An explicit-deadline periodic resource: `budget` ns within `deadline` ns of the start of every
/// `period` ns (`budget <= deadline <= period`). With `deadline == period` it is Shin & Lee's PRM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edp {
    pub period: u64,
    pub budget: u64,
    pub deadline: u64,
}

impl Edp {
    /// Shin & Lee's periodic resource `(Pi, Theta)` (= EDP with `Delta = Pi`).
    pub fn prm(period: u64, budget: u64) -> Edp {
        Edp { period, budget, deadline: period }
    }

    /// Longest blackout `x = Pi + Delta - 2 Theta` (Easwaran et al. 2007, Eq. (1)).
    fn blackout(&self) -> u64 {
        self.period + self.deadline - 2 * self.budget
    }
}

impl Supply for Edp {
    /// Easwaran, Anand & Lee 2007, Eq. (1) (Shin & Lee 2003, Eq. (1) when `Delta = Pi`).
    fn sbf(&self, t: u64) -> u64 {
        let first = self.deadline - self.budget;
        if self.budget == 0 || t < first {
            return 0;
        }
        let y = (t - first) / self.period;
        let tail = t.saturating_sub(self.blackout()).saturating_sub(y * self.period);
        y * self.budget + tail
    }

    /// Easwaran, Anand & Lee 2007, Eq. (2): `lsbf(t) = Theta/Pi (t - (Pi + Delta - 2 Theta))`.
    fn linear(&self) -> (f64, f64) {
        (self.budget as f64 / self.period as f64, self.blackout() as f64)
    }
}

/// A whole processor: `sbf(t) = t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dedicated;

impl Supply for Dedicated {
    fn sbf(&self, t: u64) -> u64 {
        t
    }
    fn linear(&self) -> (f64, f64) {
        (1.0, 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Brute force: the least supply over every window start and every legal placement of the
    /// budget in every period (each period `k` supplies exactly `Theta` unit slots anywhere in
    /// `[k Pi, k Pi + Delta)`). Periods are independent, so the minimum over whole patterns is the
    /// sum over periods of the minimum over that period's placements (each enumerated as a bitmask).
    fn sbf_oracle(r: Edp, t: u64) -> u64 {
        let placements: Vec<u64> = (0u64..1 << r.deadline).filter(|m| m.count_ones() as u64 == r.budget).collect();
        (0..r.period)
            .map(|s| {
                let (lo, hi) = (s, s + t); // window [lo, hi)
                (0..=hi / r.period)
                    .map(|k| {
                        let base = k * r.period;
                        placements
                            .iter()
                            .map(|m| {
                                (0..r.deadline).filter(|j| m >> j & 1 == 1 && (lo..hi).contains(&(base + j))).count()
                                    as u64
                            })
                            .min()
                            .unwrap_or(0)
                    })
                    .sum()
            })
            .min()
            .unwrap()
    }

    fn edp() -> impl Strategy<Value = Edp> {
        (1u64..8).prop_flat_map(|p| {
            (0..=p).prop_flat_map(move |b| (b.max(1)..=p).prop_map(move |d| Edp { period: p, budget: b, deadline: d }))
        })
    }

    proptest! {
        #[test]
        fn edp_sbf_is_the_least_supply_of_any_legal_pattern(r in edp(), t in 0u64..30) {
            prop_assert_eq!(r.sbf(t), sbf_oracle(r, t));
        }

        #[test]
        fn prm_sbf_is_the_least_supply_of_any_legal_pattern(p in 1u64..8, b in 0u64..8, t in 0u64..30) {
            let r = Edp::prm(p, b.min(p));
            prop_assert_eq!(r.sbf(t), sbf_oracle(r, t));
        }

        #[test]
        fn linear_bound_is_below_sbf(r in edp(), t in 0u64..200) {
            let (rate, delay) = r.linear();
            prop_assert!(r.sbf(t) as f64 + 1e-9 >= rate * (t as f64 - delay));
        }

        #[test]
        fn sbf_grows_with_budget_and_shrinks_with_deadline(r in edp(), t in 0u64..60) {
            if r.budget < r.deadline {
                let more = Edp { budget: r.budget + 1, ..r };
                prop_assert!(more.sbf(t) >= r.sbf(t));
            }
            if r.deadline < r.period {
                let later = Edp { deadline: r.deadline + 1, ..r };
                prop_assert!(later.sbf(t) <= r.sbf(t));
            }
        }
    }

    #[test]
    fn shin_lee_piecewise_form_agrees() {
        // Shin & Lee 2003 Eq. (1) in its original piecewise form (Burns 2014).
        for p in 1u64..12 {
            for b in 1..=p {
                let r = Edp::prm(p, b);
                for t in 0..5 * p {
                    let k = if t + b > p { (t + b - p).div_ceil(p).max(1) } else { 1 };
                    let lo = ((k + 1) * p).saturating_sub(2 * b);
                    let hi = (k + 1) * p - b;
                    let v = if t >= lo && t <= hi { t - (k + 1) * (p - b) } else { (k - 1) * b };
                    assert_eq!(r.sbf(t), v, "Pi={p} Theta={b} t={t}");
                }
            }
        }
        assert_eq!(Edp::prm(5, 5).sbf(17), 17);
    }
}
