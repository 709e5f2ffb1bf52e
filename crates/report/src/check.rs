//! What a report refuses in a results document although it parses: numbers outside what their
//! quantity can be, which would otherwise be drawn as "inf%" or off every axis. Each is an input
//! error naming the file and the field (`tasks[3].dsr`, `[2].tasks[0].dsr` in an array).
//!
//! - `tasks[].dsr`: a ratio in [0, 1]; `tasks[].misses` at most `tasks[].jobs`;
//! - `cores[].utilisation`: a share of one core's time, in [0, 1] with [`UTILISATION_SLACK`] for
//!   the clocks; `guests[].utilisation` likewise, in cores: at most the number of cores its vCPU
//!   threads may run on (`guests[].cores`; one without it) - a guest of several vCPUs sums them.
//!   `measure tasks` divides a vCPU's CPU time by the wall time of the same stretch, read on the
//!   same thread, also when the run is stopped early;
//! - `flows[].throughput_bps`: at least 0.

use rtvirt_model::results::Results;
use rtvirt_model::InputError;

/// How far above 1 a utilisation may read: CPU time and wall time come from different clocks
/// (the scheduler's and CLOCK_MONOTONIC), which may disagree by parts per million.
pub const UTILISATION_SLACK: f64 = 0.01;

/// Check the numbers of `results`; `prefix` is prepended to field names (`"[2]."` for an array
/// element).
pub fn results(results: &Results, prefix: &str) -> Result<(), InputError> {
    let bad = |field: String, message: String| Err(InputError::field(format!("{prefix}{field}"), message));
    for (i, t) in results.tasks.iter().enumerate() {
        if !(0.0..=1.0).contains(&t.dsr) {
            return bad(format!("tasks[{i}].dsr"), format!("{:e}: expected a ratio in [0, 1]", t.dsr));
        }
        if t.misses > t.jobs {
            return bad(
                format!("tasks[{i}].misses"),
                format!("{} misses of {} jobs: expected at most the jobs", t.misses, t.jobs),
            );
        }
    }
    let guests = results.guests.iter().map(|g| {
        let cores = g.cores.as_ref().map_or(1, |c| c.len().max(1));
        ("guests", g.utilisation, cores)
    });
    let cores = results.cores.iter().map(|c| ("cores", c.utilisation, 1));
    for (i, (what, u, n)) in guests.enumerate().chain(cores.enumerate()) {
        if !(0.0..=n as f64 * (1.0 + UTILISATION_SLACK)).contains(&u) {
            let share = if n == 1 { "one core's time".to_string() } else { format!("{n} cores' time") };
            return bad(format!("{what}[{i}].utilisation"), format!("{u:e}: expected a share of {share} in [0, {n}]"));
        }
    }
    for (i, f) in results.flows.iter().enumerate() {
        if f.throughput_bps.is_some_and(|b| b.is_nan() || b < 0.0) {
            return bad(format!("flows[{i}].throughput_bps"), "expected at least 0".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::{CoreResult, GuestResult, TaskResult};

    #[test]
    fn out_of_range_numbers_are_refused_with_their_field() {
        let mut r = Results::new("simulation", 1);
        r.tasks.push(TaskResult { jobs: 10, misses: 1, dsr: 0.9, ..Default::default() });
        assert!(results(&r, "").is_ok());
        r.tasks[0].dsr = 1e308;
        let e = results(&r, "[2].").unwrap_err().to_string();
        assert!(e.contains("[2].tasks[0].dsr") && e.contains("1e308") && e.contains("[0, 1]"), "{e}");
        r.tasks[0].dsr = 0.9;
        r.tasks[0].misses = 11;
        assert!(results(&r, "").unwrap_err().to_string().contains("tasks[0].misses"));
        r.tasks[0].misses = 1;
        r.cores.push(CoreResult { id: 0, utilisation: -0.5, ..Default::default() });
        assert!(results(&r, "").unwrap_err().to_string().contains("cores[0].utilisation"));
        // A share of one core: 1 passes, 3,500 (a run stopped early, divided by its parent's
        // zero-length run before the fix in probe::tasks) and NaN do not.
        for (u, ok) in [(1.0, true), (1.0 + UTILISATION_SLACK, true), (1.5, false), (3.5e3, false), (f64::NAN, false)] {
            r.cores[0].utilisation = u;
            let checked = results(&r, "");
            assert_eq!(checked.is_ok(), ok, "{u}: {checked:?}");
            if let Err(e) = checked {
                assert!(e.to_string().contains("cores[0].utilisation") && e.to_string().contains("[0, 1]"), "{e}");
            }
        }
    }

    /// A guest of several vCPUs sums their CPU time: up to the number of cores they may run on.
    #[test]
    fn a_guest_may_use_as_many_cores_as_it_lists() {
        let mut r = Results::new("simulation", 1);
        r.guests.push(GuestResult { utilisation: 1.8, cores: Some(vec![0, 1]), ..Default::default() });
        assert!(results(&r, "").is_ok());
        r.guests[0].utilisation = 2.5;
        let e = results(&r, "").unwrap_err().to_string();
        assert!(e.contains("guests[0].utilisation") && e.contains("[0, 2]"), "{e}");
        r.guests[0].cores = None;
        r.guests[0].utilisation = 1.8;
        assert!(results(&r, "").unwrap_err().to_string().contains("[0, 1]"));
    }
}
