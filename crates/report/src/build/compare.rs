//! Side-by-side comparison: a value shown with its difference from the baseline (the first
//! result of the table), highlighted when the difference is beyond a threshold.

use crate::doc::{Cell, Mark};

/// Which direction of change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// How a difference is measured and when it is highlighted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Diff {
    /// Relative change; highlighted beyond this fraction (latencies: 0.10 = 10%).
    Relative(f64),
    /// Absolute change of a ratio in percentage points; highlighted beyond this many points.
    Points(f64),
}

/// Relative threshold for latency statistics.
pub const LATENCY_DIFF: Diff = Diff::Relative(0.10);
/// Threshold for deadline satisfaction ratios (1 percentage point).
pub const DSR_DIFF: Diff = Diff::Points(1.0);

/// The largest relative change written out in percent.
const MAX_PERCENT: f64 = 1e6;

/// `text` plus "(+12%)" / "(-1.5 pp)" against `base`, marked Worse/Better beyond the threshold.
/// A value or difference that is not finite is shown without a difference (its text says
/// "invalid"); a relative change beyond 10^6 % reads ">+1000000%".
pub fn compared(text: String, value: f64, base: Option<f64>, diff: Diff, better: Better) -> Cell {
    let Some(base) = base.filter(|b| b.is_finite() && value.is_finite()) else { return Cell::plain(text) };
    let (change, label, beyond) = match diff {
        Diff::Relative(t) if base != 0.0 => {
            let rel = (value - base) / base.abs();
            let label = match rel * 100.0 {
                p if !p.is_finite() => return Cell::plain(text),
                p if p.abs() < 0.5 => "±0%".to_string(),
                p if p.abs() > MAX_PERCENT => format!("{}{MAX_PERCENT}%", if p > 0.0 { ">+" } else { "<-" }),
                p => format!("{p:+.0}%"),
            };
            (rel, label, rel.abs() > t)
        }
        Diff::Relative(_) => (value - base, if value == base { "+0%".into() } else { "new".into() }, value != base),
        Diff::Points(t) => {
            let pp = (value - base) * 100.0;
            if !pp.is_finite() || pp.abs() > MAX_PERCENT {
                return Cell::plain(text);
            }
            let label = if pp.abs() < 0.05 { "±0 pp".to_string() } else { format!("{pp:+.1} pp") };
            (pp, label, pp.abs() > t)
        }
    };
    let mark = match (beyond, change > 0.0, better) {
        (false, _, _) => Mark::None,
        (true, true, Better::Lower) | (true, false, Better::Higher) => Mark::Worse,
        (true, _, _) => Mark::Better,
    };
    Cell::marked(format!("{text} ({label})"), mark)
}

/// Mark the cells of a row that do not all say the same thing (absent "-" counts as a value).
pub fn mark_if_differs(cells: &mut [Cell]) {
    if cells.windows(2).any(|w| w[0].text != w[1].text) {
        cells.iter_mut().for_each(|c| c.mark = Mark::Differs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_increase_is_worse_beyond_ten_percent() {
        assert_eq!(compared("x".into(), 120.0, Some(100.0), LATENCY_DIFF, Better::Lower).mark, Mark::Worse);
        assert_eq!(compared("x".into(), 105.0, Some(100.0), LATENCY_DIFF, Better::Lower).mark, Mark::None);
        let c = compared("50".into(), 50.0, Some(100.0), LATENCY_DIFF, Better::Lower);
        assert_eq!((c.text.as_str(), c.mark), ("50 (-50%)", Mark::Better));
        assert_eq!(compared("x".into(), 1.0, None, LATENCY_DIFF, Better::Lower).text, "x");
    }

    #[test]
    fn differences_of_invalid_or_huge_values_stay_readable() {
        let c = compared("invalid (inf)".into(), f64::INFINITY, Some(100.0), LATENCY_DIFF, Better::Lower);
        assert_eq!((c.text.as_str(), c.mark), ("invalid (inf)", Mark::None));
        let c = compared("x".into(), 1e308, Some(1e-300), LATENCY_DIFF, Better::Lower);
        assert_eq!((c.text.as_str(), c.mark), ("x", Mark::None));
        let c = compared("x".into(), 1e300, Some(1.0), LATENCY_DIFF, Better::Lower);
        assert_eq!((c.text.as_str(), c.mark), ("x (>+1000000%)", Mark::Worse));
    }

    #[test]
    fn dsr_drop_is_worse_in_points() {
        let c = compared("97%".into(), 0.97, Some(0.995), DSR_DIFF, Better::Higher);
        assert_eq!((c.text.as_str(), c.mark), ("97% (-2.5 pp)", Mark::Worse));
    }

    #[test]
    fn differing_rows_are_marked() {
        let mut same = vec![Cell::plain("a"), Cell::plain("a"), Cell::plain("a")];
        mark_if_differs(&mut same);
        assert!(same.iter().all(|c| c.mark == Mark::None));
        let mut diff = vec![Cell::plain("a"), Cell::plain("b")];
        mark_if_differs(&mut diff);
        assert!(diff.iter().all(|c| c.mark == Mark::Differs));
    }
}
