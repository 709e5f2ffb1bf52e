//! `rtvirt host audit | threads | lint | apply | revert`: wiring to rtvirt-host. The exact per-core
//! admission test of a plan comes from rtvirt-analysis (EDF processor demand on a dedicated core).

use super::exact_edf::ExactEdf;
use crate::cli_common::{print_json, CmdResult, Format, Outcome};
use clap::{Args, Subcommand};
use rtvirt_host::apply::profile::Profile;
use rtvirt_host::apply::{ApplyError, ApplyOptions, ApplyReport, Binding};
use rtvirt_host::threads::{self, Target};
use rtvirt_host::{audit, journal, render, HostError};
use rtvirt_model::plan::Plan;
use rtvirt_os::Change;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct HostArgs {
    #[command(subcommand)]
    pub action: HostAction,
}

#[derive(Subcommand)]
pub enum HostAction {
    /// Check this host's readiness for RT guests: preemption model, isolation, RT throttling and
    /// the fair server, cpufreq/cpuidle, THP/KSM, IRQs, threaded NAPI, kernel threads, KVM...
    /// Each check shows the raw value read, pass/warn/fail/skip, why, the fix, and what tuned's
    /// realtime-virtual-host profile would set. Exit code 1 if any check fails.
    Audit(AuditArgs),
    /// List the threads of the RT data path with policy, priority, deadline parameters, affinity
    /// and CPU: QEMU vCPU threads (QMP query-cpus-fast, or thread names "CPU n/KVM"), iothreads,
    /// vhost workers, IRQ and NAPI threads, ksoftirqd/ktimers/rcuc, container processes.
    Threads(ThreadsArgs),
    /// Apply a plan (rtvirt.plan/v1 JSON from `rtvirt plan --format json`: SCHED_DEADLINE per
    /// guest vCPU in a cpuset partition of its core) or a profile (rtvirt.profile/v1 TOML: roles ->
    /// policy/priority/affinity, IRQ affinity, threaded NAPI, container cpusets). A lint runs
    /// first; every original value is journaled (fsynced) before it is changed.
    Apply(ApplyArgs),
    /// Run only the lint of `apply` on a plan or profile: per CPU, every runnable entity with its
    /// policy and priority after the change, and the findings (a FIFO vCPU starving per-CPU
    /// kernel threads, DL admission disabled, the fair server preempting a FIFO vCPU, reclaim on
    /// hard reservations, IRQs on isolated CPUs...). Changes nothing; exit code 1 if the lint fails.
    Lint(LintArgs),
    /// Undo everything recorded in the journal (also completes an apply that was killed halfway).
    Revert(RevertArgs),
    /// Measure this host's costs into a host model (rtvirt.hostmodel/v1) for planning on this host
    /// (cached, see --no-cache) or `rtvirt plan --host-model`: timer wake-up latency per CPU,
    /// context switch, SCHED_DEADLINE period cost and enforcement overrun, cache reload; and its
    /// admission limits (sched_rt_runtime_us/period_us, period limits, fair servers, isolated CPUs).
    /// Under a minute by default (`--quick`: about 10 s), progress on stderr; needs root;
    /// restores everything it changes, also on Ctrl-C; after a kill -9 the next calibration or
    /// `rtvirt host revert` does (the cpuset changes are journaled before they are made).
    Calibrate(CalibrateArgs),
    /// Learn each guest's real-time demand without changing the guest kernel: per vCPU thread its
    /// CPU time per window and busy intervals between halts (host inference, /proc schedstat), and
    /// per guest task its period, deadline and execution-time distribution from the guest agent
    /// (`rtvirt guest-agent`, virtio-serial) when it runs; each with its source and sample count.
    Observe(crate::cmd::observe::ObserveArgs),
    /// Keep each guest's SCHED_DEADLINE reservation right while it runs: apply the plan, observe
    /// each guest (as `observe`), re-size its reservation online with the planner's own analysis
    /// (the controller `rtvirt simulate --adapt` runs; docs/adapt.md), journal each change before
    /// sched_setattr makes it, and write a decision log (rtvirt.adapt-log JSON lines). Every
    /// setting of the run is restored at its end, on Ctrl-C and on a failure; after a kill -9, by
    /// the next run or `rtvirt host revert`.
    Adapt(crate::cmd::adapt::AdaptArgs),
}

#[derive(Args)]
pub struct CalibrateArgs {
    /// Write the host model here (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub output: Option<PathBuf>,
    /// CPUs for the release-latency measurement (the first one hosts the other experiments)
    /// [default: every CPU this process may use].
    #[arg(long)]
    pub cpus: Option<String>,
    /// Length of each timed experiment (timer, SCHED_DEADLINE), e.g. "5s", "500ms".
    #[arg(long, default_value = "5s")]
    pub step: String,
    /// Short steps (1 s: under about 10 s in all, for `rtvirt demo`). Gives up samples: about
    /// 1,000 timer wake-ups per CPU instead of 5,000 and a fifth of the SCHED_DEADLINE periods, so
    /// rare long latencies are less likely to be seen and the max and p99 are less sure.
    #[arg(long, conflicts_with = "step")]
    pub quick: bool,
    /// Do not cache the model for planning on this host (by default it is written to
    /// <state dir>/calibration/<kernel>_<boot id>_<CPU model>.json, where `rtvirt plan` and the
    /// other planning commands find it until the next boot or kernel).
    #[arg(long)]
    pub no_cache: bool,
    /// Working set of the guests' tasks, whose reload after a preemption is the model's
    /// cache_reload_ns (charged per server period and per preempted job), e.g. "4KiB", "1MiB";
    /// 64 B to 64 MiB.
    #[arg(long, default_value = "256KiB")]
    pub working_set: String,
    /// Where the cpuset changes are journaled before they are made, for `rtvirt host revert`
    /// after a kill -9 [default: $RTVIRT_STATE_DIR, else /var/lib/rtvirt].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Output format: the host model is a JSON document (rtvirt.hostmodel/v1).
    #[arg(long, value_enum, default_value_t = crate::cli_common::JsonOnly::Json)]
    pub format: crate::cli_common::JsonOnly,
}

#[derive(Args)]
pub struct AuditArgs {
    /// Also show what a plan needs to fit (its `needs`) and this host's checks on each: a plan
    /// (rtvirt.plan/v1 JSON) or a scenario (TOML), planned here as `rtvirt plan` does (this host,
    /// or $RTVIRT_HOST).
    #[arg(long, value_name = "PLAN.json|SCENARIO.toml")]
    pub plan: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args)]
pub struct ThreadsArgs {
    /// The QEMU process started with `-name NAME` (found in /proc; its QMP socket is used if its
    /// command line has one).
    #[arg(long, conflicts_with_all = ["qmp", "pid"])]
    pub vm: Option<String>,
    /// The QEMU behind this QMP unix socket.
    #[arg(long, conflicts_with = "pid")]
    pub qmp: Option<PathBuf>,
    /// All threads of this process (or this one thread).
    #[arg(long)]
    pub pid: Option<u32>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args)]
#[command(
    after_help = "Input errors (stale PID, VM not running, missing QMP socket, plan not fitting the cores, unknown \
role...) exit 2 with nothing changed; a failing lint exits 1 with nothing changed.\n\
Test hook: RTVIRT_TEST_CRASH_AFTER=N aborts the process right after the N-th change is journaled \
(before it is made), as a kill would; `rtvirt host revert` then restores everything."
)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub what: InputArgs,
    /// Apply even if the lint fails.
    #[arg(long)]
    pub force: bool,
    /// Resolve, validate and lint; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Journal directory [default: $RTVIRT_STATE_DIR, else /var/lib/rtvirt].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// What to apply (or lint) and to which guests.
#[derive(Args)]
pub struct InputArgs {
    /// PLAN.json (rtvirt.plan/v1) or PROFILE.toml (rtvirt.profile/v1).
    pub input: PathBuf,
    /// A guest's QEMU: GUEST=QMP_SOCKET[,vcpu=N], or GUEST[,vcpu=N] for the QEMU started with
    /// `-name GUEST` (vcpu selects which vCPU carries a plan's reservation when the VM has
    /// several). Repeatable.
    #[arg(long = "vm", value_name = "GUEST=QMP_SOCKET[,vcpu=N]")]
    pub vms: Vec<String>,
    /// A thread standing for a guest's vCPU: GUEST=TID[,vcpu=N]. Repeatable.
    #[arg(long = "pid", value_name = "GUEST=TID[,vcpu=N]")]
    pub pids: Vec<String>,
}

#[derive(Args)]
#[command(
    after_help = "Input errors (stale PID, VM not running, missing QMP socket, plan not fitting the cores, unknown \
role...) exit 2; a failing lint exits 1. Nothing is ever changed."
)]
pub struct LintArgs {
    #[command(flatten)]
    pub what: InputArgs,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args)]
pub struct RevertArgs {
    /// Journal directory [default: $RTVIRT_STATE_DIR, else /var/lib/rtvirt].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: HostArgs) -> CmdResult {
    match args.action {
        HostAction::Audit(args) => run_audit(args),
        HostAction::Threads(args) => run_threads(args),
        HostAction::Apply(args) => run_apply(args),
        HostAction::Lint(args) => run_lint(args),
        HostAction::Revert(args) => run_revert(args),
        HostAction::Calibrate(args) => run_calibrate(args),
        HostAction::Observe(args) => crate::cmd::observe::run(args),
        HostAction::Adapt(args) => crate::cmd::adapt::run(args),
    }
}

fn emit<T: serde::Serialize>(format: Format, value: &T, table: impl FnOnce(&T) -> String) -> anyhow::Result<()> {
    match format {
        Format::Json => print_json(value),
        Format::Table => {
            print!("{}", table(value));
            Ok(())
        }
    }
}

fn run_audit(args: AuditArgs) -> CmdResult {
    let needs = match &args.plan {
        None => vec![],
        Some(path) if is_plan(path) => Plan::from_file(path)?.needs,
        Some(path) => {
            let scenario = rtvirt_model::scenario::Scenario::from_file(path)?;
            let options = rtvirt_analysis::planner::PlanOptions::default();
            crate::plan_host::plan(&scenario, &crate::plan_host::HostArgs::default(), options, None)?.0.plan.needs
        }
    };
    let report = audit::run_for(&needs);
    emit(args.format, &report, render::audit)?;
    Ok(if report.summary.fail > 0 { Outcome::Failed } else { Outcome::Ok })
}

fn run_threads(args: ThreadsArgs) -> CmdResult {
    let target = match (args.vm, args.qmp, args.pid) {
        (Some(name), _, _) => Target::Vm(name),
        (_, Some(sock), _) => Target::Qmp(sock),
        (_, _, Some(pid)) => Target::Pid(pid),
        _ => Target::System,
    };
    let list = threads::ThreadList { schema: threads::THREADS_SCHEMA, threads: threads::discover(&target)? };
    emit(args.format, &list, |l| render::threads(&l.threads))?;
    Ok(Outcome::Ok)
}

/// Whether `path` is a plan (JSON) rather than a profile (TOML): by its extension, else by its
/// first non-blank byte. Only a regular file is looked into, and only up to that byte (bounded by
/// the plan size limit): a FIFO or a device is left to the profile reader, which refuses it with
/// its name, instead of blocking or growing without bound here.
fn is_plan(path: &Path) -> bool {
    use std::io::Read;
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => true,
        Some("toml") => false,
        _ if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) => false,
        _ => std::fs::File::open(path).is_ok_and(|f| {
            let limit = rtvirt_model::input::InputKind::Plan.limit();
            let mut bytes = std::io::BufReader::new(f).take(limit).bytes();
            bytes.find(|b| !b.as_ref().is_ok_and(u8::is_ascii_whitespace)).is_some_and(|b| b.is_ok_and(|b| b == b'{'))
        }),
    }
}

/// Resolve the input against this host and run the apply (or only its lint, with `dry_run`).
pub(crate) fn apply_input(
    what: &InputArgs,
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(&Change),
) -> Result<ApplyReport, ApplyError> {
    let mut bindings = Vec::new();
    for v in &what.vms {
        bindings.push(Binding::parse_vm(v).map_err(HostError::from)?);
    }
    for p in &what.pids {
        bindings.push(Binding::parse_pid(p).map_err(HostError::from)?);
    }
    if is_plan(&what.input) {
        let plan = Plan::from_file(&what.input).map_err(HostError::from)?;
        rtvirt_host::apply::plan::apply_plan(&plan, &bindings, &[&ExactEdf], opts, progress)
    } else {
        let profile = Profile::from_file(&what.input).map_err(HostError::from)?;
        rtvirt_host::apply::profile::apply_profile(&profile, &bindings, &[&ExactEdf], opts, progress)
    }
}

fn run_apply(args: ApplyArgs) -> CmdResult {
    let opts = ApplyOptions {
        state_dir: args.state_dir.unwrap_or_else(journal::default_state_dir),
        force: args.force,
        dry_run: args.dry_run,
    };
    let table = args.format == Format::Table;
    let mut progress = |c: &Change| {
        if table {
            eprintln!("  applied: {}", c.describe());
        }
    };
    match apply_input(&args.what, &opts, &mut progress) {
        Ok(report) => {
            emit(args.format, &report, render::apply)?;
            Ok(Outcome::Ok)
        }
        Err(ApplyError::LintFailed(lint)) => {
            emit(args.format, &*lint, render::lint)?;
            eprintln!("rtvirt: the lint failed; nothing was changed (use --force to apply anyway)");
            Ok(Outcome::Failed)
        }
        Err(e) => Err(e.into()),
    }
}

fn run_lint(args: LintArgs) -> CmdResult {
    // A forced dry run: the lint report comes back whatever its findings, nothing is changed.
    let opts = ApplyOptions { state_dir: journal::default_state_dir(), force: true, dry_run: true };
    let report = apply_input(&args.what, &opts, &mut |_| {})?;
    emit(args.format, &report.lint, render::lint)?;
    Ok(if report.lint.failures() > 0 { Outcome::Failed } else { Outcome::Ok })
}

fn run_revert(args: RevertArgs) -> CmdResult {
    let dir = args.state_dir.unwrap_or_else(journal::default_state_dir);
    let report = journal::revert(&dir)?;
    emit(args.format, &report, render::revert)?;
    Ok(Outcome::Ok)
}

fn run_calibrate(args: CalibrateArgs) -> CmdResult {
    let crate::cli_common::JsonOnly::Json = args.format;
    rtvirt_os::signals::install();
    let step = match args.quick {
        true => rtvirt_probe::calibrate::QUICK_STEP,
        false => rtvirt_model::Nanos::parse(&args.step).map_err(|e| rtvirt_model::InputError::field("--step", e))?,
    };
    let cpus = rtvirt_probe::cpus::resolve("--cpus", args.cpus.as_deref())?;
    let state_dir = Some(args.state_dir.unwrap_or_else(journal::default_state_dir));
    // the guards restore the journals they find there (rtvirt_os::guard_journal): only trusted ones
    if let Some(dir) = state_dir.as_deref().filter(|d| d.exists()) {
        journal::check_trusted(dir)?;
    }
    let working_set = args
        .working_set
        .parse::<bytesize::ByteSize>()
        .map_err(|e| rtvirt_model::InputError::field("--working-set", format!("\"{}\": {e}", args.working_set)))?;
    let working_set = usize::try_from(working_set.as_u64()).unwrap_or(usize::MAX);
    if let Some(path) = &args.output {
        crate::output_file::check("--output", path, &[])?; // before the calibration, not after it
    }
    let cfg = rtvirt_probe::calibrate::CalibrateConfig { cpus, step, state_dir: state_dir.clone(), working_set };
    eprintln!("rtvirt: calibrating this host (about {} s)...", 3 * step.0 / 1_000_000_000 + 3);
    let model = rtvirt_probe::calibrate::run(&cfg, &mut |line| eprintln!("rtvirt: {line}"))?;
    let text = serde_json::to_string_pretty(&model)? + "\n";
    match args.output {
        None => print!("{text}"),
        Some(path) => {
            std::fs::write(&path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("rtvirt: host model written to {}", path.display());
        }
    }
    match state_dir.filter(|_| !args.no_cache) {
        None => {}
        Some(dir) => match rtvirt_probe::this_host::write_cache(&dir, &model) {
            Ok(path) => eprintln!(
                "rtvirt: cached in {} for planning on this host (this kernel and boot; --no-cache to skip)",
                path.display()
            ),
            Err(why) => eprintln!("rtvirt: warning: not cached for planning on this host: {why}"),
        },
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14: telling a plan from a profile read a FIFO (blocking forever) or /dev/zero (growing
    /// without bound) whole; now only a regular file's first non-blank byte is read.
    #[test]
    fn telling_plans_from_profiles_reads_only_regular_files_and_only_their_first_byte() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plan");
        std::fs::write(&plan, " \n {\"schema\": \"rtvirt.plan/v1\"}").unwrap();
        let profile = dir.path().join("profile");
        std::fs::write(&profile, "schema = \"rtvirt.profile/v1\"\n").unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(is_plan(&plan));
        assert!(!is_plan(&profile));
        assert!(!is_plan(&fifo), "a FIFO is not opened");
        assert!(!is_plan(Path::new("/dev/zero")), "a device is not read");
        assert!(!is_plan(dir.path()), "a directory is not read");
    }
}
