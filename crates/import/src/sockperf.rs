//! sockperf ping-pong and under-load: the client's summary (`avg-latency=` or, with
//! `--full-rtt`, `avg-rtt=`; `Total N observations`; `<MAX>`, `percentile 99.999 = ...`,
//! `<MIN>` in microseconds; dropped/duplicated messages), and with `--full-log FILE` that file's
//! per-packet lines (`packet, txTime(sec), rxTime(sec), latency(usec)`), from which the round
//! trips are exact (rxTime - txTime).
//!
//! sockperf reports half the round trip unless `--full-rtt` is given; the result's `rtt_ns` is
//! always the whole round trip (the halves are doubled), as `measure net` measures it.

use crate::summary::{self, Exact};
use crate::text::{decimal, ns_f64, number, s_to_ns, us_to_ns, Source};
use crate::Part;
use rtvirt_model::results::{Environment, NetSection, Results};
use rtvirt_model::InputError;

#[derive(Default)]
struct Summary {
    half: Option<bool>,
    /// Microseconds, each checked to be below 2^64 ns when doubled (see [`us`]).
    mean_us: Option<(usize, f64)>,
    sd_us: f64,
    observations: Option<u64>,
    percentiles: Vec<(f64, f64)>,
    max_us: Option<f64>,
    min_us: Option<f64>,
    sent: Option<u64>,
    dropped: Option<u64>,
    duplicates: Option<u64>,
    run_ns: Option<u64>,
}

/// Microseconds at `line`: finite, at least 0, and below 2^64 ns even doubled (half round trips).
fn us(src: &Source, line: usize, word: &str, what: &str) -> Result<f64, InputError> {
    let v = decimal(src, line, word, what)?;
    ns_f64(src, line, v, 2000.0)?;
    Ok(v)
}

pub(crate) fn import(src: &Source) -> Result<Vec<Part>, InputError> {
    let mut s = Summary::default();
    let mut version = None;
    let mut parameters = None;
    let mut protocol = None;
    let mut log: Vec<(usize, f64, f64)> = Vec::new();
    let mut log_header = None;
    for (n, line) in &src.lines {
        let t = line.trim_start_matches("sockperf:").trim();
        if let Some(v) = t.strip_prefix("== version #") {
            version = Some(v.trim_end_matches("==").trim().to_string());
        } else if let Some(p) = t.strip_prefix("test was performed using the following parameters:") {
            parameters = Some(p.trim().to_string());
        } else if t.contains("PORT =") && t.contains('#') {
            protocol = t.rsplit('#').next().map(|p| p.trim().to_lowercase());
        } else if t.starts_with("[Valid Duration]") {
            s.run_ns = field(t, "RunTime=")
                .map(|v| s_to_ns(src, *n, decimal(src, *n, v.trim_end_matches("sec").trim(), "seconds")?))
                .transpose()?;
            s.sent = field(t, "SentMessages=").map(|v| number(src, *n, v, "a count")).transpose()?;
        } else if let Some(rest) = t.strip_prefix("====> avg-") {
            s.half = Some(!rest.starts_with("rtt"));
            let value = rest.split_once('=').map(|x| x.1).unwrap_or("");
            let (mean, sd) = value.split_once("(std-dev=").unwrap_or((value, "0)"));
            s.mean_us = Some((*n, us(src, *n, mean, "the mean latency in usec")?));
            s.sd_us = us(src, *n, sd.trim_end_matches(')'), "the standard deviation in usec")?;
        } else if t.starts_with("# dropped messages") {
            s.dropped = field(t, "# dropped messages = ").map(|v| number(src, *n, v, "a count")).transpose()?;
            s.duplicates = field(t, "# duplicated messages = ").map(|v| number(src, *n, v, "a count")).transpose()?;
        } else if t.starts_with("Total ") && t.contains("observations") {
            let w = t.split_whitespace().nth(1).unwrap_or("");
            s.observations = Some(number(src, *n, w, "the number of observations")?);
        } else if let Some(rest) = t.strip_prefix("---> ") {
            let (key, value) =
                rest.split_once('=').ok_or_else(|| src.error(*n, "expected \"---> percentile P = VALUE\""))?;
            let v = us(src, *n, value, "microseconds")?;
            let key = key.trim();
            if key.contains("MAX") {
                s.max_us = Some(v);
            } else if key.contains("MIN") {
                s.min_us = Some(v);
            } else if let Some(p) = key.strip_prefix("percentile") {
                s.percentiles.push((decimal(src, *n, p, "a percentile")? / 100.0, v));
            }
        } else if t.starts_with("packet,") && t.contains("txTime") {
            log_header = Some(*n);
        } else if log_header.is_some() && t.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let cells: Vec<&str> = t.split(',').map(str::trim).collect();
            if cells.len() < 3 {
                return Err(src.error(
                    *n,
                    "expected \"packet, txTime(sec), rxTime(sec), latency(usec)\"; is the line cut short?",
                ));
            }
            log.push((
                *n,
                decimal(src, *n, cells[1], "txTime in seconds")?,
                decimal(src, *n, cells[2], "rxTime in seconds")?,
            ));
        }
    }
    let rtt = if !log.is_empty() { full_log(src, &log)? } else { percentiles(src, &s)? };
    let mut r = Results::new("net", s.run_ns.unwrap_or(0));
    r.rtt_ns = Some(rtt);
    r.net = Some(NetSection {
        protocol: protocol.clone(),
        arrivals: Some(match parameters.as_deref().and_then(|p| field(p, "--mps=")) {
            Some(mps) => format!("under-load {mps}/s"),
            None => "back-to-back".into(),
        }),
        requests: s.sent,
        lost: s.dropped,
        duplicates: s.duplicates,
        ..Default::default()
    });
    if s.half != Some(false) && log.is_empty() {
        r.environment = Some(Environment {
            warning: Some("sockperf reported half round trips (no --full-rtt): doubled here".into()),
            ..Default::default()
        });
    }
    let mut part = Part::new(r);
    part.version = version;
    part.command_line = parameters.map(|p| format!("sockperf {p}"));
    Ok(vec![part])
}

/// The text after `key` up to the next `;` or blank.
fn field<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let start = text.find(key)? + key.len();
    let rest = &text[start..];
    Some(rest.split([';', ' ']).next().unwrap_or("").trim())
}

fn full_log(src: &Source, log: &[(usize, f64, f64)]) -> Result<rtvirt_model::stats::Summary, InputError> {
    let mut rtts = Vec::with_capacity(log.len());
    for &(n, tx, rx) in log {
        if rx < tx {
            return Err(src.error(n, format!("rxTime {rx} before txTime {tx}: expected a reply after its request")));
        }
        rtts.push(s_to_ns(src, n, rx - tx)?);
    }
    rtts.sort_unstable();
    let runs: Vec<(u64, u64)> = rtts.chunk_by(|a, b| a == b).map(|run| (run[0], run.len() as u64)).collect();
    Ok(summary::of_buckets(&runs, Exact::default()))
}

fn percentiles(src: &Source, s: &Summary) -> Result<rtvirt_model::stats::Summary, InputError> {
    let (_, mean) = s.mean_us.ok_or_else(|| src.truncated("sockperf's \"====> avg-latency=\" line"))?;
    let count = s.observations.ok_or_else(|| src.truncated("sockperf's \"Total N observations\" line"))?;
    let max = s.max_us.ok_or_else(|| src.truncated("sockperf's \"---> <MAX> observation\" line"))?;
    let min = s
        .min_us
        .ok_or_else(|| src.truncated("sockperf's \"---> <MIN> observation\" line (the last of its percentiles)"))?;
    let k = if s.half == Some(false) { 1.0 } else { 2.0 };
    // each value was checked below 2^64 ns doubled when read
    let ns = |us: f64| us_to_ns(src, 1, us * k);
    let known: Vec<(f64, u64)> = s.percentiles.iter().map(|&(q, v)| Ok((q, ns(v)?))).collect::<Result<_, _>>()?;
    Ok(summary::of_percentiles(count, ns(min)?, mean * k * 1000.0, s.sd_us * k * 1000.0, ns(max)?, &known))
}
