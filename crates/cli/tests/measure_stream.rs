//! `rtvirt measure net client --stream` end to end: TCP and UDP streams over loopback to a real
//! server process, and from the host to a server in a container over the bridge.

mod schema_support;
use std::io::BufRead;
use std::process::{Command, Stdio};

fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The results document of a successful run, checked against the schema.
fn results(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("results", &v);
    assert_eq!(v["kind"], "net-stream");
    v
}

fn server(port: u16, proto: &str) -> std::process::Child {
    let mut child = rtvirt()
        .args(["measure", "net", "server", "--listen", &format!("127.0.0.1:{port}"), proto, "--duration", "20s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on"), "{line}");
    child
}

fn stream(proto: &str, connect: &str, extra: &[&str]) -> serde_json::Value {
    let out = rtvirt()
        .args(["measure", "net", "client", "--stream", proto, "--connect", connect, "--duration", "1500ms"])
        .args(["--report-interval", "500ms", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    results(&out)
}

/// Sent = the sum of the intervals; the receiver's receipt came back and agrees with what was
/// sent (TCP: every byte; UDP: received + lost = sent); both CPU times are real.
#[test]
fn tcp_and_udp_streams_over_loopback_account_every_byte() {
    for proto in ["--tcp", "--udp"] {
        let port = free_port();
        let mut srv = server(port, proto);
        let v = stream(proto, &format!("127.0.0.1:{port}"), &[]);
        let _ = srv.kill();
        let _ = srv.wait();
        let s = &v["stream"];
        let sent = s["sent_bytes"].as_u64().unwrap();
        let intervals = s["intervals"].as_array().unwrap();
        assert!((3..=4).contains(&intervals.len()), "{proto}: 1.5 s in 500 ms intervals: {s}");
        let sum: u64 = intervals.iter().map(|i| i["sent_bytes"].as_u64().unwrap()).sum();
        assert_eq!(sum, sent, "{proto}");
        assert!(sent > 0 && s["sender_cpu_ns"].as_u64().unwrap() > 0, "{proto}: {s}");
        let received = s["receiver"]["bytes"].as_u64().unwrap();
        assert!(s["receiver"]["cpu_ns"].as_u64().unwrap() > 0, "{proto}: {s}");
        if proto == "--tcp" {
            assert_eq!(received, sent, "TCP delivers every byte: {s}");
            assert_eq!(s["message_size"], 131072);
            assert!(s.get("lost_messages").is_none());
        } else {
            assert_eq!(s["message_size"], 1472, "netperf's -m 1472 by default");
            let (messages, lost) = (s["sent_messages"].as_u64().unwrap(), s["lost_messages"].as_u64().unwrap());
            assert_eq!(s["receiver"]["messages"].as_u64().unwrap() + lost, messages, "{s}");
            assert_eq!(received, (messages - lost) * 1472, "{s}");
            let lost_per_interval: u64 = intervals.iter().map(|i| i["lost_messages"].as_u64().unwrap()).sum();
            assert_eq!(lost_per_interval, lost);
        }
    }
}

/// A message size is the protocol's: UDP needs the 32-byte header and fits one datagram.
#[test]
fn bad_message_sizes_and_no_server_are_errors() {
    for (proto, size) in [("--udp", "31"), ("--udp", "65508"), ("--tcp", "0")] {
        let out = rtvirt()
            .args(["measure", "net", "client", "--stream", proto, "--message-size", size, "--duration", "1s"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{proto} {size}: {err}");
        assert!(err.contains("--message-size") && err.contains("expected"), "{err}");
    }
    let out =
        rtvirt().args(["measure", "net", "client", "--message-size", "100", "--duration", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--message-size needs --stream");
    let port = free_port();
    let out = rtvirt()
        .args(["measure", "net", "client", "--stream", "--tcp", "--connect", &format!("127.0.0.1:{port}")])
        .args(["--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Host -> container over the veth pair and bridge; the container is gone afterwards.
#[test]
fn streams_reach_a_server_in_a_container() {
    rtvirt_testkit::require_root!();
    for proto in ["--tcp", "--udp"] {
        let v = stream(proto, "127.0.0.1:9556", &["--in", "container"]);
        let c = &v["environment"]["container"];
        assert_eq!(v["stream"]["server"].as_str().unwrap(), format!("{}:9556", c["container_addr"].as_str().unwrap()));
        assert!(v["stream"]["receiver"]["bytes"].as_u64().unwrap() > 0, "{v}");
        assert!(!std::path::Path::new("/run/netns").join(c["netns"].as_str().unwrap()).exists());
    }
}

/// `--bandwidth` paces the sender as iperf3's `-b`: the rate sent never exceeds the target (a
/// token bucket over the run: at most one message ahead), and on loopback it comes near the
/// target (a generous lower bound: a loaded machine may delay the sender's wake-ups, and the
/// bucket lets it catch up, so only a sender starved for most of the run falls below half).
#[test]
fn a_paced_stream_sends_at_its_target_bandwidth_and_never_above() {
    for (proto, target) in [("--udp", 50e6), ("--tcp", 200e6)] {
        let port = free_port();
        let mut srv = server(port, proto);
        let bandwidth = format!("{}M", target / 1e6);
        let v = stream(proto, &format!("127.0.0.1:{port}"), &["--bandwidth", &bandwidth]);
        let _ = srv.kill();
        let _ = srv.wait();
        let s = &v["stream"];
        assert_eq!(s["target_bits_per_second"].as_f64(), Some(target), "{s}");
        let (sent, sending_ns) = (s["sent_bytes"].as_u64().unwrap(), s["sending_ns"].as_u64().unwrap());
        let size = s["message_size"].as_u64().unwrap();
        let allowed = target / 8.0 * sending_ns as f64 / 1e9 + size as f64;
        assert!(sent as f64 <= allowed, "{proto}: {sent} bytes sent, at most {allowed} allowed at {bandwidth}: {s}");
        let achieved = s["sent_bits_per_second"].as_f64().unwrap();
        assert!(achieved >= 0.5 * target, "{proto}: {achieved} bit/s sent for a target of {target}: {s}");
        if proto == "--udp" {
            // the receiver keeps up with 50 Mbit/s on loopback: it gets (nearly) everything
            let received = s["received_bits_per_second"].as_f64().unwrap();
            assert!(received >= 0.5 * target, "{proto}: {received} bit/s received: {s}");
        }
    }
    for bad in ["0", "fast", "10X", "2P"] {
        let out = rtvirt().args(["measure", "net", "client", "--stream", "--bandwidth", bad]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--bandwidth {bad}: {err}");
        assert!(err.contains("--bandwidth") && err.contains("bits per second"), "{err}");
    }
    let out = rtvirt().args(["measure", "net", "client", "--bandwidth", "1M"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--bandwidth needs --stream");
}
