//! `rtvirt simulate` for scenarios with a `[net]` section: the network-path simulation of
//! Garcia Alvarado 2019 (KVM) and Xi et al. 2012 (Xen Dom0), printed as a per-flow table or results JSON, with an
//! optional Perfetto trace (cores, threads, softirq-lock blocking and priority boosts).

use super::args::SimulateArgs;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use crate::table::{micros, Table};
use anyhow::Context;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_sim::net::simulate;
use std::time::Instant;

/// Run the `[net]` section of `scenario` with the command line's overrides.
pub fn run(scenario: &Scenario, args: &SimulateArgs) -> CmdResult {
    let mut net = scenario.net.clone().expect("called for scenarios with [net]");
    if let Some(d) = args.duration {
        net.set_duration(d, "--duration")?;
    }
    if let Some(s) = args.seed {
        net.seed = s;
    }
    let window = args.trace_window()?;
    let started = Instant::now();
    let run = simulate(&net, window);
    let wall = started.elapsed().as_secs_f64();
    let mut results = run.results;
    results.label = Some(scenario.name.clone());
    if let (Some(path), Some(trace)) = (&args.trace, &run.trace) {
        let text = serde_json::to_string(trace)?;
        std::fs::write(path, text).with_context(|| format!("cannot write trace {}", path.display()))?;
        eprintln!("trace written to {} (open in https://ui.perfetto.dev)", path.display());
    }
    match args.format {
        Format::Json => print_json(&results)?,
        Format::Table => print_table(&scenario.name, &results),
    }
    let simulated = net.duration.as_secs_f64();
    eprintln!(
        "simulated {} in {wall:.2}s wall ({:.1}x real time, {} events)",
        net.duration,
        simulated / wall.max(1e-9),
        run.events
    );
    Ok(Outcome::Ok)
}

/// Per-flow latency (us), segments, throughput and drops; utilisation per core.
pub fn print_table(name: &str, results: &Results) {
    println!("scenario {name}  seed {}  measured {}", results.seed.unwrap_or(0), Nanos(results.duration_ns));
    println!();
    let header = [
        "flow",
        "count",
        "mean_us",
        "sd_us",
        "p50_us",
        "p75_us",
        "p95_us",
        "p99_us",
        "p999_us",
        "max_us",
        "host_rx/guest/host_tx",
        "Gb/s",
        "drops",
        "req/s",
    ];
    let mut table = Table::new(&header, 1);
    for f in &results.flows {
        let gbps = f.throughput_bps.map(|b| format!("{:.2}", b / 1e9)).unwrap_or_else(|| "-".into());
        let rate = f.requests_per_s.or(f.packets_per_s).map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into());
        let mut cells = vec![f.name.clone()];
        match &f.latency_ns {
            Some(l) => {
                let seg = |k: &str| f.segments_ns.get(k).and_then(|v| v.mean()).map(micros).unwrap_or_default();
                let segs = if f.segments_ns.is_empty() {
                    "-".into()
                } else {
                    format!("{}/{}/{}", seg("host_receive"), seg("guest"), seg("host_send"))
                };
                cells.push(l.count.to_string());
                cells.extend([l.mean, l.sd].map(micros));
                cells.extend([l.p50, l.p75, l.p95, l.p99, l.p999, l.max].map(|v| micros(v as f64)));
                cells.push(segs);
            }
            None => cells.extend(["-".to_string()].into_iter().chain(vec![String::new(); 9])),
        }
        cells.extend([gbps, f.drops.to_string(), rate]);
        table.row(cells);
    }
    table.print();
    println!();
    for c in &results.cores {
        let squeeze = c.time_squeeze.map(|s| format!("  time_squeeze {s}")).unwrap_or_default();
        println!("core {:<3} util {:.4}{squeeze}", c.id, c.utilisation);
    }
    if let Some(n) = results.simulation.as_ref().and_then(|s| s.softirq_lock_inversions) {
        println!("softirq-lock priority inversions (RT thread blocked on a lower-priority holder): {n}");
    }
    if let Some(d) = results.xen.as_ref().and_then(|x| x.dom0.as_ref()) {
        println!(
            "dom0 {}: packets rx {} tx {} softirq {}, drops softnet {} rx ring {}, time_squeeze {}",
            d.mode, d.rx_packets, d.tx_packets, d.softirq_packets, d.softnet_drops, d.rx_ring_drops, d.time_squeeze
        );
    }
    if let Some(doms) = results.xen.as_ref().and_then(|x| x.domains.as_ref()) {
        let show: Vec<String> = doms.iter().map(|d| format!("{} {:.3}", d.name, d.utilisation)).collect();
        println!("domain utilisation (Xen Credit): {}", show.join(", "));
    }
}
