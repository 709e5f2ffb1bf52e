//! sockperf ping-pong and under-load: the client's summary (`avg-latency=` or, with
//! `--full-rtt`, `avg-rtt=`; `Total N observations`; `<MAX>`, `percentile 99.999 = ...`,
//! `<MIN>` in microseconds; dropped/duplicated messages), and with `--full-log FILE` that file's
//! per-packet lines (`packet, txTime(sec), rxTime(sec), latency(usec)`), from which the round
//! trips are exact (rxTime - txTime).
//!
//! sockperf reports half the round trip unless `--full-rtt` is given; the result's `rtt_ns` is
//! always the whole round trip (the halves are doubled), as `measure net` measures it.

use crate::summary::{self, Exact};
use crate::text::{number, us_to_ns, Source};
use crate::Part;
use rtvirt_model::results::{Environment, NetSection, Results};
use rtvirt_model::InputError;

#[derive(Default)]
struct Summary {
    half: Option<bool>,
    mean_us: Option<(usize, f64)>,
    sd_us: f64,
    observations: Option<u64>,
    percentiles: Vec<(f64, f64)>,
    max_us: Option<f64>,
    min_us: Option<f64>,
    sent: Option<u64>,
    dropped: Option<u64>,
    duplicates: Option<u64>,
    run_s: Option<f64>,
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
            s.run_s = field(t, "RunTime=")
                .map(|v| number(src, *n, v.trim_end_matches("sec").trim(), "seconds"))
                .transpose()?;
            s.sent = field(t, "SentMessages=").map(|v| number(src, *n, v, "a count")).transpose()?;
        } else if let Some(rest) = t.strip_prefix("====> avg-") {
            s.half = Some(!rest.starts_with("rtt"));
            let value = rest.split_once('=').map(|x| x.1).unwrap_or("");
            let (mean, sd) = value.split_once("(std-dev=").unwrap_or((value, "0)"));
            s.mean_us = Some((*n, number(src, *n, mean, "the mean latency in usec")?));
            s.sd_us = number(src, *n, sd.trim_end_matches(')'), "the standard deviation in usec")?;
        } else if t.starts_with("# dropped messages") {
            s.dropped = field(t, "# dropped messages = ").map(|v| number(src, *n, v, "a count")).transpose()?;
            s.duplicates = field(t, "# duplicated messages = ").map(|v| number(src, *n, v, "a count")).transpose()?;
        } else if t.starts_with("Total ") && t.contains("observations") {
            let w = t.split_whitespace().nth(1).unwrap_or("");
            s.observations = Some(number(src, *n, w, "the number of observations")?);
        } else if let Some(rest) = t.strip_prefix("---> ") {
            let (key, value) =
                rest.split_once('=').ok_or_else(|| src.error(*n, "expected \"---> percentile P = VALUE\""))?;
            let v: f64 = number(src, *n, value, "microseconds")?;
            let key = key.trim();
            if key.contains("MAX") {
                s.max_us = Some(v);
            } else if key.contains("MIN") {
                s.min_us = Some(v);
            } else if let Some(p) = key.strip_prefix("percentile") {
                s.percentiles.push((number::<f64>(src, *n, p, "a percentile")? / 100.0, v));
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
                number(src, *n, cells[1], "txTime in seconds")?,
                number(src, *n, cells[2], "rxTime in seconds")?,
            ));
        }
    }
    let rtt = if !log.is_empty() { full_log(src, &log)? } else { percentiles(src, &s)? };
    let mut r = Results::new("net", s.run_s.map_or(0, |x| (x * 1e9).round() as u64));
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
    let mut h = rtvirt_model::stats::LatencyHistogram::new();
    for &(n, tx, rx) in log {
        if rx < tx {
            return Err(src.error(n, format!("rxTime {rx} before txTime {tx}: expected a reply after its request")));
        }
        h.record(((rx - tx) * 1e9).round() as u64);
    }
    Ok(summary::of_histogram(&h, Exact::default()))
}

fn percentiles(src: &Source, s: &Summary) -> Result<rtvirt_model::stats::Summary, InputError> {
    let (_, mean) = s.mean_us.ok_or_else(|| src.truncated("sockperf's \"====> avg-latency=\" line"))?;
    let count = s.observations.ok_or_else(|| src.truncated("sockperf's \"Total N observations\" line"))?;
    let max = s.max_us.ok_or_else(|| src.truncated("sockperf's \"---> <MAX> observation\" line"))?;
    let min = s
        .min_us
        .ok_or_else(|| src.truncated("sockperf's \"---> <MIN> observation\" line (the last of its percentiles)"))?;
    let k = if s.half == Some(false) { 1.0 } else { 2.0 };
    let known: Vec<(f64, u64)> = s.percentiles.iter().map(|&(q, v)| (q, us_to_ns(v * k))).collect();
    Ok(summary::of_percentiles(
        count,
        us_to_ns(min * k),
        mean * k * 1000.0,
        s.sd_us * k * 1000.0,
        us_to_ns(max * k),
        &known,
    ))
}
