//! Request arrival processes: `uniform:1ms-10ms` (Garcia Alvarado 2019: random inter-arrival times on purpose,
//! a fixed rate hides cache-related variance), `poisson:RATE` (exponential gaps), `fixed:RATE`
//! and `back-to-back` (closed loop: the next request leaves when the previous response arrived).
//! RATE is requests per second ("1000", "1000/s", "2k").

use rand::RngExt;
use rand_distr::Distribution;
use rtvirt_model::Nanos;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    Uniform { min: Nanos, max: Nanos },
    Poisson { rate: f64 },
    Fixed { rate: f64 },
    BackToBack,
}

/// The default arrival process (Garcia Alvarado 2019).
pub const DEFAULT: Arrivals = Arrivals::Uniform { min: Nanos::from_ms(1), max: Nanos::from_ms(10) };

/// Highest paced rate accepted (requests/s).
pub const MAX_RATE: f64 = 1_000_000.0;

impl Arrivals {
    pub fn parse(text: &str) -> Result<Arrivals, String> {
        let t = text.trim();
        if t == "back-to-back" || t == "closed" {
            return Ok(Arrivals::BackToBack);
        }
        let (kind, arg) = t.split_once(':').ok_or_else(|| {
            format!(
                "\"{text}\" is not an arrival process (expected uniform:1ms-10ms, poisson:RATE, fixed:RATE or \
                 back-to-back)"
            )
        })?;
        match kind {
            "uniform" => {
                let (a, b) =
                    arg.split_once('-').ok_or_else(|| format!("\"{arg}\": expected MIN-MAX, e.g. 1ms-10ms"))?;
                let (min, max) = (Nanos::parse(a)?, Nanos::parse(b)?);
                if min > max || max.0 == 0 {
                    return Err(format!("\"{arg}\": expected 0 <= MIN <= MAX and MAX > 0"));
                }
                Ok(Arrivals::Uniform { min, max })
            }
            "poisson" => Ok(Arrivals::Poisson { rate: parse_rate(arg)? }),
            "fixed" => Ok(Arrivals::Fixed { rate: parse_rate(arg)? }),
            _ => {
                Err(format!("\"{kind}\" is not an arrival process (expected uniform, poisson, fixed or back-to-back)"))
            }
        }
    }

    /// Requested mean rate (requests/s); None for back-to-back.
    pub fn rate(&self) -> Option<f64> {
        match *self {
            Arrivals::Uniform { min, max } => Some(2e9 / (min.0 + max.0) as f64),
            Arrivals::Poisson { rate } | Arrivals::Fixed { rate } => Some(rate),
            Arrivals::BackToBack => None,
        }
    }

    /// Draw the gap to the next intended send time (ns).
    pub fn gap<R: rand::Rng>(&self, rng: &mut R) -> u64 {
        match *self {
            Arrivals::Uniform { min, max } => rng.random_range(min.0..=max.0),
            Arrivals::Poisson { rate } => (rand_distr::Exp::new(rate).expect("positive rate").sample(rng) * 1e9) as u64,
            Arrivals::Fixed { rate } => (1e9 / rate) as u64,
            Arrivals::BackToBack => 0,
        }
    }
}

impl std::fmt::Display for Arrivals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arrivals::Uniform { min, max } => write!(f, "uniform:{min}-{max}"),
            Arrivals::Poisson { rate } => write!(f, "poisson:{rate}"),
            Arrivals::Fixed { rate } => write!(f, "fixed:{rate}"),
            Arrivals::BackToBack => write!(f, "back-to-back"),
        }
    }
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches("/s");
    let (num, mult) = match t.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => (t, 1.0),
    };
    let r = num
        .parse::<f64>()
        .map_err(|_| format!("\"{text}\" is not a rate (expected requests per second, e.g. 1000 or 2k)"))?
        * mult;
    if !(r.is_finite() && r > 0.0 && r <= MAX_RATE) {
        return Err(format!("rate \"{text}\" must be > 0 and at most {MAX_RATE} requests/s"));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_and_prints() {
        assert_eq!(Arrivals::parse("uniform:1ms-10ms").unwrap(), DEFAULT);
        assert_eq!(DEFAULT.to_string(), "uniform:1ms-10ms");
        assert_eq!(Arrivals::parse("poisson:2k").unwrap(), Arrivals::Poisson { rate: 2000.0 });
        assert_eq!(Arrivals::parse("fixed:100/s").unwrap(), Arrivals::Fixed { rate: 100.0 });
        assert_eq!(Arrivals::parse("back-to-back").unwrap(), Arrivals::BackToBack);
        for bad in ["uniform:10ms-1ms", "uniform:1ms", "poisson:0", "poisson:-3", "fixed:x", "burst:3", "poisson:1e12"]
        {
            assert!(Arrivals::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gaps_have_the_right_mean() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        for a in [DEFAULT, Arrivals::Poisson { rate: 1000.0 }, Arrivals::Fixed { rate: 500.0 }] {
            let n = 20_000;
            let mean = (0..n).map(|_| a.gap(&mut rng) as f64).sum::<f64>() / n as f64;
            let want = 1e9 / a.rate().unwrap();
            assert!((mean - want).abs() < want * 0.03, "{a}: {mean} vs {want}");
        }
    }
}
