//! The stream messages (`measure net client --stream`) and the receiver's tally, shared by the
//! client ([`super::stream`]) and the server ([`super::server`]).
//!
//! Every stream message starts with a 32-byte header: magic "RTVS", the message type, the
//! stream's id, a sequence number and the sender's interval number. UDP: each data datagram is
//! a message (padded to the message size); the sender asks for the receipt with `End` datagrams
//! and the server answers with a `Receipt` datagram (header + JSON of [`StreamReceipt`]). TCP:
//! one `Start` message framed as a request (4-byte big-endian length), then raw bytes until the
//! sender shuts its side down; the server answers with a framed `Receipt` and closes.

use crate::rt;
use rtvirt_model::results::StreamReceipt;

/// "RTVS".
pub const MAGIC: u32 = 0x5254_5653;
pub const HEADER: usize = 32;
/// Intervals a receiver counts per stream (more: counted in the totals only).
pub const MAX_INTERVALS: usize = 3600;
/// Longest receipt message (header + JSON of at most [`MAX_INTERVALS`] intervals is far less);
/// a TCP client refuses a longer announced length.
pub const MAX_RECEIPT: usize = 1 << 20;
/// Streams a UDP server keeps at once (the oldest is forgotten for a new one).
pub const MAX_STREAMS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    Data = 0,
    /// UDP: the sender has finished and asks for the receipt.
    End = 1,
    /// The receiver's counts (JSON after the header).
    Receipt = 2,
    /// TCP: raw stream bytes follow; `interval` carries the interval length in ns.
    Start = 3,
}

/// Decoded header of a stream message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: MessageType,
    pub stream: u64,
    pub seq: u64,
    pub interval: u64,
}

/// Write the header into the first [`HEADER`] bytes of `buf`.
pub fn encode(header: &Header, buf: &mut [u8]) {
    buf[0..4].copy_from_slice(&MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&(header.kind as u32).to_be_bytes());
    buf[8..16].copy_from_slice(&header.stream.to_be_bytes());
    buf[16..24].copy_from_slice(&header.seq.to_be_bytes());
    buf[24..32].copy_from_slice(&header.interval.to_be_bytes());
}

/// Decode a stream message's header; None if it is not one.
pub fn decode(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER || buf[0..4] != MAGIC.to_be_bytes() {
        return None;
    }
    let u = |r: std::ops::Range<usize>| u64::from_be_bytes(buf[r].try_into().expect("8 bytes"));
    let kind = match u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes")) {
        0 => MessageType::Data,
        1 => MessageType::End,
        2 => MessageType::Receipt,
        3 => MessageType::Start,
        _ => return None,
    };
    Some(Header { kind, stream: u(8..16), seq: u(16..24), interval: u(24..32) })
}

/// A receipt message: header + JSON.
pub fn encode_receipt(stream: u64, receipt: &StreamReceipt) -> Vec<u8> {
    let mut msg = vec![0u8; HEADER];
    encode(&Header { kind: MessageType::Receipt, stream, seq: 0, interval: 0 }, &mut msg);
    msg.extend(serde_json::to_vec(receipt).expect("a receipt is JSON"));
    msg
}

/// The receipt in a message of stream `stream`; None if it is not one.
pub fn decode_receipt(stream: u64, msg: &[u8]) -> Option<StreamReceipt> {
    let h = decode(msg)?;
    (h.kind == MessageType::Receipt && h.stream == stream).then(|| serde_json::from_slice(&msg[HEADER..]).ok())?
}

/// What a receiver counts of one stream, on the receiving thread.
#[derive(Debug, Clone)]
pub struct Tally {
    bytes: u64,
    messages: u64,
    first_ns: u64,
    last_ns: u64,
    cpu_at_start: u64,
    interval_bytes: Vec<u64>,
    interval_messages: Vec<u64>,
}

impl Tally {
    /// A stream whose first message arrives now (on the receiving thread).
    pub fn start() -> Tally {
        let now = rt::now_ns();
        Tally {
            bytes: 0,
            messages: 0,
            first_ns: now,
            last_ns: now,
            cpu_at_start: rt::thread_cpu_ns(),
            interval_bytes: Vec::new(),
            interval_messages: Vec::new(),
        }
    }

    pub fn first_ns(&self) -> u64 {
        self.first_ns
    }

    /// Count `bytes` received in one message, in interval `interval` (a UDP sender's interval
    /// number; TCP: the receiver's, see [`Tally::interval_now`]).
    pub fn record(&mut self, bytes: usize, interval: u64, count_messages: bool) {
        self.bytes += bytes as u64;
        self.messages += 1;
        self.last_ns = rt::now_ns();
        let i = interval as usize;
        if i < MAX_INTERVALS {
            if self.interval_bytes.len() <= i {
                self.interval_bytes.resize(i + 1, 0);
                if count_messages {
                    self.interval_messages.resize(i + 1, 0);
                }
            }
            self.interval_bytes[i] += bytes as u64;
            if count_messages {
                self.interval_messages[i] += 1;
            }
        }
    }

    /// The receiver's interval number now, for intervals of `interval_ns` from the first byte.
    pub fn interval_now(&self, interval_ns: u64) -> u64 {
        rt::now_ns().saturating_sub(self.first_ns) / interval_ns.max(1)
    }

    /// The receipt (CPU time up to now, on the receiving thread).
    pub fn receipt(&self) -> StreamReceipt {
        StreamReceipt {
            bytes: self.bytes,
            messages: self.messages,
            active_ns: self.last_ns - self.first_ns,
            cpu_ns: rt::thread_cpu_ns().saturating_sub(self.cpu_at_start),
            interval_bytes: self.interval_bytes.clone(),
            interval_messages: self.interval_messages.clone(),
        }
    }
}

/// A UDP server's streams: at most [`MAX_STREAMS`], the oldest forgotten first.
#[derive(Default)]
pub struct Streams {
    streams: Vec<(u64, Tally)>,
}

impl Streams {
    /// Account one datagram of a stream.
    pub fn datagram(&mut self, header: &Header, len: usize) {
        let tally = match self.streams.iter().position(|(id, _)| *id == header.stream) {
            Some(i) => &mut self.streams[i].1,
            None => {
                if self.streams.len() >= MAX_STREAMS {
                    let oldest = (0..self.streams.len()).min_by_key(|&i| self.streams[i].1.first_ns).expect("full");
                    self.streams.swap_remove(oldest);
                }
                self.streams.push((header.stream, Tally::start()));
                &mut self.streams.last_mut().expect("pushed").1
            }
        };
        tally.record(len, header.interval, true);
    }

    /// The receipt of `stream` (an empty one if nothing of it arrived).
    pub fn receipt(&self, stream: u64) -> StreamReceipt {
        self.streams.iter().find(|(id, _)| *id == stream).map(|(_, t)| t.receipt()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn header_round_trip(kind in 0u32..4, stream: u64, seq: u64, interval: u64, pad in 0usize..64) {
            let kind = [MessageType::Data, MessageType::End, MessageType::Receipt, MessageType::Start][kind as usize];
            let h = Header { kind, stream, seq, interval };
            let mut buf = vec![0u8; HEADER + pad];
            encode(&h, &mut buf);
            prop_assert_eq!(decode(&buf), Some(h));
        }

        #[test]
        fn garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode(&v);
            let _ = decode_receipt(1, &v);
        }
    }

    #[test]
    fn receipts_round_trip_and_belong_to_their_stream() {
        let r = StreamReceipt { bytes: 10, messages: 2, interval_bytes: vec![4, 6], ..Default::default() };
        let msg = encode_receipt(7, &r);
        assert_eq!(decode_receipt(7, &msg), Some(r));
        assert_eq!(decode_receipt(8, &msg), None);
    }

    #[test]
    fn a_udp_server_counts_per_stream_and_interval_and_forgets_the_oldest() {
        let mut s = Streams::default();
        let h = |stream, interval| Header { kind: MessageType::Data, stream, seq: 0, interval };
        s.datagram(&h(1, 0), 100);
        s.datagram(&h(1, 2), 50);
        s.datagram(&h(1, MAX_INTERVALS as u64), 7);
        let r = s.receipt(1);
        assert_eq!((r.bytes, r.messages), (157, 3));
        assert_eq!(r.interval_bytes, [100, 0, 50]);
        assert_eq!(r.interval_messages, [1, 0, 1]);
        for id in 2..=MAX_STREAMS as u64 + 1 {
            s.datagram(&h(id, 0), 1);
        }
        assert_eq!(s.receipt(1), StreamReceipt::default(), "the oldest stream is forgotten");
        assert_eq!(s.receipt(2).bytes, 1);
    }
}
