//! iperf3 `--json`: the version, the test's protocol, streams and duration (`start`), and the
//! totals (`end.sum_received` for TCP, `end.sum` for UDP with its lost packets) as one flow
//! with its throughput; an `"error"` iperf3 recorded is an input error.

use crate::text::{ns_f64, s_to_ns, Source};
use crate::Part;
use rtvirt_model::results::{Environment, FlowResult, NetSection, Results};
use rtvirt_model::InputError;
use serde::Deserialize;

#[derive(Deserialize)]
struct Iperf {
    #[serde(default)]
    start: Option<Start>,
    #[serde(default)]
    end: Option<End>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Start {
    version: Option<String>,
    system_info: Option<String>,
    #[serde(default)]
    test_start: Option<TestStart>,
    #[serde(default)]
    connecting_to: Option<Peer>,
}

#[derive(Deserialize)]
struct Peer {
    host: String,
    port: u16,
}

#[derive(Deserialize)]
struct TestStart {
    protocol: String,
    num_streams: u32,
    #[serde(default)]
    reverse: u32,
}

#[derive(Deserialize)]
struct End {
    sum_received: Option<Sum>,
    sum_sent: Option<Sum>,
    sum: Option<Sum>,
}

#[derive(Deserialize)]
struct Sum {
    seconds: f64,
    bits_per_second: f64,
    #[serde(default)]
    retransmits: Option<u64>,
    #[serde(default)]
    lost_packets: Option<u64>,
    #[serde(default)]
    packets: Option<u64>,
}

pub(crate) fn import(src: &Source) -> Result<Vec<Part>, InputError> {
    let doc: Iperf = serde_json::from_str(src.text).map_err(|e| src.json_error(&e, "iperf3 --json output"))?;
    if let Some(e) = doc.error {
        return Err(src.error(1, format!("iperf3 recorded an error, no result: \"{e}\"")));
    }
    let start = doc.start.ok_or_else(|| src.error(1, "no \"start\" section: expected iperf3's test settings"))?;
    let test = start
        .test_start
        .as_ref()
        .ok_or_else(|| src.error(1, "no \"start.test_start\": expected iperf3's protocol and streams"))?;
    let end =
        doc.end.ok_or_else(|| src.error(1, "no \"end\" section: expected iperf3's totals (did the test finish?)"))?;
    let udp = test.protocol.eq_ignore_ascii_case("udp");
    let total = if udp { end.sum.as_ref() } else { end.sum_received.as_ref().or(end.sum.as_ref()) };
    let total = total.ok_or_else(|| {
        src.error(1, "\"end\" has no \"sum_received\" (TCP) or \"sum\" (UDP): expected iperf3's totals")
    })?;
    let protocol = test.protocol.to_lowercase();
    ns_f64(src, 1, total.bits_per_second, 1.0)
        .map_err(|_| src.error(1, format!("bits_per_second {}: expected at least 0", total.bits_per_second)))?;
    let mut r = Results::new("net", s_to_ns(src, 1, total.seconds)?);
    let direction = if test.reverse != 0 { "reverse" } else { "forward" };
    r.flows.push(FlowResult {
        name: format!("iperf3 {protocol} {direction}, {} stream(s)", test.num_streams),
        throughput_bps: Some(total.bits_per_second),
        drops: total.lost_packets.unwrap_or(0),
        sent: total.packets,
        retransmits: end.sum_sent.as_ref().and_then(|s| s.retransmits).or(total.retransmits),
        ..Default::default()
    });
    r.net = Some(NetSection { protocol: Some(protocol), ..Default::default() });
    r.environment = Some(Environment {
        kernel: start.system_info.clone(),
        peer: start.connecting_to.as_ref().map(|p| format!("{}:{}", p.host, p.port)),
        ..Default::default()
    });
    let mut part = Part::new(r);
    part.version = start.version.map(|v| v.trim_start_matches("iperf ").to_string());
    Ok(vec![part])
}
