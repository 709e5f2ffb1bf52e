//! A softirq source for `measure timer --explain`, against the real kernel (root, under the host
//! lock): a UDP flood on loopback sent by a thread pinned on the measured CPU. Loopback hands each
//! datagram to the NET_RX softirq of the sending CPU (run when the send re-enables bottom halves),
//! which the woken timer thread must wait for: NET_RX must be among the causes.

use rtvirt_model::results::CauseKind;
use rtvirt_model::Nanos;
use rtvirt_probe::explain::ExplainConfig;
use rtvirt_probe::rt::{self, LinuxPolicy};
use rtvirt_probe::timer::{self, TimerConfig};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Send 1 KiB datagrams to a socket nobody reads until `stop`; returns how many were sent.
fn flood(cpu: u32, stop: &AtomicBool, sent: &AtomicU64) {
    rt::pin_current_thread(cpu).unwrap();
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = sink.local_addr().unwrap();
    let from = UdpSocket::bind("127.0.0.1:0").unwrap();
    let payload = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        if from.send_to(&payload, to).is_ok() {
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[test]
fn a_udp_flood_on_the_measured_cpu_shows_net_rx_among_the_causes() {
    rtvirt_testkit::require_root!();
    let state = tempfile::tempdir().unwrap();
    let cpu = *rtvirt_probe::cpus::allowed().last().expect("a CPU");
    let mut explain = ExplainConfig::new(state.path().to_path_buf());
    explain.above = Some(Nanos::from_us(20));
    let cfg = TimerConfig {
        cpus: vec![cpu],
        interval: Nanos::from_ms(1),
        priority: 50,
        policy: LinuxPolicy::Fifo,
        duration: Nanos::from_ms(1500),
        explain: Some(explain),
        ..Default::default()
    };
    let (stop, sent) = (AtomicBool::new(false), AtomicU64::new(0));
    let run = std::thread::scope(|s| {
        s.spawn(|| flood(cpu, &stop, &sent));
        let run = timer::run(&cfg);
        stop.store(true, Ordering::Relaxed);
        run
    })
    .unwrap();
    let explain = run.results.explain.expect("an explain section");
    assert!(sent.load(Ordering::Relaxed) > 10_000, "a flood: {} datagrams", sent.load(Ordering::Relaxed));
    let net_rx = explain.summary.iter().find(|c| c.kind == CauseKind::Softirq && c.name == "NET_RX");
    let net_rx =
        net_rx.unwrap_or_else(|| panic!("NET_RX among the causes: {:?} {:?}", explain.summary, explain.limitations));
    assert!(net_rx.samples > 0 && net_rx.total_ns > 0, "{net_rx:?}");
    for sample in &explain.samples {
        assert_eq!(sample.causes.iter().map(|c| c.duration_ns).sum::<u64>(), sample.latency_ns, "{sample:?}");
    }
}
