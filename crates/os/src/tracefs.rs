//! Kernel tracing through tracefs, in a tracing instance of rtvirt's own
//! (`<tracefs>/instances/rtvirt-<pid>`), so that another tool's tracing is never disturbed.
//!
//! - [`Instance::create`] mounts tracefs if it is not mounted, creates the instance as a journaled
//!   [`Change::TraceInstance`] (the record is fsynced under `<state dir>/tracing/` before the
//!   instance exists), sizes its per-CPU buffers, sets the `mono` clock (= `CLOCK_MONOTONIC`) and
//!   enables the events the kernel has, recording which were absent. Dropping it removes the
//!   instance (and unmounts what it mounted); after a kill -9, [`remove_stale`] (called by the
//!   next [`Instance::create`] and by `rtvirt host revert`) does.
//! - [`CpuReader`] streams one CPU's binary ring buffer (`per_cpu/cpuN/trace_pipe_raw`) page by
//!   page, non-blocking; [`Page::events`] decodes the ring buffer's event headers and
//!   [`EventFormat`] (from the event's `format` file) locates fields by name.
//! - [`Instance::lost_events`]: what the per-CPU `stats` files count as overrun or dropped.
//!
//! Why by hand: the binary page and event-header layout is small and stable (`header_page`,
//! `header_event`), and the one C library that decodes it (libtraceevent) has no headers installed
//! here and would have to travel into every guest image with the rtvirt binary; no maintained Rust
//! crate reads tracefs' raw buffers. `trace_pipe_raw` rather than `trace_pipe`: measured side by
//! side, the text pipe costs the reader kernel time to format every event (docs/PERFORMANCE.md).

use crate::error::{OsError, Result};
use crate::procfs;
use crate::restore::Change;
use crate::trace_mount::unsupported;
pub use crate::trace_mount::{mounted_at, MOUNT_POINT};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The directory under the state directory that holds one record per live instance.
pub const JOURNAL_DIR: &str = "tracing";
/// The prefix of rtvirt's instance names (`rtvirt-<pid>`).
pub const INSTANCE_PREFIX: &str = "rtvirt-";

/// A tracing instance of this process, removed on drop.
pub struct Instance {
    path: PathBuf,
    change: Change,
    record: PathBuf,
    /// Events enabled (`system/name`).
    pub present: Vec<String>,
    /// Events asked for that this kernel does not have.
    pub absent: Vec<String>,
    header: PageHeader,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").field("path", &self.path).field("present", &self.present).finish()
    }
}

impl Instance {
    /// Create `rtvirt-<pid>` with `buffer_kb` per CPU and enable `events` (`system/name`) that
    /// exist. Stale instances of killed rtvirt processes are removed first.
    pub fn create(state_dir: &Path, events: &[&str], buffer_kb: u32) -> Result<Instance> {
        Instance::create_part(state_dir, None, events, buffer_kb)
    }

    /// [`Instance::create`] for a second instance of this process, `rtvirt-<pid>-<part>` (one
    /// that records on other CPUs than the first, say), journaled on its own.
    pub fn create_part(state_dir: &Path, part: Option<&str>, events: &[&str], buffer_kb: u32) -> Result<Instance> {
        for w in remove_stale(state_dir) {
            eprintln!("rtvirt: {w}");
        }
        let (root, mounted) = match mounted_at() {
            Some(root) => (root, None),
            None => (PathBuf::from(MOUNT_POINT), Some(PathBuf::from(MOUNT_POINT))),
        };
        let suffix = part.map_or(String::new(), |p| format!("-{p}"));
        let path = root.join("instances").join(format!("{INSTANCE_PREFIX}{}{suffix}", std::process::id()));
        let change = Change::TraceInstance { path: path.clone(), mounted };
        let record = journal(state_dir, &change, &suffix)?;
        let header = match change.perform().and_then(|_| read_header(&root)) {
            Ok(h) => h,
            Err(e) => {
                let _ = change.undo();
                let _ = std::fs::remove_file(&record);
                return Err(e);
            }
        };
        let mut instance = Instance { path, change, record, present: Vec::new(), absent: Vec::new(), header };
        instance.configure(events, buffer_kb)?;
        Ok(instance)
    }

    fn configure(&mut self, events: &[&str], buffer_kb: u32) -> Result<()> {
        self.write("tracing_on", "0")?;
        self.write("buffer_size_kb", &buffer_kb.to_string())?;
        self.write("trace_clock", "mono")?;
        for &event in events {
            self.enable(event)?;
        }
        Ok(())
    }

    /// Enable one more event (`system/name`) if this kernel has it, before recording starts (an
    /// event that only some kernels need); listed in `present` or `absent` like the others.
    pub fn enable(&mut self, event: &str) -> Result<bool> {
        let enable = self.path.join("events").join(event).join("enable");
        if !enable.exists() {
            self.absent.push(event.to_string());
            return Ok(false);
        }
        crate::restore::write_file(&enable, "1", crate::error::Op::WriteFile)?;
        self.present.push(event.to_string());
        Ok(true)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Restrict an enabled event with a filter expression (e.g. `common_pid == 42`).
    pub fn filter(&self, event: &str, expression: &str) -> Result<()> {
        self.write(&format!("events/{event}/filter"), expression)
    }

    /// Record only on `cpus` (the instance's `tracing_cpumask`, hex in 32-bit groups).
    pub fn limit_to_cpus(&self, cpus: &[u32]) -> Result<()> {
        self.write("tracing_cpumask", &cpumask(cpus))
    }

    /// The tracers this kernel offers (`available_tracers`).
    pub fn available_tracers(&self) -> Vec<String> {
        let root = self.path.parent().and_then(Path::parent).unwrap_or(&self.path);
        let text = read_file(&root.join("available_tracers")).unwrap_or_default();
        text.split_whitespace().map(str::to_string).collect()
    }

    /// Start or stop recording.
    pub fn set_on(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// The layout of an enabled event.
    pub fn format(&self, event: &str) -> Result<EventFormat> {
        let path = self.path.join("events").join(event).join("format");
        EventFormat::parse(&read_file(&path)?).ok_or_else(|| unsupported(&path, "no ID or fields"))
    }

    /// The text of an enabled event's `format` file (field types, for writing events as text).
    pub fn format_text(&self, event: &str) -> Result<String> {
        read_file(&self.path.join("events").join(event).join("format"))
    }

    /// A non-blocking reader of one CPU's ring buffer.
    pub fn reader(&self, cpu: u32) -> Result<CpuReader> {
        let path = self.path.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| OsError::io(&path, e))?;
        let size = procfs::read_opt(self.path.join("buffer_subbuf_size_kb"))
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(page_size);
        Ok(CpuReader { cpu, file, page: vec![0; size], len: 0, header: self.header })
    }

    /// Events the ring buffer of `cpu` lost so far (overwritten before they were read, or dropped).
    pub fn lost_events(&self, cpu: u32) -> u64 {
        let stats = procfs::read_opt(self.path.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap_or_default();
        stats
            .lines()
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| matches!(k.trim(), "overrun" | "dropped events" | "commit overrun"))
            .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
            .sum()
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        crate::restore::write_file(&self.path.join(file), value, crate::error::Op::WriteFile)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        match self.change.undo() {
            Ok(_) => {
                let _ = std::fs::remove_file(&self.record);
            }
            Err(e) => eprintln!("rtvirt: warning: could not remove tracing instance {}: {e}", self.path.display()),
        }
    }
}

/// A CPU set as the kernel's hex mask: 32-bit groups, most significant first, comma-separated.
fn cpumask(cpus: &[u32]) -> String {
    let groups = cpus.iter().map(|&c| c / 32 + 1).max().unwrap_or(1) as usize;
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[(c / 32) as usize] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

/// Write the instance's record (fsynced, with its directory) before the instance exists.
fn journal(state_dir: &Path, change: &Change, suffix: &str) -> Result<PathBuf> {
    let dir = state_dir.join(JOURNAL_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| OsError::io(&dir, e))?;
    let me = procfs::stat(std::process::id())?;
    let path = dir.join(format!("{}-{}{suffix}.json", std::process::id(), me.starttime));
    let mut f = File::create(&path).map_err(|e| OsError::io(&path, e))?;
    let line = serde_json::to_string(change).expect("changes serialize");
    f.write_all(line.as_bytes()).and_then(|_| f.sync_all()).map_err(|e| OsError::io(&path, e))?;
    File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| OsError::io(&dir, e))?;
    Ok(path)
}

/// Remove the tracing instances of rtvirt processes that no longer run (killed before they could
/// clean up), as recorded under `<state_dir>/tracing/`. Returns one line per instance removed or
/// not removable.
pub fn remove_stale(state_dir: &Path) -> Vec<String> {
    let dir = state_dir.join(JOURNAL_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut said = Vec::new();
    let roots = crate::restore::change_roots();
    // A process's second instances before its first: the first may have mounted tracefs.
    let mut records: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    records.sort_by_key(|p| p.file_name().is_some_and(|n| n.to_string_lossy().matches('-').count() < 2));
    for path in records {
        let Some((pid, starttime)) = record_owner(&path) else { continue };
        if procfs::stat(pid).is_ok_and(|s| s.starttime == starttime) {
            continue; // its process still runs and removes it itself
        }
        // A torn record: the process died before the instance was created.
        let Ok(change) = serde_json::from_str::<Change>(&std::fs::read_to_string(&path).unwrap_or_default()) else {
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if let Err(why) = change.check_paths(&roots) {
            said.push(format!("warning: refusing the tracing record {}: {why}", path.display()));
            continue;
        }
        match change.undo() {
            Ok(_) => {
                let _ = std::fs::remove_file(&path);
                said.push(format!("removed the tracing instance of process {pid}, which ended without removing it"));
            }
            Err(e) => said.push(format!("warning: could not remove the tracing instance of ended process {pid}: {e}")),
        }
    }
    said
}

/// `<pid>-<starttime>[-<part>].json` -> (pid, starttime).
fn record_owner(path: &Path) -> Option<(u32, u64)> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".json")?;
    let mut fields = stem.splitn(3, '-');
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// Read a tracefs text file with large reads: some (`header_page`) end after a short first read,
/// which is how `std::fs::read_to_string` starts on a file whose size shows as 0.
fn read_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|e| OsError::io(path, e))?;
    let (mut text, mut chunk) = (Vec::new(), vec![0u8; 64 * 1024]);
    loop {
        match file.read(&mut chunk).map_err(|e| OsError::io(path, e))? {
            0 => return Ok(String::from_utf8_lossy(&text).into_owned()),
            n => text.extend_from_slice(&chunk[..n]),
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Where a ring-buffer page keeps its time stamp, commit (bytes used) and data (`header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
}

fn read_header(root: &Path) -> Result<PageHeader> {
    let path = root.join("events/header_page");
    parse_header_page(&read_file(&path)?).ok_or_else(|| unsupported(&path, "no commit or data field"))
}

fn parse_header_page(text: &str) -> Option<PageHeader> {
    let fields = parse_fields(text);
    let commit = fields.iter().find(|f| f.name == "commit")?;
    let data = fields.iter().find(|f| f.name == "data")?;
    Some(PageHeader { commit_offset: commit.offset, commit_size: commit.size, data_offset: data.offset })
}

/// One CPU's ring buffer, read a page at a time.
pub struct CpuReader {
    pub cpu: u32,
    file: File,
    page: Vec<u8>,
    len: usize,
    header: PageHeader,
}

impl CpuReader {
    /// The bytes of the page [`Self::next_page`] returned last.
    pub fn last_page(&self) -> &[u8] {
        &self.page[..self.len]
    }

    /// The page layout of this buffer.
    pub fn header(&self) -> PageHeader {
        self.header
    }

    /// Read the next page; None when the buffer is empty now.
    pub fn next_page(&mut self) -> Result<Option<Page<'_>>> {
        match self.file.read(&mut self.page) {
            Ok(0) => Ok(None),
            Ok(n) => {
                self.len = n;
                Ok(Some(Page::new(&self.page[..self.len], self.header)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(OsError::io(format!("trace_pipe_raw of CPU {}", self.cpu), e)),
        }
    }
}

/// One ring-buffer page.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    bytes: &'a [u8],
    header: PageHeader,
}

/// The commit word's flag: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// The commit word's flag: the number of lost events is stored after the data.
const MISSED_STORED: u64 = 1 << 30;
/// Event header type_len values (`header_event`).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;

/// One event of a page: its time stamp (trace clock, ns) and its record (starting with
/// `common_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent<'a> {
    pub ts: u64,
    pub data: &'a [u8],
}

impl<'a> Page<'a> {
    pub fn new(bytes: &'a [u8], header: PageHeader) -> Page<'a> {
        Page { bytes, header }
    }

    fn commit(&self) -> u64 {
        let h = self.header;
        read_uint(self.bytes, h.commit_offset, h.commit_size).unwrap_or(0)
    }

    /// Bytes of event data on the page.
    fn data_len(&self) -> usize {
        ((self.commit() & !(MISSED_EVENTS | MISSED_STORED)) as usize)
            .min(self.bytes.len().saturating_sub(self.header.data_offset))
    }

    /// Events lost just before this page: Some(n) when the kernel stored the count, Some(0) when
    /// it only flagged a loss, None when nothing was lost.
    pub fn missed(&self) -> Option<u64> {
        let commit = self.commit();
        if commit & MISSED_EVENTS == 0 {
            return None;
        }
        let end = self.header.data_offset + self.data_len();
        Some(if commit & MISSED_STORED != 0 { read_uint(self.bytes, end, 8).unwrap_or(0) } else { 0 })
    }

    /// The page's events in time order.
    pub fn events(&self) -> Events<'a> {
        let start = self.header.data_offset;
        let ts = read_uint(self.bytes, 0, 8).unwrap_or(0);
        Events { data: &self.bytes[start.min(self.bytes.len())..start + self.data_len()], offset: 0, ts }
    }
}

/// Iterator over a page's events (see the kernel's `ring_buffer_event`: a 32-bit header of
/// type_len:5 and time_delta:27, then the data or an extended length).
pub struct Events<'a> {
    data: &'a [u8],
    offset: usize,
    ts: u64,
}

impl<'a> Iterator for Events<'a> {
    type Item = RawEvent<'a>;

    fn next(&mut self) -> Option<RawEvent<'a>> {
        loop {
            let header = read_uint(self.data, self.offset, 4)? as u32;
            let (type_len, delta) = (header & 0x1f, (header >> 5) as u64);
            let array0 = || read_uint(self.data, self.offset + 4, 4);
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        return None; // the rest of the page is empty
                    }
                    self.offset += 4 + array0()? as usize;
                }
                TYPE_TIME_EXTEND => {
                    self.ts += (array0()? << 27) | delta;
                    self.offset += 8;
                }
                TYPE_TIME_STAMP => {
                    const MASK: u64 = (1 << 59) - 1;
                    self.ts = (((array0()? << 27) | delta) & MASK) | (self.ts & !MASK);
                    self.offset += 8;
                }
                0 => {
                    let len = array0()? as usize;
                    let start = self.offset + 8;
                    let data = self.data.get(start..start + len.checked_sub(4)?)?;
                    self.ts += delta;
                    self.offset += 4 + len;
                    return Some(RawEvent { ts: self.ts, data });
                }
                n => {
                    let start = self.offset + 4;
                    let data = self.data.get(start..start + 4 * n as usize)?;
                    self.ts += delta;
                    self.offset = start + 4 * n as usize;
                    return Some(RawEvent { ts: self.ts, data });
                }
            }
        }
    }
}

/// Little-endian unsigned integer of 1, 2, 4 or 8 bytes at `offset`.
pub fn read_uint(bytes: &[u8], offset: usize, size: usize) -> Option<u64> {
    let b = bytes.get(offset..offset.checked_add(size)?)?;
    Some(match size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes(b.try_into().ok()?) as u64,
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

/// An event's id (`common_type`) and fields, from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    pub fn parse(text: &str) -> Option<EventFormat> {
        let id = text.lines().find_map(|l| l.strip_prefix("ID:"))?.trim().parse().ok()?;
        Some(EventFormat { id, fields: parse_fields(text) })
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl Field {
    /// `common_pid` where every event has it (offset 4, 4 bytes), for when no format says.
    pub fn common_pid() -> Field {
        Field { name: "common_pid".into(), offset: 4, size: 4, signed: true }
    }

    /// The field's integer value (sign-extended when signed).
    pub fn int(&self, data: &[u8]) -> Option<i64> {
        let raw = read_uint(data, self.offset, self.size)?;
        Some(match (self.signed, self.size) {
            (true, 1) => raw as u8 as i8 as i64,
            (true, 2) => raw as u16 as i16 as i64,
            (true, 4) => raw as u32 as i32 as i64,
            _ => raw as i64,
        })
    }

    /// The field's text (a `char name[N]` array, up to its first NUL).
    pub fn text<'a>(&self, data: &'a [u8]) -> Option<&'a str> {
        let b = data.get(self.offset..self.offset + self.size)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        std::str::from_utf8(&b[..end]).ok()
    }
}

/// The `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` lines of a format file.
fn parse_fields(text: &str) -> Vec<Field> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.trim().split(';').map(str::trim);
            let decl = parts.next()?.strip_prefix("field:")?;
            let value = |key: &str| parts.clone().find_map(|p| p.strip_prefix(key)).and_then(|v| v.parse().ok());
            let (offset, size) = (value("offset:")?, value("size:")?);
            let signed = value("signed:").unwrap_or(0usize) == 1;
            let name = decl.split_whitespace().last()?;
            let name = name.split('[').next()?.to_string();
            Some(Field { name, offset, size, signed })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_of_an_instance_outside_tracefs_is_refused_and_kept() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join(JOURNAL_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let planted = Change::TraceInstance { path: "/etc/rtvirt-no-such-dir".into(), mounted: Some("/etc".into()) };
        let record = dir.join("0-1.json");
        std::fs::write(&record, serde_json::to_string(&planted).unwrap()).unwrap();
        let said = remove_stale(state.path());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with("warning: refusing the tracing record"), "{said:?}");
        assert!(said[0].contains("/etc/rtvirt-no-such-dir is not a file rtvirt changes"), "{said:?}");
        assert!(record.exists());
    }

    const SCHED_SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\nprint fmt: \"x\"\n";

    #[test]
    fn format_files_give_ids_and_field_layouts() {
        let f = EventFormat::parse(SCHED_SWITCH).unwrap();
        assert_eq!(f.id, 372);
        assert_eq!(f.field("prev_comm"), Some(&Field { name: "prev_comm".into(), offset: 8, size: 16, signed: false }));
        assert_eq!(f.field("prev_pid").unwrap().offset, 24);
        let mut rec = vec![0u8; 28];
        rec[8..13].copy_from_slice(b"hog-1");
        rec[24..28].copy_from_slice(&(-3i32).to_le_bytes());
        assert_eq!(f.field("prev_comm").unwrap().text(&rec), Some("hog-1"));
        assert_eq!(f.field("prev_pid").unwrap().int(&rec), Some(-3));
    }

    #[test]
    fn the_page_header_layout_is_read_from_header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
            \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
            \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
            \tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
        assert_eq!(parse_header_page(text), Some(PageHeader { commit_offset: 8, commit_size: 8, data_offset: 16 }));
    }

    /// A page built as the kernel lays it out: small events, a time extend, a long event, padding.
    #[test]
    fn pages_decode_deltas_extends_long_events_and_stop_at_padding() {
        let header = PageHeader { commit_offset: 8, commit_size: 8, data_offset: 16 };
        let mut data = Vec::new();
        let word = |type_len: u32, delta: u32| (type_len | (delta << 5)).to_le_bytes();
        data.extend(word(2, 10)); // 8 bytes of data, +10ns
        data.extend([1, 0, 0, 0, 7, 0, 0, 0]);
        data.extend(word(TYPE_TIME_EXTEND, 5)); // +(1<<27)+5
        data.extend(1u32.to_le_bytes());
        data.extend(word(0, 3)); // long form: array[0] = 4 + 12 bytes of data
        data.extend(16u32.to_le_bytes());
        data.extend([9u8; 12]);
        let used = data.len() as u64;
        data.extend(word(TYPE_PADDING, 0));
        let mut page = 1000u64.to_le_bytes().to_vec();
        page.extend((used | MISSED_EVENTS).to_le_bytes());
        page.extend(&data);
        page.resize(4096, 0);
        let p = Page::new(&page, header);
        let events: Vec<RawEvent> = p.events().collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0], RawEvent { ts: 1010, data: &[1, 0, 0, 0, 7, 0, 0, 0] });
        assert_eq!(events[1].ts, 1010 + (1 << 27) + 5 + 3);
        assert_eq!(events[1].data, &[9u8; 12]);
        assert_eq!(p.missed(), Some(0), "flagged without a stored count");
    }

    #[test]
    fn cpu_masks_are_hex_in_32_bit_groups() {
        assert_eq!(cpumask(&[1]), "00000002");
        assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
    }

    #[test]
    fn records_name_their_process() {
        assert_eq!(record_owner(Path::new("/x/tracing/123-456.json")), Some((123, 456)));
        assert_eq!(record_owner(Path::new("/x/tracing/123-456-ipi.json")), Some((123, 456)));
        assert_eq!(record_owner(Path::new("/x/tracing/junk")), None);
    }
}
