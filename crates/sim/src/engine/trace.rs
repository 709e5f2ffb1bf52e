//! Chrome trace-event JSON (opens in Perfetto / chrome://tracing): complete ("X") slices on named
//! tracks, instant events, and thread-name metadata. Bounded: only events inside the configured
//! window are kept, and at most `max_events`; what was left out is counted and reported.
//! Events are stored compactly (interned names, ~40 bytes each) and streamed out by
//! [`TraceWriter::write_json`], so a trace of millions of events fits in memory.

use rtvirt_model::Nanos;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, Write};

/// Which part of the simulation to record.
#[derive(Debug, Clone, Copy)]
pub struct TraceWindow {
    pub from: Nanos,
    pub to: Nanos,
    pub max_events: usize,
}

/// Largest accepted `max_events` (about 40 bytes in memory and 100 bytes of JSON each).
pub const MAX_TRACE_EVENTS: usize = 20_000_000;

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

#[derive(Clone, Copy)]
struct Ev {
    track: Track,
    name: u32,
    ts: u64,
    /// None: an instant event.
    dur: Option<u64>,
    args: Option<u32>,
}

pub struct TraceWriter {
    window: TraceWindow,
    events: Vec<Ev>,
    names: Vec<String>,
    index: HashMap<String, u32>,
    args: Vec<Value>,
    meta: Vec<Value>,
    dropped: u64,
}

impl TraceWriter {
    pub fn new(window: TraceWindow) -> TraceWriter {
        TraceWriter {
            window,
            events: Vec::new(),
            names: Vec::new(),
            index: HashMap::new(),
            args: Vec::new(),
            meta: Vec::new(),
            dropped: 0,
        }
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
        self.push(track, name, s, Some(e.0 - s.0), args);
    }

    /// An instant event (e.g. a deadline miss or a packet drop).
    pub fn instant(&mut self, track: Track, name: &str, at: Nanos, args: Option<Value>) {
        if at < self.window.from || at >= self.window.to || !self.room() {
            return;
        }
        self.push(track, name, at, None, args);
    }

    /// Whether anything at or after `t` can still be recorded.
    pub fn wants(&self, t: Nanos) -> bool {
        t < self.window.to
    }

    /// Events left out because the trace was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Events kept.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The whole trace as a JSON document (small traces; prefer [`TraceWriter::write_json`]).
    pub fn finish(self) -> Value {
        let mut buf = Vec::new();
        self.write_json(&mut buf).expect("writing to memory cannot fail");
        serde_json::from_slice(&buf).expect("the writer emits valid JSON")
    }

    /// Stream the trace as JSON.
    pub fn write_json<W: Write>(&self, mut out: W) -> io::Result<()> {
        out.write_all(b"{\"traceEvents\":[\n")?;
        let mut first = true;
        for m in &self.meta {
            sep(&mut out, &mut first)?;
            serde_json::to_writer(&mut out, m)?;
        }
        for e in &self.events {
            sep(&mut out, &mut first)?;
            let name = serde_json::to_string(&self.names[e.name as usize])?;
            match e.dur {
                Some(d) => write!(
                    out,
                    "{{\"ph\":\"X\",\"name\":{name},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{}",
                    e.track.pid,
                    e.track.tid,
                    us(e.ts),
                    us(d)
                )?,
                None => write!(
                    out,
                    "{{\"ph\":\"i\",\"s\":\"t\",\"name\":{name},\"pid\":{},\"tid\":{},\"ts\":{}",
                    e.track.pid,
                    e.track.tid,
                    us(e.ts)
                )?,
            }
            if let Some(a) = e.args {
                out.write_all(b",\"args\":")?;
                serde_json::to_writer(&mut out, &self.args[a as usize])?;
            }
            out.write_all(b"}")?;
        }
        write!(
            out,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"window_from_ns\":{},\
             \"window_to_ns\":{},\"dropped_events\":{}}}}}\n",
            self.window.from.0, self.window.to.0, self.dropped
        )
    }

    fn push(&mut self, track: Track, name: &str, at: Nanos, dur: Option<u64>, args: Option<Value>) {
        let name = match self.index.get(name) {
            Some(&i) => i,
            None => {
                let i = self.names.len() as u32;
                self.names.push(name.to_string());
                self.index.insert(name.to_string(), i);
                i
            }
        };
        let args = args.map(|a| {
            self.args.push(a);
            self.args.len() as u32 - 1
        });
        self.events.push(Ev { track, name, ts: at.0, dur, args });
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

fn sep<W: Write>(out: &mut W, first: &mut bool) -> io::Result<()> {
    if !*first {
        out.write_all(b",\n")?;
    }
    *first = false;
    Ok(())
}

/// Trace timestamps are microseconds with 3 decimals (ns precision kept exactly).
fn us(ns: u64) -> String {
    if ns.is_multiple_of(1000) {
        format!("{}", ns / 1000)
    } else {
        format!("{}.{:03}", ns / 1000, ns % 1000)
    }
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
        w.instant(t, "miss", Nanos(3000), Some(json!({"k": 1})));
        w.slice(t, "full", Nanos(3000), Nanos(4000), None);
        assert_eq!(w.dropped(), 1);
        let v = w.finish();
        let evs = v["traceEvents"].as_array().unwrap();
        assert_eq!(evs.len(), 4);
        assert_eq!(evs[2]["ts"], 1.0);
        assert_eq!(evs[2]["dur"], 1.0);
        assert_eq!(evs[3]["args"]["k"], 1);
        assert_eq!(v["otherData"]["dropped_events"], 1);
    }

    #[test]
    fn keeps_nanosecond_precision() {
        let mut w = TraceWriter::new(TraceWindow::default());
        w.slice(Track { pid: 0, tid: 0 }, "x\"y", Nanos(1500), Nanos(2001), None);
        let v = w.finish();
        assert_eq!(v["traceEvents"][0]["ts"], 1.5);
        assert_eq!(v["traceEvents"][0]["dur"], 0.501);
        assert_eq!(v["traceEvents"][0]["name"], "x\"y");
    }
}
