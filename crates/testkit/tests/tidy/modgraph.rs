//! The module import graph of one crate, read with `syn` from its root file (`src/lib.rs` or
//! `src/main.rs`) down through every `mod` declaration.
//!
//! Every path a module writes is resolved to the module holding what it names: `use` trees
//! (grouped, renamed, glob), paths in expressions, types and patterns, paths in macro bodies and
//! in attributes (including string paths such as `serialize_with = "super::wire::sorted"`). A path
//! starts at `crate::`, `self::`, `super::`, a child module (`vm::GuestJob` where `mod vm` is
//! declared) or a name the module imports; `use` items (`pub use` re-exports included) are
//! followed, so `crate::Results` counts for the module that defines `Results`. Paths to other
//! crates, doc comments and `#[cfg(test)]` items do not count.
//!
//! Cycles of any length are the strongly connected components of the graph (Tarjan 1972); each is
//! reported with one cycle through it and, per edge, the path that made it.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use syn::visit::{self, Visit};

pub type ModId = Vec<String>;

#[derive(Default)]
struct Module {
    children: BTreeSet<String>,
    /// `use` items: the name they bring in -> the path as written.
    aliases: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    /// Every path written in the module (two segments or more, or a `use` path).
    paths: Vec<Vec<String>>,
}

/// One crate's modules and the edges between them (`from` -> `to` -> the path that made it).
pub struct Graph {
    modules: BTreeMap<ModId, Module>,
    pub edges: BTreeMap<ModId, BTreeMap<ModId, String>>,
}

/// Reads the crate whose root file is `root` (lib.rs or main.rs).
pub fn load(root: &Path) -> Result<Graph, String> {
    let mut modules = BTreeMap::new();
    let mut pending = vec![(Vec::new(), root.to_path_buf(), root.parent().unwrap().to_path_buf())];
    while let Some((id, file, dir)) = pending.pop() {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut c = Collector { modules: &mut modules, stack: vec![(id, dir)], pending: &mut pending };
        c.module();
        c.visit_file(&ast);
    }
    let mut graph = Graph { modules, edges: BTreeMap::new() };
    graph.link();
    Ok(graph)
}

/// The directory holding the children of the module in `file`.
fn child_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") => dir.to_path_buf(),
        Some(stem) => dir.join(stem),
        None => dir.to_path_buf(),
    }
}

struct Collector<'a> {
    modules: &'a mut BTreeMap<ModId, Module>,
    /// The module being read and the directory of its children's files.
    stack: Vec<(ModId, PathBuf)>,
    pending: &'a mut Vec<(ModId, PathBuf, PathBuf)>,
}

impl Collector<'_> {
    fn module(&mut self) -> &mut Module {
        let id = self.stack.last().unwrap().0.clone();
        self.modules.entry(id).or_default()
    }

    fn add_use(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.add_use(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.add_alias(prefix, &n.ident, &n.ident),
            syn::UseTree::Rename(r) => self.add_alias(prefix, &r.ident, &r.rename),
            syn::UseTree::Glob(_) => {
                let m = self.module();
                m.globs.push(prefix.clone());
                m.paths.push(prefix.clone());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.add_use(prefix, t)),
        }
    }

    fn add_alias(&mut self, prefix: &[String], ident: &syn::Ident, name: &syn::Ident) {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        let name = if name == "self" { prefix.last().cloned().unwrap_or_default() } else { name.to_string() };
        let m = self.module();
        if name != "_" {
            m.aliases.insert(name, path.clone());
        }
        m.paths.push(path);
    }

    fn add_tokens(&mut self, tokens: TokenStream) {
        let mut found = Vec::new();
        token_paths(tokens, &mut found);
        self.module().paths.extend(found);
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.to_token_stream().to_string().replace(' ', "") == "cfg(test)")
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => return visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.to_string();
        let (parent, dir) = self.stack.last().unwrap().clone();
        self.module().children.insert(name.clone());
        let mut id = parent;
        id.push(name.clone());
        match &m.content {
            Some((_, items)) => {
                self.stack.push((id, dir.join(&name)));
                self.module();
                items.iter().for_each(|i| self.visit_item(i));
                self.stack.pop();
            }
            None => {
                let flat = dir.join(format!("{name}.rs"));
                let file = if flat.exists() { flat } else { dir.join(&name).join("mod.rs") };
                let children = child_dir(&file);
                self.pending.push((id, file, children));
            }
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_none() {
            self.add_use(&mut Vec::new(), &u.tree);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let path = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.module().paths.push(path);
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.add_tokens(m.tokens.clone());
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        if !a.path().is_ident("doc") {
            self.add_tokens(a.meta.to_token_stream());
        }
    }
}

/// The paths in a token stream: `a::b::c` sequences and string literals that parse as such.
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let colons = |i: usize| {
        matches!((trees.get(i), trees.get(i + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':')
    };
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Ident(id) if i < 2 || !colons(i - 2) => {
                let mut path = vec![id.to_string()];
                while colons(i + 1) {
                    match trees.get(i + 3) {
                        Some(TokenTree::Ident(next)) => path.push(next.to_string()),
                        _ => break,
                    }
                    i += 3;
                }
                if path.len() > 1 {
                    out.push(path);
                }
            }
            TokenTree::Group(g) => token_paths(g.stream(), out),
            TokenTree::Literal(l) => {
                if let Ok(s) = syn::parse2::<syn::LitStr>(TokenTree::Literal(l.clone()).into()) {
                    if let Ok(p) = syn::parse_str::<syn::Path>(&s.value()) {
                        token_paths(p.to_token_stream(), out);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

impl Graph {
    fn link(&mut self) {
        for (from, m) in &self.modules {
            for path in &m.paths {
                let Some((to, _)) = self.resolve(from, path, 0) else { continue };
                if &to != from {
                    let witness = path.join("::");
                    self.edges.entry(from.clone()).or_default().entry(to).or_insert(witness);
                }
            }
        }
    }

    /// The module holding what `path`, written in `from`, names, and how many of its segments
    /// are past that module (0: the path names the module itself). None: another crate's.
    fn resolve(&self, from: &ModId, path: &[String], depth: usize) -> Option<(ModId, usize)> {
        let (first, rest) = path.split_first()?;
        if depth > 16 {
            return None;
        }
        let here = self.modules.get(from)?;
        let start: ModId = match first.as_str() {
            "crate" => Vec::new(),
            "self" => from.clone(),
            "super" => from[..from.len().saturating_sub(1)].to_vec(),
            name if here.children.contains(name) => [from.as_slice(), &[name.to_string()]].concat(),
            name => match self.imported(from, name, depth) {
                Some(alias) => {
                    let (m, past) = self.resolve(from, &alias, depth + 1)?;
                    if past > 0 {
                        return Some((m, past + rest.len()));
                    }
                    m
                }
                None => return None,
            },
        };
        self.walk(start, rest, depth)
    }

    /// What `name` is imported as in `from`: its own `use` items, then its glob imports' names.
    fn imported(&self, from: &ModId, name: &str, depth: usize) -> Option<Vec<String>> {
        let here = self.modules.get(from)?;
        if let Some(alias) = here.aliases.get(name) {
            return Some(alias.clone());
        }
        here.globs.iter().find_map(|glob| {
            let (m, 0) = self.resolve(from, glob, depth + 1)? else { return None };
            let there = self.modules.get(&m)?;
            (there.children.contains(name) || there.aliases.contains_key(name))
                .then(|| [glob.as_slice(), &[name.to_string()]].concat())
        })
    }

    /// Follows `rest` down from module `at`: children, `super`, and names `at` imports.
    fn walk(&self, mut at: ModId, rest: &[String], depth: usize) -> Option<(ModId, usize)> {
        for (i, seg) in rest.iter().enumerate() {
            let m = self.modules.get(&at)?;
            if seg == "super" {
                at.pop();
            } else if m.children.contains(seg) {
                at.push(seg.clone());
            } else if let Some(alias) = m.aliases.get(seg) {
                let (to, past) = self.resolve(&at, alias, depth + 1)?;
                if past > 0 {
                    return Some((to, past + rest.len() - i - 1));
                }
                at = to;
            } else {
                return Some((at, rest.len() - i));
            }
        }
        Some((at, 0))
    }

    /// Every module and the paths it writes (`use` paths in full, other paths as written).
    pub fn paths(&self) -> impl Iterator<Item = (&ModId, &Vec<String>)> {
        self.modules.iter().flat_map(|(id, m)| m.paths.iter().map(move |p| (id, p)))
    }

    /// The crate root's child modules.
    pub fn top_level(&self) -> Vec<String> {
        self.modules.get(&Vec::new()).map(|m| m.children.iter().cloned().collect()).unwrap_or_default()
    }

    /// Every strongly connected component of more than one module, each with one cycle through
    /// it: `a -> b (by path) -> ... -> a`.
    pub fn cycles(&self) -> Vec<String> {
        let nodes: Vec<&ModId> = self.modules.keys().collect();
        let index: BTreeMap<&ModId, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let succ: Vec<Vec<usize>> = nodes
            .iter()
            .map(|m| self.edges.get(*m).map(|e| e.keys().map(|t| index[t]).collect()).unwrap_or_default())
            .collect();
        tarjan(&succ)
            .into_iter()
            .filter(|scc| scc.len() > 1)
            .map(|scc| {
                let cycle = shortest_cycle(&succ, &scc);
                let name = |i: usize| if nodes[i].is_empty() { "crate".to_string() } else { nodes[i].join("::") };
                let mut text = format!("{} modules", scc.len());
                text += &format!(": {}", name(cycle[0]));
                for w in cycle.windows(2) {
                    text += &format!(" -> {} (`{}`)", name(w[1]), self.edges[nodes[w[0]]][nodes[w[1]]]);
                }
                text
            })
            .collect()
    }
}

/// Tarjan's strongly connected components (recursive: module trees are shallow).
fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct T<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for &w in &t.succ[v] {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            scc.sort();
            t.out.push(scc);
        }
    }
    let n = succ.len();
    let mut t =
        T { succ, index: vec![None; n], low: vec![0; n], on: vec![false; n], stack: vec![], next: 0, out: vec![] };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out.sort();
    t.out
}

/// The shortest cycle from the component's first module back to it (breadth first).
fn shortest_cycle(succ: &[Vec<usize>], scc: &[usize]) -> Vec<usize> {
    let start = scc[0];
    let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &succ[v] {
            if w == start {
                let mut path = vec![start, v];
                let mut at = v;
                while at != start {
                    at = prev[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if scc.contains(&w) && !prev.contains_key(&w) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}
