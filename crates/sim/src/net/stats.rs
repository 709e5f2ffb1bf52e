//! Per-flow statistics of a network simulation: end-to-end latency, its three segments
//! (host receive / guest / host send), delivered payload, drops -> [`FlowResult`].
//!
//! Throughput is the payload delivered to the receiving application: for a bulk flow the TCP
//! payload the guest application consumed, for a request/response flow the request payload its
//! server consumed (`throughput_bps`), with the completed requests per second
//! (`requests_per_s`) beside it.

use rtvirt_model::results::{FlowResult, Segment};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::Nanos;

/// Names of the latency segments, in path order.
pub const SEGMENTS: [&str; 3] = ["host_receive", "guest", "host_send"];

#[derive(Default, Clone)]
pub struct FlowStats {
    pub latency: LatencyHistogram,
    pub segments: [LatencyHistogram; 3],
    pub delivered_bytes: u64,
    pub sent: u64,
    pub drops: u64,
}

impl FlowStats {
    /// Record one completed round trip without segment boundaries (end-to-end only).
    pub fn record_rtt(&mut self, ns: u64) {
        self.latency.record(ns);
    }

    /// Record one completed request: its segment boundaries (arrival, VM entry, VM exit, out).
    pub fn record(&mut self, t0: Nanos, entry: Nanos, exit: Nanos, out: Nanos) {
        let entry = entry.max(t0);
        let exit = exit.max(entry);
        let out = out.max(exit);
        self.latency.record((out - t0).0);
        self.segments[0].record((entry - t0).0);
        self.segments[1].record((exit - entry).0);
        self.segments[2].record((out - exit).0);
    }

    /// The flow's result over `span` of measured time.
    pub fn result(&self, name: String, span: Nanos, drops: u64) -> FlowResult {
        let mut r = FlowResult { name, drops, ..Default::default() };
        let secs = span.as_secs_f64().max(1e-9);
        if self.latency.count() > 0 {
            r.latency_ns = Some(self.latency.summary());
            r.requests_per_s = Some(self.latency.count() as f64 / secs);
        }
        if self.segments[0].count() > 0 {
            for (k, h) in SEGMENTS.iter().zip(&self.segments) {
                r.segments_ns.insert((*k).into(), Segment::of(&h.summary()));
            }
        }
        r.throughput_bps = Some(self.delivered_bytes as f64 * 8.0 / secs);
        r.sent = Some(self.sent);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_add_up_to_latency() {
        let mut s = FlowStats::default();
        s.record(Nanos(100), Nanos(130), Nanos(180), Nanos(200));
        let r = s.result("f".into(), Nanos::from_secs(1), 0);
        assert_eq!(r.latency_ns.unwrap().max, 100);
        let seg = |k: &str| r.segments_ns[k].max().unwrap() as u64;
        assert_eq!(seg("host_receive") + seg("guest") + seg("host_send"), 100);
    }

    #[test]
    fn request_response_flow_reports_requests_and_bytes_per_second() {
        let mut s = FlowStats::default();
        for k in 0..50 {
            s.record(Nanos(k), Nanos(k + 10), Nanos(k + 20), Nanos(k + 30));
            s.delivered_bytes += 64;
        }
        let r = s.result("rr".into(), Nanos::from_ms(500), 0);
        assert_eq!(r.requests_per_s, Some(100.0));
        assert_eq!(r.throughput_bps, Some(100.0 * 64.0 * 8.0));
        // a flow without segment boundaries reports none
        let mut e = FlowStats::default();
        e.record_rtt(1_000);
        assert!(e.result("rtt".into(), Nanos::from_secs(1), 0).segments_ns.is_empty());
    }
}
