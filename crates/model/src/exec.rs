//! Execution-time models of a task: constant (= WCET), normal, uniform, or empirical samples
//! loaded from a file. Gives the mean and variance the probabilistic budget needs, and quantiles.

use crate::duration::Nanos;
use crate::error::InputError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How long a task's jobs execute.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "dist", rename_all = "lowercase")]
pub enum ExecModel {
    /// Every job runs for exactly the WCET.
    Constant,
    /// Normal(mean, sd); simulators truncate draws to [0, WCET].
    Normal { mean: Nanos, sd: Nanos },
    /// Uniform on [min, max].
    Uniform { min: Nanos, max: Nanos },
    /// Empirical distribution of measured execution times.
    Samples(Samples),
}

/// Measured execution times, sorted ascending (nanoseconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Samples {
    pub path: PathBuf,
    #[serde(skip)]
    pub sorted_ns: Arc<Vec<u64>>,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.sorted_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.sorted_ns.is_empty()
    }
    pub fn max(&self) -> Nanos {
        Nanos(*self.sorted_ns.last().unwrap_or(&0))
    }
    /// Sample mean.
    pub fn mean(&self) -> f64 {
        self.sorted_ns.iter().map(|&v| v as f64).sum::<f64>() / self.len().max(1) as f64
    }
    /// Population variance of the samples.
    pub fn variance(&self) -> f64 {
        let m = self.mean();
        self.sorted_ns.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>() / self.len().max(1) as f64
    }
    /// The p-quantile (0 <= p <= 1) by the nearest-rank method: the smallest sample x such that
    /// at least a fraction p of the samples are <= x.
    pub fn quantile(&self, p: f64) -> Nanos {
        let n = self.len();
        if n == 0 {
            return Nanos::ZERO;
        }
        let rank = (p * n as f64).ceil() as usize;
        Nanos(self.sorted_ns[rank.clamp(1, n) - 1])
    }

    /// Load a samples file: one duration with unit per line ("1.25ms"); blank lines and lines
    /// starting with '#' are skipped; a first line that is not a duration is taken as a CSV header
    /// only if it contains no digit; with commas, the first column is used.
    pub fn load(path: &Path) -> Result<Samples, InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Samples)?;
        let mut values = Vec::new();
        let mut header = None;
        for (i, line) in text.lines().enumerate() {
            let cell = line.split(',').next().unwrap_or("").trim();
            if line.trim().is_empty() || cell.starts_with('#') {
                continue;
            }
            if cell.is_empty() {
                return Err(InputError::new(
                    "empty first column: expected an execution time (e.g. \"1.2ms\") as the first value of the line",
                )
                .in_file(path)
                .at_line(i + 1, 1));
            }
            if i == 0 && !cell.chars().any(|c| c.is_ascii_digit()) {
                header = Some(cell.to_string());
                continue;
            }
            let v = Nanos::parse(cell)
                .map_err(|e| InputError::new(format!("not an execution time: {e}")).in_file(path).at_line(i + 1, 1))?;
            values.push(v.0);
        }
        if let (true, Some(h)) = (values.is_empty(), header) {
            return Err(InputError::new(format!(
                "\"{h}\" is not an execution time (read as a CSV header, and no execution times follow): expected one \
                 duration per line, e.g. \"1.2ms\""
            ))
            .in_file(path)
            .at_line(1, 1));
        }
        if values.is_empty() {
            // located where the first execution time was expected: the end of the file
            return Err(InputError::new(
                "samples file holds no execution times (expected one duration per line, e.g. \"1.2ms\")",
            )
            .in_file(path)
            .at_line(text.lines().count() + 1, 1));
        }
        if values.iter().all(|&v| v == 0) {
            let first = text.lines().position(|l| Nanos::parse(l.split(',').next().unwrap_or("").trim()).is_ok());
            return Err(InputError::new("every execution time in the samples file is zero")
                .in_file(path)
                .at_line(first.unwrap_or(0) + 1, 1));
        }
        values.sort_unstable();
        Ok(Samples { path: path.to_path_buf(), sorted_ns: Arc::new(values) })
    }
}

impl ExecModel {
    /// Mean execution time E (ns) for a task with this WCET.
    pub fn mean_ns(&self, wcet: Nanos) -> f64 {
        match self {
            ExecModel::Constant => wcet.0 as f64,
            ExecModel::Normal { mean, .. } => mean.0 as f64,
            ExecModel::Uniform { min, max } => (min.0 as f64 + max.0 as f64) / 2.0,
            ExecModel::Samples(s) => s.mean(),
        }
    }

    /// Variance Var (ns^2) of the execution time.
    pub fn variance_ns2(&self) -> f64 {
        match self {
            ExecModel::Constant => 0.0,
            ExecModel::Normal { sd, .. } => (sd.0 as f64).powi(2),
            ExecModel::Uniform { min, max } => (max.0 as f64 - min.0 as f64).powi(2) / 12.0,
            ExecModel::Samples(s) => s.variance(),
        }
    }

    /// Whether the model carries a distribution (anything but constant).
    pub fn is_stochastic(&self) -> bool {
        !matches!(self, ExecModel::Constant)
    }

    /// Draw one job's execution time. Normal draws are clamped to [1 ns, WCET] (as the Burns 2014
    /// generator does: "never above WCET"); uniform and sample draws are also capped at the WCET;
    /// samples are drawn uniformly from the empirical data.
    pub fn draw<R: rand::Rng + ?Sized>(&self, wcet: Nanos, rng: &mut R) -> Nanos {
        use rand::RngExt;
        let v = match self {
            ExecModel::Constant => wcet.0,
            ExecModel::Normal { mean, sd } => truncated_normal(mean.0 as f64, sd.0 as f64, wcet.0 as f64, rng),
            ExecModel::Uniform { min, max } => rng.random_range(min.0..=max.0),
            ExecModel::Samples(s) => s.sorted_ns[rng.random_range(0..s.len())],
        };
        Nanos(v.clamp(1, wcet.0.max(1)))
    }

    pub fn samples(&self) -> Option<&Samples> {
        match self {
            ExecModel::Samples(s) => Some(s),
            _ => None,
        }
    }
}

/// Most draws a truncated normal makes before it gives up and clamps (reached only when nearly
/// all the mass lies outside [1 ns, WCET], e.g. a mean far above the WCET).
const TRUNCATION_TRIES: u32 = 64;

/// A normal draw truncated to [1 ns, WCET] by rejection (a draw outside is drawn again), so the
/// shape inside the interval is the normal's and no mass piles up at the bounds as clamping
/// would put it. Falls back to clamping after [`TRUNCATION_TRIES`] rejections.
fn truncated_normal<R: rand::Rng + ?Sized>(mean: f64, sd: f64, wcet: f64, rng: &mut R) -> u64 {
    use rand::RngExt;
    let mut x = mean;
    for _ in 0..TRUNCATION_TRIES {
        let z: f64 = rng.sample(rand_distr::StandardNormal);
        x = (mean + sd * z).round();
        if (1.0..=wcet).contains(&x) {
            return x as u64;
        }
    }
    x.clamp(1.0, wcet) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn loads_and_summarises_samples() {
        let f = write("exec\n1ms\n# comment\n\n3ms\n2ms, extra\n");
        let s = Samples::load(f.path()).unwrap();
        assert_eq!(*s.sorted_ns, vec![1_000_000, 2_000_000, 3_000_000]);
        assert_eq!(s.mean(), 2_000_000.0);
        assert!((s.variance() - 2.0e12 / 3.0).abs() < 1.0);
        assert_eq!(s.quantile(0.5), Nanos(2_000_000));
        assert_eq!(s.quantile(0.99), Nanos(3_000_000));
        assert_eq!(s.quantile(0.0), Nanos(1_000_000));
        assert_eq!(s.max(), Nanos(3_000_000));
    }

    #[test]
    fn rejects_bad_samples_with_line() {
        let f = write("1ms\n2ms\nbanana\n");
        let e = Samples::load(f.path()).unwrap_err();
        assert_eq!(e.at.line_col, Some((3, 1)));
        assert!(Samples::load(write("\n# nothing\n").path()).is_err());
        let e = Samples::load(write("1ms\n, 2ms\n").path()).unwrap_err();
        assert_eq!(e.at.line_col, Some((2, 1)), "{e}");
        assert!(Samples::load(Path::new("/nonexistent/x.csv")).is_err());
    }

    #[test]
    fn draws_stay_within_wcet_and_match_moments() {
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let w = Nanos(1_000_000);
        let n = ExecModel::Normal { mean: Nanos(300_000), sd: Nanos(166_667) };
        let draws: Vec<u64> = (0..20_000).map(|_| n.draw(w, &mut rng).0).collect();
        assert!(draws.iter().all(|&d| (1..=w.0).contains(&d)));
        // truncated to [0, WCET] at a = -1.8 SD: mean mu + sd * phi(1.8) / Phi(1.8) ~ 313,640
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean - 313_640.0).abs() < 4_000.0, "mean {mean}");
        // truncated, not clamped: no mass piles up at the WCET (mean 70%: 3.6% of a normal lies
        // beyond it; clamping would put all of it on exactly the WCET)
        let n = ExecModel::Normal { mean: Nanos(700_000), sd: Nanos(166_667) };
        let draws: Vec<u64> = (0..20_000).map(|_| n.draw(w, &mut rng).0).collect();
        assert!(draws.iter().all(|&d| d <= w.0));
        assert!(draws.iter().filter(|&&d| d == w.0).count() < 5, "draws pile up at the WCET");
        // the truncated normal's mean: mu - sd * phi(b) / Phi(b) with b = 1.8 -> ~ 0.6862 WCET
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean - 686_200.0).abs() < 4_000.0, "mean {mean}");
        assert_eq!(ExecModel::Constant.draw(w, &mut rng), w);
        let u = ExecModel::Uniform { min: Nanos(10), max: Nanos(20) };
        assert!((0..1000).all(|_| (10..=20).contains(&u.draw(w, &mut rng).0)));
    }

    #[test]
    fn moments_of_parametric_models() {
        let w = Nanos(10);
        assert_eq!(ExecModel::Constant.mean_ns(w), 10.0);
        assert_eq!(ExecModel::Constant.variance_ns2(), 0.0);
        let u = ExecModel::Uniform { min: Nanos(0), max: Nanos(12) };
        assert_eq!(u.mean_ns(w), 6.0);
        assert_eq!(u.variance_ns2(), 12.0);
        let n = ExecModel::Normal { mean: Nanos(5), sd: Nanos(2) };
        assert_eq!(n.variance_ns2(), 4.0);
    }
}
