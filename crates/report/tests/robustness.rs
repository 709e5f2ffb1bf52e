//! Whatever valid documents come in (degenerate summaries, zero counts, equal percentiles, empty
//! sections), the report is built without panicking and every chart is well-formed XML.

use proptest::prelude::*;
use rtvirt_model::results::{FlowResult, Results, TaskResult};
use rtvirt_model::stats::Summary;
use rtvirt_report::input::{Document, Input};
use rtvirt_report::{build_report, render, ReportFormat};

/// A summary from 9 arbitrary values, sorted so that min <= p25 <= ... <= max.
fn summary(mut v: Vec<u64>, count: u64) -> Summary {
    v.sort_unstable();
    Summary {
        count,
        min: v[0],
        p25: Some(v[1]),
        p50: v[2],
        p75: v[3],
        p90: v[4],
        p95: v[5],
        p99: v[6],
        p999: v[7],
        p9999: v[7],
        max: v[8],
        mean: v[2] as f64,
        sd: 0.0,
        low_confidence: vec![],
    }
}

fn values() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        proptest::collection::vec(0u64..10, 9),
        proptest::collection::vec(0u64..u64::MAX / 2, 9),
        Just(vec![0; 9])
    ]
}

fn result(kind: usize, v: Vec<u64>, count: u64, jobs: u64, misses: u64, rho: f64) -> Results {
    let s = summary(v, count);
    let mut r = Results::new(["timer", "net", "simulation", "netsim"][kind], 1_000_000_000);
    match kind {
        0 => r.latency_ns = Some(s),
        1 => r.rtt_ns = Some(s),
        2 => {
            r.tasks.push(TaskResult {
                guest: "g".into(),
                name: "t".into(),
                jobs,
                misses: misses.min(jobs),
                dsr: TaskResult::dsr_of(jobs, misses.min(jobs)),
                response_ns: s,
                ..Default::default()
            });
            r.rho = Some(rho);
        }
        _ => {
            let mut f = FlowResult { name: "f".into(), latency_ns: Some(s), ..Default::default() };
            f.segments_ns.insert(
                "guest".into(),
                rtvirt_model::results::Segment::Stats(rtvirt_model::results::SegmentStats {
                    mean: serde_json::Number::from_f64(0.0),
                    ..Default::default()
                }),
            );
            r.flows.push(f);
        }
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_results_render(
        docs in proptest::collection::vec((0usize..4, values(), 0u64..1000, 0u64..100, 0u64..100, 0.0f64..1.0), 1..5)
    ) {
        let inputs: Vec<Input> = docs.into_iter().enumerate().map(|(i, (k, v, c, j, m, rho))| Input {
            name: format!("r{i}"),
            path: format!("r{i}.json").into(),
            doc: Document::Results(Box::new(result(k, v, c, j, m, rho))),
            intervals: None,
        }).collect();
        let report = build_report("t", &inputs);
        for f in report.figures() {
            prop_assert!(roxmltree::Document::parse(&f.svg).is_ok(), "{}", f.title);
            prop_assert!(!f.svg.contains("NaN") && !f.svg.contains("inf"), "{}", f.title);
        }
        let _ = render(&report, ReportFormat::Html);
        let _ = render(&report, ReportFormat::Markdown);
    }
}

/// A DSR outside [0, 1] (here 1e308, once shown as "inf%") is an input error naming the file
/// and the field, in a single document and in an array; so is a negative utilisation.
#[test]
fn out_of_range_numbers_in_results_files_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sim_rho5.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    doc["tasks"][2]["dsr"] = 1e308.into();
    let single = dir.path().join("dsr.json");
    std::fs::write(&single, serde_json::to_string(&doc).unwrap()).unwrap();
    let e = rtvirt_report::load_inputs(std::slice::from_ref(&single)).unwrap_err().to_string();
    assert!(e.contains("dsr.json") && e.contains("tasks[2].dsr") && e.contains("1e308"), "{e}");
    doc["tasks"][2]["dsr"] = 0.5.into();
    doc["guests"][0]["utilisation"] = (-1.0).into();
    let array = dir.path().join("array.json");
    let mut good = doc.clone();
    good["guests"][0]["utilisation"] = 0.5.into();
    std::fs::write(&array, serde_json::to_string(&serde_json::json!([good, doc])).unwrap()).unwrap();
    let e = rtvirt_report::load_inputs(&[array]).unwrap_err().to_string();
    assert!(e.contains("array.json") && e.contains("[1].guests[0].utilisation"), "{e}");
}

/// Values the checks let through but that overflow on the way (a mean of 1e308 ns, a bandwidth
/// near f64::MAX) read "invalid (...)" in tables, Markdown and chart tooltips alike, and no chart
/// holds NaN or inf.
#[test]
fn huge_values_are_shown_invalid_everywhere() {
    let mut s = summary(vec![1, 2, 3, 4, 5, 6, 7, 8, 9], 9);
    s.mean = 1e308;
    let mut r = Results::new("timer", 1);
    r.latency_ns = Some(s);
    let mut base = r.clone();
    base.latency_ns.as_mut().unwrap().mean = -1e308;
    let inputs: Vec<Input> = [base, r]
        .into_iter()
        .enumerate()
        .map(|(i, r)| Input {
            name: format!("r{i}"),
            path: "r.json".into(),
            doc: Document::Results(Box::new(r)),
            intervals: None,
        })
        .collect();
    let report = build_report("t", &inputs);
    let md = render(&report, ReportFormat::Markdown);
    let html = render(&report, ReportFormat::Html);
    assert!(md.contains("invalid (1e308)") && html.contains("invalid (1e308)"), "{md}");
    assert!(!md.contains("inf%") && !html.contains("inf%") && !md.contains("NaN"));
    for f in report.figures() {
        assert!(!f.svg.contains("NaN") && !f.svg.contains("inf"), "{}", f.title);
    }
}
