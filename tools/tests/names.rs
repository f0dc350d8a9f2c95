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
