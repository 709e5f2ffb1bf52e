//! Hostile strings in real results files (labels, guest and task names, flow names, environment
//! values) come out of the Markdown report as the same literal text, parsed back with a real
//! CommonMark + GitHub tables parser (pulldown-cmark): no HTML, links, images, code, lists,
//! quotes, extra emphasis or headings, and no cell split by a pipe.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use rtvirt_report::{build_report, load_inputs, render, ReportFormat};
use serde_json::Value;
use std::path::{Path, PathBuf};

const HOSTILE: &[&str] = &[
    "<script>alert(1)</script>",
    "a|b|c",
    "**bold** _it_ `code` ~~gone~~",
    "[link](http://example.invalid) ![img](x.png)",
    "&lt;b&gt; &amp; \\| \\*",
    "line1\n# heading\n- item\n> quote",
    "<img src=x onerror=alert(1)>",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A fixture with every user-named field set to one of the hostile strings.
fn hostile_copy(dir: &Path, name: &str, index: usize) -> PathBuf {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
    let pick = |k: usize| Value::from(HOSTILE[(index + k) % HOSTILE.len()]);
    doc["label"] = pick(0);
    for (k, t) in doc.get_mut("tasks").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
        t["guest"] = pick(k + 1);
        t["name"] = pick(k + 2);
    }
    for (k, g) in doc.get_mut("guests").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
        g["name"] = pick(k + 1);
    }
    for (k, f) in doc.get_mut("flows").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
        f["name"] = pick(k + 3);
    }
    if let Some(env) = doc.get_mut("environment").and_then(Value::as_object_mut) {
        env.insert("kernel".into(), pick(4));
        env.insert("cmdline".into(), pick(5));
    }
    let path = dir.join(format!("{index}-{name}"));
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path
}

/// The literal text of each heading, paragraph and table cell, and what else the parser saw.
#[derive(Default)]
struct Parsed {
    texts: Vec<String>,
    forbidden: Vec<String>,
    headings: usize,
    emphasis: usize,
    strong: usize,
}

fn parse(markdown: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut current = String::new();
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) => current.push_str(&t),
            Event::Start(Tag::Heading { .. }) => p.headings += 1,
            Event::Start(Tag::Emphasis) => p.emphasis += 1,
            Event::Start(Tag::Strong) => p.strong += 1,
            Event::End(TagEnd::Heading(_) | TagEnd::Paragraph | TagEnd::TableCell) => {
                p.texts.push(std::mem::take(&mut current))
            }
            Event::Start(
                tag @ (Tag::Link { .. }
                | Tag::Image { .. }
                | Tag::Strikethrough
                | Tag::BlockQuote(_)
                | Tag::List(_)
                | Tag::CodeBlock(_)
                | Tag::HtmlBlock),
            ) => p.forbidden.push(format!("{tag:?}")),
            e @ (Event::Html(_) | Event::InlineHtml(_) | Event::Code(_) | Event::SoftBreak | Event::HardBreak) => {
                p.forbidden.push(format!("{e:?}"))
            }
            _ => {}
        }
    }
    p
}

#[test]
fn hostile_names_from_results_files_are_literal_text_in_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let files = ["sim_rho9.json", "tasks_measured.json", "sim_rho1.json", "timer_load.json", "netsim_vanilla.json"];
    let paths: Vec<PathBuf> = files.iter().enumerate().map(|(i, f)| hostile_copy(dir.path(), f, i)).collect();
    let inputs = load_inputs(&paths).unwrap();
    let report = build_report("<b>title</b> | *x*", &inputs);
    let markdown = render(&report, ReportFormat::Markdown);
    let parsed = parse(&markdown);

    assert!(parsed.forbidden.is_empty(), "markup from the data: {:?}", parsed.forbidden);
    assert_eq!(parsed.headings, 1 + report.sections.len(), "headings: only the title and the sections");
    assert_eq!(parsed.emphasis, report.figures().count(), "emphasis: only the chart lines");
    let marked = report.tables().flat_map(|t| &t.rows).flatten().filter(|c| c.mark != Default::default()).count();
    let leads = report
        .sections
        .iter()
        .flat_map(|s| &s.blocks)
        .filter(|b| matches!(b, rtvirt_report::doc::Block::Lead(_)))
        .count();
    assert_eq!(parsed.strong, marked + report.tables().filter(|t| !t.caption.is_empty()).count() + leads);
    assert!(parsed.texts.iter().any(|t| t == "<b>title</b> | *x*"));
    for hostile in HOSTILE {
        let literal = hostile.replace('\n', " ");
        assert!(parsed.texts.iter().any(|t| t.contains(&literal)), "{literal:?} is not shown literally");
    }
    // Every cell the document holds is one cell of the parsed tables, with its literal text (and
    // its marker when highlighted).
    for cell in report.tables().flat_map(|t| t.rows.iter().flatten()) {
        let literal = cell.text.replace('\n', " ");
        let same =
            |t: &String| [" ▲", " ▼", " ≠"].iter().fold(t.as_str(), |t, m| t.strip_suffix(m).unwrap_or(t)) == literal;
        assert!(parsed.texts.iter().any(same), "cell {literal:?} was changed or split");
    }
}
