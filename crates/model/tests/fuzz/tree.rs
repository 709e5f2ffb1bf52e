//! Structure-aware mutation of TOML and JSON documents: the corpus file is parsed into one tree
//! type, changed there (values, keys, nesting, array lengths) and written back with the `toml` or
//! `serde_json` serializer, so that most cases are well-formed documents that reach the
//! validation rules. Values no serializer can write (u64::MAX in TOML, NaN in JSON, 1e309) are
//! written as raw text through placeholders.

use super::tape::{hostile_duration, hostile_number, hostile_string, Tape};

#[derive(Clone, Debug)]
enum Node {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// Text written verbatim into the document.
    Raw(String),
    Arr(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// The deepest nesting a mutation builds (deeper nesting is left to the raw mutations: the
/// serializers recurse too).
const MAX_WRAP: usize = 200;

pub fn mutate_toml(text: &str, tape: &mut Tape) -> String {
    let Ok(table) = text.parse::<toml::Table>() else { return text.to_string() };
    let mut root = from_toml(toml::Value::Table(table));
    mutate_tree(&mut root, tape);
    let mut raws = Vec::new();
    let value = to_toml(root, &mut raws);
    toml::to_string(&value).map(|s| fill_raws(s, &raws)).unwrap_or_else(|_| text.to_string())
}

pub fn mutate_json(text: &str, tape: &mut Tape) -> String {
    // JSON lines (interval reports before a document): mutate one of the values
    let values: Vec<serde_json::Value> = match serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(v) if !v.is_empty() => v,
        _ => return text.to_string(),
    };
    let mut nodes: Vec<Node> = values.into_iter().map(from_json).collect();
    let which = tape.below(nodes.len());
    mutate_tree(&mut nodes[which], tape);
    let mut raws = Vec::new();
    let pretty = nodes.len() == 1;
    let texts: Vec<String> = nodes
        .into_iter()
        .map(|n| {
            let v = to_json(n, &mut raws);
            if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            }
        })
        .collect();
    fill_raws(texts.join("\n") + "\n", &raws)
}

fn from_toml(v: toml::Value) -> Node {
    match v {
        toml::Value::String(s) => Node::Str(s),
        toml::Value::Integer(i) => Node::Int(i),
        toml::Value::Float(f) => Node::Float(f),
        toml::Value::Boolean(b) => Node::Bool(b),
        toml::Value::Datetime(d) => Node::Raw(d.to_string()),
        toml::Value::Array(a) => Node::Arr(a.into_iter().map(from_toml).collect()),
        toml::Value::Table(t) => Node::Map(t.into_iter().map(|(k, v)| (k, from_toml(v))).collect()),
    }
}

fn to_toml(n: Node, raws: &mut Vec<String>) -> toml::Value {
    match n {
        Node::Bool(b) => toml::Value::Boolean(b),
        Node::Int(i) => toml::Value::Integer(i),
        Node::Float(f) => toml::Value::Float(f),
        Node::Str(s) => toml::Value::String(s),
        Node::Raw(r) => toml::Value::String(placeholder(r, raws)),
        Node::Arr(a) => toml::Value::Array(a.into_iter().map(|n| to_toml(n, raws)).collect()),
        Node::Map(m) => toml::Value::Table(m.into_iter().map(|(k, v)| (k, to_toml(v, raws))).collect()),
    }
}

fn from_json(v: serde_json::Value) -> Node {
    match v {
        serde_json::Value::Null => Node::Raw("null".into()),
        serde_json::Value::Bool(b) => Node::Bool(b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Node::Int(i),
            (None, Some(f)) if n.is_f64() => Node::Float(f),
            _ => Node::Raw(n.to_string()),
        },
        serde_json::Value::String(s) => Node::Str(s),
        serde_json::Value::Array(a) => Node::Arr(a.into_iter().map(from_json).collect()),
        serde_json::Value::Object(m) => Node::Map(m.into_iter().map(|(k, v)| (k, from_json(v))).collect()),
    }
}

fn to_json(n: Node, raws: &mut Vec<String>) -> serde_json::Value {
    match n {
        Node::Bool(b) => b.into(),
        Node::Int(i) => i.into(),
        Node::Float(f) if f.is_finite() => f.into(),
        Node::Float(f) => serde_json::Value::String(placeholder(format!("{f}"), raws)),
        Node::Str(s) => s.into(),
        Node::Raw(r) => serde_json::Value::String(placeholder(r, raws)),
        Node::Arr(a) => a.into_iter().map(|n| to_json(n, raws)).collect(),
        Node::Map(m) => serde_json::Value::Object(m.into_iter().map(|(k, v)| (k, to_json(v, raws))).collect()),
    }
}

fn placeholder(raw: String, raws: &mut Vec<String>) -> String {
    raws.push(raw);
    format!("@@raw{}@@", raws.len() - 1)
}

/// Replace the quoted placeholders by their raw text.
fn fill_raws(mut text: String, raws: &[String]) -> String {
    for (i, r) in raws.iter().enumerate().rev() {
        for quote in ['"', '\''] {
            text = text.replace(&format!("{quote}@@raw{i}@@{quote}"), r);
        }
    }
    text
}

// ---- mutations ----

fn mutate_tree(root: &mut Node, tape: &mut Tape) {
    let keys = all_keys(root);
    let rounds = 1 + tape.below(4);
    for _ in 0..rounds {
        let paths = all_paths(root);
        let path = paths[tape.below(paths.len())].clone();
        let donor = node_at(root, &paths[tape.below(paths.len())]).clone();
        mutate_at(root, &path, &keys, donor, tape);
    }
}

fn mutate_at(root: &mut Node, path: &[usize], keys: &[String], donor: Node, tape: &mut Tape) {
    match tape.below(9) {
        0 => *node_at_mut(root, path) = hostile_scalar(tape),
        1 => edge_value(node_at_mut(root, path), tape),
        2 => remove(root, path),
        3 => add_entry(node_at_mut(root, path), keys, donor, tape),
        4 => repeat_element(root, path, tape),
        5 => rename_key(root, path, keys, tape),
        6 => {
            let depth = *tape.pick(&[1usize, 2, 16, MAX_WRAP]);
            let as_table = tape.below(2) == 0;
            let node = node_at_mut(root, path);
            for _ in 0..depth {
                let inner = std::mem::replace(node, Node::Bool(false));
                *node = if as_table { Node::Map(vec![("x".into(), inner)]) } else { Node::Arr(vec![inner]) };
            }
        }
        7 => *node_at_mut(root, path) = donor,
        _ => {
            let node = node_at_mut(root, path);
            *node = match tape.below(3) {
                0 => Node::Arr(vec![]),
                1 => Node::Map(vec![]),
                _ => Node::Arr(vec![node.clone(), node.clone()]),
            }
        }
    }
}

/// A boundary or hostile value of any type.
fn hostile_scalar(tape: &mut Tape) -> Node {
    match tape.below(6) {
        0 => Node::Raw(hostile_number(tape)),
        1 => Node::Str(hostile_duration(tape)),
        2 => Node::Str(hostile_string(tape)),
        3 => Node::Bool(tape.below(2) == 0),
        4 => Node::Int(*tape.pick(&[0, 1, -1, i64::MAX, i64::MIN, 4096, 65_536])),
        _ => Node::Float(*tape.pick(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1e308, 5e-324, 0.5, 1.0])),
    }
}

/// The value pushed to its edges, keeping its type where it has one.
fn edge_value(node: &mut Node, tape: &mut Tape) {
    *node = match node {
        Node::Int(_) => Node::Raw(hostile_number(tape)),
        Node::Float(_) => match tape.below(2) {
            0 => Node::Float(*tape.pick(&[
                f64::NAN,
                f64::INFINITY,
                0.0,
                -0.0,
                1e308,
                5e-324,
                0.999_999_999,
                1.000_000_001,
            ])),
            _ => Node::Raw(hostile_number(tape)),
        },
        Node::Str(s) if s.starts_with(|c: char| c.is_ascii_digit()) => Node::Str(hostile_duration(tape)),
        Node::Str(s) => match tape.below(3) {
            0 => Node::Str(hostile_string(tape)),
            1 => Node::Str(s.to_uppercase()),
            _ => Node::Str(format!("{s}{}", hostile_string(tape))),
        },
        Node::Bool(b) => Node::Str(b.to_string()),
        _ => hostile_scalar(tape),
    }
}

fn add_entry(node: &mut Node, keys: &[String], donor: Node, tape: &mut Tape) {
    match node {
        Node::Map(m) => {
            let key = match tape.below(3) {
                0 if !keys.is_empty() => tape.pick(keys).clone(),
                1 => hostile_string(tape).chars().take(64).collect(),
                _ => "unexpected_field".into(),
            };
            let value = if tape.below(2) == 0 { donor } else { hostile_scalar(tape) };
            m.push((key, value));
        }
        Node::Arr(a) => a.push(if tape.below(2) == 0 { donor } else { hostile_scalar(tape) }),
        _ => {}
    }
}

/// Push copies of the element at `path` into its array (up to 10,000 elements).
fn repeat_element(root: &mut Node, path: &[usize], tape: &mut Tape) {
    let Some((last, parent)) = path.split_last() else { return };
    let times = *tape.pick(&[1usize, 2, 3, 10, 100, 1_000, 10_000]);
    if let Node::Arr(a) = node_at_mut(root, parent) {
        let copy = a[*last].clone();
        let size = format!("{copy:?}").len().max(1);
        a.extend(std::iter::repeat_n(copy, times.min((1 << 20) / size).max(1)));
    }
}

fn rename_key(root: &mut Node, path: &[usize], keys: &[String], tape: &mut Tape) {
    let Some((last, parent)) = path.split_last() else { return };
    if let Node::Map(m) = node_at_mut(root, parent) {
        let key = &mut m[*last].0;
        *key = match tape.below(4) {
            0 if !keys.is_empty() => tape.pick(keys).clone(),
            1 => key.to_uppercase(),
            2 => format!("{key}_"),
            _ => hostile_string(tape).chars().take(64).collect(),
        };
    }
}

fn remove(root: &mut Node, path: &[usize]) {
    let Some((last, parent)) = path.split_last() else { return };
    match node_at_mut(root, parent) {
        Node::Arr(a) => {
            a.remove(*last);
        }
        Node::Map(m) => {
            m.remove(*last);
        }
        _ => {}
    }
}

fn children(n: &Node) -> Vec<&Node> {
    match n {
        Node::Arr(a) => a.iter().collect(),
        Node::Map(m) => m.iter().map(|(_, v)| v).collect(),
        _ => vec![],
    }
}

/// Every node's path (child indices from the root), the root first; at most 4096 paths.
fn all_paths(root: &Node) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    let mut i = 0;
    while i < out.len() && out.len() < 4096 {
        let path = out[i].clone();
        for (k, _) in children(node_at(root, &path)).iter().enumerate() {
            let mut p = path.clone();
            p.push(k);
            out.push(p);
        }
        i += 1;
    }
    out
}

fn all_keys(root: &Node) -> Vec<String> {
    let mut keys = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if let Node::Map(m) = n {
            keys.extend(m.iter().map(|(k, _)| k.clone()));
        }
        stack.extend(children(n));
    }
    keys.sort();
    keys.dedup();
    keys
}

fn node_at<'a>(root: &'a Node, path: &[usize]) -> &'a Node {
    path.iter().fold(root, |n, &i| children(n)[i])
}

fn node_at_mut<'a>(root: &'a mut Node, path: &[usize]) -> &'a mut Node {
    path.iter().fold(root, |n, &i| match n {
        Node::Arr(a) => &mut a[i],
        Node::Map(m) => &mut m[i].1,
        _ => unreachable!("paths only lead through arrays and tables"),
    })
}
