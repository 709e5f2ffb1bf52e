//! oslat (rt-tests): the per-core histogram of the busy loop's interruptions (`NNN (us):` rows,
//! one column per core, the last row "including overflows"), then `Minimum:`, `Average:`,
//! `Maximum:` and `Duration:` per core. A row `L (us)` holds latencies from L us (its low
//! value); the last row's overflows are kept at L except the maximum. Kind "noise": what the
//! loop lost, not a timer's lateness.

use crate::summary::{self, Exact, Series};
use crate::text::{decimal, number, s_to_ns, times, total, us_to_ns, Source};
use crate::Part;
use rtvirt_model::InputError;

pub(crate) fn import(src: &Source) -> Result<Vec<Part>, InputError> {
    let mut cores: Option<(usize, Vec<u32>)> = None;
    let mut rows: Vec<(usize, u64, Vec<u64>, bool)> = Vec::new();
    let mut stats: [Option<(usize, Vec<f64>)>; 3] = [None, None, None];
    let mut duration_ns: Option<u64> = None;
    let mut version = None;
    for (n, line) in &src.lines {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("oslat V ") {
            version = Some(v.trim().to_string());
        } else if let Some(rest) = t.strip_prefix("Core:") {
            let list =
                rest.split_whitespace().map(|w| number(src, *n, w, "a core number")).collect::<Result<_, _>>()?;
            cores = Some((*n, list));
        } else if let Some((label, rest)) = t.split_once("(us):") {
            let bucket: u64 = number(src, *n, label, "a bucket in microseconds before \"(us):\"")?;
            let bucket = times(src, *n, bucket, 1000)?;
            let overflow = rest.contains("including overflows");
            let counts = rest
                .replace("(including overflows)", "")
                .split_whitespace()
                .map(|w| number(src, *n, w, "a count per core"))
                .collect::<Result<Vec<u64>, _>>()?;
            rows.push((*n, bucket, counts, overflow));
        } else if let Some((key, rest)) = t.split_once(':') {
            let slot = match key.trim() {
                "Minimum" => 0,
                "Average" => 1,
                "Maximum" => 2,
                "Duration" => {
                    let v = rest.replace("(sec)", "");
                    let first = v.split_whitespace().next().unwrap_or("");
                    duration_ns = Some(s_to_ns(src, *n, decimal(src, *n, first, "seconds")?)?);
                    continue;
                }
                _ => continue,
            };
            let values = rest
                .replace("(us)", "")
                .split_whitespace()
                .map(|w| decimal(src, *n, w, "microseconds per core"))
                .collect::<Result<Vec<f64>, _>>()?;
            for &us in &values {
                us_to_ns(src, *n, us)?;
            }
            stats[slot] = Some((*n, values));
        }
    }
    let (core_line, cores) = cores.ok_or_else(|| src.truncated("oslat's \"Core:\" line and its histogram"))?;
    if rows.is_empty() {
        return Err(src.truncated("oslat's histogram rows (\"001 (us): 46890923\")"));
    }
    for (n, _, counts, _) in &rows {
        if counts.len() != cores.len() {
            return Err(src.error(
                *n,
                format!(
                    "{} counts: expected {} (one per core of line {core_line}); is the line cut short?",
                    counts.len(),
                    cores.len()
                ),
            ));
        }
    }
    let [min, avg, max] = stats;
    let what = |name: &str| format!("oslat's \"{name}:\" line with one value per core");
    let (min, avg, max) = (
        min.ok_or_else(|| src.truncated(&what("Minimum")))?,
        avg.ok_or_else(|| src.truncated(&what("Average")))?,
        max.ok_or_else(|| src.truncated(&what("Maximum")))?,
    );
    if [&min, &avg, &max].iter().any(|v| v.1.len() != cores.len()) {
        return Err(src.truncated(&format!("Minimum, Average and Maximum with {} values each", cores.len())));
    }
    let last_row = rows.last().map_or(0, |r| r.0);
    let series = cores
        .iter()
        .enumerate()
        .map(|(i, &cpu)| {
            let mut buckets = Vec::new();
            let (mut overflow, mut overflow_from) = (0, 0);
            for (_, bucket, counts, is_overflow) in &rows {
                if *is_overflow {
                    (overflow, overflow_from) = (counts[i], *bucket);
                } else {
                    buckets.push((*bucket, counts[i]));
                }
            }
            total(src, last_row, buckets.iter().map(|b| b.1).chain([overflow]), &format!("core {cpu}'s counts"))?;
            let exact = Exact {
                min: Some(us_to_ns(src, min.0, min.1[i])?),
                mean: Some(avg.1[i] * 1000.0),
                max: Some(us_to_ns(src, max.0, max.1[i])?),
            };
            let kept = summary::histogram(&buckets, overflow, overflow_from, exact);
            Ok(Series { cpu, summary: summary::of_buckets(&kept, exact), histogram: Some(kept) })
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let mut part = Part::new(summary::per_cpu(src, "noise", duration_ns.unwrap_or(0), series)?);
    part.version = version;
    Ok(vec![part])
}
