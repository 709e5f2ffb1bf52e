//! The host's scheduler tick as a grid in time: its length (CONFIG_HZ) and where its ticks fall
//! on CLOCK_MONOTONIC (`.last_tick` of the CPU in `/proc/timer_list`).
//!
//! Under tick enforcement a SCHED_DEADLINE thread that used up its runtime runs on until the next
//! tick, so how a task set fares depends on where the ticks fall after its releases - the same
//! plan gave p95 response times of 2 ms or 8.6 ms on this host depending only on that phase.
//! The kernel keeps its ticks at a fixed offset on CLOCK_MONOTONIC (with `skew_tick=1`, an offset
//! per CPU), so a run whose releases are periodic keeps one phase for its whole length:
//! `measure tasks` reads it, states it, and can start at a chosen one, and the simulator takes
//! the same phase (`[sim] tick_phase`).
//!
//! `/proc/timer_list` is parsed by hand: no crate reads it, and only two lines are needed.

use rtvirt_model::Nanos;

/// Ticks of length `tick_ns` at `origin_ns + k * tick_ns` (CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickGrid {
    pub tick_ns: u64,
    pub origin_ns: u64,
}

impl TickGrid {
    /// A grid of ticks of `tick_ns` (> 0) through `origin_ns`.
    pub fn new(tick_ns: u64, origin_ns: u64) -> TickGrid {
        assert!(tick_ns > 0, "a tick has a length");
        TickGrid { tick_ns, origin_ns }
    }

    /// The time from `t` to the first tick at or after it (in 0..tick).
    pub fn phase_after(&self, t: u64) -> u64 {
        let (tick, o) = (self.tick_ns, self.origin_ns % self.tick_ns);
        (o + tick - t % tick) % tick
    }

    /// The first time at or after `earliest` that has the next tick `phase` after it (`phase` is
    /// taken modulo the tick).
    pub fn start_with_phase(&self, earliest: u64, phase: u64) -> u64 {
        let want = phase % self.tick_ns;
        let have = self.phase_after(earliest);
        earliest + (have + self.tick_ns - want) % self.tick_ns
    }
}

/// This host's tick grid on `cpu`: the tick from CONFIG_HZ, its ticks from `/proc/timer_list`.
pub fn this_host(cpu: u32) -> Result<TickGrid, String> {
    let tick = tick_ns().ok_or("CONFIG_HZ is not readable (/boot/config-*, /proc/config.gz)")?;
    let text = std::fs::read_to_string("/proc/timer_list").map_err(|e| format!("/proc/timer_list: {e}"))?;
    let last = last_tick(&text, cpu).ok_or_else(|| format!("/proc/timer_list: no .last_tick for cpu {cpu}"))?;
    Ok(TickGrid::new(tick, last))
}

/// The tick's length from the kernel's CONFIG_HZ.
pub fn tick_ns() -> Option<u64> {
    let boot = std::fs::read_to_string(format!("/boot/config-{}", rtvirt_os::sysinfo::kernel_release())).ok();
    let hz = boot
        .and_then(|c| c.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=").map(str::to_string)))
        .or_else(|| rtvirt_os::sysinfo::kconfig("CONFIG_HZ"))?;
    let hz: u64 = hz.trim().parse().ok()?;
    (hz > 0).then(|| 1_000_000_000 / hz)
}

/// `.last_tick` of `cpu` in a `/proc/timer_list` text: the line in the section that `cpu: N`
/// opens (None if absent, unparsable or 0: a CPU that never ticked).
pub fn last_tick(text: &str, cpu: u32) -> Option<u64> {
    let header = format!("cpu: {cpu}");
    let section = text.lines().skip_while(|l| l.trim() != header).skip(1);
    let line = section.take_while(|l| !l.starts_with("cpu: ")).find(|l| l.trim_start().starts_with(".last_tick"))?;
    let value = line.split(':').nth(1)?.trim().trim_end_matches("nsecs").trim();
    value.parse().ok().filter(|&t| t > 0)
}

/// The phase in words: "ticks 1.5ms after the first release (4ms tick)".
pub fn describe(phase: u64, tick: u64) -> String {
    format!("ticks {} after the first release ({} tick)", Nanos(phase), Nanos(tick))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The brute-force oracle: step 1 ns at a time to the next tick.
    fn phase_by_walking(g: &TickGrid, t: u64) -> u64 {
        (0..g.tick_ns).find(|d| (t + d) % g.tick_ns == g.origin_ns % g.tick_ns).unwrap()
    }

    proptest! {
        #[test]
        fn phase_after_is_the_walk_to_the_next_tick(tick in 1u64..300, origin in 0u64..10_000, t in 0u64..10_000) {
            let g = TickGrid::new(tick, origin);
            prop_assert_eq!(g.phase_after(t), phase_by_walking(&g, t));
        }

        #[test]
        fn start_with_phase_is_the_first_such_time(tick in 1u64..300, origin in 0u64..10_000, t in 0u64..10_000, phase in 0u64..600) {
            let g = TickGrid::new(tick, origin);
            let s = g.start_with_phase(t, phase);
            prop_assert!(s >= t && s < t + tick);
            prop_assert_eq!(g.phase_after(s), phase % tick);
            prop_assert!((t..s).all(|x| g.phase_after(x) != phase % tick));
        }
    }

    const TIMER_LIST: &str = "Timer List Version: v0.10\nHRTIMER_MAX_CLOCK_BASES: 8\nnow at 34325478550281 nsecs\n\ncpu: 0\n clock 0:\n  .base:       0000000000000000\n #0: <00000000654009bd>, tick_nohz_handler, S:01\n # expires at 34325480000000-34325480000000 nsecs [in 1449719 to 1449719 nsecs]\n  .expires_next   : 34325480000000 nsecs\n  .last_tick      : 34325232000000 nsecs\n  .tick_stopped   : 0\n\ncpu: 1\n  .expires_next   : 34325481000000 nsecs\n  .last_tick      : 34324792000000 nsecs\n\nTick Device: mode:     1\n";

    #[test]
    fn last_tick_is_read_from_the_cpus_own_section() {
        assert_eq!(last_tick(TIMER_LIST, 0), Some(34325232000000));
        assert_eq!(last_tick(TIMER_LIST, 1), Some(34324792000000));
        assert_eq!(last_tick(TIMER_LIST, 2), None);
        assert_eq!(last_tick("cpu: 0\n  .last_tick      : garbage nsecs\n", 0), None);
        assert_eq!(last_tick("cpu: 0\n  .last_tick      : 0 nsecs\n", 0), None);
    }

    #[test]
    fn this_hosts_grid_is_readable_and_its_ticks_are_where_it_says() {
        let g = this_host(0).expect("CONFIG_HZ and /proc/timer_list are readable here (root)");
        // a later reading of the same CPU lands on the same grid
        std::thread::sleep(std::time::Duration::from_millis(30));
        let text = std::fs::read_to_string("/proc/timer_list").unwrap();
        let later = last_tick(&text, 0).unwrap();
        assert_eq!((later - g.origin_ns) % g.tick_ns, 0, "ticks {} and {later} not {} apart", g.origin_ns, g.tick_ns);
    }
}
