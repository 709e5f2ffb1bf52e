//! Who else ran in the observer's gaps of calibrate's experiment 3, from the kernel's
//! `sched_switch` events of that CPU: a gap's time not spent by the deadline thread is the
//! server's own cost (replenishment timer, switches) only where no other thread ran. Other
//! threads are told apart by class: SCHED_OTHER threads (kernel priority 100..139) run there only
//! through the CPU's fair server (Linux >= 6.12; the spinning SCHED_FIFO observer starves them
//! otherwise), anything else (another real-time or deadline thread, a per-CPU kernel thread of
//! those classes) is "other". The idle task (pid 0) is neither: a gap in which the CPU was idle is
//! the hypervisor's (steal) or a halt, and stays in the server's figure as a measured upper bound.
//! The deadline thread's own time in a gap is taken from the same events (switched in to switched
//! out): interrupts that arrive while it runs are charged to its runtime by the kernel, so they
//! are part of its run, not of the period's overhead; the thread's own polling would count them
//! as overhead.

use crate::explain::decode::{Decoder, Event};
use rtvirt_os::tracefs::{CpuReader, Instance};
use std::path::Path;

/// `sched_switch` of one CPU, recorded in a tracing instance of its own (removed on drop).
pub struct SwitchTrace {
    // Fields drop in order: the reader's open `trace_pipe_raw` must be closed before the
    // instance's directory is removed, which the kernel refuses (EBUSY) while a file is open.
    reader: CpuReader,
    instance: Instance,
    decoder: Decoder,
    events: Vec<(u64, u32, Event)>,
}

/// Ring buffer per CPU (KiB): a few seconds of a 2 ms server's switches fit many times over.
const BUFFER_KB: u32 = 8192;

impl SwitchTrace {
    /// Start tracing `cpu`'s switches (instance journaled in `state_dir`).
    pub fn start(state_dir: &Path, cpu: u32) -> Result<SwitchTrace, String> {
        let instance = Instance::create(state_dir, &["sched/sched_switch"], BUFFER_KB).map_err(|e| e.to_string())?;
        instance.limit_to_cpus(&[cpu]).map_err(|e| e.to_string())?;
        let reader = instance.reader(cpu).map_err(|e| e.to_string())?;
        let decoder = Decoder::new(&instance);
        instance.set_on(true).map_err(|e| e.to_string())?;
        Ok(SwitchTrace { reader, instance, decoder, events: Vec::new() })
    }

    /// Drain the buffer (call now and then during a long run, and at the end).
    pub fn read(&mut self) -> Result<(), String> {
        let cpu = self.reader.cpu;
        while let Some(page) = self.reader.next_page().map_err(|e| e.to_string())? {
            for raw in page.events() {
                if let Some(e) = self.decoder.decode(&raw) {
                    self.events.push((raw.ts, cpu, e));
                }
            }
        }
        Ok(())
    }

    /// Stop: the events in time order, or why they cannot be trusted (events lost).
    pub fn finish(mut self) -> Result<Vec<(u64, u32, Event)>, String> {
        self.read()?;
        let _ = self.instance.set_on(false);
        let lost = self.instance.lost_events(self.reader.cpu);
        if lost > 0 {
            return Err(format!("{lost} sched_switch events lost (ring buffer overrun)"));
        }
        self.events.sort_by_key(|e| e.0);
        Ok(std::mem::take(&mut self.events))
    }
}

/// Who ran (ns) inside one gap of the observer, by the kernel's switches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InGap {
    /// The deadline thread (the server) itself.
    pub server: u64,
    /// SCHED_OTHER threads, run by the fair server.
    pub fair: u64,
    /// Real-time or deadline threads that are not the experiment's.
    pub other: u64,
}

impl InGap {
    /// Threads that are neither the server nor the observer.
    pub fn foreign(&self) -> u64 {
        self.fair + self.other
    }
}

/// One stretch of the CPU's timeline: `(start, end, pid, prio)`.
type Stretch = (u64, u64, u32, i32);

/// The CPU's timeline from its switch events (time order): who ran from each switch to the next.
fn timeline(events: &[(u64, u32, Event)], cpu: u32) -> Vec<Stretch> {
    let switches: Vec<(u64, u32, i32)> = events
        .iter()
        .filter(|(_, c, _)| *c == cpu)
        .filter_map(|&(ts, _, e)| match e {
            Event::Switch { next_pid, next_prio, .. } => Some((ts, next_pid, next_prio)),
            _ => None,
        })
        .collect();
    switches.windows(2).map(|w| (w[0].0, w[1].0, w[0].1, w[0].2)).collect()
}

/// Per gap `[start, end)` (time order, not overlapping): how long the `server` and threads other
/// than it and the `observer` (and the idle task) ran in it on `cpu`.
pub fn who_ran_in_gaps(
    events: &[(u64, u32, Event)],
    cpu: u32,
    server: u32,
    observer: u32,
    gaps: &[(u64, u64)],
) -> Vec<InGap> {
    let stretches: Vec<Stretch> = timeline(events, cpu).into_iter().filter(|s| s.2 != 0 && s.2 != observer).collect();
    let mut k = 0;
    gaps.iter()
        .map(|&(start, end)| {
            while k < stretches.len() && stretches[k].1 <= start {
                k += 1;
            }
            let mut f = InGap::default();
            for &(s, e, pid, prio) in stretches[k..].iter().take_while(|s| s.0 < end) {
                let ran = e.min(end).saturating_sub(s.max(start));
                if pid == server {
                    f.server += ran;
                } else if prio >= 100 {
                    f.fair += ran;
                } else {
                    f.other += ran;
                }
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::decode::Comm;

    fn switch(ts: u64, cpu: u32, next_pid: u32, next_prio: i32) -> (u64, u32, Event) {
        let comm = Comm::default();
        (ts, cpu, Event::Switch { prev_pid: 0, prev_comm: comm, prev_prio: 0, next_pid, next_comm: comm, next_prio })
    }

    #[test]
    fn the_server_and_other_threads_in_a_gap_are_counted_by_class_and_the_observer_and_idle_are_not() {
        // cpu 1: observer 10 until 100, server 11 until 150, a kworker (prio 120) until 170,
        // a FIFO thread (prio 49) until 180, idle until 190, observer again; cpu 0 is ignored
        let events = [
            switch(0, 1, 10, 98),
            switch(100, 1, 11, -1),
            switch(150, 1, 12, 120),
            switch(160, 0, 13, 120),
            switch(170, 1, 14, 49),
            switch(180, 1, 0, 120),
            switch(190, 1, 10, 98),
            switch(300, 1, 12, 120),
            switch(305, 1, 10, 98),
        ];
        let got = who_ran_in_gaps(&events, 1, 11, 10, &[(100, 190), (290, 310), (400, 500)]);
        assert_eq!(got[0], InGap { server: 50, fair: 20, other: 10 });
        assert_eq!(got[1], InGap { server: 0, fair: 5, other: 0 });
        assert_eq!(got[2], InGap::default());
    }
}
