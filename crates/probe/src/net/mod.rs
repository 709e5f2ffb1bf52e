//! `measure net`: request/response latency (netperf RR / sockperf ping-pong) over UDP or TCP, with
//! the arrival processes of the seed studies. [`server`] echoes, [`client`] paces and measures;
//! [`stream`] measures bulk throughput against the same server (netperf TCP_STREAM/UDP_STREAM).
//!
//! ```no_run
//! use rtvirt_probe::net::{client, server, Protocol};
//! use std::sync::atomic::AtomicBool;
//! let srv = server::Server::bind(&server::ServerConfig {
//!     listen: "127.0.0.1:0".parse().unwrap(), protocol: Protocol::Udp, service_time_ns: 0 }).unwrap();
//! let addr = srv.local_addr();
//! let stop = AtomicBool::new(false);
//! std::thread::scope(|s| {
//!     s.spawn(|| srv.serve(&stop));
//!     let r = client::run(&client::ClientConfig { connect: addr, ..Default::default() }).unwrap();
//!     println!("{:?}", r.rtt_ns);
//!     stop.store(true, std::sync::atomic::Ordering::SeqCst);
//! });
//! ```

pub mod arrivals;
pub mod client;
pub mod server;
pub mod stream;
pub mod stream_wire;
pub mod timestamps;
pub mod wire;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Udp,
    Tcp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Udp => "udp",
            Protocol::Tcp => "tcp",
        }
    }
}

#[cfg(test)]
mod tests;
