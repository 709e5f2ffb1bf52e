//! rtla (the kernel's real-time analysis tool) timerlat and osnoise, `top` and `hist` outputs.
//!
//! - `timerlat hist`: `# RTLA timerlat histogram`, the time unit (us, or ns with `-n`),
//!   `Index IRQ-000 Thr-000 [Usr-000] ...` then one row per bucket (its low value; rows of zeros
//!   may be skipped), then `over:`, `count:`, `min:`, `avg:`, `max:` per column. IRQ, thread
//!   (and user-space) latencies become separate documents ("IRQ", "thread", "user").
//! - `timerlat top`: per CPU `CPU COUNT | cur min avg max | cur min avg max` under the headers
//!   `IRQ Timer Latency` and `Thread Timer Latency`: min, mean, max per CPU, no percentiles.
//! - `osnoise hist`: the same histogram layout with `CPU-000` columns (the noise per sample).
//! - `osnoise top`: per CPU its runtime, total noise, CPU availability, max noise, max single
//!   noise and interference counts; kept as a `noise` document whose per-CPU maximum is the max
//!   single noise (no distribution is printed).
//!
//! Durations are read from the `0 00:10:00` (days hh:mm:ss) header.

use crate::summary::{self, Exact, Series};
use crate::text::{decimal, number, times, total, us_to_ns, Source};
use crate::Part;
use rtvirt_model::InputError;
use std::collections::BTreeMap;

pub(crate) fn import_timerlat(src: &Source) -> Result<Vec<Part>, InputError> {
    if src.lines.iter().any(|(_, l)| l.trim_start().starts_with("Index")) {
        hist(src, "timer")
    } else {
        timerlat_top(src)
    }
}

pub(crate) fn import_osnoise(src: &Source) -> Result<Vec<Part>, InputError> {
    if src.lines.iter().any(|(_, l)| l.trim_start().starts_with("Index")) {
        hist(src, "noise")
    } else {
        osnoise_top(src)
    }
}

/// "0 00:10:00" (days hh:mm:ss) anywhere in `line`, in nanoseconds (`Some(None)` beyond 2^64 ns).
fn duration_in(line: &str) -> Option<Option<u64>> {
    let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == '|').filter(|w| !w.is_empty()).collect();
    words.windows(2).find_map(|w| {
        let days: u64 = w[0].parse().ok()?;
        let hms: Vec<u64> = w[1].split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
        let [h, m, s] = hms[..] else { return None };
        let sum = |a: u64, scale: u64, b: u64| a.checked_mul(scale)?.checked_add(b);
        Some(sum(sum(sum(days, 24, h)?, 60, m)?, 60, s).and_then(|s| s.checked_mul(1_000_000_000)))
    })
}

fn duration(src: &Source) -> Result<u64, InputError> {
    match src.lines.iter().find_map(|(n, l)| duration_in(l).map(|d| (n, d))) {
        None => Ok(0),
        Some((_, Some(ns))) => Ok(ns),
        Some((n, None)) => Err(src.error(*n, "a duration (days hh:mm:ss) beyond 2^64 ns: expected one a run can have")),
    }
}

/// Column prefix -> part name and document kind.
fn part_of(prefix: &str) -> Option<&'static str> {
    match prefix {
        "IRQ" => Some("IRQ"),
        "Thr" => Some("thread"),
        "Usr" => Some("user"),
        "CPU" => None,
        _ => Some("other"),
    }
}

fn hist(src: &Source, kind: &str) -> Result<Vec<Part>, InputError> {
    let unit_ns = if src.lines.iter().any(|(_, l)| l.contains("nanoseconds")) { 1 } else { 1000 };
    let (header_line, header) = src
        .lines
        .iter()
        .find(|(_, l)| l.trim_start().starts_with("Index"))
        .map(|(n, l)| (*n, l.split_whitespace().skip(1).map(str::to_string).collect::<Vec<_>>()))
        .expect("checked by the caller");
    let columns: Vec<(String, u32)> = header
        .iter()
        .map(|c| {
            let (prefix, cpu) = c.split_once('-').ok_or_else(|| {
                src.error(header_line, format!("column \"{c}\": expected PREFIX-CPU (IRQ-000, Thr-000, CPU-000)"))
            })?;
            Ok((prefix.to_string(), number(src, header_line, cpu, "a CPU number after the column's '-'")?))
        })
        .collect::<Result<_, InputError>>()?;
    if columns.is_empty() {
        return Err(src.error(
            header_line,
            "no columns after \"Index\": expected one per CPU (IRQ-000 Thr-000 ..., or CPU-000 ...); did rtla \
             measure any CPU?",
        ));
    }
    let mut buckets: Vec<Vec<(u64, u64)>> = vec![Vec::new(); columns.len()];
    let mut totals: BTreeMap<&str, (usize, Vec<u64>)> = BTreeMap::new();
    for (n, line) in src.lines.iter().filter(|(n, _)| *n > header_line) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = words.first() else { continue };
        if first.starts_with("ALL") {
            break;
        }
        let cells = &words[1..];
        if cells.len() != columns.len() {
            return Err(src.error(
                *n,
                format!(
                    "{} values: expected {} (one per column of line {header_line}); is the line cut short?",
                    cells.len(),
                    columns.len()
                ),
            ));
        }
        let parsed =
            cells.iter().map(|c| number::<u64>(src, *n, c, "a count or a latency")).collect::<Result<Vec<_>, _>>()?;
        match first.strip_suffix(':') {
            Some(name @ ("over" | "count" | "min" | "avg" | "max")) => {
                totals.insert(name, (*n, parsed));
            }
            Some(other) => {
                return Err(src.error(*n, format!("\"{other}:\": expected a bucket, over:, count:, min:, avg: or max:")))
            }
            None => {
                let low: u64 = number(src, *n, first, "the bucket's value in the first column")?;
                let low = times(src, *n, low, unit_ns)?;
                if let Some(&(previous, _)) = buckets[0].last().filter(|b| b.0 >= low) {
                    return Err(src.error(
                        *n,
                        format!("bucket {first} after bucket {}: expected rows in ascending order", previous / unit_ns),
                    ));
                }
                for (b, count) in buckets.iter_mut().zip(parsed) {
                    b.push((low, count));
                }
            }
        }
    }
    for name in ["over", "count", "min", "avg", "max"] {
        if !totals.contains_key(name) {
            return Err(src.truncated(&format!("the \"{name}:\" line after rtla's histogram")));
        }
    }
    let row = |name: &str, i: usize| times(src, totals[name].0, totals[name].1[i], unit_ns);
    let bucket_width = buckets
        .first()
        .map_or(unit_ns, |b| b.windows(2).map(|w| w[1].0 - w[0].0).filter(|&d| d > 0).min().unwrap_or(unit_ns));
    let mut groups: BTreeMap<Option<&'static str>, Vec<Series>> = BTreeMap::new();
    for (i, (prefix, cpu)) in columns.iter().enumerate() {
        let (line, _) = totals["count"];
        let (count, over) = (totals["count"].1[i], totals["over"].1[i]);
        let sum =
            total(src, line, buckets[i].iter().map(|b| b.1).chain([over]), &format!("column {}'s rows", header[i]))?;
        if sum != count {
            return Err(src.error(
                line,
                format!(
                    "column {}: count {count} but its rows and over: add up to {sum}: expected equal (rows missing?)",
                    header[i],
                ),
            ));
        }
        let exact = Exact { min: Some(row("min", i)?), mean: Some(row("avg", i)? as f64), max: Some(row("max", i)?) };
        let bound = buckets[i].last().map_or(0, |b| b.0.saturating_add(bucket_width));
        let kept = summary::histogram(&buckets[i], over, bound, exact);
        let series = Series { cpu: *cpu, summary: summary::of_buckets(&kept, exact), histogram: Some(kept) };
        groups.entry(part_of(prefix)).or_default().push(series);
    }
    let duration = duration(src)?;
    groups
        .into_iter()
        .map(|(part, series)| {
            let mut p = Part::new(summary::per_cpu(src, kind, duration, series)?);
            p.part = part;
            Ok(p)
        })
        .collect()
}

fn timerlat_top(src: &Source) -> Result<Vec<Part>, InputError> {
    let (group_line, groups) = src
        .lines
        .iter()
        .find(|(_, l)| l.contains("Timer Latency") && l.contains('|'))
        .map(|(n, l)| (*n, l.split('|').skip(1).map(|g| g.trim().to_string()).collect::<Vec<_>>()))
        .ok_or_else(|| {
            src.truncated("rtla timerlat top's header \"| IRQ Timer Latency (us) | Thread Timer Latency (us)\"")
        })?;
    let unit_ns = if groups.iter().any(|g| g.contains("(ns)")) { 1 } else { 1000 };
    let mut per_group: Vec<Vec<Series>> = (0..groups.len()).map(|_| Vec::new()).collect();
    for (n, line) in src.lines.iter().filter(|(n, _)| *n > group_line) {
        let fields: Vec<&str> = line.split('|').collect();
        let first: Vec<&str> = fields[0].split_whitespace().collect();
        let Some(cpu) = first.first().and_then(|c| c.parse::<u32>().ok()) else { continue };
        if fields.len() != groups.len() + 1 {
            return Err(src.error(
                *n,
                format!(
                    "{} groups of values: expected {} (as the header of line {group_line}); is the line cut short?",
                    fields.len() - 1,
                    groups.len()
                ),
            ));
        }
        let count: u64 =
            number(src, *n, first.get(1).map_or("", |c| c.trim_start_matches('#')), "the sample count after '#'")?;
        for (g, values) in fields[1..].iter().enumerate() {
            let v = values
                .split_whitespace()
                .map(|w| number::<u64>(src, *n, w, "cur min avg max"))
                .collect::<Result<Vec<_>, _>>()?;
            let [_, min, avg, max] = v[..] else {
                return Err(
                    src.error(*n, format!("{} values in group {}: expected 4 (cur min avg max)", v.len(), g + 1))
                );
            };
            let ns = |v: u64| times(src, *n, v, unit_ns);
            let summary = crate::cyclictest::min_avg_max(count, ns(min)?, ns(avg)? as f64, ns(max)?);
            per_group[g].push(Series { cpu, summary, histogram: None });
        }
    }
    if per_group.iter().all(|g| g.is_empty()) {
        return Err(src.truncated("rtla timerlat top's rows \"CPU #COUNT | cur min avg max | ...\""));
    }
    let duration = duration(src)?;
    groups
        .iter()
        .zip(per_group)
        .map(|(name, series)| {
            let mut p = Part::new(summary::per_cpu(src, "timer", duration, series)?);
            p.part = Some(if name.starts_with("IRQ") {
                "IRQ"
            } else if name.starts_with("Thread") {
                "thread"
            } else {
                "user"
            });
            Ok(p)
        })
        .collect()
}

fn osnoise_top(src: &Source) -> Result<Vec<Part>, InputError> {
    let (header_line, _) =
        src.lines.iter().find(|(_, l)| l.trim_start().starts_with("CPU Period")).ok_or_else(|| {
            src.truncated("rtla osnoise top's header \"CPU Period Runtime Noise % CPU Aval Max Noise Max Single ...\"")
        })?;
    let mut series = Vec::new();
    let mut noise_total = 0f64;
    let mut runtime_total = 0f64;
    for (n, line) in src.lines.iter().filter(|(n, _)| n > header_line) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(cpu) = words.first().and_then(|c| c.parse::<u32>().ok()) else { continue };
        if words.len() < 7 {
            return Err(src.error(
                *n,
                format!(
                    "{} columns: expected CPU, Period, Runtime, Noise, % CPU Aval, Max Noise, Max Single ...; is the \
                 line cut short?",
                    words.len()
                ),
            ));
        }
        let us = |i: usize, what: &str| us_to_ns(src, *n, decimal(src, *n, words[i], what)?);
        let (runtime, noise, max_single) =
            (us(2, "the runtime in us")?, us(3, "the noise in us")?, us(6, "the max single noise in us")?);
        let counts = words[7..]
            .iter()
            .map(|w| number::<u64>(src, *n, w, "an interference count"))
            .collect::<Result<Vec<_>, _>>()?;
        let interferences = total(src, *n, counts, "the interference counts")?;
        runtime_total += runtime as f64;
        noise_total += noise as f64;
        let mean = if interferences > 0 { noise as f64 / interferences as f64 } else { 0.0 };
        let summary = crate::cyclictest::min_avg_max(interferences, 0, mean, max_single);
        series.push(Series { cpu, summary, histogram: None });
    }
    if series.is_empty() {
        return Err(src.truncated("rtla osnoise top's rows, one per CPU"));
    }
    let mut r = summary::per_cpu(src, "noise", duration(src)?, series)?;
    r.environment = Some(rtvirt_model::results::Environment {
        warning: Some(format!(
            "rtla osnoise top prints no distribution: per CPU, count = interferences, mean = noise / \
             interferences, max = max single noise; {:.3}% of the runtime was noise",
            100.0 * noise_total / runtime_total.max(1.0)
        )),
        ..Default::default()
    });
    Ok(vec![Part::new(r)])
}
