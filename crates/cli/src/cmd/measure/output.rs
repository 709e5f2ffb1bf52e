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

/// Print results: JSON (compact when it follows JSON lines), or a table of summaries.
pub fn output(
    r: &Results,
    format: Format,
    lines: bool,
    title: &str,
    rows: &[(String, &Summary)],
    footer: &str,
) -> anyhow::Result<()> {
    match format {
        Format::Json if lines => println!("{}", serde_json::to_string(r)?),
        Format::Json => print_json(r)?,
        Format::Table => {
            println!("{title} (ns)");
            let header = ["", "count", "min", "mean", "sd", "p50", "p90", "p99", "p99.9", "p99.99", "max"];
            let mut table = Table::new(&header, 1);
            for (name, s) in rows {
                let pct = |key: &str, v: u64| {
                    format!("{v}{}", if s.low_confidence.iter().any(|k| k == key) { "*" } else { "" })
                };
                table.row([
                    name.clone(),
                    s.count.to_string(),
                    s.min.to_string(),
                    format!("{:.0}", s.mean),
                    format!("{:.0}", s.sd),
                    pct("p50", s.p50),
                    pct("p90", s.p90),
                    pct("p99", s.p99),
                    pct("p999", s.p999),
                    pct("p9999", s.p9999),
                    s.max.to_string(),
                ]);
            }
            table.print();
            println!("{footer}");
            if rows.iter().any(|(_, s)| !s.low_confidence.is_empty()) {
                println!("* too few samples for this percentile (fewer than 10 beyond it)");
            }
            if let Some(env) = &r.environment {
                println!(
                    "in {} | {} | {} | clocksource {}",
                    env.r#in.as_deref().unwrap_or("?"),
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
