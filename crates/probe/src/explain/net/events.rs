//! The trace events of a request's path, decoded from raw ring-buffer records (each field
//! located once from the event's `format` file), and the kernel-side filters that keep the
//! syscall, copy and wake-up events to rtvirt's own threads.

use crate::explain::decode::data_loc_text;
use rtvirt_os::tracefs::{Field, Instance, RawEvent};
use std::collections::HashMap;

/// The events a request's path is joined from (`system/name`). rtvirt's threads' send and
/// receive syscalls ([`SYSCALL_EVENTS`]) are not among them by default: see there. Nor is
/// `napi/napi_poll`: it names no packet, the NET_RX softirq's entry and exit already bound each
/// poll, and it would add two events to every request's path.
pub const EVENTS: &[&str] = &[
    "net/net_dev_queue",
    "net/net_dev_xmit",
    "net/netif_rx",
    "net/netif_receive_skb",
    "sock/sk_data_ready",
    "skb/skb_copy_datagram_iovec",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq/softirq_raise",
    "irq/irq_handler_entry",
];

/// rtvirt's threads' send syscall entries and receive syscall returns (`--explain-syscalls`).
/// While any syscall event is enabled every system call of every task on the host takes the
/// kernel's slow path (the filter to rtvirt's threads is applied after it), so by default the
/// join does without them: the client's send and a server's receive by their own clocks (the
/// trace clock is theirs), a server's send by its response's `net_dev_queue`.
pub const SYSCALL_EVENTS: &[&str] = &[
    "syscalls/sys_enter_sendto",
    "syscalls/sys_enter_sendmsg",
    "syscalls/sys_enter_write",
    "syscalls/sys_exit_recvfrom",
    "syscalls/sys_exit_recvmsg",
    "syscalls/sys_exit_read",
];

/// A server's response handed to a NIC's driver (`net_dev_start_xmit`, before the driver's own
/// transmit; filtered to this kernel's NICs by [`nic_filter`]). A server traces it when this
/// kernel has a NIC: in a guest the driver's transmit is virtio-net's kick into the hypervisor,
/// which under TCG can return after QEMU has already written the response to the host's tap, so
/// the guest's `host_send` ends where the driver takes the packet.
pub const START_XMIT: &str = "net/net_dev_start_xmit";

/// A packet freed after its use (`consume_skb`; filtered to rtvirt's threads). A server traces it
/// on a kernel without `sk_data_ready` (before Linux 6.4): a UDP receive frees the datagram it
/// returned, so the server's request is known by it when nothing else names it (a small
/// datagram's copy to user space has no trace event, and a server awake was woken by nobody).
pub const CONSUME: &str = "skb/consume_skb";

/// The events traced: [`EVENTS`], and [`SYSCALL_EVENTS`] when asked for.
pub fn traced(syscalls: bool) -> Vec<&'static str> {
    let extra = if syscalls { SYSCALL_EVENTS } else { &[] };
    EVENTS.iter().chain(extra).copied().collect()
}

/// The name of the thread that reads the trace: its own syscalls are filtered out.
pub const READER_THREAD: &str = "rtvirt-explain";

/// The name of an open-loop client's sender thread: its wake-ups (at each intended send time)
/// are not traced, the join does not use them.
pub const SENDER_THREAD: &str = "rtvirt-sender";

/// rtvirt's threads (a client, a server in a container, their sender threads) but not the
/// trace reader. `comm` is the running thread's name, or for `sched_waking`/`sched_wakeup` the
/// woken one's.
const RTVIRT_THREADS: &str = "comm ~ \"rtvirt*\" && comm != \"rtvirt-explain\"";
/// The wake-ups of rtvirt's threads but a client's sender (one pair of events fewer on every
/// request's way: the trace's own cost lands on the round trip).
const WOKEN_RTVIRT_THREADS: &str = "comm ~ \"rtvirt*\" && comm != \"rtvirt-explain\" && comm != \"rtvirt-sender\"";
/// NET_TX and NET_RX (include/linux/interrupt.h).
const NET_SOFTIRQS: &str = "vec == 2 || vec == 3";

/// Kernel-side filters: what the syscall, copy and wake-up events are limited to.
pub const FILTERS: &[(&str, &str)] = &[
    ("syscalls/sys_enter_sendto", RTVIRT_THREADS),
    ("syscalls/sys_enter_sendmsg", RTVIRT_THREADS),
    ("syscalls/sys_enter_write", RTVIRT_THREADS),
    ("syscalls/sys_exit_recvfrom", RTVIRT_THREADS),
    ("syscalls/sys_exit_recvmsg", RTVIRT_THREADS),
    ("syscalls/sys_exit_read", RTVIRT_THREADS),
    ("skb/skb_copy_datagram_iovec", RTVIRT_THREADS),
    (CONSUME, RTVIRT_THREADS),
    ("sched/sched_waking", WOKEN_RTVIRT_THREADS),
    ("sched/sched_wakeup", WOKEN_RTVIRT_THREADS),
    ("irq/softirq_entry", NET_SOFTIRQS),
    ("irq/softirq_exit", NET_SOFTIRQS),
    ("irq/softirq_raise", NET_SOFTIRQS),
];

/// The filter that keeps [`START_XMIT`] to this kernel's NICs (`/sys/class/net/*/device`), or
/// None when it has none. A name the filter syntax cannot quote is left out.
pub fn nic_filter() -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| is_nic(name) && !name.contains(['"', '\\']))
        .collect();
    names.sort();
    (!names.is_empty()).then(|| names.iter().map(|n| format!("name == \"{n}\"")).collect::<Vec<_>>().join(" || "))
}

/// NET_RX's softirq vector.
pub const NET_RX: u32 = 3;

/// A network device's name, as an index into [`Decoder::devices`].
pub type Device = u16;

/// One decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetEvent {
    /// `sys_enter` of a send syscall (sendto, sendmsg, write) by the event's thread.
    Send,
    /// `sys_exit` of a receive syscall (recvfrom, recvmsg, read) by the event's thread.
    Taken,
    /// `net_dev_queue`: a packet handed to a device (`dev_queue_xmit`).
    Queue {
        skb: u64,
        device: Device,
    },
    /// `net_dev_start_xmit`: a NIC's driver is handed a packet ([`START_XMIT`]).
    StartXmit {
        skb: u64,
        device: Device,
    },
    /// `net_dev_xmit`: the device's transmit function returned.
    Xmit {
        skb: u64,
        device: Device,
    },
    /// `netif_rx`: a packet queued for receive processing (veth, loopback).
    NetifRx {
        skb: u64,
        device: Device,
    },
    /// `netif_receive_skb`: a packet taken into the stack (NAPI or the backlog).
    Receive {
        skb: u64,
        device: Device,
    },
    /// `sk_data_ready`: data queued on socket `sock` (its readers are woken next).
    DataReady {
        sock: u64,
    },
    /// `skb_copy_datagram_iovec`: a packet's data copied to user space by the event's thread.
    Copy {
        skb: u64,
    },
    /// `consume_skb`: a packet freed by the event's thread after its use ([`CONSUME`]).
    Consume {
        skb: u64,
    },
    /// `sched_waking`: thread `pid` is being woken, recorded in the waker's context (the socket
    /// enqueue's CPU and thread) - always, unlike `sched_wakeup`, which a wake-up of a thread on
    /// an idle CPU records on that CPU, in its interrupt, once the IPI came (the scheduler's
    /// remote wake list, `TTWU_QUEUE`).
    Waking {
        pid: u32,
    },
    /// `sched_wakeup`: thread `pid` is runnable on `target_cpu`.
    Wakeup {
        pid: u32,
        target_cpu: u32,
    },
    SoftirqEntry {
        vector: u32,
    },
    SoftirqExit {
        vector: u32,
    },
    SoftirqRaise {
        vector: u32,
    },
    IrqEntry {
        irq: u32,
    },
}

impl NetEvent {
    /// The packet the event is about.
    pub fn skb(&self) -> Option<u64> {
        match *self {
            NetEvent::Queue { skb, .. }
            | NetEvent::StartXmit { skb, .. }
            | NetEvent::Xmit { skb, .. }
            | NetEvent::NetifRx { skb, .. }
            | NetEvent::Receive { skb, .. }
            | NetEvent::Copy { skb }
            | NetEvent::Consume { skb } => Some(skb),
            _ => None,
        }
    }
}

/// An event with its time (trace clock `mono` = CLOCK_MONOTONIC, ns), CPU and thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev {
    pub ts: u64,
    pub cpu: u32,
    /// The thread running when it was recorded (`common_pid`).
    pub pid: u32,
    pub event: NetEvent,
}

enum Kind {
    Send,
    Taken,
    Queue { skb: Field, name: Field },
    StartXmit { skb: Field, name: Field },
    Xmit { skb: Field, name: Field },
    NetifRx { skb: Field, name: Field },
    Receive { skb: Field, name: Field },
    DataReady { sock: Field },
    Copy { skb: Field },
    Consume { skb: Field },
    Waking { pid: Field },
    Wakeup { pid: Field, target_cpu: Field },
    Softirq { vector: Field, what: fn(u32) -> NetEvent },
    IrqEntry { irq: Field, name: Field },
}

/// Decodes the records of one instance.
pub struct Decoder {
    kinds: HashMap<u16, Kind>,
    common_pid: Field,
    /// Device names by [`Device`].
    pub devices: Vec<String>,
    /// Whether each device is a tun/tap (a guest's: what it transmits leaves this host's stack).
    taps: Vec<bool>,
    /// Whether each device is a NIC (a guest's virtio-net too): what it receives begins there.
    nics: Vec<bool>,
    /// IRQ handler names by IRQ number, as seen in `irq_handler_entry`.
    pub irq_names: HashMap<u32, String>,
    /// Whether `sched_waking` is traced (wakers are then known by it, not by `sched_wakeup`).
    pub has_waking: bool,
    /// Whether `sk_data_ready` is traced (Linux 6.4 on; without it a server's request is known
    /// by its copy to user space, and its socket enqueue by the wake-up it caused).
    pub has_data_ready: bool,
    /// Whether the send and receive syscalls are traced ([`SYSCALL_EVENTS`]); without them a
    /// receive is known by its copy to user space and a send by its `net_dev_queue`.
    pub has_syscalls: bool,
}

impl Decoder {
    pub fn new(instance: &Instance) -> Decoder {
        let mut kinds = HashMap::new();
        let mut common_pid = Field::common_pid();
        for event in &instance.present {
            let Ok(format) = instance.format(event) else { continue };
            if let Some(f) = format.field("common_pid") {
                common_pid = f.clone();
            }
            let field = |name: &str| format.field(name).cloned();
            if let Some(kind) = kind_of(event, &field) {
                kinds.insert(format.id, kind);
            }
        }
        let has = |event: &str| instance.present.iter().any(|e| e == event);
        let (has_waking, has_data_ready) = (has("sched/sched_waking"), has("sock/sk_data_ready"));
        let has_syscalls = has("syscalls/sys_enter_sendto") && has("syscalls/sys_exit_recvfrom");
        let (devices, taps, nics, irq_names) = (Vec::new(), Vec::new(), Vec::new(), HashMap::new());
        Decoder { kinds, common_pid, devices, taps, nics, irq_names, has_waking, has_data_ready, has_syscalls }
    }

    /// The event, if it is one of [`EVENTS`] or [`SYSCALL_EVENTS`].
    pub fn decode(&mut self, raw: &RawEvent, cpu: u32) -> Option<Ev> {
        let d = raw.data;
        let id = u16::from_le_bytes([*d.first()?, *d.get(1)?]);
        let uint = |f: &Field| f.int(d).map(|v| v as u64);
        let Decoder { kinds, common_pid, devices, taps, nics, irq_names, .. } = self;
        let mut device = |name: &Field| {
            let name = data_loc_text(name, d).unwrap_or("?");
            intern(devices, name, || {
                taps.push(is_tap(name));
                nics.push(is_nic(name));
            })
        };
        let event = match kinds.get(&id)? {
            Kind::Send => NetEvent::Send,
            Kind::Taken => NetEvent::Taken,
            Kind::Queue { skb, name } => NetEvent::Queue { skb: uint(skb)?, device: device(name) },
            Kind::StartXmit { skb, name } => NetEvent::StartXmit { skb: uint(skb)?, device: device(name) },
            Kind::Xmit { skb, name } => NetEvent::Xmit { skb: uint(skb)?, device: device(name) },
            Kind::NetifRx { skb, name } => NetEvent::NetifRx { skb: uint(skb)?, device: device(name) },
            Kind::Receive { skb, name } => NetEvent::Receive { skb: uint(skb)?, device: device(name) },
            Kind::DataReady { sock } => NetEvent::DataReady { sock: uint(sock)? },
            Kind::Copy { skb } => NetEvent::Copy { skb: uint(skb)? },
            Kind::Consume { skb } => NetEvent::Consume { skb: uint(skb)? },
            Kind::Waking { pid } => NetEvent::Waking { pid: uint(pid)? as u32 },
            Kind::Wakeup { pid, target_cpu } => {
                NetEvent::Wakeup { pid: uint(pid)? as u32, target_cpu: uint(target_cpu)? as u32 }
            }
            Kind::Softirq { vector, what } => what(uint(vector)? as u32),
            Kind::IrqEntry { irq, name } => {
                let irq = uint(irq)? as u32;
                irq_names.entry(irq).or_insert_with(|| data_loc_text(name, d).unwrap_or("?").to_string());
                NetEvent::IrqEntry { irq }
            }
        };
        Some(Ev { ts: raw.ts, cpu, pid: uint(common_pid)? as u32, event })
    }

    /// A decoder of nothing (for joins of events made by hand).
    pub fn without_events() -> Decoder {
        let common_pid = Field::common_pid();
        let devices = Vec::new();
        Decoder {
            kinds: HashMap::new(),
            common_pid,
            devices,
            taps: Vec::new(),
            nics: Vec::new(),
            irq_names: HashMap::new(),
            has_waking: false,
            has_data_ready: true,
            has_syscalls: true,
        }
    }

    /// A device name's index.
    pub fn intern(&mut self, name: &str) -> Device {
        let (taps, nics) = (&mut self.taps, &mut self.nics);
        intern(&mut self.devices, name, || {
            taps.push(is_tap(name));
            nics.push(is_nic(name));
        })
    }

    /// A device's index, declared a tun/tap whatever this host has (for joins of events made by hand).
    pub fn intern_tap(&mut self, name: &str) -> Device {
        let device = self.intern(name);
        self.taps[device as usize] = true;
        device
    }

    pub fn device_name(&self, device: Device) -> &str {
        self.devices.get(device as usize).map_or("?", String::as_str)
    }

    /// Whether the device is a tun/tap: a packet it transmits goes to the user-space program
    /// behind it (QEMU: into a guest), not on through this host's stack.
    pub fn is_tap(&self, device: Device) -> bool {
        self.taps.get(device as usize).copied().unwrap_or(false)
    }

    /// Whether the device is a NIC (it has a bus device: a guest's virtio-net too, not a veth,
    /// bridge, tap or loopback): a packet it receives came from outside this kernel.
    pub fn is_nic(&self, device: Device) -> bool {
        self.nics.get(device as usize).copied().unwrap_or(false)
    }

    /// A device's index, declared a NIC whatever this host has (for joins of events made by hand).
    pub fn intern_nic(&mut self, name: &str) -> Device {
        let device = self.intern(name);
        self.nics[device as usize] = true;
        device
    }
}

/// A device's index in `devices`; `added` runs when the name is new.
fn intern(devices: &mut Vec<String>, name: &str, added: impl FnOnce()) -> Device {
    match devices.iter().position(|d| d == name) {
        Some(i) => i as Device,
        None => {
            devices.push(name.to_string());
            added();
            (devices.len() - 1) as Device
        }
    }
}

/// Whether this host's device `name` is a tun/tap (the kernel's tun driver gives every one the
/// attribute `tun_flags`), asked once per device when it first appears in the trace, while the
/// device exists.
fn is_tap(name: &str) -> bool {
    !name.contains('/') && std::path::Path::new("/sys/class/net").join(name).join("tun_flags").exists()
}

/// Whether this host's device `name` is a NIC: sysfs links it to its bus device.
fn is_nic(name: &str) -> bool {
    !name.contains('/') && std::path::Path::new("/sys/class/net").join(name).join("device").exists()
}

fn kind_of(event: &str, field: &dyn Fn(&str) -> Option<Field>) -> Option<Kind> {
    let skb = || field("skbaddr");
    Some(match event {
        "syscalls/sys_enter_sendto" | "syscalls/sys_enter_sendmsg" | "syscalls/sys_enter_write" => Kind::Send,
        "syscalls/sys_exit_recvfrom" | "syscalls/sys_exit_recvmsg" | "syscalls/sys_exit_read" => Kind::Taken,
        "net/net_dev_queue" => Kind::Queue { skb: skb()?, name: field("name")? },
        START_XMIT => Kind::StartXmit { skb: skb()?, name: field("name")? },
        "net/net_dev_xmit" => Kind::Xmit { skb: skb()?, name: field("name")? },
        "net/netif_rx" => Kind::NetifRx { skb: skb()?, name: field("name")? },
        "net/netif_receive_skb" => Kind::Receive { skb: skb()?, name: field("name")? },
        "sock/sk_data_ready" => Kind::DataReady { sock: field("skaddr")? },
        "skb/skb_copy_datagram_iovec" => Kind::Copy { skb: skb()? },
        CONSUME => Kind::Consume { skb: skb()? },
        "sched/sched_waking" => Kind::Waking { pid: field("pid")? },
        "sched/sched_wakeup" => Kind::Wakeup { pid: field("pid")?, target_cpu: field("target_cpu")? },
        "irq/softirq_entry" => {
            Kind::Softirq { vector: field("vec")?, what: |vector| NetEvent::SoftirqEntry { vector } }
        }
        "irq/softirq_exit" => Kind::Softirq { vector: field("vec")?, what: |vector| NetEvent::SoftirqExit { vector } },
        "irq/softirq_raise" => {
            Kind::Softirq { vector: field("vec")?, what: |vector| NetEvent::SoftirqRaise { vector } }
        }
        "irq/irq_handler_entry" => Kind::IrqEntry { irq: field("irq")?, name: field("name")? },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel-side filters spell the thread names out: they must be the names the reader and
    /// the sender threads are given.
    #[test]
    fn the_filters_leave_out_the_reader_and_the_senders_wake_ups_by_their_names() {
        let filter = |event: &str| FILTERS.iter().find(|(e, _)| *e == event).map(|(_, f)| *f).unwrap();
        let excluded = |name: &str| format!("comm != \"{name}\"");
        for event in ["syscalls/sys_enter_sendto", "skb/skb_copy_datagram_iovec", "sched/sched_waking"] {
            assert!(filter(event).contains(&excluded(READER_THREAD)), "{event}");
        }
        for event in ["sched/sched_waking", "sched/sched_wakeup"] {
            assert!(filter(event).contains(&excluded(SENDER_THREAD)), "{event}");
        }
        assert!(!filter("skb/skb_copy_datagram_iovec").contains(SENDER_THREAD), "the sender's own events stay");
    }
}
