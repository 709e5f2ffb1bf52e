//! Numbers as people read them in reports: durations with three significant digits in the
//! largest fitting unit ("12.3us", "1.05ms"), ratios and relative differences. A value that is
//! not finite, or outside what the quantity can be (a duration beyond u64 nanoseconds), reads
//! "invalid (1e308)" in every table, tooltip and axis, never "inf%" or a 300-digit number.

/// The longest duration a result can carry: u64 nanoseconds.
const MAX_DURATION_NS: f64 = u64::MAX as f64;

/// The largest ratio shown as a percentage (a guest's utilisation over many cores stays below).
const MAX_RATIO: f64 = 1e3;

/// How a value that cannot be shown as its quantity is shown: "invalid (1e308)", "invalid (NaN)".
pub fn invalid(v: f64) -> String {
    format!("invalid ({v:e})")
}

/// A duration in nanoseconds with three significant digits: "850ns", "12.3us", "1.05ms", "2.50s".
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() || ns.abs() > MAX_DURATION_NS {
        return invalid(ns);
    }
    let (value, unit) = match ns.abs() {
        a if a >= 1e9 => (ns / 1e9, "s"),
        a if a >= 1e6 => (ns / 1e6, "ms"),
        a if a >= 1e3 => (ns / 1e3, "us"),
        _ => return format!("{}ns", ns.round()),
    };
    format!("{}{unit}", three_digits(value))
}

/// An axis label: trailing zeros of the decimals dropped ("10.0us" -> "10us", "12.50%" -> "12.5%").
pub fn tidy(label: &str) -> String {
    let split = label.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(label.len());
    let (num, unit) = label.split_at(split);
    let num = if num.contains('.') { num.trim_end_matches('0').trim_end_matches('.') } else { num };
    format!("{num}{unit}")
}

/// A number with three significant digits (no exponent): 1.23, 12.3, 123.
pub fn three_digits(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.decimals$}")
}

/// A ratio in [0, 1] as a percentage with enough digits to tell 0.999 from 1: "99.90%".
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() || r.abs() > MAX_RATIO {
        invalid(r)
    } else if (r - 1.0).abs() < f64::EPSILON {
        "100%".into()
    } else {
        format!("{:.2}%", r * 100.0)
    }
}

/// A plain number for axis ticks: integers without decimals, others with up to 3 digits.
pub fn fmt_plain(v: f64) -> String {
    if !v.is_finite() {
        invalid(v)
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A bit rate in the largest fitting decimal unit, two decimals: "18.83 Gb/s", "2.05 kb/s".
pub fn fmt_bps(b: f64) -> String {
    if !b.is_finite() {
        return invalid(b);
    }
    let (v, unit) = [(1e9, "Gb/s"), (1e6, "Mb/s"), (1e3, "kb/s")]
        .into_iter()
        .find(|(s, _)| b >= *s)
        .map_or((b, "b/s"), |(s, u)| (b / s, u));
    format!("{v:.2} {unit}")
}

/// Seconds from nanoseconds for time axes: "0.5s", "12s".
pub fn fmt_seconds(ns: f64) -> String {
    if !ns.is_finite() {
        return invalid(ns);
    }
    format!("{}s", fmt_plain((ns / 1e9 * 1000.0).round() / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_three_significant_digits() {
        assert_eq!(fmt_ns(850.0), "850ns");
        assert_eq!(fmt_ns(12_345.0), "12.3us");
        assert_eq!(fmt_ns(1_049_000.0), "1.05ms");
        assert_eq!(fmt_ns(250_000.0), "250us");
        assert_eq!(fmt_ns(2.5e9), "2.50s");
        assert_eq!(fmt_ns(f64::NAN), "invalid (NaN)");
    }

    #[test]
    fn ratios_and_plain_numbers() {
        assert_eq!(fmt_ratio(1.0), "100%");
        assert_eq!(fmt_ratio(0.9991), "99.91%");
        assert_eq!(fmt_plain(0.5), "0.5");
        assert_eq!(fmt_plain(3.0), "3");
        assert_eq!(fmt_seconds(1.5e9), "1.5s");
        assert_eq!(tidy("10.0us"), "10us");
        assert_eq!(tidy("12.50%"), "12.5%");
        assert_eq!(tidy("100ns"), "100ns");
    }

    #[test]
    fn values_that_are_not_finite_or_out_of_range_say_so() {
        assert_eq!(fmt_ratio(1e308), "invalid (1e308)");
        assert_eq!(fmt_ratio(f64::INFINITY), "invalid (inf)");
        assert_eq!(fmt_ns(1e308), "invalid (1e308)");
        assert_eq!(fmt_ns(-f64::INFINITY), "invalid (-inf)");
        assert_eq!(fmt_plain(f64::NAN), "invalid (NaN)");
        assert_eq!(fmt_bps(f64::INFINITY), "invalid (inf)");
        assert_eq!(fmt_seconds(f64::NAN), "invalid (NaN)");
        assert_eq!(fmt_ns(u64::MAX as f64), "18446744074s");
        assert_eq!(fmt_ratio(1e300), "invalid (1e300)");
        assert_eq!(fmt_ratio(2.5), "250.00%");
    }
}
