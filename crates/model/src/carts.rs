//! CARTS XML input -> [`Scenario`] (`rtvirt plan --import-carts FILE.xml`).
//!
//! CARTS (the Compositional Analysis of Real-Time Systems tool of Phan, Lee, Easwaran et al.)
//! reads a `<system os_scheduler min_period max_period>` of `<component name scheduler
//! min_period max_period>`s, each holding `<task name p d e>`s (period, deadline, execution
//! time). Times are read as milliseconds (decimals allowed, exact to the nanosecond). A component
//! becomes a guest (`EDF` -> edf; `DM`, `RM`, `FP` -> fp with deadline-monotonic priorities),
//! `min_period` / `max_period` a server-period scan with a 1 ms step (the system's range when the
//! component has none; "0" = not set, as CARTS writes it); the system's `os_scheduler` (EDF, DM,
//! RM) is recorded in the description (rtvirt composes under EDF); the host gets one core per component
//! (the plan reports how many it uses; `--cores` overrides). The document is translated to the
//! scenario TOML and validated by the same rules, with errors pointing at the XML line.
//!
//! Linear in the size of the file: roxmltree checks an element's attributes for duplicates
//! pairwise (quadratic: 100,000 attributes took 25 s), so a streaming pass with quick-xml first
//! refuses any element with more than [`MAX_ATTRIBUTES`] attributes (a CARTS element has at most
//! five), with its line and column.

use crate::duration::Nanos;
use crate::error::{InputError, Location};
use crate::scenario::Scenario;
use std::fmt::Write;
use std::path::Path;

type R<T> = Result<T, InputError>;

/// Read a CARTS XML file as a scenario.
pub fn from_file(path: &Path) -> R<Scenario> {
    let text = crate::input::read_text(path, crate::input::InputKind::Carts)?;
    from_xml(&text, Some(path))
}

/// Parse CARTS XML text (`file` names it in errors and the scenario).
pub fn from_xml(text: &str, file: Option<&Path>) -> R<Scenario> {
    let in_file = |e: InputError| match file {
        Some(p) => e.in_file(p),
        None => e,
    };
    too_many_attributes(text).map_err(in_file)?;
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let pos = e.pos();
        in_file(InputError::new(format!("not well-formed XML: {e}")).at_line(pos.row as usize, pos.col as usize))
    })?;
    let components = components(&doc).map_err(in_file)?;
    let name = file.and_then(|p| p.file_stem()).map_or("carts".to_string(), |s| s.to_string_lossy().into_owned());
    let toml = to_toml(&name, doc.root_element(), &components);
    let mut s = Scenario::from_toml(&toml, None).map_err(|e| in_file(relocate(&doc, &components, e)))?;
    s.source = crate::source::Source::file_only(file);
    Ok(s)
}

/// Most attributes an element of a CARTS file may have (it uses at most five).
pub const MAX_ATTRIBUTES: usize = 64;

/// The first element with more than [`MAX_ATTRIBUTES`] attributes, as an error at its line, found
/// in one linear pass (quick-xml, without its duplicate check). Malformed XML passes here and is
/// reported by roxmltree, whose messages are the ones users see.
fn too_many_attributes(text: &str) -> R<()> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        let start = reader.buffer_position() as usize;
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => {
                let count = e.attributes().with_checks(false).take(MAX_ATTRIBUTES + 1).count();
                if count > MAX_ATTRIBUTES {
                    let (line, col) = crate::error::line_col(text, start);
                    let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                    return Err(InputError::field(
                        name.clone(),
                        format!("<{name}> has more than {MAX_ATTRIBUTES} attributes: expected the few CARTS defines"),
                    )
                    .at_line(line, col));
                }
            }
            Ok(Event::Eof) | Err(_) => return Ok(()),
            Ok(_) => {}
        }
    }
}

struct Component<'a, 'input> {
    node: roxmltree::Node<'a, 'input>,
    tasks: Vec<roxmltree::Node<'a, 'input>>,
}

fn pos(doc: &roxmltree::Document, node: roxmltree::Node) -> (usize, usize) {
    let p = doc.text_pos_at(node.range().start);
    (p.row as usize, p.col as usize)
}

fn err_at(doc: &roxmltree::Document, node: roxmltree::Node, field: String, msg: impl Into<String>) -> InputError {
    let (l, c) = pos(doc, node);
    InputError::field(field, msg).at_line(l, c)
}

/// Check element names and attributes; every time attribute must parse as milliseconds.
fn components<'a, 'input>(doc: &'a roxmltree::Document<'input>) -> R<Vec<Component<'a, 'input>>> {
    let root = doc.root_element();
    if root.tag_name().name() != "system" {
        return Err(err_at(
            doc,
            root,
            "system".into(),
            format!("root element <{}>: expected <system>", root.tag_name().name()),
        ));
    }
    check_attrs(doc, root, "system", &["os_scheduler", "min_period", "max_period"])?;
    if let Some(s) = root.attribute("os_scheduler") {
        if !["EDF", "DM", "RM", "FP"].contains(&s.to_ascii_uppercase().as_str()) {
            return Err(err_at(
                doc,
                root,
                "system@os_scheduler".into(),
                format!("\"{s}\": expected \"EDF\", \"DM\", \"RM\" or \"FP\""),
            ));
        }
    }
    for a in ["min_period", "max_period"] {
        check_ms(doc, root, "system", a)?;
    }
    let mut out = vec![];
    for (i, c) in root.children().filter(|n| n.is_element()).enumerate() {
        let at = format!("system.component[{i}]");
        if c.tag_name().name() != "component" {
            return Err(err_at(
                doc,
                c,
                at,
                format!("unexpected element <{}>: expected <component>", c.tag_name().name()),
            ));
        }
        check_attrs(doc, c, &at, &["name", "scheduler", "min_period", "max_period", "period"])?;
        for a in ["min_period", "max_period", "period"] {
            check_ms(doc, c, &at, a)?;
        }
        let mut tasks = vec![];
        for (j, t) in c.children().filter(|n| n.is_element()).enumerate() {
            let tat = format!("{at}.task[{j}]");
            if t.tag_name().name() != "task" {
                return Err(err_at(
                    doc,
                    t,
                    tat,
                    format!(
                        "unexpected element <{}> in a component: expected <task> (nested components are not supported)",
                        t.tag_name().name()
                    ),
                ));
            }
            check_attrs(doc, t, &tat, &["name", "p", "d", "e"])?;
            for (a, what) in [("p", "period"), ("e", "execution time (WCET)")] {
                if t.attribute(a).is_none() {
                    return Err(err_at(
                        doc,
                        t,
                        format!("{tat}@{a}"),
                        format!("missing attribute `{a}`: expected the task's {what} in milliseconds"),
                    ));
                }
            }
            for a in ["p", "d", "e"] {
                check_ms(doc, t, &tat, a)?;
            }
            tasks.push(t);
        }
        if tasks.is_empty() {
            return Err(err_at(
                doc,
                c,
                at,
                "no <task>: expected at least one task in a component (its interface is planned for its tasks)",
            ));
        }
        out.push(Component { node: c, tasks });
    }
    if out.is_empty() {
        return Err(err_at(doc, root, "system".into(), "no <component>: expected at least one"));
    }
    Ok(out)
}

fn check_attrs(doc: &roxmltree::Document, node: roxmltree::Node, at: &str, allowed: &[&str]) -> R<()> {
    match node.attributes().find(|a| !allowed.contains(&a.name())) {
        Some(a) => Err(err_at(
            doc,
            node,
            format!("{at}@{}", a.name()),
            format!("unknown attribute `{}` (expected: {})", a.name(), allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn ms(value: &str) -> Result<Nanos, String> {
    Nanos::parse(&format!("{}ms", value.trim()))
        .map_err(|_| format!("\"{value}\": expected a non-negative number of milliseconds"))
}

fn check_ms(doc: &roxmltree::Document, node: roxmltree::Node, at: &str, attr: &str) -> R<()> {
    match node.attribute(attr).map(ms) {
        Some(Err(m)) => Err(err_at(doc, node, format!("{at}@{attr}"), m)),
        _ => Ok(()),
    }
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn duration(value: &str) -> String {
    quoted(&format!("{}ns", ms(value).map_or(0, |n| n.0)))
}

/// A `min_period` / `max_period` pair that asks for a scan (CARTS writes "0" for "not set").
fn period_range<'a>(node: roxmltree::Node<'a, '_>) -> Option<(&'a str, &'a str)> {
    let set = |a: &str| node.attribute(a).filter(|v| ms(v).is_ok_and(|d| d.0 > 0));
    match (node.attribute("min_period"), set("max_period")) {
        (Some(lo), Some(hi)) => Some((if set("min_period").is_some() { lo } else { "1" }, hi)),
        _ => None,
    }
}

/// The scenario TOML equivalent of the components. A component without its own period range
/// takes the `<system>`'s; the system's `os_scheduler` (how CARTS composes the components'
/// interfaces) is noted in the description: rtvirt places every server under EDF
/// (SCHED_DEADLINE), whose exact admission test it applies per core.
fn to_toml(name: &str, root: roxmltree::Node, comps: &[Component]) -> String {
    let mut s = String::new();
    let os = root.attribute("os_scheduler").unwrap_or("EDF").to_ascii_uppercase();
    let note = format!(
        "imported from CARTS (os_scheduler {os}; rtvirt schedules the component servers by EDF, SCHED_DEADLINE)"
    );
    let _ = writeln!(s, "name = {}\ndescription = {}\n[host]\ncores = {}", quoted(name), quoted(&note), comps.len());
    for c in comps {
        let n = c.node;
        let sched = match n.attribute("scheduler").map(str::to_ascii_uppercase).as_deref() {
            Some("DM" | "RM" | "FP") => "fp".to_string(),
            Some("EDF") | None => "edf".to_string(),
            Some(other) => other.to_string(), // rejected by validation, located by `relocate`
        };
        let _ = writeln!(
            s,
            "[[guest]]\nname = {}\nscheduler = {}",
            quoted(n.attribute("name").unwrap_or("")),
            quoted(&sched)
        );
        match (n.attribute("period"), period_range(n).or_else(|| period_range(root))) {
            (Some(p), _) => {
                let _ = writeln!(s, "server_periods = [{}]", duration(p));
            }
            (None, Some((lo, hi))) => {
                let _ = writeln!(
                    s,
                    "server_periods = {{ min = {}, max = {}, step = \"1ms\" }}",
                    duration(lo),
                    duration(hi)
                );
            }
            _ => {}
        }
        for t in &c.tasks {
            let _ = writeln!(
                s,
                "[[guest.task]]\nname = {}\nperiod = {}",
                quoted(t.attribute("name").unwrap_or("")),
                duration(t.attribute("p").unwrap_or("0"))
            );
            if let Some(d) = t.attribute("d") {
                let _ = writeln!(s, "deadline = {}", duration(d));
            }
            let _ = writeln!(s, "wcet = {}", duration(t.attribute("e").unwrap_or("0")));
        }
    }
    s
}

/// Map an error about the generated TOML (`guest[i].task[j].wcet`) back to the XML element and
/// attribute (`system.component[i].task[j]@e`, its line and column).
fn relocate(doc: &roxmltree::Document, comps: &[Component], error: InputError) -> InputError {
    let field = error.at.field.clone().unwrap_or_default();
    let index = |key: &str| -> Option<usize> {
        let rest = &field[field.find(&format!("{key}["))? + key.len() + 1..];
        rest[..rest.find(']')?].parse().ok()
    };
    let attr = |f: &str| {
        match f.rsplit('.').next().unwrap_or("") {
            "period" => "p",
            "deadline" => "d",
            "wcet" => "e",
            "server_periods" | "min" | "max" | "step" => "min_period",
            other => other,
        }
        .to_string()
    };
    let (node, path) = match (index("guest").and_then(|i| comps.get(i).map(|c| (i, c))), index("task")) {
        (Some((i, c)), Some(j)) if j < c.tasks.len() => {
            (c.tasks[j], format!("system.component[{i}].task[{j}]@{}", attr(&field)))
        }
        (Some((i, c)), _) => (c.node, format!("system.component[{i}]@{}", attr(&field))),
        _ => (doc.root_element(), "system".to_string()),
    };
    let (l, c) = pos(doc, node);
    InputError { at: Location { file: None, line_col: Some((l, c)), field: Some(path) }, message: error.message }
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<?xml version="1.0"?>
<system os_scheduler="EDF">
  <component name="c1" scheduler="EDF" min_period="1" max_period="5">
    <task name="t1" p="10" d="10" e="1.5"/>
    <task name="t2" p="20" e="0.25"/>
  </component>
  <component name="c2" scheduler="DM">
    <task name="a" p="5" d="4" e="1"/>
  </component>
</system>"#;

    #[test]
    fn imports_components_as_guests() {
        let s = from_xml(XML, None).unwrap();
        assert_eq!(s.host.cores, 2);
        assert_eq!(s.guests.len(), 2);
        let g = &s.guests[0];
        assert_eq!(g.tasks[0].wcet, Nanos(1_500_000));
        assert_eq!(g.tasks[1].deadline, Nanos(20_000_000));
        assert_eq!(g.server_periods.candidates(&g.tasks).len(), 5);
        assert_eq!(s.guests[1].scheduler, crate::scenario::GuestScheduler::Fp);
        assert_eq!(s.guests[1].tasks[0].deadline, Nanos(4_000_000));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(s in "\\PC*") {
            let _ = from_xml(&s, None);
        }

        #[test]
        fn never_panics_on_mutated_documents(pos in 0usize..400, junk in "[<>/=\"a-z0-9. -]{0,12}") {
            let mut x = XML.to_string();
            let p = pos.min(x.len());
            if x.is_char_boundary(p) {
                x.insert_str(p, &junk);
                let _ = from_xml(&x, None);
            }
        }
    }

    /// As CARTS users write it: period range and DM on `<system>`, "0" = not set, `<task></task>`.
    const CARTS_STYLE: &str = r#"<system os_scheduler="DM" min_period="2" max_period="6">
  <component name="c1" scheduler="DM" min_period="0" max_period="0">
    <task name="t1" p="30.0" d="30.0" e="5.0"></task>
    <task name="t2" p="50.0" d="50.0" e="2.0"></task>
  </component>
  <component name="c2" scheduler="EDF" min_period="1" max_period="3">
    <task name="t4" p="100.0" d="100.0" e="10.0"></task>
  </component>
</system>"#;

    #[test]
    fn imports_carts_files_as_carts_users_write_them() {
        let s = from_xml(CARTS_STYLE, None).unwrap();
        let periods = |g: usize| s.guests[g].server_periods.candidates(&s.guests[g].tasks);
        assert_eq!(periods(0), (2..=6).map(Nanos::from_ms).collect::<Vec<_>>(), "the system's range");
        assert_eq!(periods(1), (1..=3).map(Nanos::from_ms).collect::<Vec<_>>(), "the component's own range");
        assert_eq!(s.guests[0].scheduler, crate::scenario::GuestScheduler::Fp);
        assert!(s.description.as_deref().unwrap_or("").contains("os_scheduler DM"), "{:?}", s.description);
        // "0" everywhere: the default scan
        let s = from_xml(
            &CARTS_STYLE.replace("min_period=\"2\" max_period=\"6\"", "min_period=\"0\" max_period=\"0\""),
            None,
        )
        .unwrap();
        assert!(matches!(s.guests[0].server_periods, crate::scenario::PeriodChoice::Default));
        let e = from_xml(&CARTS_STYLE.replace("os_scheduler=\"DM\"", "os_scheduler=\"LLF\""), None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("system@os_scheduler"), "{e}");
        let e = from_xml(&CARTS_STYLE.replace("min_period=\"2\"", "min_period=\"x\""), None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("system@min_period"), "{e}");
    }

    #[test]
    fn a_component_without_tasks_is_located_in_the_xml() {
        let xml = CARTS_STYLE.replace("    <task name=\"t4\" p=\"100.0\" d=\"100.0\" e=\"10.0\"></task>\n", "");
        let e = from_xml(&xml, None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("system.component[1]"), "{e}");
        assert_eq!(e.at.line_col.map(|x| x.0), Some(6));
        assert!(e.to_string().contains("no <task>"), "{e}");
    }

    #[test]
    fn an_element_with_too_many_attributes_is_refused_at_its_line() {
        let attrs: String = (0..100_000).map(|i| format!(" a{i}=\"{i}\"")).collect();
        let xml = format!("<system>\n  <component name=\"c\"{attrs}>\n<task p=\"1\" e=\"1\"/></component></system>");
        let e = from_xml(&xml, None).unwrap_err();
        assert_eq!(e.at.line_col, Some((2, 3)), "{e}");
        assert!(e.to_string().contains("more than 64 attributes"), "{e}");
        // at the limit (the component has four attributes of its own), the usual error
        let attrs: String = (0..MAX_ATTRIBUTES - 4).map(|i| format!(" a{i}=\"{i}\"")).collect();
        let e = from_xml(&XML.replace("<component name=\"c1\"", &format!("<component name=\"c1\"{attrs}")), None)
            .unwrap_err();
        assert!(e.to_string().contains("unknown attribute `a0`"), "{e}");
    }

    /// Issue 14: a task without `p` or `e` was reported as having a zero period or WCET.
    #[test]
    fn a_task_missing_p_or_e_names_the_missing_attribute() {
        for (attr, field) in
            [("p=\"20\" ", "system.component[0].task[1]@p"), ("e=\"0.25\"", "system.component[0].task[1]@e")]
        {
            let e = from_xml(&XML.replace(attr, ""), None).unwrap_err();
            assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
            assert_eq!(e.at.line_col.map(|x| x.0), Some(5), "{e}");
            assert!(e.message.contains("missing attribute") && !e.message.contains("zero"), "{e}");
        }
    }

    #[test]
    fn errors_point_at_the_xml() {
        let e = from_xml(&XML.replace("e=\"1.5\"", "e=\"15\""), None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("system.component[0].task[0]@e"), "{e}");
        assert_eq!(e.at.line_col.map(|x| x.0), Some(4));
        let e = from_xml(&XML.replace("p=\"20\"", "p=\"-2\""), None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("system.component[0].task[1]@p"), "{e}");
        let e = from_xml(&XML.replace("d=\"4\"", "d=\"4\" x=\"1\""), None).unwrap_err();
        assert!(e.to_string().contains("unknown attribute `x`"), "{e}");
        let e = from_xml("<system><component", None).unwrap_err();
        assert!(e.at.line_col.is_some());
        let e = from_xml(&XML.replace("scheduler=\"DM\"", "scheduler=\"LLF\""), None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("system.component[1]@scheduler"), "{e}");
        assert_eq!(e.at.line_col.map(|x| x.0), Some(7));
    }
}
