//! The docs name files and functions that exist. Every repository path a
//! page writes in backticks (`components/gateway/src/app.rs`) is a file or
//! directory; and in docs/life-of-a-request.md, whose table is a map of
//! the code, every function or type a step names (`Gateway::arrive`,
//! `run_hop`) is declared in the workspace's Rust. A rename that leaves a
//! page behind fails here with the page and the name.

use std::collections::BTreeSet;
use std::path::PathBuf;

use meridian_tools::{repository, rust_files};

/// The pages: README.md and docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repository().join("README.md")];
    let docs = std::fs::read_dir(repository().join("docs")).unwrap();
    pages.extend(
        docs.map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "md")),
    );
    pages
}

/// The backticked spans of `text`.
fn spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// Whether a span is a path in the repository the page means literally: it
/// starts with one of the repository's top directories and has no
/// placeholder (`<service>`, `{name}`, `NNNN`, `*`).
fn repository_path(span: &str) -> Option<&str> {
    const TOP: [&str; 9] = [
        "components/",
        "shared/",
        "tests/",
        "tools/",
        "scripts/",
        "deploy/",
        "migrations/",
        "bench/",
        "docs/",
    ];
    let path = span.split([' ', ',', ':', '(']).next()?;
    let literal = !path.contains(['<', '{', '*', '…']) && !path.contains("NNNN");
    (TOP.iter().any(|top| path.starts_with(top)) && literal).then_some(path)
}

#[test]
fn every_path_a_page_names_exists() {
    let mut missing = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for path in spans(&text).filter_map(repository_path) {
            if !repository().join(path).exists() {
                missing.push(format!("{}: {path}", page.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "pages name paths that do not exist: {missing:#?}"
    );
}

/// Every name declared in the workspace's Rust: functions, types, traits,
/// constants and macros.
fn declared() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in rust_files(|_| false).unwrap() {
        let text = std::fs::read_to_string(&file).unwrap();
        for keyword in [
            "fn ",
            "struct ",
            "enum ",
            "trait ",
            "const ",
            "macro_rules! ",
            "type ",
        ] {
            for after in text.split(keyword).skip(1) {
                let ident: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.insert(ident);
            }
        }
    }
    names
}

#[test]
fn every_function_the_life_of_a_request_names_is_declared() {
    let declared = declared();
    let page = repository().join("docs/life-of-a-request.md");
    let text = std::fs::read_to_string(&page).unwrap();
    let mut missing = Vec::new();
    // The "where" column: the last cell of each table row.
    for row in text
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".rs"))
    {
        let cell = row
            .trim_end_matches('|')
            .rsplit('|')
            .next()
            .unwrap_or_default();
        for span in spans(cell) {
            let code_name = span
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '!');
            if !code_name || span.contains(".rs") {
                continue;
            }
            for part in span.trim_end_matches('!').split("::") {
                if !declared.contains(part) {
                    missing.push(span.to_owned());
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/life-of-a-request.md names what no Rust file declares: {missing:?}"
    );
}

/// The headings of a page, without their `#`s and numbers.
fn headings(page: &str) -> Vec<String> {
    std::fs::read_to_string(repository().join(page))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            let title = l.trim_start_matches('#').trim();
            // A numbered heading ("4. Behind a front proxy") is named without its number.
            let unnumbered = title
                .split_once(". ")
                .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()));
            unnumbered.map_or(title, |(_, rest)| rest).to_owned()
        })
        .collect()
}

#[test]
fn every_section_a_page_names_is_there() {
    let mut missing = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let here = page.file_name().unwrap().to_string_lossy().into_owned();
        // `docs/x.md, "Section"`, `x.md "Section"` and `x.md's "Section"`.
        for (at, _) in text.match_indices(".md") {
            let before = &text[..at];
            let name_start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '/'))
                .map_or(0, |i| i + 1);
            let named = &text[name_start..at + 3];
            let rest = &text[at + 3..];
            let rest = rest
                .strip_prefix("'s")
                .unwrap_or(rest)
                .trim_start_matches([',', ' ', '`', ')'])
                .trim_start_matches(['(', ' ']);
            let Some(quoted) = rest.strip_prefix('"') else {
                continue;
            };
            let Some(section) = quoted.split('"').next().filter(|s| !s.contains('\n')) else {
                continue;
            };
            let file = named.rsplit('/').next().unwrap_or(named);
            let path = if file == "README.md" {
                "README.md".to_owned()
            } else {
                format!("docs/{file}")
            };
            if !repository().join(&path).exists() {
                continue; // Another project's page (the paths are checked above).
            }
            let titles = headings(&path);
            if !titles.iter().any(|t| t.starts_with(section)) {
                missing.push(format!("{here}: {file}, \"{section}\""));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "pages name sections that are not there: {missing:#?}"
    );
}
