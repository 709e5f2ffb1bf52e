//! Chrome trace-event JSON (opens in Perfetto / chrome://tracing): complete ("X") slices on named
//! tracks, instant events, and thread-name metadata. Bounded: only events inside the configured
//! window are kept, and at most `max_events`; what was left out is counted and reported.

use rtvirt_model::Nanos;
use serde_json::{json, Value};

/// Which part of the simulation to record.
#[derive(Debug, Clone, Copy)]
pub struct TraceWindow {
    pub from: Nanos,
    pub to: Nanos,
    pub max_events: usize,
}

impl Default for TraceWindow {
    fn default() -> Self {
        TraceWindow { from: Nanos::ZERO, to: Nanos::from_secs(1), max_events: 1_000_000 }
    }
}

/// A track: a "process" (group, e.g. "cores" or "guest vm1") and a "thread" (row) in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Track {
    pub pid: u32,
    pub tid: u32,
}

pub struct TraceWriter {
    window: TraceWindow,
    events: Vec<Value>,
    meta: Vec<Value>,
    dropped: u64,
}

impl TraceWriter {
    pub fn new(window: TraceWindow) -> TraceWriter {
        TraceWriter { window, events: Vec::new(), meta: Vec::new(), dropped: 0 }
    }

    /// Name a group of tracks and one track in it.
    pub fn name_track(&mut self, track: Track, group: &str, name: &str) {
        self.meta.push(json!({"ph":"M","name":"process_name","pid":track.pid,"tid":track.tid,"args":{"name":group}}));
        self.meta.push(json!({"ph":"M","name":"thread_name","pid":track.pid,"tid":track.tid,"args":{"name":name}}));
    }

    /// A slice `[start, end)` named `name` on `track` (clipped to the window).
    pub fn slice(&mut self, track: Track, name: &str, start: Nanos, end: Nanos, args: Option<Value>) {
        let (s, e) = (start.max(self.window.from), end.min(self.window.to));
        if e <= s || !self.room() {
            return;
        }
        let mut ev = json!({"ph":"X","name":name,"pid":track.pid,"tid":track.tid,"ts":us(s),"dur":us(e - s)});
        if let Some(a) = args {
            ev["args"] = a;
        }
        self.events.push(ev);
    }

    /// An instant event (e.g. a deadline miss or a packet drop).
    pub fn instant(&mut self, track: Track, name: &str, at: Nanos, args: Option<Value>) {
        if at < self.window.from || at >= self.window.to || !self.room() {
            return;
        }
        let mut ev = json!({"ph":"i","s":"t","name":name,"pid":track.pid,"tid":track.tid,"ts":us(at)});
        if let Some(a) = args {
            ev["args"] = a;
        }
        self.events.push(ev);
    }

    /// Events left out because the trace was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The whole trace as a JSON document.
    pub fn finish(self) -> Value {
        let mut all = self.meta;
        all.extend(self.events);
        json!({"traceEvents": all, "displayTimeUnit": "ns",
               "otherData": {"window_from_ns": self.window.from.0, "window_to_ns": self.window.to.0, "dropped_events": self.dropped}})
    }

    fn room(&mut self) -> bool {
        if self.events.len() >= self.window.max_events {
            self.dropped += 1;
            false
        } else {
            true
        }
    }
}

/// Trace timestamps are microseconds (fractional, so ns precision is kept).
fn us(t: Nanos) -> f64 {
    t.0 as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_and_bounds() {
        let mut w = TraceWriter::new(TraceWindow { from: Nanos(1000), to: Nanos(5000), max_events: 2 });
        let t = Track { pid: 1, tid: 2 };
        w.name_track(t, "cores", "core 0");
        w.slice(t, "a", Nanos(0), Nanos(2000), None);
        w.slice(t, "outside", Nanos(6000), Nanos(7000), None);
        w.instant(t, "miss", Nanos(3000), None);
        w.slice(t, "full", Nanos(3000), Nanos(4000), None);
        assert_eq!(w.dropped(), 1);
        let v = w.finish();
        let evs = v["traceEvents"].as_array().unwrap();
        assert_eq!(evs.len(), 4);
        assert_eq!(evs[2]["ts"], 1.0);
        assert_eq!(evs[2]["dur"], 1.0);
    }
}
