//! Per-flow statistics of a network simulation: end-to-end latency, its three segments
//! (host receive / guest / host send), delivered payload, drops -> [`FlowResult`].

use rtvirt_model::results::FlowResult;
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::Nanos;
use serde_json::json;

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
        if self.latency.count() > 0 {
            r.latency_ns = Some(self.latency.summary());
            for (k, h) in SEGMENTS.iter().zip(&self.segments) {
                let s = h.summary();
                r.segments_ns.insert((*k).into(), json!({"mean": s.mean, "sd": s.sd, "p50": s.p50, "p99": s.p99, "max": s.max}));
            }
        }
        if self.delivered_bytes > 0 || self.latency.count() == 0 {
            r.throughput_bps = Some(self.delivered_bytes as f64 * 8.0 / span.as_secs_f64().max(1e-9));
        }
        r.extra.insert("sent".into(), self.sent.into());
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
        let seg = |k: &str| r.segments_ns[k]["max"].as_u64().unwrap();
        assert_eq!(seg("host_receive") + seg("guest") + seg("host_send"), 100);
    }
}
