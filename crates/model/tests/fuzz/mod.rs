//! The parser fuzzing harness shared by the `fuzz_parsers` test targets of model, host (profiles)
//! and report (the report loader), which include these files with `#[path]`.
//!
//! Each parser is driven in-process through its file entry point (so the bounded input reader is
//! fuzzed too) with two kinds of inputs, half of the cases each:
//! - structure-aware: a corpus file (the real scenarios, fixtures, profiles...) parsed into a tree
//!   and mutated there (values replaced by boundary numbers, NaN, odd units, huge or hostile
//!   strings; keys renamed, removed, added; elements duplicated, wrapped, nested deep), then written
//!   back: mostly well-formed documents that reach the validation rules;
//! - raw: the corpus file's bytes mutated (bit flips, tokens inserted, ranges deleted, duplicated or
//!   repeated, truncation, splices): what the lexers and the reader see.
//!
//! Every case must return without a panic, within [`CPU_LIMIT`] of thread CPU time and
//! [`memory_limit`] of peak heap (counted by this binary's global allocator), and a rejected input
//! must carry a location: its file, and a line/column or a field path.
//!
//! Cases are chosen by proptest from a "tape" of random words that the mutators read; a failure is
//! shrunk to a short tape, printed with the input, and its seed is saved in
//! `proptest-regressions/fuzz_parsers.txt` (replayed first on the next run). Budget:
//! `RTVIRT_FUZZ_CASES` cases per parser (default [`DEFAULT_CASES`]); `RTVIRT_FUZZ_SEED` = a number
//! or `random` (default: a fixed seed, so `make test` is repeatable).
//!
//! Written with proptest rather than cargo-fuzz: it runs on stable Rust inside `cargo test`, and
//! proptest's shrinking and persistence give the reproducible failures the suite needs.

#![allow(dead_code)]

pub mod bytes;
pub mod lines;
pub mod tape;
pub mod tree;
pub mod xml;

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestCaseError, TestError, TestRunner};
use rtvirt_model::InputError;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use tape::Tape;

/// Cases per parser when `RTVIRT_FUZZ_CASES` is not set (about 0.3 ms of CPU per case here,
/// with the rest of the suite on 2 cores: see docs/PERFORMANCE.md, "Fuzzing").
pub const DEFAULT_CASES: u32 = 20_000;

/// Largest input a case is made of (a mutation that makes more falls back to its corpus file).
pub const MAX_INPUT: usize = 4 << 20;

/// Most thread CPU time one case may take (debug build, opt-level 1).
pub const CPU_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Most heap one case may hold at once: 64 MiB plus 256 bytes per input byte (the toml crate
/// holds about 175 bytes per byte of deeply nested inline tables).
pub fn memory_limit(input_len: usize) -> usize {
    64 * 1024 * 1024 + 256 * input_len
}

/// Cases per parser: `RTVIRT_FUZZ_CASES`, else [`DEFAULT_CASES`].
pub fn cases() -> u32 {
    match std::env::var("RTVIRT_FUZZ_CASES") {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("RTVIRT_FUZZ_CASES={v}: expected a number of cases")),
        Err(_) => DEFAULT_CASES,
    }
}

/// The random seed: `RTVIRT_FUZZ_SEED` (a number, or `random`), else a fixed one.
fn rng_seed() -> RngSeed {
    match std::env::var("RTVIRT_FUZZ_SEED").as_deref() {
        Ok("random") => RngSeed::Random,
        Ok(v) => RngSeed::Fixed(v.trim().parse().unwrap_or_else(|_| panic!("RTVIRT_FUZZ_SEED={v}: expected a number"))),
        Err(_) => RngSeed::Fixed(0x7274_7669_7274),
    }
}

// ---- the counting allocator: peak heap of the current thread ----

struct CountingAllocator;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Run `f`, returning its value, the thread CPU time it took and the peak heap it added.
fn measured<T>(f: impl FnOnce() -> T) -> (T, std::time::Duration, usize) {
    let start_live = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start_live));
    let start = thread_cpu_time();
    let value = f();
    let cpu = thread_cpu_time().saturating_sub(start);
    let peak = (PEAK.with(Cell::get) - start_live).max(0) as usize;
    (value, cpu, peak)
}

fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

// ---- targets ----

/// How a corpus file is mutated in the structure-aware half.
#[derive(Clone, Copy, Debug)]
pub enum Structure {
    Toml,
    Json,
    Xml,
    Lines,
}

/// One parser under test.
pub struct Target<'a> {
    /// Name in messages (also the case file's stem).
    pub name: &'static str,
    /// The case file the parser reads (rewritten for every case).
    pub file: PathBuf,
    /// Real documents the mutations start from.
    pub corpus: Vec<Vec<u8>>,
    pub structure: Structure,
    /// The parser, through its file entry point.
    pub parse: &'a dyn Fn(&Path) -> Result<(), InputError>,
}

/// What a run saw (printed, and checked by the callers).
#[derive(Debug, Default)]
pub struct Outcome {
    pub cases: u32,
    pub accepted: u32,
    pub slowest: std::time::Duration,
    pub largest_peak: usize,
}

/// Read corpus files.
pub fn corpus(paths: &[PathBuf]) -> Vec<Vec<u8>> {
    paths.iter().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("corpus {}: {e}", p.display()))).collect()
}

/// Every file of `dir` whose name ends with `suffix`, sorted.
pub fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// The workspace root (tests run in their package's folder).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Fuzz `target` with structure-aware mutations (`structured`) or raw byte mutations, `cases`
/// cases; panics with the shrunk failing input.
pub fn fuzz(target: &Target, structured: bool, cases: u32) -> Outcome {
    assert!(!target.corpus.is_empty(), "{}: empty corpus", target.name);
    let config = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/fuzz_parsers.txt"))),
        rng_seed: rng_seed(),
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let outcome = std::cell::RefCell::new(Outcome::default());
    let strategy = (0..target.corpus.len(), proptest::collection::vec(proptest::prelude::any::<u32>(), 1..=24));
    let result = runner.run(&strategy, |(index, words)| {
        let input = mutate(target, index, &words, structured);
        let mut o = outcome.borrow_mut();
        o.cases += 1;
        let accepted = check(target, &input);
        if std::env::var_os("RTVIRT_FUZZ_VERBOSE").is_some() {
            eprintln!("case {} (#{index}, {} bytes): {:?}", o.cases, input.len(), accepted);
        }
        let accepted = accepted.map_err(|m| {
            TestCaseError::fail(format!(
                "{}: {m}\ncorpus file #{index}, tape {words:?}\ninput ({} bytes):\n{}",
                target.name,
                input.len(),
                preview(&input)
            ))
        })?;
        o.accepted += accepted.0 as u32;
        o.slowest = o.slowest.max(accepted.1);
        o.largest_peak = o.largest_peak.max(accepted.2);
        Ok(())
    });
    if let Err(e) = result {
        match e {
            TestError::Fail(reason, value) => panic!("{reason}\nminimal case: {value:?}"),
            TestError::Abort(reason) => panic!("{}: aborted: {reason}", target.name),
        }
    }
    let o = outcome.into_inner();
    eprintln!(
        "fuzz {} ({}): {} cases, {} accepted, slowest {:?}, largest peak heap {} KiB",
        target.name,
        if structured { "structure-aware" } else { "raw" },
        o.cases,
        o.accepted,
        o.slowest,
        o.largest_peak / 1024
    );
    o
}

/// The input of one case.
pub fn mutate(target: &Target, index: usize, words: &[u32], structured: bool) -> Vec<u8> {
    let mut tape = Tape::new(words);
    let original = &target.corpus[index];
    if !structured {
        let other = &target.corpus[tape.below(target.corpus.len())];
        return bytes::mutate(original, other, &mut tape);
    }
    let text = String::from_utf8_lossy(original);
    let mutated = match target.structure {
        Structure::Toml => tree::mutate_toml(&text, &mut tape),
        Structure::Json => tree::mutate_json(&text, &mut tape),
        Structure::Xml => xml::mutate(&text, &mut tape),
        Structure::Lines => lines::mutate(&text, &mut tape),
    };
    if mutated.len() > MAX_INPUT {
        return original.clone();
    }
    mutated.into_bytes()
}

/// Write `input` to the target's file and parse it: (accepted, CPU time, peak heap), or what
/// went wrong (a panic is caught by proptest and reported as the failure).
pub fn check(target: &Target, input: &[u8]) -> Result<(bool, std::time::Duration, usize), String> {
    std::fs::write(&target.file, input).map_err(|e| format!("cannot write the case file: {e}"))?;
    let (result, cpu, peak) = measured(|| (target.parse)(&target.file));
    if cpu > CPU_LIMIT {
        return Err(format!("took {cpu:?} of CPU (limit {CPU_LIMIT:?})"));
    }
    if peak > memory_limit(input.len()) {
        return Err(format!("held {} MiB of heap (limit {} MiB)", peak >> 20, memory_limit(input.len()) >> 20));
    }
    match result {
        Ok(()) => Ok((true, cpu, peak)),
        Err(e) => located(&e).map(|()| (false, cpu, peak)).map_err(|m| format!("{m}: {e:?}\n  shown as: {e}")),
    }
}

/// An error must name a file, and a line/column or a field, and say something.
pub fn located(e: &InputError) -> Result<(), String> {
    if e.at.file.is_none() {
        return Err("error without a file".into());
    }
    // a file above its kind's size limit is refused as a whole: the file is the place
    let whole_file = e.message.contains("is larger than the");
    if !whole_file && e.at.line_col.is_none() && e.at.field.as_deref().is_none_or(|f| f.trim().is_empty()) {
        return Err("error without a line/column or field".into());
    }
    if e.message.trim().is_empty() {
        return Err("error without a message".into());
    }
    Ok(())
}

/// The input, lossily decoded, at most 3000 characters.
fn preview(input: &[u8]) -> String {
    let text = String::from_utf8_lossy(input);
    let mut s: String = text.chars().take(3000).collect();
    if text.chars().count() > 3000 {
        s.push_str("\n[...]");
    }
    s
}

/// A fresh folder for the case files: in memory (`/dev/shm`) where there is one, since a file
/// rewritten 20,000 times on ext4 is flushed to disk each time (auto_da_alloc), which makes the
/// run wait on the disk rather than parse.
pub fn case_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let in_memory =
        if shm.is_dir() { tempfile::Builder::new().prefix("rtvirt-fuzz").tempdir_in(shm).ok() } else { None };
    in_memory.unwrap_or_else(|| tempfile::tempdir().unwrap())
}

/// Copy the corpus tree `scenarios/` (TOML, data, profiles) into `dir`, so that relative paths
/// (samples files, a sweep's scenarios) resolve beside the case files.
pub fn copy_scenarios(dir: &Path) {
    let src = workspace().join("scenarios");
    for sub in ["", "data", "profiles"] {
        let to = dir.join("scenarios").join(sub);
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(src.join(sub)).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
            }
        }
    }
}
