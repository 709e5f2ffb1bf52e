//! `rtvirt study FILE.toml`: a matrix of repeated measurements (Welch 2015: N runs of each
//! netperf test per configuration, shown as box plots; Abeni 2023: guest x host kernels under
//! load). Every cell (configuration x where x load x measurement, `rtvirt_model::study`) runs in
//! the stated order; a configuration's profile or plan is applied before its cell and reverted
//! after it (journaled in `OUT/journal`, by rtvirt-host as `rtvirt host apply/revert`). Each run
//! writes `OUT/runs/<cell id>/run-N.json` and the index `OUT/index.json` (`rtvirt.study/v1`) is
//! rewritten after every run, so Ctrl-C keeps the completed cells (the host reverted, exit 130)
//! and `--resume` continues where it stopped. `rtvirt report OUT/index.json` draws the study.
//!
//! The orchestration lives here (not in a library) because a cell's run is this binary's own
//! `measure` command line (`command`, `run`), the way the placement driver re-runs it.

mod command;
mod run;

use crate::cli_common::{CmdResult, Outcome};
use crate::cmd::host::{apply_input, InputArgs};
use clap::Args;
use rtvirt_host::apply::{ApplyError, ApplyOptions};
use rtvirt_host::journal;
use rtvirt_model::study::index::{StudyCell, StudyIndex, StudyRun, STUDY_SCHEMA};
use rtvirt_model::study::{Cell, MeasureKind, OptionValue, Place, Study};
use rtvirt_model::{InputError, Nanos};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The order of the cells, in words (written into the index).
const ORDER: &str = "configuration, where (guest kernel), load, measurement: outermost first, each in file order; \
                     the runs of a cell back to back";

#[derive(Args)]
#[command(after_help = "A study file declares the matrix; see docs/study.md and studies/*.toml.\n\nExamples:\n  \
rtvirt study studies/seeds3_tuning.toml --out seeds3\n  rtvirt study studies/seeds3_tuning.toml --out seeds3 \
--resume      # after Ctrl-C\n  rtvirt study studies/seeds3_tuning.toml --repeats 20 --duration 10s   # the \
published lengths\n  rtvirt report seeds3/index.json -o seeds3.html")]
pub struct StudyArgs {
    /// The study file (TOML).
    pub file: PathBuf,
    /// Directory for the index, the runs' results and the host journal (default: the study's
    /// name in the current directory).
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue the study in --out: completed runs are kept and skipped.
    #[arg(long)]
    pub resume: bool,
    /// Runs per cell (overrides the file's `repeats`; cells x runs at most 100,000).
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Length of each run (overrides the file's `duration`).
    #[arg(long, value_parser = Nanos::parse)]
    pub duration: Option<Nanos>,
    /// Check the study and print its cells and their commands, in order; run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Check the study, then run every cell not yet done. `parse` checks a `rtvirt` command line
/// (the binary's own parser).
pub fn run(args: StudyArgs, parse: &dyn Fn(&[String]) -> Result<(), String>) -> CmdResult {
    rtvirt_os::signals::install();
    let mut study = Study::from_file(&args.file)?;
    if let Some(r) = args.repeats {
        study.set_repeats(r, "--repeats")?;
    }
    if let Some(d) = args.duration {
        if d.0 == 0 || d > rtvirt_model::study::MAX_RUN {
            return Err(InputError::field("--duration", format!("{d}: expected more than 0 and at most 1h")).into());
        }
        study.duration = d;
    }
    let cells = study.cells();
    command::check(&study, &cells, parse)?;
    if args.dry_run {
        println!("{} cells x {} runs of {}; order: {ORDER}", cells.len(), study.repeats, study.duration);
        for cell in &cells {
            println!("{}: rtvirt {}", cell.id, command::arguments(&study, cell, study.duration).join(" "));
        }
        return Ok(Outcome::Ok);
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(&study.name));
    let journal_dir = out.join("journal");
    // The host journal lives in --out: it must be a directory no one else can write before
    // anything is written there (a symlink planted as index.json would take root's write).
    if let Some(dir) = [&journal_dir, &out].into_iter().find(|d| d.exists()) {
        journal::check_trusted(dir)?;
    }
    let mut index = open_index(&study, &cells, &args, &out)?;
    // A session killed before it could revert (SIGKILL, power): revert first - only a journal of
    // a state directory no one else can have written, and only paths rtvirt changes (a journal
    // planted in --out is refused, naming it and why).
    journal::revert(&journal_dir)?;
    let mut progress = Progress::new(&index, study.repeats, study.duration);
    eprintln!(
        "study {}: {} cells x {} runs of {} in {}; order: {ORDER}",
        study.name,
        cells.len(),
        study.repeats,
        study.duration,
        out.display()
    );
    let mut failures = 0;
    for (cell, entry) in cells.iter().zip(0..) {
        if rtvirt_os::signals::interrupted() {
            break;
        }
        if index.cells[entry].complete(study.repeats) {
            continue;
        }
        failures += run_cell(&study, cell, &mut index, entry, &out, &mut progress)?;
        index.write(&out.join("index.json")).map_err(|e| anyhow::anyhow!("cannot write the index: {e}"))?;
    }
    progress.finish();
    if rtvirt_os::signals::interrupted() {
        index.interrupted = true;
        index.write(&out.join("index.json")).map_err(|e| anyhow::anyhow!("cannot write the index: {e}"))?;
        eprintln!(
            "study interrupted: the host is reverted, completed runs are kept in {}; continue with --resume",
            out.display()
        );
        std::process::exit(130);
    }
    eprintln!("study done: {}; report: rtvirt report {}", out.display(), out.join("index.json").display());
    if failures > 0 {
        anyhow::bail!("{failures} run(s) failed (each cell's errors are in {})", out.join("index.json").display());
    }
    Ok(Outcome::Ok)
}

/// The index in `out`: a new one, or (`--resume`) the one there, which must be of the same cells.
fn open_index(study: &Study, cells: &[Cell], args: &StudyArgs, out: &Path) -> anyhow::Result<StudyIndex> {
    let path = out.join("index.json");
    let fresh = StudyIndex {
        schema: STUDY_SCHEMA.into(),
        name: study.name.clone(),
        description: study.description.clone(),
        study_file: args.file.display().to_string(),
        repeats: study.repeats,
        run_duration_ns: study.duration.0,
        order: ORDER.into(),
        cells: cells.iter().map(|c| index_cell(study, c)).collect(),
        interrupted: false,
    };
    if !args.resume {
        if path.exists() {
            return Err(InputError::field(
                "--out",
                format!("{} holds a study already: --resume to continue it, or another --out", out.display()),
            )
            .into());
        }
        // mode 0755 whatever the umask: the journal in it must be trusted (rtvirt_host::journal)
        journal::create_dir(out)?;
        fresh.write(&path).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        return Ok(fresh);
    }
    let mut index = StudyIndex::from_file(&path)?;
    let same = index.cells.len() == fresh.cells.len()
        && index.cells.iter().zip(&fresh.cells).all(|(a, b)| a.id == b.id && a.command == b.command);
    if !same || index.run_duration_ns != fresh.run_duration_ns {
        return Err(InputError::new(format!(
            "the study changed since {} was written (cells, options or duration): resume it with the same file and \
             options, or start another --out",
            path.display()
        ))
        .in_file(&args.file)
        .into());
    }
    index.repeats = study.repeats;
    index.interrupted = false;
    Ok(index)
}

fn index_cell(study: &Study, cell: &Cell) -> StudyCell {
    let m = &study.measurements[cell.measurement];
    let configuration = &study.configurations[cell.configuration];
    StudyCell {
        id: cell.id.clone(),
        configuration: configuration.name.clone(),
        host_input: configuration.input().map(|p| p.display().to_string()),
        place: cell.place.as_str().into(),
        guest_kernel: cell.guest_kernel.clone(),
        load: study.loads[cell.load].name.clone(),
        measurement: m.name.clone(),
        kind: m.kind.as_str().into(),
        command: command::arguments(study, cell, study.duration),
        host_changes: None,
        runs: Vec::new(),
    }
}

/// Apply the cell's configuration, run its missing runs, revert; the number of failed runs.
fn run_cell(
    study: &Study,
    cell: &Cell,
    index: &mut StudyIndex,
    entry: usize,
    out: &Path,
    progress: &mut Progress,
) -> anyhow::Result<u32> {
    let journal_dir = out.join("journal");
    let configuration = &study.configurations[cell.configuration];
    let mut failures = 0;
    let applied = match configuration.input() {
        None => Ok(0),
        Some(input) => apply(configuration, input, &journal_dir),
    };
    match applied {
        Err(e) => {
            journal::revert(&journal_dir)?;
            for repeat in missing(&index.cells[entry], study.repeats) {
                record(
                    index,
                    entry,
                    StudyRun { repeat, file: String::new(), ok: false, error: Some(e.clone()), wall_ns: 0 },
                );
                failures += 1;
                progress.skip();
            }
            eprintln!("study: cell {} not run: {e}", cell.id);
            return Ok(failures);
        }
        Ok(changes) => index.cells[entry].host_changes = Some(changes),
    }
    let result = run_missing(study, cell, index, entry, out, progress);
    let reverted = journal::revert(&journal_dir);
    let failed = result?;
    reverted?;
    failures += failed;
    Ok(failures)
}

/// Apply a profile or plan through rtvirt-host's journal; the number of changes, or why not.
fn apply(configuration: &rtvirt_model::study::Configuration, input: &Path, journal_dir: &Path) -> Result<u64, String> {
    let what =
        InputArgs { input: input.to_path_buf(), vms: configuration.vms.clone(), pids: configuration.pids.clone() };
    let opts = ApplyOptions { state_dir: journal_dir.to_path_buf(), force: configuration.force, dry_run: false };
    match apply_input(&what, &opts, &mut |_| {}) {
        Ok(report) => Ok(report.changes.len() as u64),
        Err(ApplyError::LintFailed(_)) => Err(format!(
            "the lint of {} failed: nothing applied (`rtvirt host lint {}` shows why; force = true applies anyway)",
            input.display(),
            input.display()
        )),
        Err(e) => Err(format!("cannot apply {}: {e}", input.display())),
    }
}

/// The repeats of a cell not yet done.
fn missing(cell: &StudyCell, repeats: u32) -> Vec<u32> {
    (0..repeats).filter(|&r| !cell.runs.iter().any(|run| run.repeat == r && run.ok)).collect()
}

/// Record `run` in the index (replacing an earlier attempt of the same repeat).
fn record(index: &mut StudyIndex, entry: usize, run: StudyRun) {
    let runs = &mut index.cells[entry].runs;
    runs.retain(|r| r.repeat != run.repeat);
    runs.push(run);
    runs.sort_by_key(|r| r.repeat);
}

fn run_missing(
    study: &Study,
    cell: &Cell,
    index: &mut StudyIndex,
    entry: usize,
    out: &Path,
    progress: &mut Progress,
) -> anyhow::Result<u32> {
    let m = &study.measurements[cell.measurement];
    let server = (cell.place == Place::Host && matches!(m.kind, MeasureKind::NetRr | MeasureKind::NetStream))
        .then(|| run::ServerNeed { tcp: m.options.get("tcp") == Some(&OptionValue::Flag(true)) });
    let dir = out.join("runs").join(&cell.id);
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let args = index.cells[entry].command.clone();
    let mut failures = 0;
    for repeat in missing(&index.cells[entry], study.repeats) {
        progress.starting(&cell.id, repeat, study.repeats);
        let started = Instant::now();
        let file = format!("runs/{}/run-{}.json", cell.id, repeat + 1);
        let mut run = StudyRun { repeat, file: file.clone(), ok: false, error: None, wall_ns: 0 };
        match run::run(&args, server, study.duration) {
            run::Ended::Interrupted => return Ok(failures),
            run::Ended::Failed(e) => {
                eprintln!("study: {} run {}: {e}", cell.id, repeat + 1);
                run.error = Some(e);
                failures += 1;
            }
            run::Ended::Done(mut results) => {
                results.label = Some(cell.id.clone());
                let text = serde_json::to_string_pretty(&results)? + "\n";
                std::fs::write(out.join(&file), text).map_err(|e| anyhow::anyhow!("cannot write {file}: {e}"))?;
                run.ok = true;
            }
        }
        run.wall_ns = started.elapsed().as_nanos() as u64;
        progress.done(run.wall_ns);
        record(index, entry, run);
        index.write(&out.join("index.json")).map_err(|e| anyhow::anyhow!("cannot write the index: {e}"))?;
    }
    Ok(failures)
}

/// Progress on stderr: a bar on terminals, a line per run otherwise, with the time left
/// estimated from the mean wall time of the runs so far (before the first: the run length plus
/// one second of start-up).
struct Progress {
    bar: indicatif::ProgressBar,
    left: u64,
    total: u64,
    done: u64,
    wall_ns: u64,
    guess_ns: u64,
}

impl Progress {
    fn new(index: &StudyIndex, repeats: u32, duration: Nanos) -> Progress {
        let total = index.cells.len() as u64 * u64::from(repeats);
        let left = index.cells.iter().map(|c| missing(c, repeats).len() as u64).sum();
        let bar = crate::progress::bar("{bar:30} {pos}/{len} runs {msg}");
        bar.set_length(total);
        bar.set_position(total - left);
        Progress { bar, left, total, done: 0, wall_ns: 0, guess_ns: duration.0 + 1_000_000_000 }
    }

    fn time_left(&self) -> String {
        let per_run = self.wall_ns.checked_div(self.done).unwrap_or(self.guess_ns);
        Nanos(per_run.saturating_mul(self.left) / 1_000_000_000 * 1_000_000_000).to_string()
    }

    fn starting(&self, cell: &str, repeat: u32, repeats: u32) {
        let what = format!("{cell} run {}/{repeats}, about {} left", repeat + 1, self.time_left());
        if self.bar.is_hidden() {
            eprintln!("study: [{}/{}] {what}", self.total - self.left + 1, self.total);
        }
        self.bar.set_message(what);
    }

    fn done(&mut self, wall_ns: u64) {
        self.done += 1;
        self.wall_ns += wall_ns;
        self.skip();
    }

    fn skip(&mut self) {
        self.left = self.left.saturating_sub(1);
        self.bar.inc(1);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
