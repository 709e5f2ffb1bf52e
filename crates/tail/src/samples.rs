//! Samples to fit: a CSV of samples in time order, or a results document's lossless histogram
//! with its per-interval maxima. Every bad input is an [`InputError`] naming file, line and field.

use crate::{Data, Series};
use rtvirt_model::input::InputKind;
use rtvirt_model::results::Results;
use rtvirt_model::{InputError, Nanos};
use std::path::Path;

/// How to tell the time a CSV covers when it has no `t_ns` column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The wall time the samples cover (wins over `t_ns` and `rate_hz`).
    pub duration: Option<Nanos>,
    /// Samples per second (default 1000: cyclictest's default interval of 1 ms).
    pub rate_hz: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing { duration: None, rate_hz: 1000.0 }
    }
}

/// Whether the file reads as a CSV of samples: named `*.csv`, or its first line that is not blank
/// names a `latency_ns` column or is a number.
pub fn is_csv(path: &Path, text: &str) -> bool {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        return true;
    }
    let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) else { return false };
    first.split(',').any(|f| f.trim().trim_matches('"') == "latency_ns") || first.parse::<u64>().is_ok()
}

/// A CSV file of samples in time order: a header naming `latency_ns` (and optionally `t_ns`,
/// the time of each sample), or one number per line; see [`from_csv_text`].
pub fn from_csv(path: &Path, timing: Timing) -> Result<Series, InputError> {
    let text = rtvirt_model::input::read_text(path, InputKind::Samples)?;
    from_csv_text(path, &text, timing)
}

/// The samples of a CSV text (`path` names it in errors). The time covered is `timing.duration`,
/// else the span of `t_ns` (plus one mean gap), else the count at `timing.rate_hz`.
pub fn from_csv_text(path: &Path, text: &str, timing: Timing) -> Result<Series, InputError> {
    let headerless = text.lines().map(str::trim).find(|l| !l.is_empty()).is_some_and(|l| l.parse::<u64>().is_ok());
    let mut reader =
        csv::ReaderBuilder::new().has_headers(!headerless).trim(csv::Trim::All).from_reader(text.as_bytes());
    let (latency, time) = if headerless {
        (0, None)
    } else {
        let headers = reader.headers().map_err(|e| csv_error(path, e))?.clone();
        let find = |name: &str| headers.iter().position(|h| h == name);
        let latency = find("latency_ns").ok_or_else(|| {
            InputError::field(
                "latency_ns",
                "missing column: expected a header line naming latency_ns (and optionally t_ns)",
            )
            .in_file(path)
            .at_line(1, 1)
        })?;
        (latency, find("t_ns"))
    };
    let (mut values, mut times) = (Vec::new(), Vec::new());
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let number = |column: usize, field: &str| -> Result<u64, InputError> {
            let cell = record.get(column).unwrap_or("");
            cell.parse::<u64>().map_err(|_| {
                InputError::field(field, format!("{cell:?}: expected a whole number of nanoseconds"))
                    .in_file(path)
                    .at_line(line, column + 1)
            })
        };
        values.push(number(latency, "latency_ns")?);
        if let Some(t) = time {
            times.push(number(t, "t_ns")?);
        }
    }
    let duration_ns = match (timing.duration, &times[..]) {
        (Some(d), _) => d.0,
        (None, [first, .., last]) if last > first => {
            let n = times.len() as f64;
            ((last - first) as f64 * n / (n - 1.0)).round() as u64
        }
        _ => (values.len() as f64 / timing.rate_hz * 1e9).round() as u64,
    };
    Ok(Series { source: format!("{}: latency_ns", path.display()), duration_ns, data: Data::Ordered(values) })
}

fn csv_error(path: &Path, e: csv::Error) -> InputError {
    let line = e.position().map_or(0, |p| p.line() as usize);
    InputError::new(format!("not a CSV of samples: {e}")).in_file(path).at_line(line, 1)
}

/// A results document's samples: its lossless histogram `histogram_ns`, and the per-interval
/// maxima (`interval_maxima`, in time order, from the `intervals` or the interval report lines
/// before the document). `name` names the document in errors and in the report.
pub fn from_results(name: &str, results: &Results, interval_maxima: Vec<u64>) -> Result<Series, InputError> {
    let Some(histogram) = &results.histogram_ns else {
        return Err(InputError::field(
            "histogram_ns",
            format!(
                "{name}: results of kind {:?} hold no latency histogram, only summaries; a tail fit needs every \
                 sample (measure timer writes its histogram; or give a CSV with a latency_ns column)",
                results.kind
            ),
        ));
    };
    let buckets: Vec<(u64, u64)> = histogram.iter().map(|b| (b.value_ns, b.count)).collect();
    Ok(Series {
        source: format!("{name}: latency_ns"),
        duration_ns: results.duration_ns,
        data: Data::Histogram { buckets, blocks: interval_maxima },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, timing: Timing) -> Result<Series, InputError> {
        from_csv_text(Path::new("s.csv"), text, timing)
    }

    #[test]
    fn csv_with_header_times_or_none() {
        let s = read("t_ns,latency_ns\n0,5\n1000000,7\n2000000,6\n", Timing::default()).unwrap();
        assert_eq!(s.data, Data::Ordered(vec![5, 7, 6]));
        assert_eq!(s.duration_ns, 3_000_000);
        let s = read("latency_ns\n5\n7\n", Timing::default()).unwrap();
        assert_eq!(s.duration_ns, 2_000_000);
        let s = read("5\n7\n6\n", Timing { duration: Some(Nanos(9)), rate_hz: 1.0 }).unwrap();
        assert_eq!((s.data, s.duration_ns), (Data::Ordered(vec![5, 7, 6]), 9));
    }

    #[test]
    fn csv_errors_name_file_line_and_field() {
        let e = read("latency_ns\n5\nlate\n", Timing::default()).unwrap_err().to_string();
        assert!(
            e.contains("s.csv") && e.contains("line 3, column 1") && e.contains("latency_ns") && e.contains("\"late\""),
            "{e}"
        );
        let e = read("t_ns,latency\n0,5\n", Timing::default()).unwrap_err().to_string();
        assert!(e.contains("missing column") && e.contains("latency_ns"), "{e}");
        let e = read("latency_ns,x\n5\n", Timing::default()).unwrap_err().to_string();
        assert!(e.contains("s.csv") && e.contains("line 2"), "{e}");
    }
}
