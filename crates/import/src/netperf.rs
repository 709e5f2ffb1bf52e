//! netperf (classic and omni output): the test banner (`MIGRATED TCP REQUEST/RESPONSE TEST from
//! ...`), then either `-o` CSV (a header line of selector names, a line of values), `-k`
//! keyval (`KEY=VALUE` lines), or the classic table whose last column is the transaction rate
//! (RR) or the throughput (STREAM). Latency selectors (MIN/MEAN/P50/P90/P99/MAX/STDDEV_LATENCY,
//! microseconds, whole request/response round trips) give `rtt_ns`; percentiles netperf does
//! not report (p75, p95, p99.9, p99.99) are bounded by the next one and flagged. STREAM tests
//! give one flow with its throughput.

use crate::summary;
use crate::text::{decimal, ns_f64, s_to_ns, Source};
use crate::Part;
use rtvirt_model::results::{FlowResult, NetSection, Results};
use rtvirt_model::InputError;
use std::collections::BTreeMap;

/// (keyval name, CSV header) of the selectors read.
const SELECTORS: &[(&str, &str)] = &[
    ("THROUGHPUT", "Throughput"),
    ("THROUGHPUT_UNITS", "Throughput Units"),
    ("TRANSACTION_RATE", "Transaction Rate Tran/s"),
    ("MIN_LATENCY", "Minimum Latency Microseconds"),
    ("MAX_LATENCY", "Maximum Latency Microseconds"),
    ("P50_LATENCY", "50th Percentile Latency Microseconds"),
    ("P90_LATENCY", "90th Percentile Latency Microseconds"),
    ("P99_LATENCY", "99th Percentile Latency Microseconds"),
    ("MEAN_LATENCY", "Mean Latency Microseconds"),
    ("STDDEV_LATENCY", "Stddev Latency Microseconds"),
    ("ELAPSED_TIME", "Elapsed Time (sec)"),
    ("PROTOCOL", "Protocol"),
    ("COMMAND_LINE", "Command Line"),
    ("LOCAL_TRANSPORT_RETRANS", "Local Transport Retransmissions"),
    ("REQUEST_SIZE", "Request Size Bytes"),
];

/// The test, from the banner: ("tcp"|"udp", request/response?).
fn test_of(banner: &str) -> Option<(String, bool)> {
    let protocol = if banner.contains("UDP") { "udp" } else { "tcp" };
    let rr = banner.contains("REQUEST/RESPONSE") || banner.contains("Request/Response");
    let stream = banner.contains("STREAM") || banner.contains("MAERTS");
    (rr || stream).then(|| (protocol.to_string(), rr))
}

pub(crate) fn import(src: &Source) -> Result<Vec<Part>, InputError> {
    let banner = src.lines.iter().find(|(_, l)| l.contains(" TEST from ") || l.contains(" TEST to "));
    let mut values: BTreeMap<&'static str, (usize, String)> = BTreeMap::new();
    let body: Vec<&(usize, String)> =
        src.lines.iter().filter(|(n, l)| !l.trim().is_empty() && Some(*n) > banner.map(|b| b.0)).collect();
    if body.iter().any(|(_, l)| l.contains('=') && !l.contains(',')) {
        for (n, line) in &body {
            if let Some((k, v)) = line.split_once('=') {
                if let Some(&(key, _)) = SELECTORS.iter().find(|(key, _)| key.eq_ignore_ascii_case(k.trim())) {
                    values.insert(key, (*n, v.trim().to_string()));
                }
            }
        }
    } else if let Some(header_at) =
        body.iter().position(|(_, l)| SELECTORS.iter().any(|(_, h)| l.split(',').any(|c| c.trim() == *h)))
    {
        let (header_line, header) = body[header_at];
        let (value_line, row) = body.get(header_at + 1).map(|(n, l)| (*n, l.as_str())).ok_or_else(|| {
            src.truncated(&format!("the line of values under netperf's CSV header of line {header_line}"))
        })?;
        let names: Vec<&str> = header.split(',').map(str::trim).collect();
        let cells: Vec<&str> = row.split(',').map(str::trim).collect();
        if cells.len() != names.len() {
            return Err(src.error(
                value_line,
                format!(
                    "{} values: expected {} (one per column of line {header_line}); is the line cut short?",
                    cells.len(),
                    names.len()
                ),
            ));
        }
        for (name, cell) in names.iter().zip(&cells) {
            if let Some(&(key, _)) = SELECTORS.iter().find(|(_, h)| h == name) {
                values.insert(key, (value_line, cell.to_string()));
            }
        }
    } else {
        classic(src, &body, &mut values)?;
    }
    let test = banner.and_then(|(_, b)| test_of(b));
    let rr = match (&test, values.get("THROUGHPUT_UNITS")) {
        (_, Some((_, units))) => units.contains("Trans") || units.contains("Tran/s"),
        (Some((_, rr)), None) => *rr,
        (None, None) => values.keys().any(|k| k.ends_with("_LATENCY") || *k == "TRANSACTION_RATE"),
    };
    let protocol = values
        .get("PROTOCOL")
        .map(|(_, p)| p.to_lowercase())
        .or_else(|| test.as_ref().map(|t| t.0.clone()))
        .unwrap_or_else(|| "tcp".into());
    let num = |key: &str, what: &str| -> Result<Option<f64>, InputError> {
        values.get(key).map(|(n, v)| decimal(src, *n, v, what)).transpose()
    };
    let elapsed = num("ELAPSED_TIME", "seconds")?;
    let elapsed_ns = values.get("ELAPSED_TIME").zip(elapsed).map(|((n, _), s)| s_to_ns(src, *n, s)).transpose()?;
    let mut r = Results::new("net", elapsed_ns.unwrap_or(0));
    let mut net = NetSection { protocol: Some(protocol.clone()), ..Default::default() };
    if rr {
        let rate =
            num("TRANSACTION_RATE", "transactions per second")?.or(num("THROUGHPUT", "transactions per second")?);
        net.achieved_rate = rate;
        net.arrivals = Some("back-to-back".into());
        // transactions in the run: a float product of two finite numbers, saturating at u64::MAX
        r.rtt_ns = latency(src, &values, elapsed.zip(rate).map(|(e, r)| (e * r).round() as u64))?;
        if r.rtt_ns.is_none() && rate.is_none() {
            return Err(src.truncated(
                "a transaction rate or latency selectors (MIN_LATENCY, P50_LATENCY, ...) of a netperf RR test",
            ));
        }
    } else {
        let throughput = num("THROUGHPUT", "a throughput")?
            .ok_or_else(|| src.truncated("the throughput of a netperf STREAM test"))?;
        let units = values.get("THROUGHPUT_UNITS").map_or("10^6bits/s", |(_, u)| u.as_str());
        let (line, _) = values.get("THROUGHPUT").expect("read above");
        let bps = throughput
            * bits_per_unit(units).ok_or_else(|| {
                src.error(*line, format!("throughput unit \"{units}\": expected 10^Nbits/s or K/M/GBytes/s"))
            })?;
        if !bps.is_finite() {
            return Err(src.error(*line, format!("{throughput} {units}: expected a finite throughput in bits/s")));
        }
        let retransmits = num("LOCAL_TRANSPORT_RETRANS", "a count")?.map(|x| x as u64);
        r.flows.push(FlowResult {
            name: format!("netperf {protocol} stream"),
            throughput_bps: Some(bps),
            retransmits,
            ..Default::default()
        });
    }
    r.net = Some(net);
    let mut part = Part::new(r);
    part.command_line = values.get("COMMAND_LINE").map(|(_, v)| v.trim_matches('"').to_string());
    Ok(vec![part])
}

/// The classic output: a table whose first row of numbers ends with the rate or throughput.
fn classic(
    src: &Source,
    body: &[&(usize, String)],
    values: &mut BTreeMap<&'static str, (usize, String)>,
) -> Result<(), InputError> {
    let header = body.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>().join(" ");
    let row = body.iter().find(|(_, l)| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.len() >= 4 && words.iter().all(|w| w.parse::<f64>().is_ok())
    });
    let Some((n, row)) = row else {
        return Err(src.truncated(
            "netperf's result: a CSV header and values (-o), KEY=VALUE lines (-k), or the classic table's row \
             of numbers",
        ));
    };
    let words: Vec<&str> = row.split_whitespace().collect();
    let last = words.last().expect("at least four words").to_string();
    let elapsed = words[words.len() - 2].to_string();
    values.insert("ELAPSED_TIME", (*n, elapsed));
    if header.contains("Trans.") || header.contains("per sec") {
        values.insert("THROUGHPUT", (*n, last));
        values.insert("THROUGHPUT_UNITS", (*n, "Trans/s".into()));
    } else {
        let units = if header.contains("MBytes/sec") {
            "MBytes/s"
        } else if header.contains("KBytes/sec") {
            "KBytes/s"
        } else if header.contains("10^9bits") {
            "10^9bits/s"
        } else {
            "10^6bits/s"
        };
        values.insert("THROUGHPUT", (*n, last));
        values.insert("THROUGHPUT_UNITS", (*n, units.into()));
    }
    Ok(())
}

fn bits_per_unit(units: &str) -> Option<f64> {
    if let Some(rest) = units.strip_prefix("10^") {
        let exp: i32 = rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
        return Some(10f64.powi(exp));
    }
    let bytes = match units.chars().next()? {
        'K' => 1024.0,
        'M' => 1024.0 * 1024.0,
        'G' => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(bytes * 8.0)
}

/// The round-trip summary from the latency selectors present (None when there are none).
fn latency(
    src: &Source,
    values: &BTreeMap<&'static str, (usize, String)>,
    count: Option<u64>,
) -> Result<Option<rtvirt_model::stats::Summary>, InputError> {
    // nanoseconds of a selector in microseconds: finite, at least 0, below 2^64 ns
    let ns_f = |key: &str| -> Result<Option<f64>, InputError> {
        values.get(key).map(|(n, v)| ns_f64(src, *n, decimal(src, *n, v, "microseconds")?, 1000.0)).transpose()
    };
    let ns = |key: &str| Ok::<_, InputError>(ns_f(key)?.map(|v| v.round() as u64));
    let (min, max, mean) = (ns("MIN_LATENCY")?, ns("MAX_LATENCY")?, ns_f("MEAN_LATENCY")?);
    let known: Vec<(f64, u64)> = [(0.5, "P50_LATENCY"), (0.9, "P90_LATENCY"), (0.99, "P99_LATENCY")]
        .into_iter()
        .filter_map(|(q, k)| ns(k).transpose().map(|v| v.map(|v| (q, v))))
        .collect::<Result<_, _>>()?;
    if min.is_none() && max.is_none() && mean.is_none() && known.is_empty() {
        return Ok(None);
    }
    let max_ns = max.or_else(|| known.last().map(|k| k.1)).unwrap_or(0);
    let mean_ns = mean.unwrap_or_else(|| known.first().map_or(0.0, |k| k.1 as f64));
    let sd = ns_f("STDDEV_LATENCY")?.unwrap_or(0.0);
    Ok(Some(summary::of_percentiles(count.unwrap_or(0), min.unwrap_or(0), mean_ns, sd, max_ns, &known)))
}
