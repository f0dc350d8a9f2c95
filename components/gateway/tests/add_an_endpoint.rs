//! The places docs/architecture.md's "Add an endpoint" names that no
//! compiler checks, each checked here with a message naming the place and
//! the checklist's step. (The route row, its operation's handler and the
//! gateway's forwarding are one source or an exhaustive `match`: a miss
//! there does not compile.)
// Test helpers may do what the production lints forbid: those are for
// code that reads client bytes (Cargo.toml, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gateway::contract::DOCUMENT;
use gateway::routes::{forwarded, OWN};
use meridian_platform::store::migrate::Migration;

/// The checklist, as the messages cite it.
const CHECKLIST: &str = "docs/architecture.md, \"Add an endpoint\"";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every route the code serves: the gateway's own rows and the rows it
/// forwards, as `METHOD /template`.
fn served() -> BTreeSet<String> {
    OWN.iter()
        .map(|row| format!("{} {}", row.method, row.path))
        .chain(
            forwarded()
                .into_iter()
                .map(|(_, method, path)| format!("{method} {path}")),
        )
        .collect()
}

/// The routes docs/api.md's route table lists. A cell holds one or more
/// `` `METHODS PATH` `` spans, `…` standing for `/v1/{tenant}`.
fn listed_in_api_md() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repository().join("docs/api.md")).unwrap();
    let mut listed = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cell = line.split('|').nth(1).unwrap_or_default();
        for span in cell.split('`').skip(1).step_by(2) {
            let Some(at) = span.find(['/', '…']) else {
                continue;
            };
            let (methods, path) = span.split_at(at);
            let path = path.replacen('…', "/v1/{tenant}", 1);
            for method in methods.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                listed.insert(format!("{method} {path}"));
            }
        }
    }
    listed
}

#[test]
fn every_route_is_in_docs_api_md_and_nothing_else_is() {
    let listed = listed_in_api_md();
    let served = served();
    let missing: Vec<_> = served.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "docs/api.md's route table does not list {missing:?}: add them ({CHECKLIST}, step 6)"
    );
    let stale: Vec<_> = listed.difference(&served).collect();
    assert!(
        stale.is_empty(),
        "docs/api.md lists {stale:?}, which nothing serves: remove them or add the endpoints ({CHECKLIST})"
    );
}

#[test]
fn every_route_is_in_the_contract_and_every_get_has_its_head() {
    let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
    for route in served() {
        let (method, path) = route.split_once(' ').unwrap();
        let item = &doc["paths"][path];
        assert!(
            item.get(method.to_ascii_lowercase()).is_some(),
            "openapi.yaml has no `{}:` under `{path}`: add the operation ({CHECKLIST}, step 5)",
            method.to_ascii_lowercase()
        );
        if method == "GET" {
            assert!(
                item.get("head").is_some(),
                "openapi.yaml has no `head:` under `{path}` (every GET is served for HEAD): add it ({CHECKLIST}, step 5)"
            );
        }
    }
}

/// The `.sql` files of `dir` (relative to `migrations/`).
fn files(dir: &str) -> BTreeSet<String> {
    std::fs::read_dir(repository().join("migrations").join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".sql"))
        .collect()
}

/// The file names a service's list embeds.
fn names(list: &[Migration]) -> BTreeSet<String> {
    list.iter().map(|m| m.name.to_owned()).collect()
}

#[test]
fn every_migration_file_is_in_its_services_list() {
    let lists = [
        (
            "identity",
            identity::migrations::ALL,
            identity::migrations::POSTGRES,
        ),
        (
            "community",
            community::migrations::ALL,
            community::migrations::POSTGRES,
        ),
        (
            "billing",
            billing::migrations::ALL,
            billing::migrations::POSTGRES,
        ),
    ];
    let mut sqlite_shared = files("shared");
    let mut postgres_shared = files("postgres/shared");
    for (service, sqlite, postgres) in lists {
        let (sqlite, postgres) = (names(sqlite), names(postgres));
        let unlisted: Vec<_> = files(service).difference(&sqlite).cloned().collect();
        assert!(
            unlisted.is_empty(),
            "migrations/{service}/{unlisted:?} are in no list: add them to `ALL` in components/{service}/src/migrations.rs ({CHECKLIST}, step 4)"
        );
        let unlisted: Vec<_> = files(&format!("postgres/{service}"))
            .difference(&postgres)
            .cloned()
            .collect();
        assert!(
            unlisted.is_empty(),
            "migrations/postgres/{service}/{unlisted:?} are in no list: add them to `POSTGRES` in components/{service}/src/migrations.rs ({CHECKLIST}, step 4)"
        );
        sqlite_shared.retain(|file| !sqlite.contains(file));
        postgres_shared.retain(|file| !postgres.contains(file));
    }
    assert!(
        sqlite_shared.is_empty() && postgres_shared.is_empty(),
        "shared migrations no service lists: {sqlite_shared:?} (SQLite), {postgres_shared:?} (PostgreSQL): add each to the services' lists ({CHECKLIST}, step 4)"
    );
}
