//! Numbers as people read them in reports: durations with three significant digits in the
//! largest fitting unit ("12.3us", "1.05ms"), ratios and relative differences. A value that is
//! not finite, or outside what the quantity can be (a duration beyond u64 nanoseconds), reads
//! "invalid (1e308)" in every table, tooltip and axis, never "inf%" or a 300-digit number.

/// The longest duration a result can carry: u64 nanoseconds.
const MAX_DURATION_NS: f64 = u64::MAX as f64;

/// The largest ratio shown as a percentage (a guest's utilisation over many cores stays below).
const MAX_RATIO: f64 = 1e3;

/// How a value that cannot be shown as its quantity is shown: "invalid (1e308)", "invalid (NaN)".
pub fn invalid(value: f64) -> String {
    format!("invalid ({value:e})")
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
pub fn three_digits(value: f64) -> String {
    let a = value.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}")
}

/// A ratio in [0, 1] as a percentage with enough digits to tell 0.999 from 1: "99.90%".
pub fn fmt_ratio(ratio: f64) -> String {
    if !ratio.is_finite() || ratio.abs() > MAX_RATIO {
        invalid(ratio)
    } else if (ratio - 1.0).abs() < f64::EPSILON {
        "100%".into()
    } else {
        format!("{:.2}%", ratio * 100.0)
    }
}

/// A plain number for axis ticks: integers without decimals, others with up to 3 digits.
pub fn fmt_plain(value: f64) -> String {
    if !value.is_finite() {
        invalid(value)
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        let s = format!("{value:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A probability on a log axis: "1", "0.1", "0.001", then powers of ten as "1e-4".
pub fn fmt_probability(p: f64) -> String {
    if !p.is_finite() {
        return invalid(p);
    }
    if p >= 1e-3 || p == 0.0 {
        return fmt_plain(p);
    }
    let exponent = p.log10().round();
    if (p / 10f64.powf(exponent) - 1.0).abs() < 1e-6 {
        format!("1e{exponent}")
    } else {
        format!("{p:.1e}")
    }
}

/// A sample count for a log axis: "0" below one (empty bins sit there), "5", "2k", "1M".
pub fn fmt_count(c: f64) -> String {
    match c {
        c if !c.is_finite() => invalid(c),
        c if c < 1.0 => "0".into(),
        c if c >= 1e6 => format!("{}M", fmt_plain(c / 1e6)),
        c if c >= 1e3 => format!("{}k", fmt_plain(c / 1e3)),
        c => fmt_plain(c.round()),
    }
}

/// A bit rate in the largest fitting decimal unit, two decimals: "18.83 Gb/s", "2.05 kb/s".
pub fn fmt_bps(bits_per_second: f64) -> String {
    if !bits_per_second.is_finite() {
        return invalid(bits_per_second);
    }
    let (v, unit) = [(1e9, "Gb/s"), (1e6, "Mb/s"), (1e3, "kb/s")]
        .into_iter()
        .find(|(s, _)| bits_per_second >= *s)
        .map_or((bits_per_second, "b/s"), |(s, u)| (bits_per_second / s, u));
    format!("{v:.2} {unit}")
}

/// A rate per second with three significant digits and k/M suffixes: "242k/s", "181.8/s".
pub fn fmt_rate(per_s: f64) -> String {
    match per_s {
        r if !r.is_finite() => invalid(r),
        r if r >= 1e6 => format!("{}M/s", three_digits(r / 1e6)),
        r if r >= 1e4 => format!("{}k/s", three_digits(r / 1e3)),
        r => format!("{r:.1}/s"),
    }
}

/// A load that ran beside a measurement, in one line: "syscalls: 2 workers on CPUs 0-1,
/// 242k syscall rounds/s for 5.03s".
pub fn fmt_load(l: &rtvirt_model::results::LoadReport) -> String {
    let mut text =
        format!("{}: {} worker{} on CPUs {}", l.kind, l.workers, if l.workers == 1 { "" } else { "s" }, l.cpus_ran_on);
    if let Some(asked) = l.cpus_requested.as_deref().filter(|a| *a != l.cpus_ran_on) {
        text.push_str(&format!(" (asked {asked})"));
    }
    let rate = fmt_rate(l.ops_per_s);
    text.push_str(&format!(", {} {}/s for {}", rate.trim_end_matches("/s"), l.unit, fmt_ns(l.duration_ns as f64)));
    if let Some(b) = l.bytes_per_s {
        text.push_str(&format!(" ({})", fmt_bps(b * 8.0)));
    }
    if let Some(r) = l.requested_rate {
        text.push_str(&format!(", asked {}", fmt_rate(r)));
    }
    if let Some(w) = &l.r#where {
        text.push_str(&format!(", on the {w}"));
    }
    text
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
        assert_eq!(fmt_probability(1.0), "1");
        assert_eq!(fmt_probability(0.001), "0.001");
        assert_eq!(fmt_probability(1e-6 * 1.000_000_000_1), "1e-6");
        assert_eq!(fmt_count(0.1), "0");
        assert_eq!(fmt_count(20_000.0), "20k");
        assert_eq!(fmt_count(5.0), "5");
    }

    #[test]
    fn loads_read_as_one_line() {
        let l: rtvirt_model::results::LoadReport = serde_json::from_value(serde_json::json!({
            "kind": "syscalls", "workers": 2, "cpus_requested": "0-1", "cpus_ran_on": "0-1",
            "duration_ns": 5_025_823_922u64, "ops": 1_214_272, "ops_per_s": 241_606.6, "unit": "syscall rounds"}))
        .unwrap();
        assert_eq!(fmt_load(&l), "syscalls: 2 workers on CPUs 0-1, 242k syscall rounds/s for 5.03s");
        assert_eq!(fmt_rate(181.818_181_8), "181.8/s");
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
