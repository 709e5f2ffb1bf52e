//! `Nanos`: time as integer nanoseconds, parsed from and printed as human units ("250us", "10ms").

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

/// A non-negative span or instant of time in integer nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", NS_PER_US),
    ("µs", NS_PER_US),
    ("ms", NS_PER_MS),
    ("s", NS_PER_S),
    ("m", 60 * NS_PER_S),
    ("min", 60 * NS_PER_S),
    ("h", 3600 * NS_PER_S),
    ("d", 86_400 * NS_PER_S),
];

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * NS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * NS_PER_MS)
    }
    pub const fn from_secs(seconds: u64) -> Nanos {
        Nanos(seconds * NS_PER_S)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / NS_PER_US as f64
    }
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
    pub fn checked_add(self, other: Nanos) -> Option<Nanos> {
        self.0.checked_add(other.0).map(Nanos)
    }

    /// Parse "10ms", "250us", "1.5s", "800ns", "2min", "1h", "1d". A bare number is rejected (the unit is
    /// required so that files are unambiguous). Fractions are allowed if the result is a whole
    /// number of nanoseconds after rounding to the nearest nanosecond.
    pub fn parse(text: &str) -> Result<Nanos, String> {
        let s = text.trim();
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(|| {
            format!("\"{text}\" has no unit (expected e.g. \"10ms\", \"250us\", \"1.5s\", \"800ns\")")
        })?;
        let (num, unit) = (s[..split].trim(), s[split..].trim());
        if num.is_empty() {
            return Err(format!("\"{text}\" is not a duration (expected a number followed by a unit, e.g. \"10ms\")"));
        }
        let scale = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, k)| *k).ok_or_else(|| {
            format!("\"{text}\" has an unknown unit \"{unit}\" (expected ns, us, ms, s, m or min, h or d)")
        })?;
        parse_scaled(num, scale)
            .ok_or_else(|| format!("\"{text}\" is not a valid duration (number too large or malformed)"))
    }
}

/// Exact decimal parse of `num` * `scale` without going through f64 for integers.
fn parse_scaled(num: &str, scale: u64) -> Option<Nanos> {
    let mut parts = num.splitn(2, '.');
    let int: u64 = match parts.next()? {
        "" => 0,
        d => d.parse().ok()?,
    };
    let mut total = int.checked_mul(scale)?;
    if let Some(frac) = parts.next() {
        if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 18 {
            return None;
        }
        let digits: u128 = frac.parse().ok()?;
        let denom = 10u128.pow(frac.len() as u32);
        let add = (digits * scale as u128 + denom / 2) / denom;
        total = total.checked_add(u64::try_from(add).ok()?)?;
    }
    Some(Nanos(total))
}

impl fmt::Display for Nanos {
    /// Exact representation in the largest unit not above the value ("1.5s", "250us", "800ns").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            return write!(f, "0ns");
        }
        for (unit, k) in [("s", NS_PER_S), ("ms", NS_PER_MS), ("us", NS_PER_US)] {
            if n >= k {
                if n.is_multiple_of(k) {
                    return write!(f, "{}{unit}", n / k);
                }
                let digits = k.ilog10() as usize;
                let frac = format!("{:0digits$}", n % k);
                return write!(f, "{}.{}{unit}", n / k, frac.trim_end_matches('0'));
            }
        }
        write!(f, "{n}ns")
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, other: Nanos) -> Nanos {
        Nanos(self.0 + other.0)
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, other: Nanos) {
        self.0 += other.0;
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, other: Nanos) -> Nanos {
        Nanos(self.0 - other.0)
    }
}
impl SubAssign for Nanos {
    fn sub_assign(&mut self, other: Nanos) {
        self.0 -= other.0;
    }
}

impl Serialize for Nanos {
    /// In files a duration is a human string ("250us"); JSON fields ending in `_ns` use plain u64.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Nanos, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Nanos;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a duration string with a unit, e.g. \"10ms\", \"250us\", \"1.5s\"")
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Nanos, E> {
                Nanos::parse(value).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl schemars::JsonSchema for Nanos {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with a unit: ns, us, ms, s, min, h, d (e.g. \"10ms\", \"250us\", \"1.5s\")."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_units() {
        assert_eq!(Nanos::parse("10ms").unwrap(), Nanos(10_000_000));
        assert_eq!(Nanos::parse("250us").unwrap(), Nanos(250_000));
        assert_eq!(Nanos::parse("1.5s").unwrap(), Nanos(1_500_000_000));
        assert_eq!(Nanos::parse("800ns").unwrap(), Nanos(800));
        assert_eq!(Nanos::parse(" 2 min ").unwrap(), Nanos(120 * NS_PER_S));
        // m is minutes, as cyclictest's -D and rtla's -d take it: one rule for every duration
        assert_eq!(Nanos::parse("1m").unwrap(), Nanos::parse("60s").unwrap());
        assert_eq!(Nanos::parse("1.5m").unwrap(), Nanos(90 * NS_PER_S));
        assert_eq!(Nanos::parse("0.0001ms").unwrap(), Nanos(100));
        assert_eq!(Nanos::parse("1h").unwrap(), Nanos::from_secs(3600));
        assert_eq!(Nanos::parse("1.5d").unwrap(), Nanos::from_secs(36 * 3600));
    }

    #[test]
    fn rejects_bad() {
        for bad in ["", "10", "ms", "10 parsecs", "1.2.3ms", "-5ms", "1e3ms", "99999999999999999999s", "1.ms"] {
            assert!(Nanos::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn displays_shortest() {
        assert_eq!(Nanos(10_000_000).to_string(), "10ms");
        assert_eq!(Nanos(1_500_000_000).to_string(), "1.5s");
        assert_eq!(Nanos(250_000).to_string(), "250us");
        assert_eq!(Nanos(800).to_string(), "800ns");
        assert_eq!(Nanos(0).to_string(), "0ns");
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC*") {
            let _ = Nanos::parse(&s);
        }

        #[test]
        fn integer_ns_round_trips(n in 0u64..u64::MAX / 2) {
            prop_assert_eq!(Nanos::parse(&format!("{n}ns")).unwrap(), Nanos(n));
        }

        #[test]
        fn display_round_trips(n in 0u64..10_000_000_000_000u64) {
            prop_assert_eq!(Nanos::parse(&Nanos(n).to_string()).unwrap(), Nanos(n));
        }
    }
}
