//! The importers of tools that do not run here - rtla (the kernel has no timerlat/osnoise
//! tracer) and netperf (no Debian package in the configured repositories) - on outputs recorded
//! on hosts that have them (samples/README.md says where each comes from); and what every
//! importer says about files it cannot read.

use rtvirt_import::{detect, import_file, import_text, Tool};
use std::path::{Path, PathBuf};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples").join(name)
}

#[test]
fn rtla_timerlat_hist_keeps_irq_and_thread_latency_apart() {
    let docs = import_file(&sample("rtla-timerlat-hist.txt"), None).unwrap();
    let labels: Vec<&str> = docs.iter().map(|d| d.label.as_deref().unwrap()).collect();
    assert_eq!(labels, ["rtla-timerlat IRQ", "rtla-timerlat thread"]);
    let (irq, thread) = (&docs[0], &docs[1]);
    assert_eq!(irq.cpus.len(), 5);
    assert_eq!(thread.cpus[1].latency_ns.count, 600_002);
    assert_eq!(thread.cpus[1].latency_ns.max, 58_000);
    assert_eq!(irq.latency_ns.as_ref().unwrap().max, 24_000);
    assert_eq!(thread.latency_ns.as_ref().unwrap().count, 5 * 600_002);
    assert_eq!(irq.duration_ns, 600_000_000_000);
    assert_eq!(thread.kind, "timer");
}

#[test]
fn rtla_timerlat_top_gives_min_mean_max_per_cpu() {
    let docs = import_file(&sample("rtla-timerlat-top.txt"), Some(Tool::RtlaTimerlat)).unwrap();
    assert_eq!(docs.len(), 2);
    let thread = &docs[1];
    assert_eq!(thread.cpus.len(), 23);
    assert_eq!(thread.cpus[22].cpu, 23);
    assert_eq!(thread.cpus[22].latency_ns.max, 41_000);
    assert_eq!(thread.cpus[0].latency_ns.count, 12_322);
    assert_eq!(docs[0].latency_ns.as_ref().unwrap().max, 28_000);
    assert_eq!(thread.duration_ns, 12_000_000_000);
}

#[test]
fn rtla_osnoise_hist_and_top() {
    let docs = import_file(&sample("rtla-osnoise-hist.txt"), None).unwrap();
    assert_eq!(docs.len(), 1);
    let r = &docs[0];
    assert_eq!((r.kind.as_str(), r.cpus.len()), ("noise", 12));
    assert_eq!(r.cpus[0].latency_ns.count, 55_215);
    assert_eq!(r.cpus[11].latency_ns.max, 50_000);
    assert_eq!(r.environment.as_ref().unwrap().tool.as_deref(), Some("rtla-osnoise"));
    let docs = import_file(&sample("rtla-osnoise-top.txt"), None).unwrap();
    let r = &docs[0];
    assert_eq!(r.cpus.len(), 4);
    assert_eq!(r.cpus[0].latency_ns.max, 56_000, "max single noise");
    assert_eq!(r.cpus[0].latency_ns.count, 549 + 53_111 + 1590 + 13);
    assert_eq!(r.duration_ns, 60_000_000_000);
}

#[test]
fn netperf_rr_latency_selectors_classic_and_keyval() {
    let r = &import_file(&sample("netperf-udp-rr-csv.txt"), None).unwrap()[0];
    let s = r.rtt_ns.as_ref().unwrap();
    assert_eq!((s.min, s.p50, s.p90, s.p99, s.max), (200_000, 295_000, 330_000, 406_000, 500_000));
    assert!((s.sd - 214_640.0).abs() < 1e-6);
    assert_eq!(s.low_confidence, ["p75", "p95", "p999", "p9999"], "not reported by netperf: bounded and flagged");
    let net = r.net.as_ref().unwrap();
    assert_eq!((net.protocol.as_deref(), net.achieved_rate), (Some("udp"), Some(3313.49)));
    let r = &import_file(&sample("netperf-tcp-rr-classic.txt"), Some(Tool::Netperf)).unwrap()[0];
    assert_eq!(r.net.as_ref().unwrap().achieved_rate, Some(12507.44));
    assert_eq!(r.duration_ns, 10_000_000_000);
    let r = &import_file(&sample("netperf-tcp-rr-keyval.txt"), None).unwrap()[0];
    assert_eq!(r.net.as_ref().unwrap().achieved_rate, Some(60074.74));
    let r = &import_file(&sample("netperf-tcp-stream-classic.txt"), None).unwrap()[0];
    assert_eq!(r.flows[0].throughput_bps, Some(27175.27e6));
}

#[test]
fn every_sample_is_recognised_as_its_tool() {
    for (name, tool) in [
        ("rtla-timerlat-hist.txt", Tool::RtlaTimerlat),
        ("rtla-timerlat-top.txt", Tool::RtlaTimerlat),
        ("rtla-osnoise-hist.txt", Tool::RtlaOsnoise),
        ("rtla-osnoise-top.txt", Tool::RtlaOsnoise),
        ("netperf-udp-rr-csv.txt", Tool::Netperf),
        ("netperf-tcp-rr-classic.txt", Tool::Netperf),
        ("netperf-tcp-stream-classic.txt", Tool::Netperf),
        ("netperf-tcp-rr-keyval.txt", Tool::Netperf),
    ] {
        assert_eq!(detect(&std::fs::read_to_string(sample(name)).unwrap()), Some(tool), "{name}");
    }
}

#[test]
fn bad_and_truncated_files_are_located() {
    let p = Path::new("t.txt");
    let text = std::fs::read_to_string(sample("rtla-timerlat-hist.txt")).unwrap();
    // cut before the summary rows
    let cut: String = text.lines().take(30).map(|l| format!("{l}\n")).collect();
    let e = import_text(p, &cut, None).unwrap_err().to_string();
    let expected = "t.txt:line 31, column 1: the file ends here: expected the \"over:\" line after rtla's histogram \
                    (is the file cut short?)";
    assert_eq!(e, expected);
    // a row cut in the middle
    let row = text.lines().position(|l| l.starts_with("12 ")).unwrap();
    let broken: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == row { format!("{}\n", &l[..30]) } else { format!("{l}\n") })
        .collect();
    let e = import_text(p, &broken, None).unwrap_err().to_string();
    assert!(e.starts_with(&format!("t.txt:line {}, column 1: 2 values: expected 10", row + 1)), "{e}");
    // netperf: header without its values
    let csv = std::fs::read_to_string(sample("netperf-udp-rr-csv.txt")).unwrap();
    let cut: String = csv.lines().take(2).map(|l| format!("{l}\n")).collect();
    let e = import_text(p, &cut, None).unwrap_err().to_string();
    assert!(
        e.contains("line 3") && e.contains("expected the line of values under netperf's CSV header of line 2"),
        "{e}"
    );
    // an unknown text
    let e = import_text(p, "hello\n", None).unwrap_err().to_string();
    assert!(e.starts_with("t.txt:line 1, column 1: not an output rtvirt recognises") && e.contains("--tool"), "{e}");
    // a wrong --tool
    let e = import_text(p, "hello\n", Some(Tool::Oslat)).unwrap_err().to_string();
    assert!(e.contains("t.txt:line 2") && e.contains("oslat's \"Core:\""), "{e}");
    assert!(Tool::from_name("ping").unwrap_err().contains("expected one of: cyclictest"));
}
