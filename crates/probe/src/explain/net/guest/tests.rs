//! Splits of hand-made host and guest explanations: a joined request, a request the guest has no
//! record of, and records a guest should not send (incomplete, malformed, overflowing, longer than
//! the host's window, duplicated, too many, too long texts).

use super::*;

fn segment(name: &str, start_ns: u64, duration_ns: u64) -> PathSegment {
    PathSegment {
        name: name.into(),
        start_ns,
        duration_ns,
        cpu: None,
        via: vec![format!("{name} event")],
        missing: None,
    }
}

/// A round trip through the tap as the host's client explains it: `guest` lasts 1000 ns.
fn host_sample(seq: u64) -> ExplainedSample {
    let segments = vec![
        segment("send_lag", 0, 10),
        segment("client_send", 10, 20),
        segment("host_receive", 30, 70),
        segment("guest", 100, 1_000),
        segment("host_send", 1_100, 50),
        segment("client_receive", 1_150, 50),
    ];
    ExplainedSample { latency_ns: 1_200, request: Some(seq), segments, ..Default::default() }
}

/// The guest server's record of request `seq`: 100 + 300 + 200 ns.
fn guest_record(seq: u64) -> ExplainedSample {
    let mut segments =
        vec![segment("host_receive", 5, 100), segment("server", 105, 300), segment("host_send", 405, 200)];
    segments[0].cpu = Some(0);
    ExplainedSample { latency_ns: 600, request: Some(seq), segments, ..Default::default() }
}

fn host(samples: Vec<ExplainedSample>) -> ExplainSection {
    let segments = ["send_lag", "client_send", "host_receive", "guest", "host_send", "client_receive"]
        .map(|name| SegmentSummary { name: name.into(), requests: 1, mean_ns: 1.0, p99_ns: 1, max_ns: 1 })
        .to_vec();
    ExplainSection { samples, segments, ..Default::default() }
}

fn guest(samples: Vec<ExplainedSample>) -> ExplainSection {
    ExplainSection { samples, ..Default::default() }
}

fn names(s: &ExplainedSample) -> Vec<&str> {
    s.segments.iter().map(|x| x.name.as_str()).collect()
}

fn total(s: &ExplainedSample) -> u64 {
    s.segments.iter().map(|x| x.duration_ns).sum()
}

/// The segments are consecutive and add up to the round trip.
fn assert_adds_up(s: &ExplainedSample) {
    assert_eq!(total(s), s.latency_ns, "{s:?}");
    for w in s.segments.windows(2) {
        assert_eq!(w[0].start_ns + w[0].duration_ns, w[1].start_ns, "{s:?}");
    }
}

#[test]
fn a_joined_request_splits_guest_into_virtualization_and_the_guests_three_segments() {
    let mut h = host(vec![host_sample(7)]);
    split(&mut h, &guest(vec![guest_record(3), guest_record(7)]));
    let s = &h.samples[0];
    let expected = [
        "send_lag",
        "client_send",
        "host_receive",
        "virtualization",
        "guest_receive",
        "guest_server",
        "guest_send",
        "host_send",
        "client_receive",
    ];
    assert_eq!(names(s), expected);
    let d: Vec<u64> = s.segments.iter().map(|x| x.duration_ns).collect();
    assert_eq!(d, [10, 20, 70, 400, 100, 300, 200, 50, 50]);
    assert_adds_up(s);
    assert_eq!(s.segments[4].cpu, Some(0), "the guest's CPU");
    assert_eq!(s.segments[4].via, ["guest: host_receive event"]);
    let rows: Vec<(&str, u64, u64)> = h.segments.iter().map(|x| (x.name.as_str(), x.requests, x.max_ns)).collect();
    assert_eq!(
        rows[3..8],
        [
            ("guest", 1, 1),
            ("virtualization", 1, 400),
            ("guest_receive", 1, 100),
            ("guest_server", 1, 300),
            ("guest_send", 1, 200)
        ]
    );
    assert!(h.limitations[0].starts_with("1 of the 1 requests"), "{:?}", h.limitations);
}

#[test]
fn a_request_without_a_guest_record_keeps_one_guest_segment_and_is_counted() {
    let mut h = host(vec![host_sample(7), host_sample(8)]);
    split(&mut h, &guest(vec![guest_record(7)]));
    assert!(names(&h.samples[0]).contains(&"guest_server"));
    assert_eq!(
        names(&h.samples[1]),
        ["send_lag", "client_send", "host_receive", "guest", "host_send", "client_receive"]
    );
    h.samples.iter().for_each(assert_adds_up);
    let limits = h.limitations.join("\n");
    assert!(limits.contains("1 of the 2 requests kept that went through the guest's tap were joined"), "{limits}");
    assert!(limits.contains("1 requests kept one `guest` segment: the guest kept no record of them"), "{limits}");
    let rows: Vec<(&str, u64)> = h.segments.iter().map(|x| (x.name.as_str(), x.requests)).collect();
    assert!(rows.contains(&("guest_server", 1)), "only the joined request: {rows:?}");
}

#[test]
fn requests_not_through_the_tap_and_no_guest_at_all_are_left_alone() {
    let mut lone = host_sample(1);
    lone.segments.retain(|s| s.name != "guest");
    let mut h = host(vec![lone.clone()]);
    split(&mut h, &guest(Vec::new()));
    assert_eq!(h.samples[0], lone);
    assert!(h.limitations.is_empty(), "{:?}", h.limitations);
    assert_eq!(h.segments.len(), 6, "no rows for segments no request has");
}

#[test]
fn records_a_guest_should_not_send_leave_guest_whole_with_the_reason() {
    let mut incomplete = guest_record(1);
    incomplete.segments[2] = PathSegment { missing: Some("net_dev_xmit".into()), ..segment("unexplained", 405, 200) };
    let mut renamed = guest_record(2);
    renamed.segments[1].name = "sleep".into();
    let mut short = guest_record(3);
    short.segments.pop();
    let mut overflowing = guest_record(4);
    overflowing.segments[0].duration_ns = u64::MAX;
    overflowing.segments[1].duration_ns = u64::MAX;
    let mut longer = guest_record(5);
    longer.segments[1].duration_ns = 5_000;
    let twice = [guest_record(6), guest_record(6)];
    let records = [incomplete, renamed, short, overflowing, longer].into_iter().chain(twice).collect();
    let mut h = host((1..=6).map(host_sample).collect());
    split(&mut h, &guest(records));
    for s in &h.samples {
        assert!(names(s).contains(&"guest") && !names(s).contains(&"virtualization"), "{s:?}");
        assert_adds_up(s);
    }
    let limits = h.limitations.join("\n");
    assert!(limits.contains("0 of the 6 requests"), "{limits}");
    assert!(limits.contains("1 requests kept one `guest` segment: the guest's trace lacks a milestone"), "{limits}");
    assert!(limits.contains("3 requests kept one `guest` segment: their guest record is malformed"), "{limits}");
    assert!(limits.contains("1 requests kept one `guest` segment: the guest measured more"), "{limits}");
    assert!(limits.contains("(by at most 4300 ns)"), "{limits}");
    assert!(limits.contains("1 sequence numbers appear more than once"), "{limits}");
    assert!(limits.contains("1 requests kept one `guest` segment: the guest kept no record"), "{limits}");
    assert_eq!(h.segments.len(), 6, "nothing split, no new rows");
}

#[test]
fn an_oversized_guest_section_is_read_only_up_to_its_bounds() {
    let mut first = guest_record(0);
    first.segments[0].via = vec!["x".repeat(10_000); 1_000];
    let records: Vec<_> = std::iter::once(first).chain((1..MAX_RECORDS as u64 + 10).map(guest_record)).collect();
    let mut g = guest(records);
    g.limitations = vec!["y".repeat(100_000); 1_000];
    g.events_present = vec!["z".repeat(1_000); 1_000];
    g.guest_clock = Some(ClockSync { run_start_host_ns: u64::MAX, drift_ppm: 1e300, ..Default::default() });
    let mut h = host(vec![host_sample(0), host_sample(MAX_RECORDS as u64 + 5)]);
    h.run_start_ns = Some(u64::MAX);
    split(&mut h, &g);
    let via = &h.samples[0].segments[4].via;
    assert_eq!(via.len(), MAX_VIA);
    assert!(via.iter().all(|v| v.chars().count() <= MAX_TEXT + 12), "{}", via[0].len());
    assert!(names(&h.samples[1]).contains(&"guest"), "a record beyond the bound is not read");
    let limits = h.limitations.join("\n");
    assert!(limits.contains("the guest sent 10 records beyond the 100000 read"), "{}", &limits[..500]);
    assert!(h.limitations.len() <= MAX_CARRIED + 8, "{}", h.limitations.len());
    assert!(h.limitations.iter().all(|l| l.len() < 2_000));
    assert_eq!(h.events_present.len(), MAX_CARRIED);
    assert!(limits.contains("clock check of the joins: 1 of 1"), "absurd clocks saturate: {}", &limits[..2000]);
}

#[test]
fn the_converted_clock_checks_each_join_within_the_handshakes_precision() {
    let mut h = host(vec![host_sample(7), host_sample(8)]);
    h.run_start_ns = Some(1_000_000);
    let mut late = guest_record(8);
    late.expected_ns = 2_000;
    let mut inside = guest_record(7);
    inside.expected_ns = 200;
    let clock = ClockSync {
        method: "serial handshake".into(),
        run_start_host_ns: 1_000_000,
        precision_ns: 50,
        ..Default::default()
    };
    let mut g = guest(vec![inside, late]);
    g.guest_clock = Some(clock.clone());
    split(&mut h, &g);
    let limits = h.limitations.join("\n");
    assert!(limits.contains("1 of 2 joined requests lie within the host's `guest` segment"), "{limits}");
    assert!(limits.contains("(+/-50 ns); 1 lie outside it by more (at most 1500 ns)"), "{limits}");
    assert_eq!(h.guest_clock, Some(clock), "the guest's clock comes along");
    assert!(h.samples.iter().all(|s| names(s).contains(&"guest_server")), "the sequence numbers join, not the clock");
    let mut h = host(vec![host_sample(7)]);
    split(&mut h, &guest(vec![guest_record(7)]));
    assert!(h.limitations.join("\n").contains("sequence numbers alone"), "{:?}", h.limitations);
}
