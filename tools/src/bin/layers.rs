//! The platform crate's layering, checked: every file's `crate::` imports
//! (its code before the tests) must point at its own module or a lower
//! layer, and no files may import each other in a circle — nor may the
//! files of any other crate of the workspace. The layers, from
//! the bottom, are [`LAYERS`]: a module may use anything below it and
//! nothing above. Run by the test command; prints each layer's modules and
//! what breaks the rule. Below the platform are crates of their own, whose
//! direction Cargo itself holds (a crate cannot use one that uses it): the
//! budget (`meridian-deadline`), the request's journal (`meridian-log`)
//! and storage (`meridian-store`, which therefore cannot answer in HTTP).
//!
//! `cargo run -p meridian-tools --bin layers [CRATE_SRC]` (default
//! `shared/platform/src`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use meridian_e2e::repo_root;
use meridian_tools::Positionals;

/// The platform's top-level modules, lowest layer first. Each line is one
/// layer; the modules of a layer may use each other (the circle check
/// still holds between their files).
const LAYERS: &[&[&str]] = &[
    // Values with no knowledge of requests: clocks, ids, secrets' rules,
    // settings' text, the wire's codes, headers and problem documents.
    &["time", "ids", "secrets", "settings", "wire"],
    // Input validation, who the tenant is.
    &["input", "tenancy"],
    // The budget of one request, and its context.
    &["budget"],
    // The counts every invocation shares (a key-value store's, or a SQL
    // table's), which the failure memory, the limits and the resolution
    // cache keep.
    &["counts"],
    // HTTP: messages, routes, the pipeline, outbound calls, the failure
    // memory.
    &["http"],
    // Tenant limits and the throttle, on the failure memory's counters.
    &["limits"],
    // A service: the gate, the store and the handler, wired together; the
    // fuzzing invariants.
    &["service", "checks"],
];

/// A file's code before its tests (`#[cfg(test)]` at the start of a
/// line), without its comment lines.
fn code(text: &str) -> String {
    let code = text.find("\n#[cfg(test)]").map_or(text, |at| &text[..at]);
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file's code names after `crate::`, each as its
/// segments (`crate::http::memory::Counters` → `http`, `memory`,
/// `Counters`), groups (`crate::{a::b, c}`) opened. A macro's `$crate::`
/// is not the file's own use: it lands where the macro is expanded.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if !rest[..at].ends_with('$') {
            paths.extend(expand(after));
        }
        rest = after;
    }
    paths
}

/// The paths at the start of `text` (after a `crate::`).
fn expand(text: &str) -> Vec<Vec<String>> {
    let ident = |t: &str| -> usize {
        t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len())
    };
    let mut prefix = Vec::new();
    let mut t = text;
    loop {
        if let Some(group) = t.strip_prefix('{') {
            // Split the group's top level on commas.
            let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.push(&group[start..i]);
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(&group[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return out
                .into_iter()
                .flat_map(|part| expand(part.trim()))
                .map(|tail| prefix.iter().cloned().chain(tail).collect())
                .collect();
        }
        let n = ident(t);
        if n == 0 {
            break;
        }
        prefix.push(t[..n].to_owned());
        match t[n..].strip_prefix("::") {
            Some(next) => t = next,
            None => break,
        }
    }
    if prefix.is_empty() {
        Vec::new()
    } else {
        vec![prefix]
    }
}

/// The file a module path names, longest match first, among `files`
/// (paths relative to the source root, without `.rs`, `mod` for a
/// folder's module).
fn resolve(path: &[String], files: &BTreeSet<String>) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let stem = path[..n].join("/");
        [stem.clone(), format!("{stem}/mod")]
            .into_iter()
            .find(|f| files.contains(f))
    })
}

/// The layer of a file's top-level module.
fn layer(file: &str) -> Option<usize> {
    let top = file.split('/').next().unwrap_or(file);
    LAYERS.iter().position(|l| l.contains(&top))
}

fn top(file: &str) -> &str {
    file.split('/').next().unwrap_or(file)
}

/// Every `.rs` under `dir`, relative to `root`, without `.rs`.
fn sources(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            sources(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root)?.with_extension("");
            out.insert(rel.to_string_lossy().replace('\\', "/"), path);
        }
    }
    Ok(())
}

/// The circles of `edges`: Tarjan's strongly connected components of more
/// than one file.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut circle = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    circle.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if circle.len() > 1 {
                    circle.sort();
                    self.found.push(circle);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Each file's imports of other files of the crate at `src` (its
/// `crate::` paths, the crate root's re-exports followed), by file
/// (relative, without `.rs`; the crate root left out).
fn imports(src: &Path) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let mut files = BTreeMap::new();
    sources(src, src, &mut files)?;
    let names: BTreeSet<String> = files.keys().cloned().collect();
    // The crate root's re-exports (`crate::Deadline`): where each name is.
    let root = std::fs::read_to_string(src.join("lib.rs"))?;
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for path in code(&root)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub use "))
        .flat_map(expand)
    {
        if let (Some(name), Some(file)) = (path.last(), resolve(&path, &names)) {
            reexports.insert(name.clone(), file);
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, path) in &files {
        if file == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(path)?;
        let targets = edges.entry(file.clone()).or_default();
        for used in crate_paths(&code(&text)) {
            let target = match resolve(&used, &names) {
                Some(t) if t != "lib" => t,
                _ => match used.first().and_then(|n| reexports.get(n)) {
                    Some(t) => t.clone(),
                    None => continue,
                },
            };
            if target != *file {
                targets.insert(target);
            }
        }
    }
    Ok(edges)
}

/// The platform's imports that break [`LAYERS`].
fn layering(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut problems = Vec::new();
    for (file, targets) in edges {
        for target in targets {
            match (layer(file), layer(target)) {
                (None, _) => problems.push(format!("{file}: its module is in no layer")),
                (_, None) => problems.push(format!("{target}: its module is in no layer")),
                (Some(from), Some(to)) if to > from => problems.push(format!(
                    "upward: {file} ({}) uses {target} ({}), a layer above it",
                    top(file),
                    top(target)
                )),
                _ => {}
            }
        }
    }
    problems
}

/// The `src` folder of every crate of the workspace but the platform's
/// (whose layering [`LAYERS`] holds) and the fuzzers'.
fn other_crates() -> Result<Vec<PathBuf>> {
    let root = repo_root();
    let mut crates = Vec::new();
    for group in ["shared", "components", "tests", "tools", "bench"] {
        let dir = root.join(group);
        let mut candidates = vec![dir.join("src")];
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries {
                candidates.push(entry?.path().join("src"));
            }
        }
        crates.extend(candidates.into_iter().filter(|src| {
            src.is_dir() && !src.ends_with("shared/platform/src") && src.join("lib.rs").is_file()
        }));
    }
    crates.sort();
    Ok(crates)
}

fn main() -> Result<()> {
    let platform = Positionals::from_env()?
        .raw(0)
        .map_or_else(|| repo_root().join("shared/platform/src"), PathBuf::from);
    let edges = imports(&platform)?;
    let mut problems = layering(&edges);
    for circle in circles(&edges) {
        problems.push(format!("a circle of imports: {}", circle.join(" → ")));
    }
    println!(
        "{}: {} files in {} layers",
        platform.display(),
        edges.len() + 1,
        LAYERS.len()
    );
    for (i, modules) in LAYERS.iter().enumerate().rev() {
        println!("  {}  {}", i + 1, modules.join(", "));
    }
    // Every other crate: no circle among its files.
    let crates = other_crates()?;
    for src in &crates {
        let name = src
            .strip_prefix(repo_root())
            .unwrap_or(src)
            .display()
            .to_string();
        for circle in circles(&imports(src)?) {
            problems.push(format!(
                "a circle of imports in {name}: {}",
                circle.join(" → ")
            ));
        }
    }
    println!("  and {} other crates, for circles", crates.len());
    problems.sort();
    problems.dedup();
    if !problems.is_empty() {
        for p in &problems {
            println!("  {p}");
        }
        bail!("{} layering problem(s)", problems.len());
    }
    println!("  no circle, no upward import");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(code: &str) -> Vec<String> {
        crate_paths(code).iter().map(|p| p.join("::")).collect()
    }

    #[test]
    fn groups_are_opened_and_macro_paths_left_to_their_expansion() {
        assert_eq!(
            paths("use crate::http::{message::{self, Request}, routes};\nlet x = $crate::store::db::Value;"),
            ["http::message::self", "http::message::Request", "http::routes"]
        );
        assert_eq!(paths("crate::Deadline::at(1)"), ["Deadline::at"]);
    }

    #[test]
    fn the_tests_and_the_comments_are_not_the_code() {
        let text = "use crate::a;\n// crate::b\n    /// crate::c\nfn f() {}\n#[cfg(test)]\nmod tests { use crate::d; }";
        assert_eq!(paths(&code(text)), ["a"]);
    }

    #[test]
    fn files_resolve_to_the_longest_module_path() {
        let files: BTreeSet<String> = [
            "http/mod",
            "http/memory/mod",
            "http/memory/table",
            "store/db",
        ]
        .map(str::to_owned)
        .into();
        let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            resolve(&path("http::memory::table::TableCounters"), &files).as_deref(),
            Some("http/memory/table")
        );
        assert_eq!(
            resolve(&path("http::memory::Counters"), &files).as_deref(),
            Some("http/memory/mod")
        );
        assert_eq!(
            resolve(&path("store::db::Value"), &files).as_deref(),
            Some("store/db")
        );
        assert_eq!(resolve(&path("nowhere::x"), &files), None);
    }

    #[test]
    fn a_circle_is_found_and_a_chain_is_not() {
        let graph = |pairs: &[(&str, &str)]| {
            let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (a, b) in pairs {
                edges
                    .entry((*a).to_owned())
                    .or_default()
                    .insert((*b).to_owned());
                edges.entry((*b).to_owned()).or_default();
            }
            edges
        };
        assert!(circles(&graph(&[("a", "b"), ("b", "c")])).is_empty());
        assert_eq!(
            circles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
            [vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
        );
    }

    #[test]
    fn every_layer_is_below_the_next() {
        assert!(layer("counts/table") < layer("http/message"));
        assert!(layer("budget/context") < layer("counts/table"));
        assert_eq!(layer("nowhere"), None);
    }
}
