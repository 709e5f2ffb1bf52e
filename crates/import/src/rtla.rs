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
use crate::text::{number, Source};
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

/// "0 00:10:00" (days hh:mm:ss) anywhere in `line`, in nanoseconds.
fn duration_in(line: &str) -> Option<u64> {
    let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == '|').filter(|w| !w.is_empty()).collect();
    words.windows(2).find_map(|w| {
        let days: u64 = w[0].parse().ok()?;
        let hms: Vec<u64> = w[1].split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
        let [h, m, s] = hms[..] else { return None };
        Some((((days * 24 + h) * 60 + m) * 60 + s) * 1_000_000_000)
    })
}

fn duration(src: &Source) -> u64 {
    src.lines.iter().find_map(|(_, l)| duration_in(l)).unwrap_or(0)
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
                for (b, count) in buckets.iter_mut().zip(parsed) {
                    b.push((low * unit_ns, count));
                }
            }
        }
    }
    for name in ["over", "count", "min", "avg", "max"] {
        if !totals.contains_key(name) {
            return Err(src.truncated(&format!("the \"{name}:\" line after rtla's histogram")));
        }
    }
    let row = |name: &str, i: usize| totals[name].1[i];
    let bucket_width = buckets
        .first()
        .map_or(unit_ns, |b| b.windows(2).map(|w| w[1].0 - w[0].0).filter(|&d| d > 0).min().unwrap_or(unit_ns));
    let mut groups: BTreeMap<Option<&'static str>, Vec<Series>> = BTreeMap::new();
    for (i, (prefix, cpu)) in columns.iter().enumerate() {
        let (count, over) = (row("count", i), row("over", i));
        let sum: u64 = buckets[i].iter().map(|b| b.1).sum();
        if sum + over != count {
            let (line, _) = totals["count"];
            return Err(src.error(
                line,
                format!(
                    "column {}: count {count} but its rows and over: add up to {}: expected equal (rows missing?)",
                    header[i],
                    sum + over
                ),
            ));
        }
        let exact = Exact {
            min: Some(row("min", i) * unit_ns),
            mean: Some((row("avg", i) * unit_ns) as f64),
            max: Some(row("max", i) * unit_ns),
        };
        let bound = buckets[i].last().map_or(0, |b| b.0 + bucket_width);
        let (kept, h) = summary::histogram(&buckets[i], over, bound, exact);
        let series = Series { cpu: *cpu, summary: summary::of_histogram(&h, exact), histogram: Some((kept, h)) };
        groups.entry(part_of(prefix)).or_default().push(series);
    }
    let duration = duration(src);
    Ok(groups
        .into_iter()
        .map(|(part, series)| {
            let mut p = Part::new(summary::per_cpu(kind, duration, series));
            p.part = part;
            p
        })
        .collect())
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
            let summary = crate::cyclictest::min_avg_max(count, min * unit_ns, (avg * unit_ns) as f64, max * unit_ns);
            per_group[g].push(Series { cpu, summary, histogram: None });
        }
    }
    if per_group.iter().all(|g| g.is_empty()) {
        return Err(src.truncated("rtla timerlat top's rows \"CPU #COUNT | cur min avg max | ...\""));
    }
    let duration = duration(src);
    Ok(groups
        .iter()
        .zip(per_group)
        .map(|(name, series)| {
            let mut p = Part::new(summary::per_cpu("timer", duration, series));
            p.part = Some(if name.starts_with("IRQ") {
                "IRQ"
            } else if name.starts_with("Thread") {
                "thread"
            } else {
                "user"
            });
            p
        })
        .collect())
}

fn osnoise_top(src: &Source) -> Result<Vec<Part>, InputError> {
    let (header_line, _) =
        src.lines.iter().find(|(_, l)| l.trim_start().starts_with("CPU Period")).ok_or_else(|| {
            src.truncated("rtla osnoise top's header \"CPU Period Runtime Noise % CPU Aval Max Noise Max Single ...\"")
        })?;
    let mut series = Vec::new();
    let mut noise_total = 0u64;
    let mut runtime_total = 0u64;
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
        let us = |i: usize, what: &str| number::<f64>(src, *n, words[i], what);
        let (runtime, noise, max_single) =
            (us(2, "the runtime in us")?, us(3, "the noise in us")?, us(6, "the max single noise in us")?);
        let interferences: u64 =
            words[7..].iter().map(|w| number::<u64>(src, *n, w, "an interference count")).sum::<Result<u64, _>>()?;
        runtime_total += (runtime * 1000.0) as u64;
        noise_total += (noise * 1000.0) as u64;
        let mean = if interferences > 0 { noise * 1000.0 / interferences as f64 } else { 0.0 };
        let summary = crate::cyclictest::min_avg_max(interferences, 0, mean, (max_single * 1000.0) as u64);
        series.push(Series { cpu, summary, histogram: None });
    }
    if series.is_empty() {
        return Err(src.truncated("rtla osnoise top's rows, one per CPU"));
    }
    let mut r = summary::per_cpu("noise", duration(src), series);
    r.environment = Some(rtvirt_model::results::Environment {
        warning: Some(format!(
            "rtla osnoise top prints no distribution: per CPU, count = interferences, mean = noise / \
             interferences, max = max single noise; {:.3}% of the runtime was noise",
            100.0 * noise_total as f64 / runtime_total.max(1) as f64
        )),
        ..Default::default()
    });
    Ok(vec![Part::new(r)])
}
