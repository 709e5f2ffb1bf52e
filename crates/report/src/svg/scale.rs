//! Axis scales (linear and base-10 logarithmic) mapping data values to pixels, with "nice" tick
//! positions (1/2/5 x 10^k steps for linear, decades with 2 and 5 minor ticks for log).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleKind {
    Linear,
    Log,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub kind: ScaleKind,
    pub lo: f64,
    pub hi: f64,
    /// Pixel positions of `lo` and `hi` (px1 < px0 for a y axis that grows upwards).
    pub px0: f64,
    pub px1: f64,
}

/// A tick: its value, and whether it carries a label.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub major: bool,
}

impl Scale {
    /// Linear scale over [min, max] widened to nice tick steps (and to a non-empty range).
    pub fn linear(min: f64, max: f64, px0: f64, px1: f64) -> Scale {
        let (min, max) = (finite_or(min, 0.0), finite_or(max, 1.0));
        let (min, max) = if max > min { (min, max) } else { (min - 1.0, max + 1.0) };
        let step = nice_step((max - min) / 5.0);
        Scale { kind: ScaleKind::Linear, lo: (min / step).floor() * step, hi: (max / step).ceil() * step, px0, px1 }
    }

    /// Linear scale over exactly [lo, hi] (e.g. a ratio axis 0..1).
    pub fn linear_exact(lo: f64, hi: f64, px0: f64, px1: f64) -> Scale {
        Scale { kind: ScaleKind::Linear, lo, hi, px0, px1 }
    }

    /// Log scale over whole decades covering [min, max]; values <= 0 are clamped to 1.
    pub fn log(min: f64, max: f64, px0: f64, px1: f64) -> Scale {
        let min = finite_or(min, 1.0).max(1.0);
        let max = finite_or(max, min).max(min);
        let lo = 10f64.powf(min.log10().floor());
        let mut hi = 10f64.powf(max.log10().ceil());
        if hi <= lo {
            hi = lo * 10.0;
        }
        Scale { kind: ScaleKind::Log, lo, hi, px0, px1 }
    }

    /// Log scale over whole decades covering [min, max] for positive values of any size
    /// (probabilities down to 1e-6 and below); values <= 0 map to the low end.
    pub fn log_decades(min: f64, max: f64, px0: f64, px1: f64) -> Scale {
        let min = if min.is_finite() && min > 0.0 { min } else { 1e-6 };
        let max = if max.is_finite() && max > min { max } else { min * 10.0 };
        let lo = 10f64.powf(min.log10().floor().max(-300.0));
        let hi = 10f64.powf(max.log10().ceil().min(300.0)).max(lo * 10.0);
        Scale { kind: ScaleKind::Log, lo, hi, px0, px1 }
    }

    /// Pixel position of a value (values outside the range are clamped to the ends, a NaN
    /// value or range maps to the low end: no NaN or inf ever reaches the SVG).
    pub fn map(&self, value: f64) -> f64 {
        let t = match self.kind {
            ScaleKind::Linear => (value - self.lo) / (self.hi - self.lo),
            ScaleKind::Log => (value.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()),
        };
        let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
        self.px0 + t * (self.px1 - self.px0)
    }

    pub fn ticks(&self) -> Vec<Tick> {
        match self.kind {
            ScaleKind::Linear => linear_ticks(self.lo, self.hi),
            ScaleKind::Log => log_ticks(self.lo, self.hi),
        }
    }
}

/// `value` when finite (within half the f64 range, so that tick arithmetic stays finite), else
/// `fallback`.
fn finite_or(value: f64, fallback: f64) -> f64 {
    if value.is_finite() && value.abs() < f64::MAX / 16.0 {
        value
    } else {
        fallback
    }
}

/// The 1/2/5 x 10^k step nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn linear_ticks(lo: f64, hi: f64) -> Vec<Tick> {
    let step = nice_step((hi - lo) / 5.0);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| Tick { value: k as f64 * step, major: true }).collect()
}

fn log_ticks(lo: f64, hi: f64) -> Vec<Tick> {
    let mut ticks = Vec::new();
    let mut decade = lo;
    while decade <= hi * 1.000_001 {
        ticks.push(Tick { value: decade, major: true });
        for m in [2.0, 5.0] {
            if decade * m < hi {
                ticks.push(Tick { value: decade * m, major: false });
            }
        }
        decade *= 10.0;
    }
    ticks
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn log_scale_covers_decades() {
        let s = Scale::log(3_000.0, 2_000_000.0, 0.0, 300.0);
        assert_eq!((s.lo, s.hi), (1_000.0, 10_000_000.0));
        assert_eq!(s.map(1_000.0), 0.0);
        assert_eq!(s.map(10_000_000.0), 300.0);
        assert!((s.map(100_000.0) - 150.0).abs() < 1e-9);
        let majors: Vec<f64> = s.ticks().iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(majors, vec![1e3, 1e4, 1e5, 1e6, 1e7]);
    }

    #[test]
    fn log_decades_reach_below_one() {
        let s = Scale::log_decades(1e-4, 1.0, 300.0, 0.0);
        assert_eq!((s.lo, s.hi), (1e-4, 1.0));
        assert_eq!(s.map(1e-4), 300.0);
        assert_eq!(s.map(0.0), 300.0, "zero maps to the low end");
        let majors = s.ticks().iter().filter(|t| t.major).count();
        assert_eq!(majors, 5);
        let s = Scale::log_decades(f64::NAN, -1.0, 0.0, 1.0);
        assert!(s.lo > 0.0 && s.hi > s.lo && s.hi.is_finite());
    }

    #[test]
    fn linear_ticks_are_nice() {
        let s = Scale::linear(0.0, 0.93, 0.0, 100.0);
        let v: Vec<f64> = s.ticks().iter().map(|t| t.value).collect();
        assert_eq!(s.hi, 1.0);
        assert!(v.len() >= 4 && v.len() <= 11, "{v:?}");
    }

    #[test]
    fn scales_over_invalid_values_stay_finite() {
        let s = Scale::linear(0.0, f64::INFINITY, 0.0, 100.0);
        assert!(s.lo.is_finite() && s.hi.is_finite());
        assert_eq!(s.map(f64::NAN), 0.0);
        assert_eq!(s.map(f64::INFINITY), 100.0);
        let s = Scale::linear_exact(0.0, f64::NAN, 0.0, 100.0);
        assert_eq!(s.map(0.5), 0.0);
        assert!(s.ticks().iter().all(|t| t.value.is_finite()));
        let s = Scale::log(f64::NAN, f64::INFINITY, 0.0, 100.0);
        assert!(s.hi.is_finite() && s.ticks().len() < 10);
    }

    proptest! {
        #[test]
        fn mapping_is_monotone_and_inside(
            a in 1.0f64..1e9, b in 1.0f64..1e9, x in 0.0f64..2e9, y in 0.0f64..2e9, log in any::<bool>()
        ) {
            let s = if log {
                Scale::log(a.min(b), a.max(b), 50.0, 550.0)
            } else {
                Scale::linear(a.min(b), a.max(b), 50.0, 550.0)
            };
            let (px, py) = (s.map(x), s.map(y));
            prop_assert!((50.0..=550.0).contains(&px));
            if x <= y { prop_assert!(px <= py); }
            prop_assert!(s.lo <= a.min(b) && s.hi >= a.max(b));
        }
    }
}
