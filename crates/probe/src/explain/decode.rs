//! Raw ring-buffer records -> the few event kinds the attribution needs, each field located once
//! from the event's `format` file (rtvirt-os's [`EventFormat`]).

use super::kvm_exit::ExitReasons;
use rtvirt_os::tracefs::{EventFormat, Field, Instance, RawEvent};
use std::collections::HashMap;

/// The events the attribution reads (`system/name`), and those it records as present or absent
/// only to say what could not be explained without them. The measuring threads' syscall events
/// ([`SYSCALL_EVENTS`]) are not among them by default: see there.
pub const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq/softirq_raise",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "preemptirq/irq_disable",
    "preemptirq/irq_enable",
    "osnoise/thread_noise",
];

/// The measuring threads' own `clock_nanosleep` entries and returns (`--explain-syscalls`): they
/// split the return into kernel and user space, stand for a missing `hrtimer_start` and for a
/// missing switch-in. Opt-in because of their price: while any syscall event is enabled, every
/// system call of every task on the host takes the kernel's slow path (the filter is applied
/// after it), which costs the measured wake-up about a third of the tracing shift
/// (docs/PERFORMANCE.md).
pub const SYSCALL_EVENTS: &[&str] = &["syscalls/sys_enter_clock_nanosleep", "syscalls/sys_exit_clock_nanosleep"];

/// The events traced: [`EVENTS`], and [`SYSCALL_EVENTS`] when asked for.
pub fn events(syscalls: bool) -> Vec<&'static str> {
    let extra = if syscalls { SYSCALL_EVENTS } else { &[] };
    EVENTS.iter().chain(extra).copied().collect()
}

/// Kernel-side filters: the measuring threads' own `clock_nanosleep` entries and returns only
/// (`rtvirt-timerN`, named by `probe::timer`).
pub const FILTERS: &[(&str, &str)] = &[
    ("syscalls/sys_enter_clock_nanosleep", MEASURING_THREADS),
    ("syscalls/sys_exit_clock_nanosleep", MEASURING_THREADS),
];
const MEASURING_THREADS: &str = "comm ~ \"rtvirt-timer*\"";

/// A thread's command name as the kernel records it (16 bytes, NUL-padded).
pub type Comm = [u8; 16];

/// One decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Switch {
        prev_pid: u32,
        prev_comm: Comm,
        prev_prio: i32,
        next_pid: u32,
        next_comm: Comm,
        next_prio: i32,
    },
    Wakeup {
        pid: u32,
    },
    TimerStart {
        by_pid: u32,
        timer: u64,
        expires: u64,
    },
    TimerExpire {
        timer: u64,
    },
    IrqEntry {
        irq: u32,
    },
    IrqExit,
    SoftirqEntry {
        vector: u32,
    },
    SoftirqExit,
    /// An interrupt vector's handler (index into [`VECTORS`]).
    VectorEntry {
        vector: usize,
    },
    VectorExit,
    /// A measuring thread entered `clock_nanosleep`.
    SleepEnter {
        pid: u32,
    },
    /// A measuring thread returned from `clock_nanosleep` (to user space).
    SleepExit {
        pid: u32,
    },
    /// `kvm_exit`: the vCPU running on this CPU left the guest (`reason`, on `isa`: VMX or SVM,
    /// named by [`super::kvm_exit::ExitReasons`]).
    KvmExit {
        reason: u32,
        isa: Option<u32>,
    },
    /// `kvm_entry`: the vCPU running on this CPU entered the guest again.
    KvmEntry,
}

/// The x86 interrupt vectors traced by `irq_vectors` events, by name.
pub const VECTORS: &[&str] = &["local_timer", "reschedule", "call_function", "call_function_single"];

/// The softirq names, by vector number (include/linux/interrupt.h).
pub const SOFTIRQS: &[&str] =
    &["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

enum Kind {
    Switch { prev_pid: Field, prev_comm: Field, prev_prio: Field, next_pid: Field, next_comm: Field, next_prio: Field },
    Wakeup { pid: Field },
    TimerStart { timer: Field, expires: Field },
    TimerExpire { timer: Field },
    IrqEntry { irq: Field, name: Field },
    IrqExit,
    SoftirqEntry { vector: Field },
    SoftirqExit,
    VectorEntry(usize),
    VectorExit,
    SleepEnter,
    SleepExit,
    KvmExit { reason: Field, isa: Option<Field> },
    KvmEntry,
}

/// Decodes the records of one instance.
pub struct Decoder {
    kinds: HashMap<u16, Kind>,
    common_pid: Field,
    /// IRQ handler names by IRQ number, as seen in `irq_handler_entry`.
    pub irq_names: HashMap<u32, String>,
    /// KVM exit reasons' names, from `kvm_exit`'s format (when traced).
    pub exit_reasons: ExitReasons,
}

impl Decoder {
    /// Locate the fields of every present event the attribution reads.
    pub fn new(instance: &Instance) -> Decoder {
        let mut kinds = HashMap::new();
        let mut common_pid = Field::common_pid();
        let mut exit_reasons = ExitReasons::default();
        for event in &instance.present {
            if event == "kvm/kvm_exit" {
                exit_reasons = instance.format_text(event).map(|t| ExitReasons::parse(&t)).unwrap_or_default();
            }
            let Ok(format) = instance.format(event) else { continue };
            if let Some(f) = format.field("common_pid") {
                common_pid = f.clone();
            }
            if let Some(kind) = kind_of(event, &format) {
                kinds.insert(format.id, kind);
            }
        }
        Decoder { kinds, common_pid, irq_names: HashMap::new(), exit_reasons }
    }

    /// The event, if it is one the attribution reads.
    pub fn decode(&mut self, raw: &RawEvent) -> Option<Event> {
        let id = u16::from_le_bytes([*raw.data.first()?, *raw.data.get(1)?]);
        let d = raw.data;
        let uint = |f: &Field| f.int(d).map(|v| v as u64);
        Some(match self.kinds.get(&id)? {
            Kind::Switch { prev_pid, prev_comm, prev_prio, next_pid, next_comm, next_prio } => Event::Switch {
                prev_pid: uint(prev_pid)? as u32,
                prev_comm: comm(prev_comm, d),
                prev_prio: prev_prio.int(d)? as i32,
                next_pid: uint(next_pid)? as u32,
                next_comm: comm(next_comm, d),
                next_prio: next_prio.int(d)? as i32,
            },
            Kind::Wakeup { pid } => Event::Wakeup { pid: uint(pid)? as u32 },
            Kind::TimerStart { timer, expires } => Event::TimerStart {
                by_pid: uint(&self.common_pid)? as u32,
                timer: uint(timer)?,
                expires: uint(expires)?,
            },
            Kind::TimerExpire { timer } => Event::TimerExpire { timer: uint(timer)? },
            Kind::IrqEntry { irq, name } => {
                let irq = uint(irq)? as u32;
                self.irq_names.entry(irq).or_insert_with(|| data_loc_text(name, d).unwrap_or("?").to_string());
                Event::IrqEntry { irq }
            }
            Kind::IrqExit => Event::IrqExit,
            Kind::SoftirqEntry { vector } => Event::SoftirqEntry { vector: uint(vector)? as u32 },
            Kind::SoftirqExit => Event::SoftirqExit,
            Kind::VectorEntry(v) => Event::VectorEntry { vector: *v },
            Kind::VectorExit => Event::VectorExit,
            Kind::SleepEnter => Event::SleepEnter { pid: uint(&self.common_pid)? as u32 },
            Kind::SleepExit => Event::SleepExit { pid: uint(&self.common_pid)? as u32 },
            Kind::KvmExit { reason, isa } => {
                Event::KvmExit { reason: uint(reason)? as u32, isa: isa.as_ref().and_then(uint).map(|v| v as u32) }
            }
            Kind::KvmEntry => Event::KvmEntry,
        })
    }
}

fn kind_of(event: &str, f: &EventFormat) -> Option<Kind> {
    let field = |name: &str| f.field(name).cloned();
    Some(match event {
        "sched/sched_switch" => Kind::Switch {
            prev_pid: field("prev_pid")?,
            prev_comm: field("prev_comm")?,
            prev_prio: field("prev_prio")?,
            next_pid: field("next_pid")?,
            next_comm: field("next_comm")?,
            next_prio: field("next_prio")?,
        },
        "sched/sched_wakeup" | "sched/sched_wakeup_new" => Kind::Wakeup { pid: field("pid")? },
        "timer/hrtimer_start" => Kind::TimerStart { timer: field("hrtimer")?, expires: field("expires")? },
        "timer/hrtimer_expire_entry" => Kind::TimerExpire { timer: field("hrtimer")? },
        "irq/irq_handler_entry" => Kind::IrqEntry { irq: field("irq")?, name: field("name")? },
        "irq/irq_handler_exit" => Kind::IrqExit,
        "irq/softirq_entry" => Kind::SoftirqEntry { vector: field("vec")? },
        "irq/softirq_exit" => Kind::SoftirqExit,
        "syscalls/sys_enter_clock_nanosleep" => Kind::SleepEnter,
        "syscalls/sys_exit_clock_nanosleep" => Kind::SleepExit,
        "kvm/kvm_exit" => Kind::KvmExit { reason: field("exit_reason")?, isa: field("isa") },
        "kvm/kvm_entry" => Kind::KvmEntry,
        _ => {
            let name = event.strip_prefix("irq_vectors/")?;
            if let Some(v) = name.strip_suffix("_entry") {
                Kind::VectorEntry(VECTORS.iter().position(|&n| n == v)?)
            } else {
                VECTORS.iter().position(|&n| Some(n) == name.strip_suffix("_exit"))?;
                Kind::VectorExit
            }
        }
    })
}

fn comm(f: &Field, data: &[u8]) -> Comm {
    let mut c = [0u8; 16];
    if let Some(b) = data.get(f.offset..f.offset + f.size.min(16)) {
        c[..b.len()].copy_from_slice(b);
    }
    c
}

/// A `__data_loc char[]` field: a u32 of (length << 16 | offset) pointing into the record.
pub(crate) fn data_loc_text<'a>(f: &Field, data: &'a [u8]) -> Option<&'a str> {
    let b = data_loc_bytes(f, data)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..end]).ok()
}

/// The bytes a `__data_loc` field points to (its value: offset in the low 16 bits, length in
/// the high 16).
pub(crate) fn data_loc_bytes<'a>(f: &Field, data: &'a [u8]) -> Option<&'a [u8]> {
    let loc = f.int(data)? as u32;
    let (offset, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
    data.get(offset..offset + len)
}

/// A command name as text.
pub fn comm_text(c: &Comm) -> String {
    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_loc_fields_point_into_the_record() {
        let f = Field { name: "name".into(), offset: 12, size: 4, signed: false };
        let mut rec = vec![0u8; 16];
        rec[12..16].copy_from_slice(&((5u32 << 16) | 16).to_le_bytes());
        rec.extend(b"eth0\0");
        assert_eq!(data_loc_text(&f, &rec), Some("eth0"));
    }
}
