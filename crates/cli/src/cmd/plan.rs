//! `rtvirt plan`: scenario -> per-guest reservations (budget/period/deadline) and cores, as a
//! table, JSON (`rtvirt.plan/v1`) or deployable settings (`--emit`). The work is done by
//! `rtvirt_analysis::planner`; this module parses flags, validates them and prints.

use crate::cli_common::{load_scenario, print_json, CmdResult, Format, Outcome};
use crate::table::Table;
use anyhow::Context;
use clap::{Args, ValueEnum};
use rtvirt_analysis::budgets::BudgetMethod;
use rtvirt_analysis::emit::{self, libvirt::DomainFile, EmittedFile};
use rtvirt_analysis::interface::Model;
use rtvirt_analysis::partition::Heuristic;
use rtvirt_analysis::planner::{PlanOptions, Planned, RHO_RESOLUTION};
use rtvirt_analysis::requests::{max_rho, plan, PlanRequest};
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::{Scenario, MAX_CORES};
use rtvirt_model::{InputError, Nanos};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// Periodic resource model (Shin & Lee 2003): deadline = period.
    Prm,
    /// Explicit-deadline periodic resource (Easwaran et al. 2007): deadline <= period, maps 1:1
    /// to SCHED_DEADLINE runtime/deadline/period.
    Edp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HeuristicArg {
    /// Best-fit decreasing bandwidth.
    Bfd,
    /// First-fit decreasing bandwidth.
    Ffd,
    /// Worst-fit decreasing bandwidth.
    Wfd,
    /// Best-fit in scenario order.
    Bf,
    /// First-fit in scenario order.
    Ff,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BudgetArg {
    /// c = min(WCET, E + sqrt(rho Var / (1 - rho))) (Cantelli / one-sided Chebyshev).
    Cantelli,
    /// c = min(WCET, rho-quantile of the samples) for tasks with samples; Cantelli for others.
    Quantile,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EmitArg {
    /// Shell script deploying on a stock kernel: an exclusive cpuset per core, then taskset + chrt -d
    /// per guest vCPU thread; run from a file NAME.sh, it writes NAME-undo.sh before each change.
    Chrt,
    /// Xen: xl cpupool layout + xl sched-rtds commands (microseconds).
    Rtds,
    /// Per guest a libvirt domain patch (vcpupin, emulatorpin, iothreadpin, vcpusched,
    /// memoryBacking) + the qemu hook running `rtvirt host apply`/`revert`; needs --output-dir.
    Libvirt,
    /// tuned profile (tuned.conf): includes realtime-virtual-host, isolates the plan's cores.
    Tuned,
    /// CARTS XML input (times in ms, e = the planned budget c).
    Carts,
    /// KubeVirt: a kubevirt.io/v1 VirtualMachine per guest (YAML documents): dedicated CPUs,
    /// isolated emulator thread, realtime mask, huge pages; the reservation in an annotation.
    Kubevirt,
    /// OpenStack Nova: `openstack flavor set` per guest with the real-time extra specs (with
    /// --format json: rtvirt.nova/v1).
    Nova,
}

#[derive(Args)]
#[command(after_help = "\
Budgets: each task's c = min(WCET, E + sqrt(rho*Var/(1-rho))); rho is taken from the task, else its
guest, else --rho; with none of them (the default) c = WCET. Constant execution times always use WCET.
Interfaces: for every candidate server period the least integer-ns budget that keeps the guest's
EDF/FP task set schedulable (exact); the period of least bandwidth wins (ties: the larger period).
Cores: servers are packed with the heuristic under an exact EDF admission test and the per-core cap:
the kernel's limit less its fair server from --host-model (without one 0.90: the stock 0.95 less the
0.05 fair server of Linux >= 6.12), or the scenario's host.bandwidth_cap if lower; the output says which.
max_rho: the largest single rho for all tasks with which every guest still fits (1 = even at WCET).

Exit codes: 0 feasible; 1 infeasible (the guests that did not fit are named); 2 bad input, or a
guest too large to analyse exactly (more than 2,097,152 check points, e.g. periods 60 min and 10 us).
Examples:
  rtvirt plan                                   # embedded default scenario, table
  rtvirt plan s.toml --rho 0.9 --format json
  rtvirt plan s.toml --model edp --emit chrt --pid vm1=4242 > deploy.sh   # sudo sh deploy.sh
  rtvirt plan s.toml --emit libvirt --libvirt-domain vm1.xml --output-dir out/
  rtvirt plan s.toml --emit tuned --output-dir /etc/tuned/rtvirt
  rtvirt plan s.toml --emit kubevirt > vms.yaml             # kubectl apply -f vms.yaml
  rtvirt plan s.toml --emit nova > flavors.sh               # --format json: rtvirt.nova/v1
  rtvirt plan s.toml --max-rho
  rtvirt plan --import-carts system.xml")]
pub struct PlanArgs {
    /// Scenario file (TOML). Without it, the embedded default scenario is used.
    pub scenario: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Probability in (0,1) that a job completes within its budget, for tasks whose task and
    /// guest set no rho. Default: none (those tasks use their WCET).
    #[arg(long)]
    pub rho: Option<f64>,
    /// Resource model of each guest's server.
    #[arg(long, value_enum, default_value_t = ModelArg::Prm)]
    pub model: ModelArg,
    /// Number of host cores (overrides the scenario's host.cores).
    #[arg(long)]
    pub cores: Option<u32>,
    /// How servers are packed onto cores.
    #[arg(long, value_enum, default_value_t = HeuristicArg::Bfd)]
    pub heuristic: HeuristicArg,
    /// How stochastic tasks get their budget.
    #[arg(long, value_enum, default_value_t = BudgetArg::Cantelli)]
    pub budget: BudgetArg,
    /// Print deployable settings instead of the plan (only when the plan is feasible).
    #[arg(long, value_enum)]
    pub emit: Option<EmitArg>,
    /// Thread id of a guest's vCPU for `--emit chrt` (repeatable; GUEST/vcpuK=PID for vCPU K of a
    /// guest of several). Without it the script reads VCPU_PID_<GUEST> (VCPU_PID_<GUEST>_VCPU<K>)
    /// from the environment.
    #[arg(long = "pid", value_name = "GUEST=PID")]
    pub pids: Vec<String>,
    /// Write the emitted files into DIR (created if missing; files of the same name replaced)
    /// instead of printing them: chrt deploy.sh, libvirt GUEST.xml per guest + qemu, tuned
    /// tuned.conf (DIR is then the profile directory), rtds rtds.sh, carts carts.xml, kubevirt
    /// kubevirt.yaml, nova nova.sh.
    #[arg(long, value_name = "DIR", requires = "emit")]
    pub output_dir: Option<PathBuf>,
    /// A guest's existing libvirt domain XML to patch with `--emit libvirt` (its <name> picks the
    /// guest; repeatable); guests without one get a generated patch.
    #[arg(long = "libvirt-domain", value_name = "FILE.xml")]
    pub libvirt_domains: Vec<PathBuf>,
    /// Only search and print the largest uniform rho for which every guest fits.
    #[arg(long)]
    pub max_rho: bool,
    /// Read the scenario from a CARTS XML input file (times in ms; one host core per component
    /// unless --cores).
    #[arg(long, value_name = "FILE.xml", conflicts_with = "scenario")]
    pub import_carts: Option<PathBuf>,
    #[command(flatten)]
    pub host: crate::plan_host::HostArgs,
}

fn options(args: &PlanArgs) -> Result<PlanOptions, InputError> {
    if let Some(r) = args.rho {
        if !(r > 0.0 && r < 1.0) {
            return Err(InputError::field("--rho", format!("{r}: expected a probability strictly between 0 and 1")));
        }
    }
    if matches!(args.cores, Some(n) if n == 0 || n > MAX_CORES) {
        return Err(InputError::field(
            "--cores",
            format!("{}: expected a whole number from 1 to {MAX_CORES}", args.cores.unwrap_or(0)),
        ));
    }
    Ok(PlanOptions {
        rho: args.rho,
        model: match args.model {
            ModelArg::Prm => Model::Prm,
            ModelArg::Edp => Model::Edp,
        },
        heuristic: match args.heuristic {
            HeuristicArg::Bfd => Heuristic::Bfd,
            HeuristicArg::Ffd => Heuristic::Ffd,
            HeuristicArg::Wfd => Heuristic::Wfd,
            HeuristicArg::Bf => Heuristic::Bf,
            HeuristicArg::Ff => Heuristic::Ff,
        },
        cores: args.cores,
        budget: match args.budget {
            BudgetArg::Cantelli => BudgetMethod::Cantelli,
            BudgetArg::Quantile => BudgetMethod::Quantile,
        },
        ..Default::default()
    })
}

/// `--pid NAME=PID` values, checked against the scenario's guests.
fn pids(args: &PlanArgs, scenario: &Scenario) -> Result<BTreeMap<String, u32>, InputError> {
    let mut out = BTreeMap::new();
    for p in &args.pids {
        let bad = |m: String| InputError::field("--pid", format!("\"{p}\": {m}"));
        let (name, pid) = p.split_once('=').ok_or_else(|| bad("expected GUEST=PID".into()))?;
        if scenario.guest(name).is_none() && !is_vcpu_of_a_guest(scenario, name) {
            return Err(bad(format!(
                "no guest \"{name}\" in the scenario (a vCPU of a guest of several: GUEST/vcpuK)"
            )));
        }
        let pid: u32 =
            pid.trim().parse().ok().filter(|&v| v > 0).ok_or_else(|| bad("expected a positive thread id".into()))?;
        out.insert(name.to_string(), pid);
    }
    Ok(out)
}

/// `GUEST/vcpuK` naming vCPU K of a guest of several vCPUs.
fn is_vcpu_of_a_guest(scenario: &Scenario, name: &str) -> bool {
    let Some((guest, id)) = name.rsplit_once("/vcpu") else { return false };
    let id: Option<usize> = id.parse().ok();
    scenario.guest(guest).is_some_and(|g| g.is_multi_vcpu() && id.is_some_and(|k| k < g.vcpus.len()))
}

fn load(args: &PlanArgs) -> Result<Scenario, InputError> {
    let s = match &args.import_carts {
        Some(x) => rtvirt_model::carts::from_file(x)?,
        None => load_scenario(args.scenario.as_deref())?,
    };
    Ok(s)
}

pub fn run(args: PlanArgs) -> CmdResult {
    let s = load(&args)?;
    let options = options(&args)?;
    let host = args.host.resolve(None, crate::plan_host::cores(&s, &options))?;
    let guarantee = args.host.guarantee()?;
    let request = PlanRequest { max_rho: true, ..crate::plan_host::request(&s, &host, options, guarantee) };
    let pid_map = pids(&args, &s)?;
    let inputs = inputs(&args);
    if let (Some(emit), Some(dir)) = (args.emit, &args.output_dir) {
        crate::output_file::check_in_dir("--output-dir", dir, &emitted_names(emit, &s), &inputs)?;
    }
    if args.max_rho {
        return print_max_rho(&request, args.format);
    }
    let domains = libvirt_domains(&args)?;
    let p = plan_with_progress(&request).map_err(|e| crate::plan_host::located(e, &args.host))?;
    match args.emit {
        Some(EmitArg::Nova) if p.plan.feasible && args.format == Format::Json => {
            print_json(&emit::nova::flavors(&p.plan))?
        }
        Some(e) if p.plan.feasible => {
            let files = emitted(e, &s, &p.plan, &pid_map, &domains).map_err(|e| s.locate(e))?;
            write_emitted(e, &files, args.output_dir.as_deref(), &inputs)?;
        }
        Some(_) => {}
        None if args.format == Format::Json => print_json(&p.plan)?,
        None => print!("{}", table(&s, &p.plan)),
    }
    report_infeasible(&p);
    Ok(if p.plan.feasible { Outcome::Ok } else { Outcome::Failed })
}

/// The files this command reads.
fn inputs(args: &PlanArgs) -> Vec<&Path> {
    let files = args.scenario.iter().chain(&args.import_carts).chain(&args.libvirt_domains);
    files.map(PathBuf::as_path).chain(args.host.inputs()).collect()
}

/// The name of the one file an `--emit` writes (None: libvirt's several).
fn single_file(emit: EmitArg) -> Option<&'static str> {
    match emit {
        EmitArg::Chrt => Some("deploy.sh"),
        EmitArg::Rtds => Some("rtds.sh"),
        EmitArg::Tuned => Some("tuned.conf"),
        EmitArg::Carts => Some("carts.xml"),
        EmitArg::Kubevirt => Some(emit::kubevirt::FILE),
        EmitArg::Nova => Some(emit::nova::FILE),
        EmitArg::Libvirt => None,
    }
}

/// The files `--emit` writes into `--output-dir`, known before planning (an emitted plan places
/// every guest).
fn emitted_names(emit: EmitArg, scenario: &Scenario) -> Vec<String> {
    match single_file(emit) {
        Some(name) => vec![name.into()],
        None => {
            let mut names = emit::libvirt::file_names(scenario.guests.iter().map(|g| g.name.as_str()));
            names.push(emit::libvirt::HOOK_FILE.into());
            names
        }
    }
}

/// Scenarios of at least this many tasks get a line on stderr per step of their planning when
/// stderr is not a terminal (a terminal gets a spinner with the step for any scenario).
const LONG_PLAN_TASKS: usize = 2000;

/// The request planned, with its progress on stderr: the plan at the scenario's rhos, then each
/// step of the largest uniform rho's bisection.
fn plan_with_progress(request: &PlanRequest) -> Result<Planned, InputError> {
    let s = request.scenario;
    let tasks: usize = s.guests.iter().map(|g| g.tasks.len()).sum();
    let bar = crate::progress::spinner("{spinner} rtvirt: {msg} ({elapsed})");
    let lines = bar.is_hidden() && tasks >= LONG_PLAN_TASKS;
    let say = |message: String| {
        if lines {
            eprintln!("rtvirt: {message}");
        }
        bar.set_message(message);
    };
    say(format!("planning {} guests ({tasks} tasks)...", s.guests.len()));
    let p = rtvirt_loop::planning::plan_with(request, &mut |lo, hi| {
        say(format!("searching the largest uniform rho: between {lo:.4} and {hi:.4}..."))
    });
    bar.finish_and_clear();
    p
}

/// `--libvirt-domain` files, read (path, text); only with `--emit libvirt`.
fn libvirt_domains(args: &PlanArgs) -> Result<Vec<(PathBuf, String)>, InputError> {
    if !args.libvirt_domains.is_empty() && args.emit != Some(EmitArg::Libvirt) {
        return Err(InputError::field(
            "--libvirt-domain",
            "patches a domain for --emit libvirt only: add --emit libvirt",
        ));
    }
    args.libvirt_domains
        .iter()
        .map(|p| Ok((p.clone(), rtvirt_model::input::read_text(p, rtvirt_model::input::InputKind::LibvirtDomain)?)))
        .collect()
}

fn emitted(
    emit: EmitArg,
    scenario: &Scenario,
    plan: &Plan,
    pids: &BTreeMap<String, u32>,
    domains: &[(PathBuf, String)],
) -> Result<Vec<EmittedFile>, InputError> {
    let one = |text: String, executable: bool| {
        let name = single_file(emit).unwrap_or_default().into();
        vec![EmittedFile { name, text, executable }]
    };
    Ok(match emit {
        EmitArg::Chrt => one(emit::chrt::script(plan, pids)?, true),
        EmitArg::Rtds => one(emit::rtds(plan)?, true),
        EmitArg::Libvirt => {
            let files: Vec<DomainFile> = domains.iter().map(|(path, text)| DomainFile { path, text }).collect();
            let emitted = emit::libvirt::files(scenario, plan, &files)?;
            for w in &emitted.warnings {
                eprintln!("rtvirt: warning: {w}");
            }
            emitted.files
        }
        EmitArg::Tuned => one(emit::tuned::profile(plan), false),
        EmitArg::Carts => one(emit::carts(scenario, plan), false),
        EmitArg::Kubevirt => vec![emit::kubevirt::manifests(plan)?],
        EmitArg::Nova => one(emit::nova::script(plan)?, true),
    })
}

/// The emitted files into `dir` (listed on stdout), or the one file's text on stdout.
fn write_emitted(emit: EmitArg, files: &[EmittedFile], dir: Option<&Path>, inputs: &[&Path]) -> anyhow::Result<()> {
    let Some(dir) = dir else {
        if let [file] = files {
            print!("{}", file.text);
            return Ok(());
        }
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        let emit = emit.to_possible_value().map_or(String::new(), |v| v.get_name().to_string());
        return Err(InputError::field(
            "--output-dir",
            format!("--emit {emit} writes {} files ({}): give --output-dir DIR", files.len(), names.join(", ")),
        )
        .into());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create --output-dir {}", dir.display()))?;
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    crate::output_file::check_in_dir("--output-dir", dir, &names, inputs)?;
    for f in files {
        let path = dir.join(&f.name);
        std::fs::write(&path, &f.text).with_context(|| format!("cannot write {}", path.display()))?;
        if f.executable {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("cannot make {} executable", path.display()))?;
        }
        println!("{}", path.display());
    }
    Ok(())
}

fn rho_text(rho: Option<f64>) -> String {
    match rho {
        Some(rho) if rho >= 1.0 => "1 (fits even at WCET)".into(),
        Some(rho) => format!("{rho:.4}"),
        None => "none (does not fit even at the mean execution times)".into(),
    }
}

fn print_max_rho(request: &PlanRequest, format: Format) -> CmdResult {
    plan(&PlanRequest { uniform_rho: Some(1.0), ..request.clone() })?;
    eprintln!("rtvirt: searching the largest uniform rho (bisection to {})...", RHO_RESOLUTION);
    let r = max_rho(request, &mut |_, _| {});
    match format {
        Format::Json => print_json(&serde_json::json!({ "max_rho": r, "resolution": RHO_RESOLUTION }))?,
        Format::Table => println!("max_rho = {}", rho_text(r)),
    }
    Ok(if r.is_some() { Outcome::Ok } else { Outcome::Failed })
}

fn report_infeasible(planned: &Planned) {
    if planned.plan.feasible {
        return;
    }
    eprintln!("rtvirt: infeasible: {} guest(s) did not fit:", planned.unplaced.len());
    for u in &planned.unplaced {
        eprintln!("  {}: {}", u.name, u.reason);
    }
    eprintln!("  largest uniform rho with which everything fits: {}", rho_text(planned.plan.max_rho));
    for n in &planned.plan.needs {
        let whom = n.guest.as_ref().map_or("the plan".to_string(), |g| format!("guest \"{g}\""));
        eprintln!("  to fit, {whom} needs {}: {} ({})", n.setting, n.value, n.how);
    }
}

fn table(scenario: &Scenario, plan: &Plan) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let settings = &plan.settings;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let _ = writeln!(
        out,
        "plan of \"{}\": {}, {} core(s) used of {}, model {}, heuristic {}, budgets {}, max rho {}",
        scenario.name,
        if plan.feasible { "feasible" } else { "INFEASIBLE" },
        plan.cores_used,
        settings.cores.map(|c| c.to_string()).unwrap_or_default(),
        text(&settings.model),
        text(&settings.heuristic),
        text(&settings.budget),
        rho_text(plan.max_rho)
    );
    if let (Some(cap), Some(why)) = (settings.bandwidth_cap, &settings.bandwidth_cap_source) {
        let _ = writeln!(out, "per-core cap {cap}: {why}");
    }
    if let Some(host) = &settings.host {
        let _ = writeln!(out, "planned for: {host}; promise: {}", text(&settings.guarantee));
    }
    if let Some(o) = &settings.overheads {
        let _ = writeln!(out, "host overheads charged: {o}");
    }
    for a in &settings.assumptions {
        let _ = writeln!(out, "  assumes: {a}");
    }
    out.push('\n');
    let (guests, tasks) = guest_and_task_tables(plan);
    let _ = writeln!(out, "{guests}\n\n{tasks}");
    if let Some(vcpus) = vcpu_table(plan) {
        let _ = writeln!(out, "\nvCPUs of the guests with several (model none: no reservation, only a core):\n{vcpus}");
    }
    if let Some(free) = overhead_free_table(plan) {
        let _ = writeln!(out, "\nwithout the host's overheads (the same guests, nothing charged):\n{free}");
    }
    let mut cores = Table::aligned(&["core", "bandwidth", "guests", "why this CPU"], |column| column == 1);
    for c in &plan.cores {
        let why = c.why.clone().unwrap_or_else(|| "-".into());
        cores.row([c.id.to_string(), format!("{:.4}", c.bandwidth), c.guests.join(", "), why]);
    }
    let _ = writeln!(out, "\n{cores}");
    out
}

/// Planned with a host model: per guest the least interface without overheads beside the
/// overhead-aware bandwidth (None without a host model).
fn overhead_free_table(plan: &Plan) -> Option<Table> {
    let header = ["guest", "period", "budget", "bandwidth", "overhead-aware bandwidth"];
    let mut table = Table::new(&header, 1);
    for g in &plan.guests {
        let f = g.overhead_free.as_ref()?;
        table.row([
            g.name.clone(),
            Nanos(f.period_ns).to_string(),
            Nanos(f.budget_ns).to_string(),
            format!("{:.4}", f.bandwidth),
            format!("{:.4}", g.bandwidth),
        ]);
    }
    Some(table)
}

/// One row per vCPU of every guest with several (None when no guest has several).
fn vcpu_table(plan: &Plan) -> Option<Table> {
    let header = ["guest", "vcpu", "model", "period", "budget", "deadline", "bandwidth", "core", "tasks"];
    if plan.guests.iter().all(|g| g.vcpus.is_empty()) {
        return None;
    }
    let mut table = Table::aligned(&header, |column| column == 1 || (3..8).contains(&column));
    for g in plan.guests.iter().filter(|g| !g.vcpus.is_empty()) {
        for v in &g.vcpus {
            let times = [v.period_ns, v.budget_ns, v.deadline_ns].map(|ns| {
                if v.reserved() {
                    Nanos(ns).to_string()
                } else {
                    "-".into()
                }
            });
            let mut cells = vec![g.name.clone(), v.id.to_string(), v.model.clone()];
            cells.extend(times);
            cells.extend([
                format!("{:.4}", v.bandwidth),
                v.core.map_or("-".into(), |c| c.to_string()),
                v.tasks.join(", "),
            ]);
            table.row(cells);
        }
    }
    Some(table)
}

/// One row per guest's reservation, and one per task with its execution bound.
fn guest_and_task_tables(plan: &Plan) -> (Table, Table) {
    let mut guests = Table::new(&["guest", "sched", "period", "budget", "deadline", "bandwidth", "core"], 2);
    let header = ["guest", "task", "period", "deadline", "wcet", "c", "rho", "bound", "miss bound"];
    let mut tasks = Table::aligned(&header, |column| (2..7).contains(&column));
    for g in &plan.guests {
        let core = g.core.map_or("-".into(), |c| c.to_string());
        let (period, budget, deadline) = (Nanos(g.period_ns), Nanos(g.budget_ns), Nanos(g.deadline_ns));
        let bandwidth = format!("{:.4}", g.bandwidth);
        let scheduler = g.scheduler.to_string();
        guests.row([
            g.name.clone(),
            scheduler,
            period.to_string(),
            budget.to_string(),
            deadline.to_string(),
            bandwidth,
            core,
        ]);
        for t in &g.tasks {
            let rho = t.rho.map_or("-".into(), |r| format!("{r}"));
            let times = [t.period_ns, t.deadline_ns, t.wcet_ns, t.budget_ns].map(|ns| Nanos(ns).to_string());
            let mut cells = vec![g.name.clone(), t.name.clone()];
            cells.extend(times);
            let miss = t.miss_bound.map_or("-".into(), |b| format!("{b:.4}"));
            cells.extend([rho, t.bound.to_string(), miss]);
            tasks.row(cells);
        }
    }
    (guests, tasks)
}
