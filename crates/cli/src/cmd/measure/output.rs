//! How measurements report: a progress note, and results as JSON or a table of summaries.

use crate::cli_common::{print_json, Format};
use crate::table::Table;
use rtvirt_model::results::Results;
use rtvirt_model::stats::Summary;
use rtvirt_model::Nanos;

/// A one-line note on stderr for runs longer than two seconds.
pub fn progress(duration: Nanos, what: &str) {
    if duration > Nanos::from_secs(2) {
        eprintln!("rtvirt: {what} for {duration}...");
    }
}

/// Nanoseconds as microseconds with one decimal, as people read latencies ("17.3").
fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// Print results: JSON (compact when it follows JSON lines, nanoseconds), or a table of
/// summaries in microseconds.
pub fn output(
    results: &Results,
    format: Format,
    lines: bool,
    title: &str,
    rows: &[(String, &Summary)],
    footer: &str,
) -> anyhow::Result<()> {
    match format {
        Format::Json if lines => println!("{}", serde_json::to_string(results)?),
        Format::Json => print_json(results)?,
        Format::Table => {
            println!("{title} (us)");
            let header = ["", "count", "min", "mean", "sd", "p50", "p90", "p99", "p99.9", "p99.99", "max"];
            let mut table = Table::new(&header, 1);
            for (name, s) in rows {
                let pct = |key: &str, v: u64| {
                    format!("{}{}", us(v as f64), if s.low_confidence.iter().any(|k| k == key) { "*" } else { "" })
                };
                table.row([
                    name.clone(),
                    s.count.to_string(),
                    us(s.min as f64),
                    us(s.mean),
                    us(s.sd),
                    pct("p50", s.p50),
                    pct("p90", s.p90),
                    pct("p99", s.p99),
                    pct("p999", s.p999),
                    pct("p9999", s.p9999),
                    us(s.max as f64),
                ]);
            }
            table.print();
            println!("{footer}");
            if rows.iter().any(|(_, s)| !s.low_confidence.is_empty()) {
                println!("* too few samples for this percentile (fewer than 10 beyond it)");
            }
            if let Some(env) = &results.environment {
                println!(
                    "in {} | {} | {} | clocksource {}",
                    env.r#in.as_ref().map_or("?", |w| w.as_str()),
                    env.kernel.as_deref().unwrap_or("?"),
                    env.preemption.as_deref().unwrap_or("?"),
                    env.clocksource.as_deref().unwrap_or("?")
                );
                for l in &env.load {
                    println!("load: {}", rtvirt_report::units::fmt_load(l));
                }
            }
        }
    }
    Ok(())
}
