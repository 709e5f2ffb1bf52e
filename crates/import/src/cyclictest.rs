//! cyclictest and cyclicdeadline (rt-tests): the histogram output (`-h N` / `-H N`: one row per
//! microsecond, one column per thread, with `-H` a last column over all threads; then `# Total`,
//! `# Min/Avg/Max Latencies`, `# Histogram Overflows` lines), the status lines (`T: 0 (pid) P:95
//! I:200 C: ... Min: Act: Avg: Max:`, also redrawn with terminal escapes by cyclicdeadline),
//! and `--json` (rt-tests' JSON: command line, version, kernel, per thread its CPU, histogram,
//! cycles, min/avg/max).
//!
//! The histogram does not name CPUs: thread N is shown as cpu N (a warning in the environment
//! says so); the JSON does. Overflows are the samples beyond the last row (`-h 400`: 400 us and
//! more), kept at 400 us except the maximum, which is exact.

use crate::summary::{self, Exact, Series};
use crate::text::{ns_f64, number, times, total, Source};
use crate::Part;
use rtvirt_model::results::{Environment, Results, TimerSection};
use rtvirt_model::stats::Summary;
use rtvirt_model::InputError;
use serde::Deserialize;
use std::collections::BTreeMap;

const US: u64 = 1000;

/// Whether `text` starts like a cyclictest histogram without its `# Histogram` line: rows of a
/// bucket number and counts.
pub(crate) fn looks_like_histogram(text: &str) -> bool {
    let rows: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).take(3).collect();
    rows.len() == 3
        && rows.iter().all(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() >= 2 && words.iter().all(|w| w.bytes().all(|b| b.is_ascii_digit()))
        })
}

pub(crate) fn import(src: &Source) -> Result<Vec<Part>, InputError> {
    if src.text.trim_start().starts_with('{') {
        return json(src, "cyclictest");
    }
    if src.lines.iter().any(|(_, l)| l.starts_with("# Histogram") || l.starts_with("# Total:")) {
        return histogram(src);
    }
    status_lines(src, "cyclictest")
}

pub(crate) fn import_cyclicdeadline(src: &Source) -> Result<Vec<Part>, InputError> {
    if src.text.trim_start().starts_with('{') {
        return json(src, "cyclicdeadline");
    }
    status_lines(src, "cyclicdeadline")
}

/// A `T:` status line: (thread, priority, interval us, cycles, min, avg, max us).
#[derive(Debug, Clone, Copy, Default)]
struct Status {
    /// The line it was read from.
    line: usize,
    thread: u32,
    priority: Option<u32>,
    interval_us: Option<u64>,
    cycles: u64,
    min: u64,
    avg: u64,
    max: u64,
}

/// The fields of a `T:` line ("T: 0 (28189) P:95 I:200 C:   4961 Min:      9 Act:   25 Avg:   22 Max:    1640").
fn parse_status(src: &Source, line_no: usize, line: &str) -> Result<Status, InputError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut status = Status { line: line_no, ..Default::default() };
    let mut found = [false; 4];
    let mut i = 0;
    while i < words.len() {
        let (key, inline) = match words[i].split_once(':') {
            Some((k, v)) => (k, v),
            None => {
                i += 1;
                continue;
            }
        };
        let value = if inline.is_empty() {
            i += 1;
            words.get(i).copied().unwrap_or("")
        } else {
            inline
        };
        let expect = |what: &str| format!("a number after \"{key}:\" ({what})");
        match key {
            "T" => status.thread = number(src, line_no, value, &expect("thread number"))?,
            "P" => status.priority = Some(number(src, line_no, value, &expect("priority"))?),
            "I" => status.interval_us = Some(number(src, line_no, value, &expect("interval in us"))?),
            "C" => (status.cycles, found[0]) = (number(src, line_no, value, &expect("cycles"))?, true),
            "Min" => (status.min, found[1]) = (number(src, line_no, value, &expect("us"))?, true),
            "Avg" => (status.avg, found[2]) = (number(src, line_no, value, &expect("us"))?, true),
            "Max" => (status.max, found[3]) = (number(src, line_no, value, &expect("us"))?, true),
            _ => {}
        }
        i += 1;
    }
    if found.iter().any(|f| !f) {
        return Err(src.error(
            line_no,
            "a status line without all of C:, Min:, Avg:, Max: (expected e.g. \"T: 0 (123) P:95 I:200 \
             C: 4961 Min: 9 Act: 25 Avg: 22 Max: 1640\"; is the line cut short?)",
        ));
    }
    Ok(status)
}

/// The last status line of every thread.
fn last_status(src: &Source) -> Result<BTreeMap<u32, Status>, InputError> {
    let mut threads = BTreeMap::new();
    for (n, line) in &src.lines {
        if let Some(start) = line.find("T:") {
            if line[start..].contains("Max:") || line[start..].contains("C:") {
                let s = parse_status(src, *n, &line[start..])?;
                threads.insert(s.thread, s);
            }
        }
    }
    Ok(threads)
}

/// The run's length as the status lines tell it: cycles x interval of the longest thread (0
/// when they do not say); an error at a line whose product is beyond 2^64 ns.
fn status_duration(src: &Source, status: &BTreeMap<u32, Status>) -> Result<u64, InputError> {
    let mut longest = 0;
    for s in status.values() {
        if let Some(interval) = s.interval_us {
            longest = longest.max(times(src, s.line, times(src, s.line, s.cycles, interval)?, US)?);
        }
    }
    Ok(longest)
}

fn timer_section(src: &Source, status: &BTreeMap<u32, Status>) -> Result<Option<TimerSection>, InputError> {
    let Some(first) = status.values().next() else { return Ok(None) };
    Ok(Some(TimerSection {
        interval_ns: first.interval_us.map(|i| times(src, first.line, i, US)).transpose()?,
        priority: first.priority.filter(|&p| p > 0),
        policy: first.priority.map(|p| if p > 0 { "fifo".to_string() } else { "other".to_string() }),
        ..Default::default()
    }))
}

/// Status lines only (no histogram): min, mean and max per thread; no percentiles.
fn status_lines(src: &Source, tool: &str) -> Result<Vec<Part>, InputError> {
    let status = last_status(src)?;
    if status.is_empty() {
        return Err(src.truncated(&format!(
            "{tool}'s status lines (\"T: 0 (pid) P:95 I:1000 C: ... Min: ... Avg: ... Max: ...\") or its histogram"
        )));
    }
    let series = status
        .values()
        .map(|s| {
            let ns = |us: u64| times(src, s.line, us, US);
            let summary = min_avg_max(s.cycles, ns(s.min)?, ns(s.avg)? as f64, ns(s.max)?);
            Ok(Series { cpu: s.thread, summary, histogram: None })
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let mut r = summary::per_cpu(src, "timer", status_duration(src, &status)?, series)?;
    r.timer = timer_section(src, &status)?;
    if tool == "cyclicdeadline" {
        r.timer.get_or_insert_with(Default::default).policy = Some("deadline".into());
    }
    r.environment = Some(Environment { warning: Some(thread_warning(tool)), ..Default::default() });
    let mut part = Part::new(r);
    part.version = version_line(src);
    Ok(vec![part])
}

/// Only min, mean and max known: every percentile is the maximum (an upper bound), flagged.
pub(crate) fn min_avg_max(count: u64, min: u64, mean: f64, max: u64) -> Summary {
    summary::of_percentiles(count, min, mean, 0.0, max, &[])
}

fn thread_warning(tool: &str) -> String {
    format!("imported from {tool}'s text output, which does not name CPUs: thread N is shown as cpu N")
}

fn version_line(src: &Source) -> Option<String> {
    src.lines.iter().find_map(|(_, l)| l.split_once(" V ").map(|(_, v)| v.trim().to_string()))
}

/// The `# Name: v1 v2 ...` summary line of the histogram output, as numbers.
fn summary_line(src: &Source, name: &str) -> Result<Option<(usize, Vec<u64>)>, InputError> {
    let prefix = format!("# {name}:");
    let Some((n, line)) = src.lines.iter().find(|(_, l)| l.starts_with(&prefix)) else { return Ok(None) };
    let values = line[prefix.len()..]
        .split_whitespace()
        .map(|w| number(src, *n, w, &format!("a count or microseconds in \"# {name}:\"")))
        .collect::<Result<Vec<u64>, _>>()?;
    Ok(Some((*n, values)))
}

fn histogram(src: &Source) -> Result<Vec<Part>, InputError> {
    let mut rows: Vec<(usize, Vec<u64>)> = Vec::new();
    // the rows follow "# Histogram" up to the first "#" line (status lines may come before)
    let start = src.lines.iter().position(|(_, l)| l.starts_with("# Histogram")).map_or(0, |i| i + 1);
    for (n, line) in &src.lines[start..] {
        if line.starts_with('#') {
            break;
        }
        if line.is_empty() || (start == 0 && !line.starts_with(|c: char| c.is_ascii_digit())) {
            continue;
        }
        let words: Vec<u64> = line
            .split_whitespace()
            .map(|w| number(src, *n, w, "a histogram row: the latency in us, then a count per thread"))
            .collect::<Result<_, _>>()?;
        rows.push((*n, words));
    }
    let need = |name: &str| -> Result<(usize, Vec<u64>), InputError> {
        summary_line(src, name)?.ok_or_else(|| src.truncated(&format!("the \"# {name}:\" line after the histogram")))
    };
    let (total_line, totals) = need("Total")?;
    let (min_line, mins) = need("Min Latencies")?;
    let (avg_line, avgs) = need("Avg Latencies")?;
    let (max_line, maxes) = need("Max Latencies")?;
    let overflows = summary_line(src, "Histogram Overflows")?.map(|(_, v)| v);
    let threads = mins.len();
    if threads == 0 || avgs.len() != threads || maxes.len() < threads || totals.len() < threads {
        return Err(src.error(
            max_line,
            format!(
                "{threads} threads in \"# Min Latencies:\" but {} averages, {} maxima and {} totals: expected one per \
             thread",
                avgs.len(),
                maxes.len(),
                totals.len()
            ),
        ));
    }
    if rows.is_empty() {
        return Err(src.error(
            total_line,
            "no histogram rows before \"# Total:\": expected rows \"000000 000012 ...\" (latency in us, a count \
             per thread)",
        ));
    }
    let mut buckets: Vec<Vec<(u64, u64)>> = vec![Vec::new(); threads];
    let mut next_row = 0u64;
    for (n, row) in &rows {
        if row.len() != threads + 1 && row.len() != threads + 2 {
            return Err(src.error(
                *n,
                format!(
                    "{} counts: expected {threads} (one per thread, as \"# Min Latencies:\" has) or {} (with -H's \
                 total column); is the line cut short?",
                    row.len() - 1,
                    threads + 1
                ),
            ));
        }
        if row[0] != next_row {
            return Err(
                src.error(*n, format!("row {}: expected row {next_row} (rows count up by one microsecond)", row[0]))
            );
        }
        next_row += 1;
        let low = times(src, *n, row[0], US)?;
        for (t, b) in buckets.iter_mut().enumerate() {
            b.push((low, row[t + 1]));
        }
    }
    let series = (0..threads)
        .map(|t| {
            let sum = total(src, total_line, buckets[t].iter().map(|b| b.1), &format!("thread {t}'s rows"))?;
            if sum != totals[t] {
                return Err(src.error(
                    total_line,
                    format!(
                        "thread {t}: total {} but its rows add up to {sum}: expected equal (rows missing?)",
                        totals[t]
                    ),
                ));
            }
            let overflow = overflows.as_ref().and_then(|o| o.get(t).copied()).unwrap_or(0);
            total(src, total_line, [sum, overflow], &format!("thread {t}'s total and overflows"))?;
            let exact = Exact {
                min: Some(times(src, min_line, mins[t], US)?),
                mean: Some(times(src, avg_line, avgs[t], US)? as f64),
                max: Some(times(src, max_line, maxes[t], US)?),
            };
            let kept = summary::histogram(&buckets[t], overflow, next_row.saturating_mul(US), exact);
            Ok(Series { cpu: t as u32, summary: summary::of_buckets(&kept, exact), histogram: Some(kept) })
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let status = last_status(src)?;
    let mut r = summary::per_cpu(src, "timer", status_duration(src, &status)?, series)?;
    r.timer = timer_section(src, &status)?;
    r.environment = Some(Environment { warning: Some(thread_warning("cyclictest")), ..Default::default() });
    let mut part = Part::new(r);
    part.version = version_line(src);
    Ok(vec![part])
}

/// rt-tests' `--json` file (cyclictest, cyclicdeadline). Some versions write `"cmdline:"` and
/// `"rt_test_version:"` with a colon inside the key; both spellings are read.
#[derive(Deserialize)]
struct RtTestsJson {
    #[serde(alias = "cmdline:")]
    cmdline: Option<String>,
    #[serde(alias = "rt_test_version:")]
    rt_test_version: Option<String>,
    #[serde(default)]
    sysinfo: Option<SysInfo>,
    thread: BTreeMap<String, JsonThread>,
}

#[derive(Deserialize)]
struct SysInfo {
    release: Option<String>,
    version: Option<String>,
    realtime: Option<u32>,
}

#[derive(Deserialize)]
struct JsonThread {
    #[serde(default)]
    histogram: BTreeMap<String, u64>,
    cycles: u64,
    min: u64,
    max: u64,
    avg: f64,
    cpu: Option<u32>,
}

fn json(src: &Source, tool: &str) -> Result<Vec<Part>, InputError> {
    let doc: RtTestsJson =
        serde_json::from_str(src.text).map_err(|e| src.json_error(&e, &format!("{tool} --json output")))?;
    if doc.thread.is_empty() {
        return Err(src.error(1, "\"thread\" is empty: expected one entry per measuring thread"));
    }
    let mut series = Vec::new();
    for (key, t) in &doc.thread {
        let index: u32 =
            key.parse().map_err(|_| src.error(1, format!("thread \"{key}\": expected a thread number")))?;
        let exact = Exact {
            min: Some(times(src, 1, t.min, US)?),
            mean: Some(ns_f64(src, 1, t.avg, US as f64)?),
            max: Some(times(src, 1, t.max, US)?),
        };
        let histogram = if t.histogram.is_empty() {
            None
        } else {
            let mut b = Vec::new();
            for (k, &n) in &t.histogram {
                let us: u64 = k.parse().map_err(|_| {
                    src.error(1, format!("thread {key}: histogram key \"{k}\": expected a latency in microseconds"))
                })?;
                b.push((times(src, 1, us, US)?, n));
            }
            let sum = total(src, 1, b.iter().map(|x| x.1), &format!("thread {key}'s histogram counts"))?;
            let last = b.iter().map(|x| x.0).max().unwrap_or(0);
            let bound =
                histogram_size(doc.cmdline.as_deref()).map_or(last.saturating_add(US), |n| n.saturating_mul(US));
            Some(summary::histogram(&b, t.cycles.saturating_sub(sum), bound, exact))
        };
        let summary = match &histogram {
            Some(kept) => summary::of_buckets(kept, exact),
            None => min_avg_max(t.cycles, exact.min.unwrap_or(0), exact.mean.unwrap_or(0.0), exact.max.unwrap_or(0)),
        };
        series.push(Series { cpu: t.cpu.unwrap_or(index), summary, histogram });
    }
    let line = doc.cmdline.clone().unwrap_or_default();
    let duration_ns = option(&line, "-D", "--duration").and_then(|d| cyclictest_duration(&d)).unwrap_or(0);
    let mut r: Results = summary::per_cpu(src, "timer", duration_ns, series)?;
    let priority = option(&line, "-p", "--priority").and_then(|p| p.parse::<u32>().ok());
    let interval_us = option(&line, "-i", "--interval").and_then(|p| p.parse::<u64>().ok());
    r.timer = Some(TimerSection {
        interval_ns: interval_us.and_then(|i| i.checked_mul(US)),
        priority: priority.filter(|&p| p > 0),
        policy: Some(
            if tool == "cyclicdeadline" {
                "deadline"
            } else if priority.unwrap_or(0) > 0 {
                "fifo"
            } else {
                "other"
            }
            .into(),
        ),
        ..Default::default()
    });
    let sys = doc.sysinfo.as_ref();
    r.environment = Some(Environment {
        kernel: sys.and_then(|s| s.release.clone()),
        preemption: sys.and_then(|s| preemption(s.version.as_deref()?, s.realtime)),
        ..Default::default()
    });
    let mut part = Part::new(r);
    part.version = doc.rt_test_version;
    part.command_line = doc.cmdline;
    Ok(vec![part])
}

fn preemption(version: &str, realtime: Option<u32>) -> Option<String> {
    if realtime == Some(1) || version.contains("PREEMPT_RT") {
        Some("PREEMPT_RT".into())
    } else if version.contains("PREEMPT_DYNAMIC") {
        Some("PREEMPT_DYNAMIC".into())
    } else if version.contains("PREEMPT") {
        Some("PREEMPT".into())
    } else {
        None
    }
}

/// `-h N` / `-H N` / `--histogram=N` / `--histofall=N` of a command line.
fn histogram_size(line: Option<&str>) -> Option<u64> {
    let line = line?;
    option(line, "-h", "--histogram").or_else(|| option(line, "-H", "--histofall"))?.parse().ok()
}

/// The value of option `short` (`-p 95`, `-p95`) or `long` (`--priority=95`, `--priority 95`).
pub(crate) fn option(line: &str, short: &str, long: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let next = || words.get(i + 1).map(|s| s.to_string());
        if *w == short || *w == long {
            return next();
        }
        if let Some(v) = w.strip_prefix(&format!("{long}=")) {
            return Some(v.to_string());
        }
        if let Some(v) = w.strip_prefix(short).filter(|v| !v.is_empty() && !w.starts_with("--")) {
            return Some(v.trim_start_matches('=').to_string());
        }
    }
    None
}

/// cyclictest's `-D` value: a number of seconds, or with a unit m, h or d.
fn cyclictest_duration(text: &str) -> Option<u64> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    n.checked_mul(scale)?.checked_mul(1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_of_a_command_line() {
        let line = "cyclictest -p95 -i 200 --duration=10 -h 400 -q";
        assert_eq!(option(line, "-p", "--priority").as_deref(), Some("95"));
        assert_eq!(option(line, "-i", "--interval").as_deref(), Some("200"));
        assert_eq!(option(line, "-D", "--duration").as_deref(), Some("10"));
        assert_eq!(histogram_size(Some(line)), Some(400));
        assert_eq!(cyclictest_duration("2m"), Some(120_000_000_000));
    }
}
