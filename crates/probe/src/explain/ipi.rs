//! Who sent the inter-processor interrupts that a measured CPU handled.
//!
//! The kernel records an IPI's sending (`ipi/ipi_send_cpu`, `ipi/ipi_send_cpumask`) on the
//! sending CPU, which is usually not a measured one; the main instance records only on the
//! measured CPUs (`tracing_cpumask`), so the sendings come from a second, small instance of
//! rtvirt's own (`rtvirt-<pid>-ipi`) on every CPU, filtered in the kernel to the IPIs aimed at a
//! measured CPU. A handler's time on the measured CPU (its `irq_vectors` entry to exit, kind
//! `ipi`) is then named after the last sending to that CPU before it: the sending CPU and thread,
//! the function asked for (`callback`) and the code that sent it (`callsite`), resolved with
//! `/proc/kallsyms`.
//!
//! `/proc/kallsyms` is read by hand ([`Symbols`]): the only maintained symbolizer crate
//! (blazesym) is a whole DWARF/ELF stack for what is here a sorted table and a binary search.

use super::ExplainConfig;
use rtvirt_os::tracefs::{CpuReader, Field, Instance, RawEvent};
use std::collections::{HashMap, VecDeque};

/// The events of the second instance.
pub const EVENTS: &[&str] = &["ipi/ipi_send_cpu", "ipi/ipi_send_cpumask"];
/// Ring buffer per CPU of the second instance: sendings are rare next to the main events.
const BUFFER_KB: u32 = 512;
/// A handler is named after a sending at most this long before it (an IPI's delivery in a VM).
pub const DELIVERY_BOUND_NS: u64 = 5_000_000;
/// Sendings kept per measured CPU at most when no wake-up lets them go.
const MAX_PER_CPU: usize = 100_000;

/// One IPI sent to a measured CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sending {
    pub ts: u64,
    /// The sending CPU and the thread that ran there.
    pub from_cpu: u32,
    pub pid: u32,
    pub callsite: u64,
    /// The function the target runs (0 for a reschedule).
    pub callback: u64,
}

enum Layout {
    /// `ipi_send_cpu`: one target.
    One { cpu: Field },
    /// `ipi_send_cpumask`: a `__data_loc cpumask_t`.
    Mask { cpumask: Field },
}

/// The second instance, its readers and the sendings to each measured CPU, in time order.
/// Fields drop in order: the readers close before the instance is removed.
pub struct Senders {
    readers: Vec<CpuReader>,
    instance: Instance,
    layouts: HashMap<u16, (Layout, Field, Field)>,
    common_pid: Field,
    to: HashMap<u32, VecDeque<Sending>>,
    symbols: Option<Symbols>,
}

impl Senders {
    /// Trace the sendings to `measured` on every CPU; an error says why they cannot be.
    pub fn start(cfg: &ExplainConfig, measured: &[u32]) -> Result<Senders, String> {
        let instance =
            Instance::create_part(&cfg.state_dir, Some("ipi"), EVENTS, BUFFER_KB).map_err(|e| e.to_string())?;
        if instance.present.is_empty() {
            return Err("the kernel has no ipi_send_cpu/ipi_send_cpumask events".into());
        }
        let listed = measured.iter().map(u32::to_string).collect::<Vec<_>>();
        let one = listed.iter().map(|c| format!("cpu == {c}")).collect::<Vec<_>>().join(" || ");
        let mask = format!("cpumask & CPUS{{{}}}", listed.join(","));
        // Unfiltered (an older kernel's filter syntax), the targets are still checked when read.
        let _ = instance.filter("ipi/ipi_send_cpu", &one);
        let _ = instance.filter("ipi/ipi_send_cpumask", &mask);
        let mut layouts = HashMap::new();
        let mut common_pid = Field::common_pid();
        for event in &instance.present {
            let Ok(format) = instance.format(event) else { continue };
            let field = |name: &str| format.field(name).cloned();
            let layout = match event.as_str() {
                "ipi/ipi_send_cpu" => field("cpu").map(|cpu| Layout::One { cpu }),
                _ => field("cpumask").map(|cpumask| Layout::Mask { cpumask }),
            };
            if let (Some(layout), Some(site), Some(callback)) = (layout, field("callsite"), field("callback")) {
                layouts.insert(format.id, (layout, site, callback));
            }
            common_pid = field("common_pid").unwrap_or(common_pid);
        }
        let readers = crate::cpus::online()
            .into_iter()
            .map(|cpu| instance.reader(cpu).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, String>>()?;
        instance.set_on(true).map_err(|e| e.to_string())?;
        let to = measured.iter().map(|&c| (c, VecDeque::new())).collect();
        Ok(Senders { readers, instance, layouts, common_pid, to, symbols: None })
    }

    /// The events enabled (`system/name`).
    pub fn present(&self) -> &[String] {
        &self.instance.present
    }

    /// Sendings the ring buffers lost.
    pub fn lost(&self) -> u64 {
        self.readers.iter().map(|r| self.instance.lost_events(r.cpu)).sum()
    }

    /// Drain every CPU's buffer.
    pub fn read(&mut self) -> rtvirt_os::Result<()> {
        let mut got = Vec::new();
        for reader in &mut self.readers {
            let cpu = reader.cpu;
            while let Some(page) = reader.next_page()? {
                got.extend(page.events().flat_map(|raw| decode(&self.layouts, &self.common_pid, &raw, cpu)));
            }
        }
        got.sort_by_key(|(s, _): &(Sending, u32)| s.ts);
        for (sending, target) in got {
            if let Some(list) = self.to.get_mut(&target) {
                list.push_back(sending);
                if list.len() > MAX_PER_CPU {
                    list.pop_front();
                }
            }
        }
        Ok(())
    }

    /// The last sending to `cpu` at or before `ts`, within [`DELIVERY_BOUND_NS`].
    pub fn last_before(&self, cpu: u32, ts: u64) -> Option<Sending> {
        let list = self.to.get(&cpu)?;
        let at = list.partition_point(|s| s.ts <= ts);
        list.get(at.checked_sub(1)?).copied().filter(|s| ts - s.ts <= DELIVERY_BOUND_NS)
    }

    /// Forget the sendings to `cpu` that no handler from `ts` on can be named after.
    pub fn forget_before(&mut self, cpu: u32, ts: u64) {
        if let Some(list) = self.to.get_mut(&cpu) {
            while list.front().is_some_and(|s| s.ts + DELIVERY_BOUND_NS < ts) {
                list.pop_front();
            }
        }
    }

    /// `VECTOR from CPU N (pid P): CALLBACK, sent by CALLSITE`.
    pub fn describe(&mut self, vector: &str, s: &Sending) -> String {
        let symbols = self.symbols.get_or_insert_with(Symbols::load);
        let site = symbols.name(s.callsite);
        match s.callback {
            0 => format!("{vector} from CPU {} (pid {}), sent by {site}", s.from_cpu, s.pid),
            f => format!("{vector} from CPU {} (pid {}): {}, sent by {site}", s.from_cpu, s.pid, symbols.name(f)),
        }
    }
}

/// A sending and each measured target it is for.
fn decode(
    layouts: &HashMap<u16, (Layout, Field, Field)>,
    common_pid: &Field,
    raw: &RawEvent,
    cpu: u32,
) -> Vec<(Sending, u32)> {
    let d = raw.data;
    let Some(id) = d.get(..2).map(|b| u16::from_le_bytes([b[0], b[1]])) else { return Vec::new() };
    let Some((layout, site, callback)) = layouts.get(&id) else { return Vec::new() };
    let uint = |f: &Field| f.int(d).map(|v| v as u64).unwrap_or(0);
    let sending = Sending {
        ts: raw.ts,
        from_cpu: cpu,
        pid: uint(common_pid) as u32,
        callsite: uint(site),
        callback: uint(callback),
    };
    let targets = match layout {
        Layout::One { cpu } => vec![uint(cpu) as u32],
        Layout::Mask { cpumask } => mask_cpus(cpumask, d),
    };
    targets.into_iter().map(|t| (sending, t)).collect()
}

/// The CPUs of a `__data_loc cpumask_t` field (a bitmap of little-endian words).
fn mask_cpus(field: &Field, data: &[u8]) -> Vec<u32> {
    let Some(bytes) = super::decode::data_loc_bytes(field, data) else { return Vec::new() };
    let bit = |i: usize| bytes[i / 8] & (1 << (i % 8)) != 0;
    (0..bytes.len() * 8).filter(|&i| bit(i)).map(|i| i as u32).collect()
}

/// The kernel's text symbols by address, from `/proc/kallsyms`.
pub struct Symbols {
    by_address: Vec<(u64, String)>,
}

impl Symbols {
    /// Read `/proc/kallsyms` (empty when unreadable or hidden: addresses then show in hex).
    pub fn load() -> Symbols {
        Symbols::parse(&std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())
    }

    /// `ADDRESS TYPE NAME [MODULE]` lines; text symbols only.
    pub fn parse(text: &str) -> Symbols {
        let mut by_address: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut f = line.split_whitespace();
                let address = u64::from_str_radix(f.next()?, 16).ok().filter(|&a| a != 0)?;
                let kind = f.next()?;
                matches!(kind, "t" | "T").then_some(())?;
                Some((address, f.next()?.to_string()))
            })
            .collect();
        by_address.sort();
        Symbols { by_address }
    }

    /// `name+0xoffset`, or the address in hex when no symbol holds it.
    pub fn name(&self, address: u64) -> String {
        let at = self.by_address.partition_point(|(a, _)| *a <= address);
        match at.checked_sub(1).map(|i| &self.by_address[i]) {
            Some((start, name)) if address == *start => name.clone(),
            Some((start, name)) => format!("{name}+{:#x}", address - start),
            None => format!("{address:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbol_is_the_nearest_text_symbol_at_or_below_the_address() {
        let s = Symbols::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t ttwu_queue_wakelist\nffffffff81000200 D some_data\n\
             0000000000000000 T hidden\nffffffff81000300 T generic_smp_call_function_single_interrupt [kvm]\n",
        );
        assert_eq!(s.name(0xffffffff81000100), "ttwu_queue_wakelist");
        assert_eq!(s.name(0xffffffff81000180), "ttwu_queue_wakelist+0x80");
        assert_eq!(s.name(0xffffffff81000250), "ttwu_queue_wakelist+0x150", "data symbols are not code");
        assert_eq!(s.name(0xffffffff81000300), "generic_smp_call_function_single_interrupt");
        assert_eq!(s.name(0x1000), "0x1000", "below every symbol");
        assert_eq!(Symbols::parse("").name(0xffffffff81000100), "0xffffffff81000100", "kallsyms hidden");
    }

    #[test]
    fn a_cpumask_field_lists_its_cpus() {
        let field = Field { name: "cpumask".into(), offset: 8, size: 4, signed: false };
        let mut data = vec![0u8; 8];
        let (offset, len) = (12u32, 8u32);
        data.extend_from_slice(&(offset | (len << 16)).to_le_bytes());
        data.extend_from_slice(&(0b1010u64 | 1 << 33).to_le_bytes());
        assert_eq!(mask_cpus(&field, &data), vec![1, 3, 33]);
        assert_eq!(mask_cpus(&field, &data[..14]), Vec::<u32>::new(), "a truncated record names no CPU");
    }
}
