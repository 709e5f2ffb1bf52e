//! The request/response message: a 32-byte header (magic, seq, intended and actual send time of
//! the client, CLOCK_MONOTONIC ns) followed by padding up to the requested size. The server echoes
//! a message unchanged; over TCP each message is framed by a 4-byte big-endian length.

/// "RTVR".
pub const MAGIC: u32 = 0x5254_5652;
pub const HEADER: usize = 32;
/// Largest UDP payload over IPv4.
pub const MAX_UDP: usize = 65_507;
/// Largest TCP frame body the server accepts; longer frames close the connection.
pub const MAX_TCP_FRAME: usize = 65_536;

/// Decoded header of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub seq: u64,
    pub intended_ns: u64,
    pub sent_ns: u64,
}

/// Write a message of `size` bytes (>= HEADER) into `buf`.
pub fn encode(header: &Header, buf: &mut [u8]) {
    buf[0..4].copy_from_slice(&MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&0u32.to_be_bytes());
    buf[8..16].copy_from_slice(&header.seq.to_be_bytes());
    buf[16..24].copy_from_slice(&header.intended_ns.to_be_bytes());
    buf[24..32].copy_from_slice(&header.sent_ns.to_be_bytes());
}

/// Decode a message; None if it is too short or not ours.
pub fn decode(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER || buf[0..4] != MAGIC.to_be_bytes() {
        return None;
    }
    let u = |r: std::ops::Range<usize>| u64::from_be_bytes(buf[r].try_into().expect("8 bytes"));
    Some(Header { seq: u(8..16), intended_ns: u(16..24), sent_ns: u(24..32) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(seq: u64, a: u64, b: u64, pad in 0usize..100) {
            let h = Header { seq, intended_ns: a, sent_ns: b };
            let mut buf = vec![0u8; HEADER + pad];
            encode(&h, &mut buf);
            prop_assert_eq!(decode(&buf), Some(h));
        }

        #[test]
        fn garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode(&v);
        }
    }
}
