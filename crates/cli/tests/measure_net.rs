//! `rtvirt measure net` end to end over real sockets (loopback, and host <-> container bridge).

mod rss_support;
mod schema_support;
use rss_support::max_rss_kib;
use std::io::BufRead;
use std::process::{Command, Stdio};

fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The results document of a successful run, checked against the schema.
fn results(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("results", &v);
    v
}

/// Start a server, wait for its "listening on" line (a status line: on stderr).
fn server(port: u16, proto: &str) -> std::process::Child {
    server_with(port, proto, &["--duration", "20s"])
}

fn server_with(port: u16, proto: &str, extra: &[&str]) -> std::process::Child {
    let listen = format!("127.0.0.1:{port}");
    let mut child = rtvirt()
        .args(["measure", "net", "server", "--listen", &listen, proto])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on"), "{line}");
    child
}

/// `measure net server --format json`: stdout is the results document alone, which reads back.
#[test]
fn server_json_output_reads_back() {
    for proto in ["--udp", "--tcp"] {
        let port = free_port();
        let srv = server_with(port, proto, &["--duration", "1s", "--format", "json"]);
        let out = srv.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{proto}: stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(v["kind"], "net-server");
        assert_eq!(v["listen"], format!("127.0.0.1:{port}"));
    }
}

/// One rule for run lengths: server and client refuse the same durations the same way.
#[test]
fn server_and_client_share_the_duration_rule() {
    for (duration, words) in [("0s", "more than 0"), ("7200s", "--force")] {
        let server = rtvirt().args(["measure", "net", "server", "--duration", duration]).output().unwrap();
        let client = rtvirt().args(["measure", "net", "client", "--duration", duration]).output().unwrap();
        for (who, out) in [("server", server), ("client", client)] {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{who} --duration {duration}: {err}");
            assert!(err.contains("--duration") && err.contains(words), "{who} --duration {duration}: {err}");
        }
    }
}

/// A paced client with a request due only every 100 s stops at once on Ctrl-C and SIGTERM.
#[test]
fn a_slowly_paced_client_stops_on_ctrl_c_and_sigterm() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let port = free_port();
        let mut srv = server(port, "--udp");
        let connect = format!("127.0.0.1:{port}");
        let client = rtvirt()
            .args(["measure", "net", "client", "--connect", &connect, "--arrivals", "fixed:0.01"])
            .args(["--duration", "10min", "--timeout", "5min", "--format", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let t0 = std::time::Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(client.id() as libc::pid_t, signal) };
        let out = client.wait_with_output().unwrap();
        let took = t0.elapsed();
        let _ = srv.kill();
        let _ = srv.wait();
        assert!(took < std::time::Duration::from_secs(2), "signal {signal}: stopped after {took:?}");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn client_json_has_the_documented_shape() {
    for proto in ["--udp", "--tcp"] {
        let port = free_port();
        let mut srv = server(port, proto);
        let connect = format!("127.0.0.1:{port}");
        let out = rtvirt()
            .args([
                "measure",
                "net",
                "client",
                "--connect",
                &connect,
                proto,
                "--arrivals",
                "uniform:1ms-2ms",
                "--duration",
                "500ms",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let _ = srv.kill();
        let _ = srv.wait();
        let v = results(&out);
        assert_eq!(v["schema"], "rtvirt.results/v1");
        assert_eq!(v["kind"], "net");
        assert_eq!(v["protocol"], &proto[2..]);
        assert_eq!(v["arrivals"], "uniform:1ms-2ms");
        let req = v["requests"].as_u64().unwrap();
        assert!(req > 100, "{v}");
        assert_eq!(v["responses"].as_u64().unwrap() + v["lost"].as_u64().unwrap(), req);
        for k in ["count", "min", "mean", "sd", "p50", "p90", "p99", "p999", "p9999", "max"] {
            assert!(v["rtt_ns"][k].is_number(), "rtt_ns.{k}");
        }
        assert!(v["environment"]["kernel"].is_string());
    }
}

#[test]
fn port_in_use_and_bad_values_exit_2() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let out = rtvirt().args(["measure", "net", "server", "--listen", &listen, "--duration", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use"));
    for args in
        [vec!["--connect", "nonsense"], vec!["--size", "8"], vec!["--arrivals", "poisson:0"], vec!["--udp", "--tcp"]]
    {
        let mut a = vec!["measure", "net", "client", "--duration", "100ms"];
        a.extend(&args);
        let out = rtvirt().args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn round_trips_between_host_and_container_over_the_bridge() {
    rtvirt_testkit::require_root!();
    let out = rtvirt()
        .args([
            "measure",
            "net",
            "client",
            "--in",
            "container",
            "--connect",
            "127.0.0.1:9555",
            "--arrivals",
            "fixed:500",
            "--duration",
            "500ms",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v = results(&out);
    let c = &v["environment"]["container"];
    assert_eq!(v["server"].as_str().unwrap(), format!("{}:9555", c["container_addr"].as_str().unwrap()));
    assert!(v["responses"].as_u64().unwrap() > 200, "{v}");
    assert!(!std::path::Path::new("/sys/class/net").join(c["bridge"].as_str().unwrap()).exists());
    assert!(!std::path::Path::new("/run/netns").join(c["netns"].as_str().unwrap()).exists());
}

/// A hostile TCP "server" (with `--in vm`, the guest's): it announces a 0xFFFFFFF0-byte response
/// and then sends up to 1 GiB of it as fast as loopback takes it, holding the connection open.
fn hostile_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::Write;
        for conn in listener.incoming() {
            std::thread::spawn(move || {
                let mut c = conn.unwrap();
                let _ = c.write_all(&0xFFFF_FFF0u32.to_be_bytes());
                let junk = vec![0u8; 1 << 16];
                for _ in 0..(1 << 14) {
                    if c.write_all(&junk).is_err() {
                        return;
                    }
                }
                std::thread::sleep(std::time::Duration::from_secs(300));
            });
        }
    });
    addr
}

/// The client refuses a response longer than its request (the server echoes requests) as soon
/// as the length is read: it buffers none of it and exits 2 on its own, in either loop.
#[test]
fn a_server_announcing_a_huge_response_is_refused_unbuffered() {
    let addr = hostile_server().to_string();
    for arrivals in ["back-to-back", "fixed:100"] {
        let out = Command::new("timeout")
            .args(["120", "/usr/bin/time", "-v", env!("CARGO_BIN_EXE_rtvirt")])
            .args(["measure", "net", "client", "--tcp", "--connect", &addr, "--arrivals", arrivals])
            .args(["--duration", "3s", "--timeout", "1s"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{arrivals}: the run must end on its own with an error: {err}");
        assert!(err.contains("4294967280-byte response to 64-byte requests"), "{arrivals}: {err}");
        let rss = max_rss_kib(&err);
        assert!(rss < 100 * 1024, "{arrivals}: {rss} KiB resident");
    }
}
