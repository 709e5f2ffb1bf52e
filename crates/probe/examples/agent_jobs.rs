//! Sends N job records to a guest agent's job API the way `measure tasks` does (one per job,
//! through `JobReporter`: the agent's ring when it has one, else datagrams), paced evenly over
//! 80% of SECS, as tasks `g.t0`..`g.t3`; prints the path taken and the time spent in the
//! reporting calls per record. Used by experiments/agent_event_cost.sh.
//! Usage: agent_jobs SOCKET N SECS

use rtvirt_probe::agent::jobs::JobReporter;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: agent_jobs SOCKET N SECS";
    let (Some(sock), Some(n), Some(secs)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let (Ok(n), Ok(secs)) = (n.parse::<u64>(), secs.parse::<f64>()) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let Some(reporter) = JobReporter::to(std::path::Path::new(sock)) else {
        eprintln!("agent_jobs: no datagram socket");
        std::process::exit(1);
    };
    let names = ["g.t0", "g.t1", "g.t2", "g.t3"];
    let t0 = Instant::now();
    let mut in_calls = Duration::ZERO;
    for i in 0..n {
        let due = Duration::from_secs_f64(0.8 * secs * i as f64 / n.max(1) as f64);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        let call = Instant::now();
        reporter.job_done(names[(i % 4) as usize], 10_000_000, 10_000_000, 2_000_000);
        in_calls += call.elapsed();
    }
    let path = if reporter.has_ring() { "ring" } else { "datagrams" };
    let per = if n == 0 { 0.0 } else { in_calls.as_secs_f64() / n as f64 * 1e6 };
    println!("sender: {n} records through {path}, {per:.3} us per record in the reporting call");
}
