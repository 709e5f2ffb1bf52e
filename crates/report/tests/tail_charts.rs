//! The tail model in the report: a light-tailed timer run (known exponential tail, interval
//! maxima in time order) gets its fitted tail on the exceedance chart and a return-level chart;
//! a drifting run gets a note saying why not (the fits themselves: crates/tail/tests).

use rtvirt_report::doc::Block;
use rtvirt_report::{build_report, load_inputs};

/// `n` samples `20 us + Exp(mean 50 us) * (1 + drift * i / n)` from a fixed LCG (deterministic).
fn samples(n: usize, drift: f64) -> Vec<u64> {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    (0..n)
        .map(|i| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let scale = 1.0 + drift * i as f64 / n as f64;
            20_000 + (-u.ln() * 50_000.0 * scale) as u64
        })
        .collect()
}

/// A `measure timer --interval-report 1s --format json` file of `values` (1,000 per second).
fn timer_file(dir: &std::path::Path, name: &str, values: &[u64]) -> std::path::PathBuf {
    let mut text = String::new();
    for (i, chunk) in values.chunks(1000).enumerate() {
        let max = chunk.iter().max().unwrap();
        text.push_str(&format!(
            "{{\"type\":\"interval\",\"interval\":{i},\"t_ns\":{},\"cpus\":[{{\"cpu\":1,\"count\":1000,\"max_ns\":{max}}}]}}\n",
            (i + 1) * 1_000_000_000
        ));
    }
    let mut hist = std::collections::BTreeMap::new();
    values.iter().for_each(|v| *hist.entry(*v).or_insert(0u64) += 1);
    let buckets: Vec<String> = hist.iter().map(|(v, c)| format!("[{v},{c}]")).collect();
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    text.push_str(&format!(
        "{{\"schema\":\"rtvirt.results/v1\",\"kind\":\"timer\",\"duration_ns\":{},\"latency_ns\":{{\"count\":{},\
         \"min\":{},\"mean\":0,\"sd\":0,\"p25\":{},\"p50\":{},\"p75\":{},\"p90\":{},\"p95\":{},\"p99\":{},\"p999\":{},\"p9999\":{},\"max\":{}}},\
         \"histogram_ns\":[{}]}}\n",
        values.len() as u64 * 1_000_000,
        values.len(),
        sorted[0],
        q(0.25),
        q(0.5),
        q(0.75),
        q(0.9),
        q(0.95),
        q(0.99),
        q(0.999),
        q(0.9999),
        sorted[sorted.len() - 1],
        buckets.join(",")
    ));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_light_tail_gets_its_fit_and_return_levels_a_drifting_one_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let light = timer_file(dir.path(), "light.json", &samples(100_000, 0.0));
    let r = build_report("t", &load_inputs(&[light]).unwrap());
    let exceedance = r.figures().find(|f| f.kind == "exceedance").unwrap();
    assert!(exceedance.svg.contains("fitted tail (GPD)"), "the fitted tail is drawn");
    let levels = r.figures().find(|f| f.kind == "return_level").expect("a return-level chart");
    assert!(levels.svg.contains(": return level") && levels.svg.contains("largest samples"));

    let drifting = timer_file(dir.path(), "drift.json", &samples(100_000, 0.5));
    let r = build_report("t", &load_inputs(&[drifting]).unwrap());
    assert!(r.figures().all(|f| f.kind != "return_level"), "no return levels where the model does not apply");
    let notes: Vec<&String> = r
        .sections
        .iter()
        .flat_map(|s| &s.blocks)
        .filter_map(|b| if let Block::Note(n) = b { Some(n) } else { None })
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("No return levels for") && n.contains("drift") && n.contains("does not apply")),
        "{notes:?}"
    );
}
