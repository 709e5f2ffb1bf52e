use super::*;
use serde_json::json;

/// A timer document as `measure timer` wrote it when the sections were one sorted map.
const TIMER: &str = concat!(
    r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":10,"cpus":[{"cpu":0,"latency_ns":{"count":1,"#,
    r#""min":5,"mean":5.0,"sd":0.0,"p50":5,"p75":5,"p90":5,"p95":5,"p99":5,"p999":5,"p9999":5,"max":5},"#,
    r#""cpu_time_ns":7,"histogram_ns":[[5,1]],"missed_periods":0,"wakeups":1}],"environment":{"in":"host","#,
    r#""load":[{"cpus_ran_on":"1","duration_ns":3,"kind":"cpu","ops":2,"ops_per_s":1.5,"unit":"iterations","#,
    r#""workers":1}],"online_cpus":"0-1","sched_rt_runtime_us":"950000"},"cpu_ns_per_sample":7.0,"#,
    r#""cpu_ns_per_wakeup":7.0,"histogram_ns":[[5,1]],"interrupted":true,"interval_ns":1000000,"#,
    r#""missed_periods":0,"policy":"fifo","priority":99,"stalls":[]}"#,
);

#[test]
fn documents_are_written_back_byte_identical() {
    let r: Results = serde_json::from_str(TIMER).unwrap();
    assert!(r.extra.is_empty(), "every field is typed: {:?}", r.extra);
    let timer = r.timer.as_ref().unwrap();
    assert_eq!((timer.missed_periods, timer.priority, timer.policy.as_deref()), (Some(0), Some(99), Some("fifo")));
    assert_eq!(r.histogram_ns.as_ref().unwrap()[0], HistogramBucket { value_ns: 5, count: 1 });
    assert!(r.interrupted);
    assert_eq!(r.cpus[0].wakeups, Some(1));
    assert_eq!(r.environment.as_ref().unwrap().load[0].kind, crate::vocab::LoadKind::Cpu);
    assert_eq!(serde_json::to_string(&r).unwrap(), TIMER);
}

#[test]
fn unknown_fields_are_kept_in_key_order() {
    let mut r = Results::new("timer", 10);
    r.timer = Some(TimerSection { missed_periods: Some(3), ..Default::default() });
    r.extra.insert("from_the_future".into(), json!({"b": 1, "a": 2}));
    r.extra.insert("zzz".into(), json!(1));
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.ends_with(r#""from_the_future":{"a":2,"b":1},"missed_periods":3,"zzz":1}"#), "{text}");
    let back: Results = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
}

#[test]
fn sections_sharing_a_key_are_told_apart_by_their_types() {
    let client = concat!(
        r#"{"schema":"rtvirt.results/v1","kind":"net","duration_ns":1,"protocol":"udp","requested_rate":null,"#,
        r#""server":"127.0.0.1:9000"}"#,
    );
    let r: Results = serde_json::from_str(client).unwrap();
    assert_eq!(r.net.as_ref().unwrap().server.as_deref(), Some("127.0.0.1:9000"));
    assert_eq!(r.net.as_ref().unwrap().requested_rate, Some(None));
    assert!(r.net_server.is_none());
    assert_eq!(serde_json::to_string(&r).unwrap(), client);
    let server = concat!(
        r#"{"schema":"rtvirt.results/v1","kind":"net-server","duration_ns":1,"listen":"0.0.0.0:9000","#,
        r#""protocol":"udp","server":{"closed_idle":2,"connections":0,"malformed":0,"oversized":0,"#,
        r#""rejected_connections":0,"requests":4,"responses":4,"slow_requests":1,"truncated":0}}"#,
    );
    let r: Results = serde_json::from_str(server).unwrap();
    assert!(r.net.is_none());
    assert_eq!(r.net_server.as_ref().unwrap().server.as_ref().unwrap().requests, 4);
    assert_eq!(serde_json::to_string(&r).unwrap(), server);
}

#[test]
fn a_field_of_an_unexpected_type_stays_in_extra() {
    let text =
        r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1,"missed_periods":"many","policy":"fifo"}"#;
    let r: Results = serde_json::from_str(text).unwrap();
    assert!(r.timer.is_none());
    assert_eq!(r.extra.len(), 2);
    assert_eq!(serde_json::to_string(&r).unwrap(), text);
}

#[test]
fn buckets_read_in_both_shapes() {
    let text = concat!(
        r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1,"histogram_ns":[[1000,3],"#,
        r#"{"value_ns":2000,"count":1},{"low_ns":3000,"count":2}]}"#,
    );
    let r: Results = serde_json::from_str(text).unwrap();
    let pairs: Vec<(u64, u64)> = r.histogram_ns.unwrap().into_iter().map(Into::into).collect();
    assert_eq!(pairs, vec![(1000, 3), (2000, 1), (3000, 2)]);
}

#[test]
fn an_explain_section_is_typed_and_round_trips() {
    let mut r = Results::new("timer", 10);
    let cause = Cause {
        kind: CauseKind::Thread,
        name: "hog".into(),
        pid: Some(7),
        cpu: 1,
        start_ns: 3,
        duration_ns: 900,
        policy: Some("fifo".into()),
        kernel_prio: Some(39),
    };
    let sample =
        ExplainedSample { cpu: 1, latency_ns: 900, expected_ns: 3, tid: 5, causes: vec![cause], ..Default::default() };
    let segment = |name: &str, start_ns, duration_ns| PathSegment {
        name: name.into(),
        start_ns,
        duration_ns,
        cpu: Some(0),
        via: vec!["net_dev_queue rtvbr1".into()],
        missing: None,
    };
    let request = ExplainedSample {
        latency_ns: 50,
        request: Some(4),
        segments: vec![segment("host_receive", 10, 20), segment("server", 30, 30)],
        ..Default::default()
    };
    r.explain = Some(ExplainSection {
        threshold_ns: 100,
        samples_above: 1,
        summary: ExplainSection::summarize(std::slice::from_ref(&sample)),
        segments: ExplainSection::summarize_segments(std::slice::from_ref(&request)),
        samples: vec![sample, request],
        events_present: vec!["sched/sched_switch".into()],
        ..Default::default()
    });
    let text = serde_json::to_string(&r).unwrap();
    let back: Results = serde_json::from_str(&text).unwrap();
    assert!(back.extra.is_empty(), "{:?}", back.extra);
    assert_eq!(back, r);
    assert!(text.contains(r#""kind":"thread""#), "{text}");
    let segments = &back.explain.as_ref().unwrap().segments;
    assert_eq!(
        segments.iter().map(|s| (s.name.as_str(), s.requests, s.max_ns)).collect::<Vec<_>>(),
        [("host_receive", 1, 20), ("server", 1, 30)]
    );
}
