//! Structure-aware mutation of XML (CARTS files): the document is parsed into elements with
//! attributes, changed there (attribute values at their edges, attributes removed, added or
//! duplicated, elements repeated, renamed, removed or nested deep, hostile text, entities and
//! declarations) and written back.

use super::tape::{hostile_number, hostile_string, Tape};

#[derive(Clone, Debug)]
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
    /// Markup written verbatim after the start tag (text, comments, entities).
    raw: String,
}

pub fn mutate(text: &str, tape: &mut Tape) -> String {
    let Ok(doc) = roxmltree::Document::parse(text) else { return text.to_string() };
    let mut root = element(doc.root_element());
    let mut prolog = String::from("<?xml version=\"1.0\"?>\n");
    let rounds = 1 + tape.below(4);
    for _ in 0..rounds {
        let paths = paths(&root);
        let path = paths[tape.below(paths.len())].clone();
        if tape.below(12) == 0 {
            prolog.push_str(tape.pick::<&str>(&[
                "<!DOCTYPE system [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \
                 \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">]>\n",
                "<!DOCTYPE system SYSTEM \"/etc/passwd\">\n",
                "<?xml-stylesheet href=\"x\"?>\n",
                "<!-- comment -->\n",
            ]));
            continue;
        }
        mutate_at(&mut root, &path, tape);
    }
    let mut out = prolog;
    write(&root, &mut out);
    out
}

fn element(node: roxmltree::Node) -> Element {
    Element {
        name: node.tag_name().name().to_string(),
        attributes: node.attributes().map(|a| (a.name().to_string(), a.value().to_string())).collect(),
        children: node.children().filter(|c| c.is_element()).map(element).collect(),
        raw: String::new(),
    }
}

fn mutate_at(root: &mut Element, path: &[usize], tape: &mut Tape) {
    match tape.below(10) {
        0 | 1 => {
            let e = at_mut(root, path);
            if !e.attributes.is_empty() {
                let i = tape.below(e.attributes.len());
                e.attributes[i].1 = attribute_value(tape);
            }
        }
        2 => {
            let e = at_mut(root, path);
            if !e.attributes.is_empty() {
                e.attributes.remove(tape.below(e.attributes.len()));
            }
        }
        3 => {
            let e = at_mut(root, path);
            let name = match tape.below(3) {
                0 if !e.attributes.is_empty() => e.attributes[tape.below(e.attributes.len())].0.clone(),
                1 => (*tape.pick(&["p", "d", "e", "name", "scheduler", "min_period", "max_period", "os_scheduler"]))
                    .into(),
                _ => "unexpected".into(),
            };
            e.attributes.push((name, attribute_value(tape)));
        }
        4 => {
            let Some((last, parent)) = path.split_last() else { return };
            let times = *tape.pick(&[1usize, 2, 3, 10, 100, 1_000, 10_000]);
            let room = MAX_ELEMENTS.saturating_sub(size(root));
            let p = at_mut(root, parent);
            let copy = p.children[*last].clone();
            p.children.extend(std::iter::repeat_n(copy.clone(), times.min(room / size(&copy))));
        }
        5 => {
            let Some((last, parent)) = path.split_last() else { return };
            at_mut(root, parent).children.remove(*last);
        }
        6 => {
            at_mut(root, path).name =
                (*tape.pick(&["system", "component", "task", "Task", "model", "x:task", "a"])).into();
        }
        7 => {
            let depth = (*tape.pick(&[2usize, 100, 1_000])).min(MAX_ELEMENTS.saturating_sub(size(root)));
            let e = at_mut(root, path);
            for _ in 0..depth {
                let inner = std::mem::replace(
                    e,
                    Element { name: String::new(), attributes: vec![], children: vec![], raw: String::new() },
                );
                *e =
                    Element { name: inner.name.clone(), attributes: vec![], children: vec![inner], raw: String::new() };
            }
        }
        8 => {
            at_mut(root, path).raw.push_str(tape.pick::<&str>(&[
                "text",
                "&#10;",
                "&unknown;",
                "&d;",
                "&#0;",
                "<![CDATA[ <task/> ]]>",
                "<!-- c -->",
                "&lt;",
                "\u{0}",
                "]]>",
            ]));
        }
        _ => {
            let e = at_mut(root, path);
            e.children.push(Element {
                name: "task".into(),
                attributes: vec![("name".into(), "t".into()), ("p".into(), attribute_value(tape))],
                children: vec![],
                raw: String::new(),
            });
        }
    }
}

/// A CARTS attribute value at its edges (milliseconds, schedulers, names).
fn attribute_value(tape: &mut Tape) -> String {
    match tape.below(4) {
        0 => hostile_number(tape),
        1 => hostile_string(tape),
        2 => (*tape.pick(&[
            "EDF",
            "DM",
            "RM",
            "FP",
            "edf",
            "",
            "0",
            "0.000001",
            "0.0000000001",
            "3600000",
            "3600001",
            "1e-3",
        ]))
        .into(),
        _ => format!("{}", tape.word() as f64 / 1000.0),
    }
}

fn write(e: &Element, out: &mut String) {
    out.push('<');
    out.push_str(&e.name);
    for (k, v) in &e.attributes {
        out.push_str(&format!(" {k}=\"{}\"", rtvirt_model::xml::escape(v)));
    }
    if e.children.is_empty() && e.raw.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push_str(">\n");
    out.push_str(&e.raw);
    for c in &e.children {
        write(c, out);
    }
    out.push_str(&format!("</{}>\n", e.name));
}

/// Most elements a mutated document holds.
const MAX_ELEMENTS: usize = 10_000;

fn size(e: &Element) -> usize {
    1 + e.children.iter().map(size).sum::<usize>()
}

fn paths(root: &Element) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    let mut i = 0;
    while i < out.len() && out.len() < 4096 {
        let path = out[i].clone();
        for k in 0..at(root, &path).children.len() {
            let mut p = path.clone();
            p.push(k);
            out.push(p);
        }
        i += 1;
    }
    out
}

fn at<'a>(root: &'a Element, path: &[usize]) -> &'a Element {
    path.iter().fold(root, |e, &i| &e.children[i])
}

fn at_mut<'a>(root: &'a mut Element, path: &[usize]) -> &'a mut Element {
    path.iter().fold(root, |e, &i| &mut e.children[i])
}
