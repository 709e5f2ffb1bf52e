use super::arrivals::Arrivals;
use super::client::{self, ClientConfig};
use super::server::{Server, ServerConfig};
use super::{wire, Protocol};
use rtvirt_model::Nanos;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};

fn with_server<T>(protocol: Protocol, f: impl FnOnce(std::net::SocketAddr, &Server) -> T) -> T {
    with_server_at(protocol, 0, f)
}

/// A server taking `service_time_ns` per request, serving on a thread while `f` runs.
fn with_server_at<T>(
    protocol: Protocol,
    service_time_ns: u64,
    f: impl FnOnce(std::net::SocketAddr, &Server) -> T,
) -> T {
    let srv =
        Server::bind(&ServerConfig { listen: "127.0.0.1:0".parse().unwrap(), protocol, service_time_ns }).unwrap();
    let stop = AtomicBool::new(false);
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    std::thread::scope(|s| {
        let h = s.spawn(|| srv.serve(&stop));
        let guard = StopOnDrop(&stop);
        let out = f(srv.local_addr(), &srv);
        drop(guard);
        h.join().unwrap().unwrap();
        out
    })
}

fn client(addr: std::net::SocketAddr, protocol: Protocol, arrivals: &str) -> rtvirt_model::results::Results {
    let cfg = ClientConfig {
        connect: addr,
        protocol,
        arrivals: Arrivals::parse(arrivals).unwrap(),
        duration: Nanos::from_ms(400),
        ..Default::default()
    };
    client::run(&cfg).unwrap()
}

fn net(results: &rtvirt_model::results::Results) -> &rtvirt_model::results::NetSection {
    results.net.as_ref().expect("client results have a net section")
}

#[test]
fn udp_and_tcp_round_trips_every_arrival_process() {
    for p in [Protocol::Udp, Protocol::Tcp] {
        with_server(p, |addr, _| {
            for a in ["back-to-back", "uniform:1ms-3ms", "poisson:500", "fixed:500"] {
                let r = client(addr, p, a);
                let rtt = r.rtt_ns.as_ref().unwrap();
                assert!(net(&r).requests.unwrap() > 20, "{a}: {r:?}");
                assert_eq!(net(&r).lost.unwrap(), 0, "{p:?} {a}");
                assert_eq!(rtt.count, net(&r).responses.unwrap());
                assert!(rtt.min > 0 && rtt.p50 < 50_000_000, "{rtt:?}");
                assert_eq!(net(&r).arrivals, Some(Arrivals::parse(a).unwrap().to_string()));
            }
        });
    }
}

#[test]
fn udp_and_tcp_record_kernel_software_timestamps() {
    for p in [Protocol::Udp, Protocol::Tcp] {
        with_server(p, |addr, _| {
            for arrivals in ["fixed:1000", "back-to-back"] {
                let r = client(addr, p, arrivals);
                assert_eq!(net(&r).kernel_timestamps.as_deref(), Some("software (SO_TIMESTAMPING)"));
                assert_eq!(net(&r).kernel_tx_timestamps, Some(true));
                let summary = |s: &Option<rtvirt_model::stats::Summary>, k: &str| -> rtvirt_model::stats::Summary {
                    s.clone().unwrap_or_else(|| panic!("{p:?} {arrivals}: no {k}"))
                };
                let user = r.rtt_ns.as_ref().unwrap();
                let rx = summary(&net(&r).rtt_kernel_rx_ns, "rtt_kernel_rx_ns");
                // The kernel saw the response before user space read it.
                assert!(rx.p50 <= user.p50 + 1_000_000, "{rx:?}");
                // Kernel TX stamp -> kernel RX stamp: present for most responses (a 5 s loopback
                // run matched 93% (UDP) and 100% (TCP)), and inside the user-space round trip
                // (sent after, received before) in aggregate.
                let k2k = summary(&net(&r).rtt_kernel_ns, "rtt_kernel_ns");
                assert!(
                    k2k.count * 2 >= user.count,
                    "{p:?} {arrivals}: {} kernel round trips of {} responses",
                    k2k.count,
                    user.count
                );
                assert!(k2k.min > 0, "{k2k:?}");
                assert!(
                    k2k.mean <= user.mean && k2k.p50 <= user.p50,
                    "{p:?} {arrivals}: kernel {k2k:?} vs user {user:?}"
                );
            }
        });
    }
}

#[test]
fn tx_stamps_are_bounded_and_keyed() {
    let mut tx = super::timestamps::TxStamps::default();
    // Nothing queued on a fresh socket: draining returns at once, nothing is found.
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    use std::os::fd::AsRawFd;
    tx.drain(s.as_raw_fd());
    assert_eq!((tx.read, tx.get(0)), (0, None));
}

#[test]
fn paced_rtt_counts_from_the_intended_send_time() {
    // A server that takes 5 ms per request, fed 1000 requests/s: the queue grows, and measured
    // from the intended times the RTT grows far beyond the 5 ms service time.
    let r = with_server_at(Protocol::Udp, 5_000_000, |addr, _| {
        let cfg = ClientConfig {
            connect: addr,
            arrivals: Arrivals::Fixed { rate: 1000.0 },
            duration: Nanos::from_ms(300),
            timeout: Nanos::from_secs(3),
            ..Default::default()
        };
        client::run(&cfg).unwrap()
    });
    let rtt = r.rtt_ns.clone().unwrap();
    assert!(rtt.max > 100_000_000, "queueing must show: {rtt:?}");
    assert!(net(&r).achieved_rate.unwrap() > 500.0);
}

#[test]
fn lost_requests_are_counted() {
    // Nothing answers on this socket: every request is lost; the run still ends.
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let cfg = ClientConfig {
        connect: sink.local_addr().unwrap(),
        arrivals: Arrivals::Fixed { rate: 200.0 },
        duration: Nanos::from_ms(200),
        timeout: Nanos::from_ms(100),
        ..Default::default()
    };
    let r = client::run(&cfg).unwrap();
    assert!(net(&r).requests.unwrap() > 10);
    assert_eq!(net(&r).lost.unwrap(), net(&r).requests.unwrap());
    // A request never answered did not get its response within the timeout either.
    assert_eq!(net(&r).timeouts.unwrap(), net(&r).requests.unwrap());
    assert_eq!(r.rtt_ns.unwrap().count, 0);
}

#[test]
fn a_tcp_server_that_stops_reading_cannot_block_the_client_past_the_timeout() {
    // Accepts, never reads: the socket buffers fill, then a send waits; the write timeout ends
    // the sending and what was not answered counts as lost and timed out.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let holder = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        drop(conn);
    });
    for arrivals in ["fixed:2000", "back-to-back"] {
        let cfg = ClientConfig {
            connect: addr,
            protocol: Protocol::Tcp,
            size: 60_000,
            arrivals: Arrivals::parse(arrivals).unwrap(),
            duration: Nanos::from_ms(500),
            timeout: Nanos::from_ms(100),
            ..Default::default()
        };
        let r = client::run(&cfg).unwrap();
        assert!(net(&r).requests.unwrap() > 0, "{arrivals}");
        assert_eq!(net(&r).responses.unwrap(), 0, "{arrivals}");
        assert_eq!(net(&r).timeouts.unwrap(), net(&r).requests.unwrap(), "{arrivals}");
        if arrivals != "back-to-back" {
            // Closed loop sends one request per timeout; open loop fills the buffers and blocks.
            assert_eq!(net(&r).send_blocked, Some(true), "{r:?}");
        }
    }
    holder.join().unwrap();
}

#[test]
fn responses_later_than_the_timeout_are_timeouts() {
    let r = with_server_at(Protocol::Udp, 30_000_000, |addr, _| {
        let cfg = ClientConfig {
            connect: addr,
            arrivals: Arrivals::Fixed { rate: 20.0 },
            duration: Nanos::from_ms(500),
            timeout: Nanos::from_ms(10),
            ..Default::default()
        };
        client::run(&cfg).unwrap()
    });
    assert!(net(&r).late.unwrap() > 0, "{r:?}");
    assert_eq!(net(&r).timeouts.unwrap(), net(&r).late.unwrap() + net(&r).lost.unwrap());
    assert!(net(&r).timeouts.unwrap() > 0);
}

#[test]
fn server_survives_garbage_and_keeps_serving() {
    with_server(Protocol::Udp, |addr, srv| {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for msg in [&b""[..], b"x", &[0u8; 31], &[0xffu8; 1000], &vec![7u8; 65_507]] {
            s.send_to(msg, addr).unwrap();
        }
        let r = client(addr, Protocol::Udp, "fixed:200");
        assert_eq!(net(&r).lost.unwrap(), 0);
        assert!(srv.stats.malformed.load(Ordering::Relaxed) >= 4);
    });
    with_server(Protocol::Tcp, |addr, srv| {
        // A frame claiming 4 GiB, a truncated frame, and a frame of garbage: each connection is
        // closed; the server keeps serving others and never allocates for the claimed size.
        let mut huge = std::net::TcpStream::connect(addr).unwrap();
        huge.write_all(&u32::MAX.to_be_bytes()).unwrap();
        let mut trunc = std::net::TcpStream::connect(addr).unwrap();
        trunc.write_all(&[0, 0, 0, 64, 1, 2, 3]).unwrap();
        drop(trunc);
        let mut junk = std::net::TcpStream::connect(addr).unwrap();
        let mut frame = vec![0, 0, 0, 40];
        frame.extend_from_slice(&[9u8; 40]);
        junk.write_all(&frame).unwrap();
        let mut b = [0u8; 1];
        huge.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        assert_eq!(huge.read(&mut b).unwrap_or(0), 0, "oversized frame closes the connection");
        let r = client(addr, Protocol::Tcp, "back-to-back");
        assert_eq!(net(&r).lost.unwrap(), 0);
        assert!(srv.stats.oversized.load(Ordering::Relaxed) >= 1);
        assert!(srv.stats.malformed.load(Ordering::Relaxed) >= 1);
        let _ = wire::HEADER;
    });
}

#[test]
fn port_in_use_is_a_clear_error() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let e = Server::bind(&ServerConfig {
        listen: taken.local_addr().unwrap(),
        protocol: Protocol::Udp,
        service_time_ns: 0,
    })
    .err()
    .unwrap();
    assert!(e.to_string().contains("cannot listen on") && e.to_string().to_lowercase().contains("in use"), "{e}");
    let e = Server::bind(&ServerConfig {
        listen: "192.0.2.1:9".parse().unwrap(),
        protocol: Protocol::Tcp,
        service_time_ns: 0,
    })
    .err()
    .unwrap();
    assert!(e.to_string().contains("cannot listen on"), "{e}");
}

/// Open `MAX_CONNECTIONS` connections that take every slot of the server: `slow` ones send a
/// 64 KiB length header (then the caller trickles bytes), the others send nothing.
fn take_every_slot(addr: std::net::SocketAddr, srv: &Server, slow: bool) -> Vec<std::net::TcpStream> {
    use super::server::MAX_CONNECTIONS;
    use std::time::{Duration, Instant};
    let before = srv.stats.connections.load(Ordering::Relaxed);
    let held = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            if slow {
                c.write_all(&(wire::MAX_TCP_FRAME as u32).to_be_bytes()).unwrap();
            }
            c
        })
        .collect();
    let bound = Instant::now() + Duration::from_secs(5);
    while srv.stats.connections.load(Ordering::Relaxed) < before + MAX_CONNECTIONS {
        assert!(Instant::now() < bound, "the hostile connections were not all accepted");
        std::thread::sleep(Duration::from_millis(5));
    }
    held
}

/// A well-behaved client: connects, sends 20 requests one after the other, checks every echo;
/// how long it waited for its first response.
fn served_after(addr: std::net::SocketAddr) -> std::time::Duration {
    let t0 = std::time::Instant::now();
    let mut good = std::net::TcpStream::connect(addr).unwrap();
    good.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut waited = None;
    for seq in 0..20u64 {
        let mut frame = vec![0u8; 4 + 64];
        frame[..4].copy_from_slice(&64u32.to_be_bytes());
        wire::encode(&wire::Header { seq, intended_ns: 0, sent_ns: 0 }, &mut frame[4..]);
        good.write_all(&frame).unwrap();
        let mut back = vec![0u8; frame.len()];
        good.read_exact(&mut back).unwrap_or_else(|e| panic!("request {seq} not served: {e}"));
        assert_eq!(back, frame);
        waited.get_or_insert(t0.elapsed());
    }
    waited.unwrap()
}

/// Slowloris: 64 connections that send a 64 KiB length header and then one byte every 4 s take
/// every slot; then 64 that connect and send nothing. In both cases a well-behaved client that
/// connects after them is served within the request deadline (the slow requests are closed when
/// it passes; an idle connection is closed to make room), every one of its requests answered.
#[test]
fn slow_and_silent_connections_cannot_starve_a_well_behaved_tcp_client() {
    use super::server::{MAX_CONNECTIONS, REQUEST_TIMEOUT};
    use std::time::{Duration, Instant};
    let bound = REQUEST_TIMEOUT + Duration::from_secs(1);
    with_server(Protocol::Tcp, |addr, srv| {
        let slow = take_every_slot(addr, srv, true);
        let done = AtomicBool::new(false);
        let waited = std::thread::scope(|s| {
            s.spawn(|| {
                // One byte every 4 s on each connection, for at most 12 s.
                let (mut next, stop_at) = (Instant::now(), Instant::now() + Duration::from_secs(12));
                while !done.load(Ordering::SeqCst) && Instant::now() < stop_at {
                    if Instant::now() >= next {
                        slow.iter().for_each(|c| drop((&*c).write(&[0])));
                        next += Duration::from_secs(4);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            let waited = served_after(addr);
            done.store(true, Ordering::SeqCst);
            waited
        });
        eprintln!("behind {MAX_CONNECTIONS} slow connections: first response after {waited:?}");
        assert!(waited < bound, "waited {waited:?}");
        // Every slow request passed its deadline at about the same time: all are closed.
        let closed_by = Instant::now() + Duration::from_secs(2);
        while srv.stats.slow_requests.load(Ordering::Relaxed) < MAX_CONNECTIONS && Instant::now() < closed_by {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(srv.stats.slow_requests.load(Ordering::Relaxed), MAX_CONNECTIONS);

        let silent = take_every_slot(addr, srv, false);
        let waited = served_after(addr);
        eprintln!("behind {MAX_CONNECTIONS} silent connections: first response after {waited:?}");
        assert!(waited < bound, "waited {waited:?}");
        assert!(srv.stats.closed_idle.load(Ordering::Relaxed) >= 1);
        // The paced client of the measurements is served too: nothing lost.
        let r = client(addr, Protocol::Tcp, "fixed:200");
        assert_eq!(net(&r).lost.unwrap(), 0, "{r:?}");
        drop(silent);
    });
}

/// A TCP stream's server that announces a receipt longer than any receipt can be (and then
/// trickles it) is refused at once, not read for the timeout.
#[test]
fn a_stream_receipt_longer_than_the_bound_is_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let _ = std::io::copy(&mut c, &mut std::io::sink()); // the stream, up to the sender's shutdown
        let _ = c.write_all(&0xFFFF_FFF0u32.to_be_bytes());
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if c.write_all(b"x").is_err() {
                break;
            }
        }
    });
    let cfg = super::stream::StreamConfig {
        connect: addr,
        protocol: Protocol::Tcp,
        message_size: None,
        duration: Nanos::from_ms(200),
        interval: Nanos::from_ms(100),
        timeout: Nanos::from_secs(30),
        force: false,
        target_bits_per_second: None,
    };
    let err = super::stream::run(&cfg).unwrap_err().to_string();
    assert!(err.contains("4294967280-byte receipt"), "{err}");
    server.join().unwrap();
}
