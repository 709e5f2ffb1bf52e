//! `--emit libvirt`: per guest a domain patch, and a libvirt qemu hook script.
//!
//! The patch is a `<domain>` document holding only what rtvirt sets (it validates with libvirt's
//! schema on its own): `<cputune>` with a `vcpupin` for every planned vCPU on its core, and for
//! the unplanned vCPUs, `emulatorpin` and an `iothreadpin` per I/O thread the housekeeping cores
//! (no vCPU on them, else no reserved vCPU: never a reserved core unless every core holds one,
//! which is warned about); a `vcpusched` over the planned vCPUs with the scenario's FIFO/RR policy
//! (`[guest.vcpu] policy`, the policy libvirt gives them at start), else FIFO
//! [`FIFO_PRIORITY`] for the vCPUs without a reservation; `<features>` with `<pmu state='off'/>`;
//! and `<memoryBacking>` with `<hugepages/>` and `<locked/>`. With `--libvirt-domain FILE.xml`
//! the user's own domain is patched instead: its `<name>` picks the guest, its `<vcpu>` count and
//! `<iothreads>`/`<iothreadids>` decide the pins (at most [`MAX_DOMAIN_VCPUS`] and
//! [`MAX_DOMAIN_IOTHREADS`]: a pin is written for each); existing `vcpupin`, `emulatorpin`,
//! `iothreadpin`, `vcpusched` and `pmu` are replaced, each pin whose cpuset lets its threads on a
//! CPU the plan does not give them (and a `pmu` not off) with a located warning; every other byte
//! of the file is kept (edits are spliced at the byte ranges roxmltree reports, the new elements
//! written by quick-xml).
//!
//! libvirt has no deadline policy (`vcpusched` offers fifo, rr, batch, idle), so the hook
//! (`/etc/libvirt/hooks/qemu`) runs `rtvirt host apply` on the plan for a planned domain when it
//! has `started` (its vCPU 0 found by the QEMU `-name`), journaled in a state directory per
//! domain, and `rtvirt host revert` when it is `release`d. Domain names appear in the hook only
//! as single shell words (`case` patterns and arguments).

use super::words::{comment_word, guest_field, housekeeping, placed, shell_word, unreserved_cores, EmittedFile};
use rtvirt_model::plan::{GuestPlan, Plan, VcpuPlan};
use rtvirt_model::scenario::sim::Policy;
use rtvirt_model::scenario::{Scenario, MAX_CORES};
use rtvirt_model::{error::line_col, xml, InputError};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::ops::Range;
use std::path::Path;

/// A user's domain XML (`--libvirt-domain`): its path (for errors) and text.
pub struct DomainFile<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

/// Most vCPUs of a domain rtvirt patches: the most KVM (x86 `CONFIG_KVM_MAX_NR_VCPUS`) and
/// QEMU's q35 machine (`max_cpus`) can give one guest; a `vcpupin` is written for each.
pub const MAX_DOMAIN_VCPUS: u32 = 4096;

/// Most I/O threads of a domain rtvirt patches (an `iothreadpin` is written for each): as many as
/// vCPUs, far beyond any real guest's.
pub const MAX_DOMAIN_IOTHREADS: u32 = 4096;

/// Where the hook keeps the plan and one `rtvirt host apply` journal per domain.
pub const HOOK_STATE_DIR: &str = "/run/rtvirt/libvirt";

/// FIFO priority of the vCPUs without a reservation when the scenario gives none: the lowest, above
/// every SCHED_OTHER thread and below the kernel's threaded IRQs (50).
pub const FIFO_PRIORITY: u8 = 1;

/// What rtvirt sets in one guest's domain.
struct Tune<'a> {
    guest: &'a GuestPlan,
    core: u32,
    /// Cores of the emulator and I/O threads and of the vCPUs the plan does not place: the cores
    /// no vCPU uses, else those without a reserved vCPU, else (a warning) the guest's core.
    housekeeping: String,
    /// `(scheduler, priority)` the scenario gives the guest's vCPU threads (`[guest.vcpu]`).
    rt: Option<(&'static str, u8)>,
}

/// What `--emit libvirt` makes: the files, and warnings for stderr (the user's pins that the plan
/// contradicts, emulator threads that must share a reserved core).
pub struct Emitted {
    pub files: Vec<EmittedFile>,
    pub warnings: Vec<String>,
}

/// `--emit libvirt`: the domain patches (user domains patched, the other guests' patches
/// generated) and the hook script `qemu`.
pub fn files(scenario: &Scenario, plan: &Plan, domains: &[DomainFile]) -> Result<Emitted, InputError> {
    for (g, _) in placed(plan) {
        check_domain_name(plan, g)?;
    }
    let mut warnings = Vec::new();
    if housekeeping(plan).or_else(|| unreserved_cores(plan)).is_none() {
        let n = plan.settings.cores.unwrap_or(0);
        warnings.push(format!(
            "every core of the plan's host ({n}) holds a vCPU with a reservation: each domain's emulator and I/O \
             threads are pinned to its vCPU 0's core, where they get only what the reservations leave; plan with a \
             core to spare (--cores {}) to keep them apart",
            n + 1
        ));
    }
    let mut patched: BTreeMap<String, String> = BTreeMap::new();
    for d in domains {
        let (name, text) = patch_user_domain(scenario, plan, d, &mut warnings)?;
        if patched.insert(name.clone(), text).is_some() {
            return Err(InputError::new(format!(
                "two --libvirt-domain files are domain {}: give one per guest",
                comment_word(&name)
            ))
            .in_file(d.path));
        }
    }
    let mut out = Vec::new();
    let names = file_names(placed(plan).map(|(g, _)| g.name.as_str()));
    for ((g, core), name) in placed(plan).zip(names) {
        let text = match patched.remove(&g.name) {
            Some(text) => text,
            None => generated_patch(&tune(scenario, plan, g, core)).map_err(|e| e.under(&guest_field(plan, g)))?,
        };
        out.push(EmittedFile { name, text, executable: false });
    }
    out.push(EmittedFile { name: HOOK_FILE.into(), text: hook(plan)?, executable: true });
    Ok(Emitted { files: out, warnings })
}

/// The file name of the hook script.
pub const HOOK_FILE: &str = "qemu";

/// The names of the domain files of these guests, in order (the hook's is [`HOOK_FILE`]).
pub fn file_names<'a>(guests: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names = Vec::new();
    for guest in guests {
        let name = file_name(guest, &names);
        names.push(name);
    }
    names
}

/// A guest name libvirt takes as a domain name (its schema: no newline), XML can carry, and the
/// hook can pass to `rtvirt host apply --vm GUEST,vcpu=0` (no `=`).
fn check_domain_name(plan: &Plan, g: &GuestPlan) -> Result<(), InputError> {
    let problem = if g.name.contains('\n') {
        "holds a newline, which libvirt domain names cannot"
    } else if g.name.contains('=') {
        "holds '=', which rtvirt host apply --vm GUEST (run by the hook) cannot take"
    } else if g.name.chars().any(|c| c.is_control() && c != '\t' && c != '\r') {
        "holds a control character, which XML 1.0 cannot carry"
    } else {
        return Ok(());
    };
    Err(InputError::field(
        guest_field(plan, g),
        format!("{} {problem}: rename the guest to deploy it with libvirt", comment_word(&g.name)),
    ))
}

/// `<guest>.xml` with every character outside `[A-Za-z0-9._-]` as `_` (and a number when two
/// guests give the same name).
fn file_name(guest: &str, taken: &[String]) -> String {
    let stem: String =
        guest.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    let stem = stem.trim_start_matches('.').to_string();
    let mut name = format!("{stem}.xml");
    let mut n = 2;
    while taken.contains(&name) || name == ".xml" {
        name = format!("{stem}-{n}.xml");
        n += 1;
    }
    name
}

fn tune<'a>(scenario: &Scenario, plan: &Plan, guest: &'a GuestPlan, core: u32) -> Tune<'a> {
    let rt = scenario.guest(&guest.name).and_then(|g| match g.vcpus[0].sim.thread.policy {
        Policy::Rt { prio, rr_quantum: None } => Some(("fifo", prio)),
        Policy::Rt { prio, rr_quantum: Some(_) } => Some(("rr", prio)),
        _ => None,
    });
    let housekeeping = housekeeping(plan).or_else(|| unreserved_cores(plan)).unwrap_or_else(|| core.to_string());
    Tune { guest, core, housekeeping, rt }
}

/// One empty element written by quick-xml (attribute values escaped by it).
fn empty_element(name: &str, attributes: &[(&str, String)]) -> String {
    let mut start = quick_xml::events::BytesStart::new(name);
    for (key, value) in attributes {
        start.push_attribute((*key, value.as_str()));
    }
    let mut writer = quick_xml::Writer::new(Vec::new());
    writer.write_event(quick_xml::events::Event::Empty(start)).expect("writing to memory cannot fail");
    String::from_utf8(writer.into_inner()).expect("quick-xml writes UTF-8")
}

/// The `<cputune>` children rtvirt sets, for a domain of `vcpus` vCPUs and these I/O threads:
/// every planned vCPU pinned to its core, the others and the emulator and I/O threads to the
/// housekeeping cores; a `vcpusched` over every planned vCPU with the scenario's FIFO/RR policy,
/// else FIFO [`FIFO_PRIORITY`] for the planned vCPUs without a reservation.
fn cputune_children(t: &Tune, vcpus: u32, iothreads: &[u32]) -> Vec<String> {
    let g = t.guest;
    let planned = g.vcpu_plans();
    let mut out: Vec<String> = if g.vcpus.is_empty() {
        vec![format!(
            "<!-- rtvirt: vCPU 0 gets SCHED_DEADLINE runtime {} ns, deadline {} ns, period {} ns on core {} from the \
             qemu hook (libvirt has no deadline policy) -->",
            g.budget_ns, g.deadline_ns, g.period_ns, t.core
        )]
    } else {
        planned.iter().map(vcpu_comment).collect()
    };
    for vcpu in 0..vcpus {
        let core = planned.get(vcpu as usize).and_then(|v| v.core);
        let cpuset = core.map_or_else(|| t.housekeeping.clone(), |c| c.to_string());
        out.push(empty_element("vcpupin", &[("vcpu", vcpu.to_string()), ("cpuset", cpuset)]));
    }
    out.push(empty_element("emulatorpin", &[("cpuset", t.housekeeping.clone())]));
    for id in iothreads {
        out.push(empty_element("iothreadpin", &[("iothread", id.to_string()), ("cpuset", t.housekeeping.clone())]));
    }
    let ((scheduler, priority), fifo) = match t.rt {
        Some(rt) => (rt, planned.iter().collect::<Vec<_>>()),
        None => (("fifo", FIFO_PRIORITY), planned.iter().filter(|v| !v.reserved()).collect()),
    };
    let ids: Vec<String> = fifo.iter().filter(|v| v.id < vcpus).map(|v| v.id.to_string()).collect();
    if !ids.is_empty() {
        out.push(empty_element(
            "vcpusched",
            &[("vcpus", ids.join(",")), ("scheduler", scheduler.into()), ("priority", priority.to_string())],
        ));
    }
    out
}

/// What one vCPU of a guest of several gets (a comment: libvirt has no deadline policy).
fn vcpu_comment(v: &VcpuPlan) -> String {
    let core = v.core.map_or("-".into(), |c| c.to_string());
    if !v.reserved() {
        return format!("<!-- rtvirt: vCPU {} on core {core}, no reservation (no real-time task) -->", v.id);
    }
    format!(
        "<!-- rtvirt: vCPU {} gets SCHED_DEADLINE runtime {} ns, deadline {} ns, period {} ns on core {core} \
         from the qemu hook (libvirt has no deadline policy) -->",
        v.id, v.budget_ns, v.deadline_ns, v.period_ns
    )
}

/// `<memoryBacking>` children rtvirt sets: guest memory in huge pages, locked in RAM.
const MEMORY_BACKING: [&str; 2] = ["hugepages", "locked"];

/// `<cputune>` children rtvirt replaces.
const REPLACED: [&str; 4] = ["vcpupin", "emulatorpin", "iothreadpin", "vcpusched"];

/// The `<features>` child rtvirt sets: no virtual PMU (KVM emulates its counters with host perf
/// events, work at VM exits and entries that an RT guest does not need).
fn pmu_off() -> String {
    empty_element("pmu", &[("state", "off".into())])
}

/// The patch of a guest without a domain file: a one-vCPU, one-I/O-thread domain holding only
/// what rtvirt sets.
fn generated_patch(t: &Tune) -> Result<String, InputError> {
    let g = t.guest;
    let head = format!(
        "<!-- rtvirt plan, emit libvirt: the settings of guest {}, core {}. Merge them into the guest's\n     \
         domain (rtvirt plan, emit libvirt, with the guest's domain XML does it) and install the\n     \
         hook script qemu (docs/plan.md). The hook gives vCPU 0 its SCHED_DEADLINE reservation. <hugepages/>\n     \
         needs huge pages reserved on the host (e.g. hugepagesz=1G hugepages=N). -->\n",
        xml::comment(&g.name),
        t.core
    );
    let skeleton = format!(
        "{head}<domain type=\"kvm\">\n  <name>{}</name>\n  <vcpu placement=\"static\">{}</vcpu>\n  \
         <iothreads>1</iothreads>\n</domain>\n",
        xml::escape(&g.name),
        g.vcpus.len().max(1)
    );
    Ok(patch(&skeleton, t)?.0)
}

/// The guest a user's domain file is for (by its `<name>`), and the file patched; a warning for
/// each of its settings the plan contradicts (located in the file).
fn patch_user_domain(
    scenario: &Scenario,
    plan: &Plan,
    d: &DomainFile,
    warnings: &mut Vec<String>,
) -> Result<(String, String), InputError> {
    let doc = parse(d.text).map_err(|e| e.in_file(d.path))?;
    let at = |node: roxmltree::Node, message: String| at_node(d.text, node, message).in_file(d.path);
    let name_node = domain(&doc)
        .map_err(|e| e.in_file(d.path))?
        .children()
        .find(|n| n.has_tag_name("name"))
        .ok_or_else(|| at(doc.root_element(), "the <domain> has no <name>: expected the guest's name".into()))?;
    let name = name_node.text().unwrap_or("").trim().to_string();
    let Some((guest, core)) = placed(plan).find(|(g, _)| g.name == name) else {
        let names: Vec<String> = placed(plan).map(|(g, _)| comment_word(&g.name)).collect();
        return Err(at(
            name_node,
            format!("domain {} is not a guest of the plan (guests: {})", comment_word(&name), names.join(", ")),
        ));
    };
    let (text, contradicted) = patch(d.text, &tune(scenario, plan, guest, core)).map_err(|e| e.in_file(d.path))?;
    warnings.extend(contradicted.into_iter().map(|w| w.in_file(d.path).to_string()));
    Ok((name, text))
}

fn parse(text: &str) -> Result<roxmltree::Document<'_>, InputError> {
    roxmltree::Document::parse(text).map_err(|e| {
        let pos = e.pos();
        InputError::new(format!("not well-formed XML: {e}")).at_line(pos.row as usize, pos.col as usize)
    })
}

fn at_node(text: &str, node: roxmltree::Node, message: String) -> InputError {
    let (line, col) = line_col(text, node.range().start);
    InputError::new(message).at_line(line, col)
}

/// The root `<domain>` element.
fn domain<'a, 'input>(doc: &'a roxmltree::Document<'input>) -> Result<roxmltree::Node<'a, 'input>, InputError> {
    let root = doc.root_element();
    if !root.has_tag_name("domain") {
        return Err(at_node(
            doc.input_text(),
            root,
            format!("<{}>: expected a libvirt domain (<domain type=...>)", root.tag_name().name()),
        ));
    }
    Ok(root)
}

/// `text` (a domain document) with rtvirt's settings for `t`, and the settings it had that the
/// plan contradicts (located warnings).
fn patch(text: &str, t: &Tune) -> Result<(String, Vec<InputError>), InputError> {
    let doc = parse(text)?;
    let root = domain(&doc)?;
    let child = |name: &str| root.children().find(|n| n.has_tag_name(name));
    let vcpus = match child("vcpu") {
        None => 1,
        Some(n) => count(text, n, "vcpu", MAX_DOMAIN_VCPUS, "the number of vCPUs")?,
    };
    if t.guest.vcpus.len() > vcpus as usize {
        let at = child("vcpu").unwrap_or(root);
        return Err(at_node(
            text,
            at,
            format!(
                "the domain has {vcpus} vCPUs, the plan {} for this guest: expected <vcpu> {}",
                t.guest.vcpus.len(),
                t.guest.vcpus.len()
            ),
        ));
    }
    let iothreads = iothread_ids(text, root)?;
    let mut edits = Vec::new();
    let mut warnings = Vec::new();
    let tune_children = cputune_children(t, vcpus, &iothreads);
    match child("cputune") {
        Some(cputune) => {
            for old in cputune.children().filter(|n| REPLACED.iter().any(|r| n.has_tag_name(*r))) {
                warnings.extend(contradicted_pin(text, old, t)?);
                edits.push(removal(text, old));
            }
            edits.push(append(text, cputune, &tune_children));
        }
        None => edits.push(append(text, root, &[container(text, root, "cputune", &tune_children)])),
    }
    match child("memoryBacking") {
        Some(backing) => {
            let missing: Vec<String> = MEMORY_BACKING
                .iter()
                .filter(|m| !backing.children().any(|n| n.has_tag_name(**m)))
                .map(|m| empty_element(m, &[]))
                .collect();
            if !missing.is_empty() {
                edits.push(append(text, backing, &missing));
            }
        }
        None => {
            let children: Vec<String> = MEMORY_BACKING.iter().map(|m| empty_element(m, &[])).collect();
            edits.push(append(text, root, &[container(text, root, "memoryBacking", &children)]));
        }
    }
    match child("features") {
        Some(features) => {
            for old in features.children().filter(|n| n.has_tag_name("pmu")) {
                if old.attribute("state") != Some("off") {
                    let state = old.attribute("state").unwrap_or("");
                    warnings.push(at_node(
                        text,
                        old,
                        format!(
                            "<pmu state={state:?}> is replaced by <pmu state='off'/>: no virtual PMU in an RT guest"
                        ),
                    ));
                }
                edits.push(removal(text, old));
            }
            edits.push(append(text, features, &[pmu_off()]));
        }
        None => edits.push(append(text, root, &[container(text, root, "features", &[pmu_off()])])),
    }
    let patched = apply(text, edits);
    parse(&patched)
        .map_err(|e| InputError::new(format!("rtvirt wrote an ill-formed domain (a bug): {}", e.message)))?;
    Ok((patched, warnings))
}

/// A warning when the user's pin `node` (`vcpupin`, `emulatorpin`, `iothreadpin`) lets its
/// threads run on a CPU the plan does not give them; an error when it is not a pin libvirt reads.
fn contradicted_pin(text: &str, node: roxmltree::Node, t: &Tune) -> Result<Option<InputError>, InputError> {
    let name = node.tag_name().name();
    if name == "vcpusched" {
        return Ok(None);
    }
    let value = node.attribute("cpuset").unwrap_or("");
    let Some(cpus) = cpuset(value) else {
        let message = format!(
            "<{name} cpuset={value:?}>: expected a libvirt CPU list of CPUs below {MAX_CORES} (e.g. \"1-3,^2,6\")"
        );
        return Err(at_node(text, node, message));
    };
    let number = |attribute: &str| {
        node.attribute(attribute).and_then(|v| v.trim().parse::<u32>().ok()).ok_or_else(|| {
            let message =
                format!("<{name}> without a numeric {attribute}: expected <{name} {attribute}='N' cpuset=...>");
            at_node(text, node, message)
        })
    };
    let (element, planned, what) = match name {
        "vcpupin" => {
            let id = number("vcpu")?;
            let core = t.guest.vcpu_plans().iter().find(|v| v.id == id).and_then(|v| v.core);
            let planned = core.map_or_else(|| t.housekeeping.clone(), |c| c.to_string());
            (format!("<vcpupin vcpu='{id}' cpuset='{value}'>"), planned, format!("vCPU {id}"))
        }
        "emulatorpin" => {
            (format!("<emulatorpin cpuset='{value}'>"), t.housekeeping.clone(), "the emulator threads".into())
        }
        _ => {
            let id = number("iothread")?;
            (
                format!("<iothreadpin iothread='{id}' cpuset='{value}'>"),
                t.housekeeping.clone(),
                "the I/O threads".into(),
            )
        }
    };
    if cpuset(&planned).is_some_and(|p| cpus.is_subset(&p)) {
        return Ok(None);
    }
    let cpu = if planned.contains(',') { "CPUs" } else { "CPU" };
    Ok(Some(at_node(
        text,
        node,
        format!("{element} contradicts the plan, which puts {what} on {cpu} {planned}: replaced"),
    )))
}

/// A libvirt cpuset (`0-3,^2,6`: CPUs, ranges, `^N` excluded) as its CPUs; None when it is not
/// one or names a CPU at or above [`MAX_CORES`].
fn cpuset(value: &str) -> Option<BTreeSet<u32>> {
    let cpu = |s: &str| s.trim().parse::<u32>().ok().filter(|&c| c < MAX_CORES);
    let (mut set, mut excluded) = (BTreeSet::new(), BTreeSet::new());
    for part in value.split(',').map(str::trim) {
        if let Some(n) = part.strip_prefix('^') {
            excluded.insert(cpu(n)?);
        } else if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (cpu(a)?, cpu(b)?);
            if a > b {
                return None;
            }
            set.extend(a..=b);
        } else {
            set.insert(cpu(part)?);
        }
    }
    Some(set.difference(&excluded).copied().collect())
}

/// The domain's I/O thread ids: `<iothreadids><iothread id=N/>`, else 1..=`<iothreads>`.
fn iothread_ids(text: &str, root: roxmltree::Node) -> Result<Vec<u32>, InputError> {
    if let Some(ids) = root.children().find(|n| n.has_tag_name("iothreadids")) {
        let threads: Vec<roxmltree::Node> = ids.children().filter(|n| n.has_tag_name("iothread")).collect();
        if let Some(n) = threads.get(MAX_DOMAIN_IOTHREADS as usize) {
            return Err(at_node(
                text,
                *n,
                format!("more than {MAX_DOMAIN_IOTHREADS} <iothread>s: expected at most that"),
            ));
        }
        return threads
            .into_iter()
            .map(|n| {
                n.attribute("id").and_then(|v| v.trim().parse::<u32>().ok()).ok_or_else(|| {
                    at_node(text, n, "<iothread> without a numeric id: expected <iothread id=\"N\"/>".into())
                })
            })
            .collect();
    }
    let Some(n) = root.children().find(|n| n.has_tag_name("iothreads")) else { return Ok(Vec::new()) };
    if n.text().unwrap_or("").trim() == "0" {
        return Ok(Vec::new());
    }
    Ok((1..=count(text, n, "iothreads", MAX_DOMAIN_IOTHREADS, "the number of I/O threads")?).collect())
}

/// The count in element `n` (`<name>N</name>`): 1 to `max`, else an error at the element.
fn count(text: &str, n: roxmltree::Node, name: &str, max: u32, what: &str) -> Result<u32, InputError> {
    let value = n.text().unwrap_or("");
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|v| (1..=max).contains(v))
        .ok_or_else(|| at_node(text, n, format!("<{name}>{value}</{name}>: expected {what}, 1 to {max}")))
}

/// Replace `range` of the text by `with`.
struct Edit {
    range: Range<usize>,
    with: String,
}

/// All edits applied, last first. They never overlap; at one position a removal goes first, and
/// insertions keep the order they were made in.
fn apply(text: &str, edits: Vec<Edit>) -> String {
    let mut ordered: Vec<(usize, Edit)> = edits.into_iter().enumerate().collect();
    ordered.sort_by_key(|(order, e)| std::cmp::Reverse((e.range.start, e.range.end, *order)));
    let mut out = text.to_string();
    for (_, e) in ordered {
        out.replace_range(e.range, &e.with);
    }
    out
}

/// Removes `node` with the whitespace before it.
fn removal(text: &str, node: roxmltree::Node) -> Edit {
    let start = text[..node.range().start].trim_end_matches(|c: char| c.is_ascii_whitespace()).len();
    Edit { range: start..node.range().end, with: String::new() }
}

/// The whitespace that starts the line of `node`, when only whitespace precedes it there.
fn indent_of(text: &str, node: roxmltree::Node) -> String {
    let line = text[..node.range().start].rsplit('\n').next().unwrap_or("");
    if line.chars().all(|c| c == ' ' || c == '\t') {
        line.to_string()
    } else {
        String::new()
    }
}

/// Indentation of `parent`'s child elements: as its first one, else the parent's plus two spaces.
fn child_indent(text: &str, parent: roxmltree::Node) -> String {
    match parent.children().find(|n| n.is_element()) {
        Some(first) => indent_of(text, first),
        None => format!("{}  ", indent_of(text, parent)),
    }
}

/// `<name>` holding `children`, each on its own line, indented as a child of `parent`.
fn container(text: &str, parent: roxmltree::Node, name: &str, children: &[String]) -> String {
    let indent = child_indent(text, parent);
    let mut s = format!("<{name}>");
    for c in children {
        let _ = write!(s, "\n{indent}  {c}");
    }
    let _ = write!(s, "\n{indent}</{name}>");
    s
}

/// Inserts `children` into `parent`, after its last child element (or, without one, before its
/// end tag); a self-closing `<parent/>` is written out as `<parent>...</parent>`.
fn append(text: &str, parent: roxmltree::Node, children: &[String]) -> Edit {
    let indent = child_indent(text, parent);
    let range = parent.range();
    let name = parent.tag_name().name();
    let lines: String = children.iter().map(|c| format!("\n{indent}{c}")).collect();
    if text[range.clone()].ends_with("/>") {
        // only elements rtvirt itself writes here (cputune, memoryBacking) have no attributes
        let close = format!("\n{}</{name}>", indent_of(text, parent));
        return Edit { range, with: format!("<{name}>{lines}{close}") };
    }
    let at = match parent.children().rfind(|n| n.is_element()) {
        Some(last) => last.range().end,
        None => range.start + text[range.clone()].rfind("</").unwrap_or(range.len()),
    };
    let tail = if parent.children().any(|n| n.is_element()) {
        String::new()
    } else {
        format!("\n{}", indent_of(text, parent))
    };
    Edit { range: at..at, with: format!("{lines}{tail}") }
}

/// The hook script: `rtvirt host apply` when a planned domain has started, `rtvirt host revert`
/// when it is released.
fn hook(plan: &Plan) -> Result<String, InputError> {
    let plan_json = serde_json::to_string(plan).map_err(|e| InputError::new(format!("the plan as JSON: {e}")))?;
    let mut s = String::new();
    let _ = write!(s, "{HOOK_HEAD}");
    let _ = writeln!(s, "STATE=${{RTVIRT_HOOK_STATE:-{HOOK_STATE_DIR}}}   # the plan and a journal per domain\n");
    let _ = writeln!(s, "write_plan() {{\n    mkdir -p \"$STATE\" && cat > \"$STATE/plan.json\" <<'RTVIRT_PLAN'");
    let _ = writeln!(s, "{plan_json}\nRTVIRT_PLAN\n}}");
    s.push_str(HOOK_BODY);
    let _ = writeln!(s, "case $1 in");
    for (i, (g, core)) in placed(plan).enumerate() {
        let word = shell_word(&g.name, || guest_field(plan, g))?;
        if g.vcpus.is_empty() {
            let _ = writeln!(
                s,
                "    # guest {}: core {core}\n    {word}) guest={i} vcpu=,vcpu=0 ;;",
                comment_word(&g.name)
            );
        } else {
            let _ = writeln!(
                s,
                "    # guest {}: {} vCPUs, each reserved vCPU on its planned core\n    {word}) guest={i} vcpu= ;;",
                comment_word(&g.name),
                g.vcpus.len()
            );
        }
    }
    let _ = writeln!(s, "    *) exit 0 ;;\nesac");
    let _ = writeln!(
        s,
        "case $2 in\n    started) reserve \"$guest\" \"$1\" \"$vcpu\" ;;\n    release) release \"$guest\" ;;\nesac"
    );
    Ok(s)
}

/// The hook's header and settings (constant text).
const HOOK_HEAD: &str = r#"#!/bin/sh
# rtvirt plan --emit libvirt: libvirt qemu hook. Install as /etc/libvirt/hooks/qemu (or, libvirt >= 6.5,
# /etc/libvirt/hooks/qemu.d/rtvirt), executable, then restart libvirtd (it reads hooks at start).
# libvirt has no SCHED_DEADLINE policy: when a planned domain has started, this runs
# `rtvirt host apply` on the plan below for the domain's planned vCPUs (found by the QEMU -name
# libvirt gives it; admission-tested and journaled in $STATE/guest<N>), and when it is released,
# `rtvirt host revert` puts the host back. libvirt calls: qemu DOMAIN OPERATION SUB-OPERATION -
# (the domain XML on stdin). Messages go to libvirtd's log.
set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RTVIRT=${RTVIRT:-rtvirt}   # the rtvirt binary: edit if it is not on this PATH
"#;

/// The hook's functions and operation filter (constant text).
const HOOK_BODY: &str = r#"
say() { printf 'rtvirt hook: %s\n' "$*" >&2; }
# reserve INDEX DOMAIN VCPU: the plan's reservations for the domain (VCPU ",vcpu=0": vCPU 0 only;
# empty: every vCPU the plan reserves)
reserve() {
    write_plan || { say "cannot write $STATE/plan.json"; exit 1; }
    timeout 60 "$RTVIRT" host apply "$STATE/plan.json" "--vm=$2$3" --state-dir "$STATE/guest$1" ||
        { say "rtvirt host apply failed for domain $2 (see above)"; exit 1; }
}
# release INDEX: undo what reserve did
release() {
    [ -d "$STATE/guest$1" ] || exit 0
    timeout 60 "$RTVIRT" host revert --state-dir "$STATE/guest$1" ||
        { say "rtvirt host revert failed for guest $1 (journal in $STATE/guest$1)"; exit 1; }
}
[ "$#" -ge 2 ] || exit 0
case $2 in started | release) ;; *) exit 0 ;; esac
"#;

#[cfg(test)]
mod tests {
    use super::cpuset;

    #[test]
    fn libvirt_cpusets_are_read_as_libvirt_reads_them() {
        assert_eq!(cpuset("0-3,^2, 6").unwrap().into_iter().collect::<Vec<_>>(), [0, 1, 3, 6]);
        assert_eq!(cpuset("5").unwrap().into_iter().collect::<Vec<_>>(), [5]);
        let too_high = rtvirt_model::scenario::MAX_CORES.to_string();
        for bad in ["", "1,,2", "3-1", "a", "^1-2", too_high.as_str(), "0-99999999"] {
            assert!(cpuset(bad).is_none(), "{bad:?}");
        }
    }
}
