//! `--break`: the whole raw trace kept, as cyclictest's `-b` leaves it in ftrace's buffer. Every
//! ring-buffer page the explainer reads is also kept as read, the newest
//! [`super::ExplainConfig::buffer_kb`] per CPU (the kernel's own bound), tracing stops at the
//! breaking wake-up, and at the end the pages are written as text in the layout of ftrace's
//! `trace` file: one line per event (every event read, not only those the attribution uses), CPUs
//! merged in time order, every field by name from the event's `format` file.

use rtvirt_os::tracefs::{read_uint, Instance, Page, PageHeader};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::Path;

/// The pages kept per CPU.
pub struct RawKeeper {
    cpus: Vec<KeptCpu>,
    limit_bytes: usize,
}

struct KeptCpu {
    cpu: u32,
    pages: VecDeque<Vec<u8>>,
    bytes: usize,
}

impl RawKeeper {
    /// Keep up to `limit_bytes` of pages for each of `cpus`.
    pub fn new(cpus: &[u32], limit_bytes: usize) -> RawKeeper {
        let cpus = cpus.iter().map(|&cpu| KeptCpu { cpu, pages: VecDeque::new(), bytes: 0 }).collect();
        RawKeeper { cpus, limit_bytes }
    }

    /// Keep a copy of a page of `cpu`, forgetting the oldest beyond the limit.
    pub fn keep(&mut self, cpu: u32, page: &[u8]) {
        let Some(kept) = self.cpus.iter_mut().find(|k| k.cpu == cpu) else { return };
        kept.bytes += page.len();
        kept.pages.push_back(page.to_vec());
        while kept.bytes > self.limit_bytes && kept.pages.len() > 1 {
            let old = kept.pages.pop_front().expect("more than one page");
            kept.bytes -= old.len();
        }
    }

    /// Write every kept event as text to `path`; the number of events written.
    pub fn write(&self, instance: &Instance, header: PageHeader, path: &Path, title: &str) -> std::io::Result<u64> {
        let formats = TextFormats::of(instance);
        let mut lines: Vec<(u64, u32, String)> = Vec::new();
        for kept in &self.cpus {
            for page in &kept.pages {
                for raw in Page::new(page, header).events() {
                    lines.push((raw.ts, kept.cpu, formats.line(kept.cpu, raw.ts, raw.data)));
                }
            }
        }
        lines.sort_by_key(|(ts, cpu, _)| (*ts, *cpu));
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(out, "# {title}")?;
        writeln!(out, "# clock: mono (CLOCK_MONOTONIC); {} events; per CPU the newest pages read", lines.len())?;
        writeln!(out, "#      PID   CPU  TIMESTAMP(s)        EVENT: FIELDS")?;
        for (_, _, line) in &lines {
            writeln!(out, "{line}")?;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(lines.len() as u64)
    }
}

/// How a field prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Int {
        signed: bool,
    },
    /// `char name[N]`.
    Text,
    /// `__data_loc char[] name`: a u32 (length << 16 | offset) into the record.
    DataLoc,
    /// Any other array: hex bytes.
    Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TextField {
    name: String,
    offset: usize,
    size: usize,
    shape: Shape,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TextFormat {
    name: String,
    fields: Vec<TextField>,
}

/// The text layout of every enabled event, by id.
struct TextFormats {
    by_id: HashMap<u16, TextFormat>,
}

impl TextFormats {
    fn of(instance: &Instance) -> TextFormats {
        let by_id =
            instance.present.iter().filter_map(|event| parse_format(&instance.format_text(event).ok()?)).collect();
        TextFormats { by_id }
    }

    /// `     PID [CPU] SECONDS: name: field=value ...`
    fn line(&self, cpu: u32, ts: u64, data: &[u8]) -> String {
        let id = read_uint(data, 0, 2).unwrap_or(0) as u16;
        let pid = read_uint(data, 4, 4).map_or(-1, |p| p as u32 as i32);
        let head = format!("{pid:>10} [{cpu:03}] {}.{:09}:", ts / 1_000_000_000, ts % 1_000_000_000);
        match self.by_id.get(&id) {
            Some(f) => {
                let fields: Vec<String> = f.fields.iter().map(|x| format!("{}={}", x.name, value(x, data))).collect();
                format!("{head} {}: {}", f.name, fields.join(" "))
            }
            None => format!("{head} event {id}: {} bytes", data.len()),
        }
    }
}

fn value(f: &TextField, data: &[u8]) -> String {
    let bytes = data.get(f.offset..f.offset + f.size).unwrap_or(&[]);
    match f.shape {
        Shape::Int { signed } => match read_uint(data, f.offset, f.size) {
            Some(v) if signed => sign_extend(v, f.size).to_string(),
            Some(v) => v.to_string(),
            None => "?".into(),
        },
        Shape::Text => text(bytes),
        Shape::DataLoc => {
            let loc = read_uint(data, f.offset, 4).unwrap_or(0) as usize;
            text(data.get(loc & 0xffff..(loc & 0xffff) + (loc >> 16)).unwrap_or(&[]))
        }
        Shape::Bytes => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn sign_extend(v: u64, size: usize) -> i64 {
    match size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}

fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// An event's name and its own fields (not the `common_*` ones) from its `format` file.
fn parse_format(text: &str) -> Option<(u16, TextFormat)> {
    let name = text.lines().find_map(|l| l.strip_prefix("name:"))?.trim().to_string();
    let id = text.lines().find_map(|l| l.strip_prefix("ID:"))?.trim().parse().ok()?;
    let fields = text.lines().filter_map(parse_field).filter(|f| !f.name.starts_with("common_")).collect();
    Some((id, TextFormat { name, fields }))
}

/// `\tfield:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`
fn parse_field(line: &str) -> Option<TextField> {
    let mut parts = line.trim().split(';').map(str::trim);
    let decl = parts.next()?.strip_prefix("field:")?;
    let value = |key: &str| parts.clone().find_map(|p| p.strip_prefix(key)).and_then(|v| v.parse::<usize>().ok());
    let (offset, size, signed) = (value("offset:")?, value("size:")?, value("signed:").unwrap_or(0) == 1);
    let word = decl.split_whitespace().last()?;
    let name = word.split('[').next()?.to_string();
    let shape = if decl.starts_with("__data_loc") {
        Shape::DataLoc
    } else if word.contains('[') && decl.split_whitespace().any(|w| w == "char") {
        Shape::Text
    } else if word.contains('[') || size > 8 {
        Shape::Bytes
    } else {
        Shape::Int { signed }
    };
    Some(TextField { name, offset, size, shape })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRQ_ENTRY: &str = "name: irq_handler_entry\nID: 120\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\
        \tfield:char comm[4];\toffset:16;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\"\n";

    #[test]
    fn events_print_every_field_by_name_as_ftrace_does() {
        let (id, format) = parse_format(IRQ_ENTRY).unwrap();
        assert_eq!((id, format.name.as_str(), format.fields.len()), (120, "irq_handler_entry", 3));
        let mut rec = vec![0u8; 20];
        rec[0..2].copy_from_slice(&120u16.to_le_bytes());
        rec[4..8].copy_from_slice(&42i32.to_le_bytes());
        rec[8..12].copy_from_slice(&(-3i32).to_le_bytes());
        rec[12..16].copy_from_slice(&((5u32 << 16) | 20).to_le_bytes());
        rec[16..19].copy_from_slice(b"abc");
        rec.extend(b"eth0\0");
        let formats = TextFormats { by_id: HashMap::from([(id, format)]) };
        assert_eq!(
            formats.line(1, 12_000_000_345, &rec),
            "        42 [001] 12.000000345: irq_handler_entry: irq=-3 name=eth0 comm=abc"
        );
        assert!(formats.line(0, 5, &[9, 0, 0, 0]).ends_with("event 9: 4 bytes"), "unknown ids still print");
    }

    #[test]
    fn kept_pages_are_bounded_per_cpu() {
        let mut keeper = RawKeeper::new(&[0, 1], 8192);
        for _ in 0..5 {
            keeper.keep(1, &[0u8; 4096]);
        }
        keeper.keep(7, &[0u8; 4096]); // not traced: ignored
        assert_eq!(keeper.cpus[1].pages.len(), 2);
        assert_eq!(keeper.cpus[0].pages.len(), 0);
    }
}
