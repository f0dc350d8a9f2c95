//! One name, one meaning: every type, trait and constant a crate declares
//! in its interface (`pub`, tests aside) is declared nowhere else in the
//! workspace, unless it is
//! listed below with the one meaning all its declarations share. A new
//! type that takes a name already in use fails here with both places, so
//! the reader of either never has to ask which one is meant. The words
//! themselves are defined in docs/design.md's glossary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use meridian_tools::{repository, rust_files};

/// Names declared in more than one place on purpose, each with the one
/// meaning its declarations share.
const SAME_MEANING: &[(&str, &str)] = &[
    ("ALL", "every value of its type or list, in order"),
    ("ENDPOINTS", "a service's route table (meridian-endpoints, one per service)"),
    ("Op", "what serves a service's endpoints (one per service)"),
    ("SPEC", "a service's name, database, schema and routes (one per service)"),
    ("POSTGRES", "a service's PostgreSQL migrations (one per service)"),
    ("Db", "a repository's store type (one per service)"),
    (
        "Call",
        "a request dispatched by a service's table, as its handlers take it (one per service)",
    ),
    (
        "Request",
        "an HTTP request over bytes, http::Request<Vec<u8>> (the platform's and the e2e stand-ins')",
    ),
];

/// The Rust files of the workspace's crates, tests and benches aside
/// (tests/src is the end-to-end harness: a crate's source).
fn sources() -> Vec<PathBuf> {
    rust_files(|dir| {
        let harness = dir.ends_with("tests") && dir.join("src").is_dir();
        (dir.ends_with("tests") || dir.ends_with("benches")) && !harness
    })
    .unwrap()
}

/// The names `text` declares at its top level as part of its crate's
/// interface (`pub`, outside its test module): structs, enums, traits,
/// type aliases and constants. A binary's private types are its own.
fn declarations(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut names = BTreeSet::new();
    for line in code.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
            .filter(|w| !w.is_empty())
            .collect();
        let keyword = words
            .iter()
            .position(|w| ["struct", "enum", "trait", "type", "const"].contains(w));
        let Some(at) = keyword else { continue };
        // Top-level declarations, after `pub` alone (an impl's associated
        // items are indented).
        let public = at > 0 && words[..at].iter().all(|w| w.starts_with("pub"));
        if !public || line.starts_with(' ') {
            continue;
        }
        let Some(next) = words.get(at + 1) else {
            continue;
        };
        let name: String = next
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // `const fn` is a function.
        if !name.is_empty() && *next != "fn" {
            names.insert(name);
        }
    }
    names
}

#[test]
fn no_name_is_declared_twice_with_two_meanings() {
    let mut places: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file
            .strip_prefix(repository())
            .unwrap_or(&file)
            .display()
            .to_string();
        for name in declarations(&text) {
            places.entry(name).or_default().push(shown.clone());
        }
    }
    let allowed: BTreeSet<&str> = SAME_MEANING.iter().map(|(name, _)| *name).collect();
    let twice: Vec<String> = places
        .iter()
        .filter(|(name, at)| at.len() > 1 && !allowed.contains(name.as_str()))
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "names declared in two places (rename one by its role, or list the name in SAME_MEANING with the meaning they share):\n{}",
        twice.join("\n")
    );
}

/// What the platform re-exports: for each `pub use` of one of its modules,
/// the name's short path (where it is re-exported) and its long one (where
/// it is declared), both below `meridian_platform::`.
fn platform_reexports() -> Vec<(String, String)> {
    let src = repository().join("shared/platform/src");
    let mut found = Vec::new();
    for file in rust_files(|_| false)
        .unwrap()
        .into_iter()
        .filter(|f| f.starts_with(&src))
    {
        let relative = file.strip_prefix(&src).unwrap().with_extension("");
        let module: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .filter(|c| c != "mod" && c != "lib")
            .collect();
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            let Some(used) = line
                .strip_prefix("pub use ")
                .and_then(|l| l.strip_suffix(';'))
            else {
                continue;
            };
            let (source, names) = match used.split_once("::{") {
                Some((source, names)) => (source, names.trim_end_matches('}')),
                None => match used.rsplit_once("::") {
                    Some((source, name)) => (source, name),
                    None => continue,
                },
            };
            let declared: Vec<String> = if let Some(rest) = source.strip_prefix("crate::") {
                rest.split("::").map(str::to_owned).collect()
            } else if let Some(rest) = source.strip_prefix("super::") {
                let parent = &module[..module.len().saturating_sub(1)];
                parent
                    .iter()
                    .cloned()
                    .chain(rest.split("::").map(str::to_owned))
                    .collect()
            } else if source.starts_with("meridian_") || source.starts_with("http") {
                continue; // another crate's: it has no path of its own here.
            } else {
                module
                    .iter()
                    .cloned()
                    .chain(source.split("::").map(str::to_owned))
                    .collect()
            };
            for name in names.split(',').map(str::trim) {
                if name.is_empty() || name == "*" || name == "self" || name.contains(' ') {
                    continue;
                }
                let short = module
                    .iter()
                    .cloned()
                    .chain([name.to_owned()])
                    .collect::<Vec<_>>();
                let long = declared
                    .iter()
                    .cloned()
                    .chain([name.to_owned()])
                    .collect::<Vec<_>>();
                found.push((short.join("::"), long.join("::")));
            }
        }
    }
    found
}

/// Whether `text` imports `long` (`a::b::Name`) by that path: as
/// `a::b::Name` or in a group `a::b::{…, Name, …}`.
fn imports_by(text: &str, long: &str) -> bool {
    let (module, name) = long.rsplit_once("::").unwrap();
    let prefix = format!("meridian_platform::{module}::");
    text.match_indices(&prefix).any(|(at, _)| {
        let rest = &text[at + prefix.len()..];
        let word = |s: &str| {
            s.strip_prefix(name)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        };
        match rest.strip_prefix('{') {
            Some(group) => group
                .split('}')
                .next()
                .unwrap_or_default()
                .split(',')
                .any(|item| word(item.trim())),
            None => word(rest),
        }
    })
}

#[test]
fn outside_the_platform_a_re_exported_name_has_one_path() {
    let platform = repository().join("shared/platform");
    let reexports = platform_reexports();
    assert!(reexports.len() > 20, "{reexports:?}");
    let mut twice = Vec::new();
    for file in sources().into_iter().filter(|f| !f.starts_with(&platform)) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (short, long) in &reexports {
            if imports_by(&text, long) {
                let shown = file
                    .strip_prefix(repository())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                twice.push(format!(
                    "{shown}: meridian_platform::{long} (use meridian_platform::{short})"
                ));
            }
        }
    }
    assert!(
        twice.is_empty(),
        "names imported by a path the platform re-exports shorter:\n{}",
        twice.join("\n")
    );
}
