//! The request/response server (UDP or TCP). It echoes every well-formed message after an
//! optional service time, and drops malformed, truncated and oversized input without growing
//! memory: fixed buffers, at most [`MAX_CONNECTIONS`] TCP connections, idle connections closed.

use super::wire;
use super::Protocol;
use crate::error::{Context, Error, Result};
use crate::rt;
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// TCP connections served at once; more are closed on accept.
pub const MAX_CONNECTIONS: u64 = 64;
/// A TCP connection that sends nothing for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub protocol: Protocol,
    /// Time the server waits (sleeping) before answering each request.
    pub service_time_ns: u64,
}

/// What the server saw.
#[derive(Debug, Default, Serialize)]
pub struct ServerStats {
    pub requests: AtomicU64,
    pub responses: AtomicU64,
    pub malformed: AtomicU64,
    pub truncated: AtomicU64,
    pub oversized: AtomicU64,
    pub connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    #[serde(skip)]
    active: AtomicU64,
}

enum Socket {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

/// A bound server; [`Server::serve`] runs it until the stop flag is raised.
pub struct Server {
    cfg: ServerConfig,
    socket: Socket,
    pub stats: Arc<ServerStats>,
}

impl Server {
    /// Bind the address (port in use, address not local: an error that says so).
    pub fn bind(cfg: &ServerConfig) -> Result<Server> {
        let what = || format!("cannot listen on {} ({})", cfg.listen, cfg.protocol.as_str());
        let socket = match cfg.protocol {
            Protocol::Udp => {
                let s = UdpSocket::bind(cfg.listen).context(what)?;
                s.set_read_timeout(Some(POLL)).context(what)?;
                Socket::Udp(s)
            }
            Protocol::Tcp => {
                let l = TcpListener::bind(cfg.listen).context(what)?;
                l.set_nonblocking(true).context(what)?;
                Socket::Tcp(l)
            }
        };
        Ok(Server { cfg: cfg.clone(), socket, stats: Arc::new(ServerStats::default()) })
    }

    /// The address really bound (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        match &self.socket {
            Socket::Udp(s) => s.local_addr().unwrap_or(self.cfg.listen),
            Socket::Tcp(l) => l.local_addr().unwrap_or(self.cfg.listen),
        }
    }

    /// Serve until `stop` (or Ctrl-C).
    pub fn serve(&self, stop: &AtomicBool) -> Result<()> {
        match &self.socket {
            Socket::Udp(s) => self.serve_udp(s, stop),
            Socket::Tcp(l) => self.serve_tcp(l, stop),
        }
    }

    fn stopped(stop: &AtomicBool) -> bool {
        stop.load(Ordering::Relaxed) || rtvirt_os::signals::interrupted()
    }

    fn serve_udp(&self, s: &UdpSocket, stop: &AtomicBool) -> Result<()> {
        let mut buf = vec![0u8; wire::MAX_UDP + 1];
        let st = &self.stats;
        while !Self::stopped(stop) {
            let (n, peer) = match s.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    continue
                }
                Err(e) => return Err(Error::os("UDP server receive failed", e)),
            };
            st.requests.fetch_add(1, Ordering::Relaxed);
            if n > wire::MAX_UDP {
                st.oversized.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if wire::decode(&buf[..n]).is_none() {
                st.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.service();
            if s.send_to(&buf[..n], peer).is_ok() {
                st.responses.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    fn service(&self) {
        if self.cfg.service_time_ns > 0 {
            rt::sleep_until(rt::now_ns() + self.cfg.service_time_ns);
        }
    }

    fn serve_tcp(&self, l: &TcpListener, stop: &AtomicBool) -> Result<()> {
        std::thread::scope(|scope| {
            while !Self::stopped(stop) {
                match l.accept() {
                    Ok((conn, _)) => {
                        self.stats.connections.fetch_add(1, Ordering::Relaxed);
                        if self.stats.active.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                            self.stats.rejected_connections.fetch_add(1, Ordering::Relaxed);
                            continue; // dropped: closed
                        }
                        self.stats.active.fetch_add(1, Ordering::Relaxed);
                        scope.spawn(move || {
                            self.serve_connection(conn, stop);
                            self.stats.active.fetch_sub(1, Ordering::Relaxed);
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::os("TCP server accept failed", e)),
                }
            }
            Ok(())
        })
    }

    /// Serve one connection until it closes, misbehaves, idles out or the server stops.
    fn serve_connection(&self, mut c: TcpStream, stop: &AtomicBool) {
        let st = &self.stats;
        let _ = c.set_nonblocking(false);
        let _ = c.set_nodelay(true);
        let _ = c.set_read_timeout(Some(POLL));
        let mut buf = vec![0u8; 4 + wire::MAX_TCP_FRAME];
        loop {
            let Some(()) = read_full(&mut c, &mut buf[..4], stop) else { return };
            let len = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
            st.requests.fetch_add(1, Ordering::Relaxed);
            if len > wire::MAX_TCP_FRAME {
                st.oversized.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let Some(()) = read_full(&mut c, &mut buf[4..4 + len], stop) else {
                st.truncated.fetch_add(1, Ordering::Relaxed);
                return;
            };
            if wire::decode(&buf[4..4 + len]).is_none() {
                st.malformed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.service();
            if c.write_all(&buf[..4 + len]).is_err() {
                return;
            }
            st.responses.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Read exactly `buf.len()` bytes; None on EOF, error, idle timeout or stop.
fn read_full(c: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> Option<()> {
    let mut got = 0;
    let mut idle_since = rt::now_ns();
    while got < buf.len() {
        if Server::stopped(stop) || rt::now_ns() - idle_since > IDLE_TIMEOUT.as_nanos() as u64 {
            return None;
        }
        match c.read(&mut buf[got..]) {
            Ok(0) => return None,
            Ok(n) => {
                got += n;
                idle_since = rt::now_ns();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return None,
        }
    }
    Some(())
}

impl ServerStats {
    /// The counts as they stand, for a results document.
    pub fn snapshot(&self) -> rtvirt_model::results::ServerStats {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        rtvirt_model::results::ServerStats {
            connections: read(&self.connections),
            malformed: read(&self.malformed),
            oversized: read(&self.oversized),
            rejected_connections: read(&self.rejected_connections),
            requests: read(&self.requests),
            responses: read(&self.responses),
            truncated: read(&self.truncated),
        }
    }
}
