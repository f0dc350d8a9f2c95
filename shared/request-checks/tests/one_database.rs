//! One SQLite database for the whole app (a platform that allows one): the
//! three services' real migrations in one file, each with its own ledger
//! and its own tables by name, in either order; and in a database of a
//! service's own, the SQL and checksums existing databases recorded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Duration;

use meridian_platform::http::idempotency::{claim, Claimed, IdempotencyKey, Scope};
use meridian_platform::store::db::Store;
use meridian_platform::store::migrate::{migrate, Migration};
use meridian_platform::time::ManualClock;
use meridian_platform::UnixMillis;
use meridian_testing::{context_at, HostSqlite};
use sha2::{Digest, Sha256};

const NOW: UnixMillis = UnixMillis::from_millis(1_700_000_000_000);

const SERVICES: [(&str, &[Migration]); 3] = [
    ("identity", identity::migrations::ALL),
    ("community", community::migrations::ALL),
    ("billing", billing::migrations::ALL),
];

fn ctx() -> meridian_platform::RequestContext {
    context_at(NOW, Duration::from_secs(5), "test")
}

/// `service`'s own connection to the one database file.
fn shared_store(file: &std::path::Path, service: &'static str) -> Store<HostSqlite, ManualClock> {
    Store::new(HostSqlite::open(file), ManualClock::new(NOW)).shared_by(service)
}

fn names(store: &Store<HostSqlite, ManualClock>, kind: &str) -> Vec<String> {
    store
        .query(
            &ctx(),
            "SELECT name FROM sqlite_master WHERE type = ? ORDER BY name",
            &[kind.into()],
        )
        .unwrap()
        .iter()
        .map(|r| r.text("name").unwrap().to_owned())
        .collect()
}

#[test]
fn three_services_migrate_one_database_in_any_order_each_its_own_tables() {
    for order in [[0, 1, 2], [2, 1, 0], [1, 0, 2]] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("one.db");
        for i in order {
            let (service, migrations) = SERVICES[i];
            let store = shared_store(&file, service);
            let applied = migrate(&store, &ctx(), migrations).unwrap();
            assert_eq!(applied.len(), migrations.len(), "{service} in {order:?}");
        }
        for (service, migrations) in SERVICES {
            let store = shared_store(&file, service);
            assert_eq!(
                migrate(&store, &ctx(), migrations).unwrap(),
                Vec::<u32>::new()
            );
        }
        let store = shared_store(&file, "identity");
        let tables = names(&store, "table");
        for service in ["identity", "community", "billing"] {
            for own in ["schema_migrations", "idempotency_records", "row_sequence"] {
                let name = format!("{service}_{own}");
                assert!(tables.contains(&name), "{name} in {tables:?}");
            }
        }
        for unowned in ["schema_migrations", "idempotency_records", "row_sequence"] {
            assert!(!tables.contains(&unowned.to_owned()), "{tables:?}");
        }
    }
}

#[test]
fn in_one_database_each_service_keeps_its_own_idempotency_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.db");
    let key = IdempotencyKey::parse("k-1").unwrap();
    let scope = Scope {
        tenant: "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01",
        actor: "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02",
        operation: "POST /things",
        key: &key,
    };
    for (service, migrations) in SERVICES {
        let store = shared_store(&file, service);
        migrate(&store, &ctx(), migrations).unwrap();
        // The same scope in every service: each claims it afresh in its
        // own table, and a second claim in the same service finds it.
        assert_eq!(
            claim(&store, &ctx(), &scope, "fp", "first").unwrap(),
            Claimed::Fresh,
            "{service}"
        );
        assert!(
            claim(&store, &ctx(), &scope, "fp", "second").is_err(),
            "{service}"
        );
    }
}

/// The checksums existing databases recorded for the migrations that now
/// name their shared tables `{own}…`, taken from the files before they did:
/// a database of a service's own still agrees with its ledger.
#[test]
fn in_a_database_of_its_own_a_service_runs_the_sql_it_always_ran() {
    let recorded = [
        (
            "0002_idempotency_records.sql",
            "9606839b1ec9b456ddb647cbc35ab39218c75a2556d1d7f20115f469858de025",
        ),
        (
            "0004_row_sequence.sql",
            "a04a50d4976f726dae8b107be00d01e9bbcae7d28e3c1387c3b5db57e4ab4cb9",
        ),
        (
            "0003_row_sequence.sql",
            "b6ba83d19c252629dabb2497d89a1808c6300b50c903d082dc0d91bd6cf03f1e",
        ),
        (
            "0003_row_sequence.sql",
            "1dc5f09aeb94c5322d54c964d8c065275164703a7a4b0646a51d1b3b259550dc",
        ),
    ];
    let own = Store::new(HostSqlite::in_memory(), ManualClock::new(NOW));
    let sums: Vec<(&str, String)> = SERVICES
        .iter()
        .flat_map(|(_, migrations)| migrations.iter())
        .map(|m| {
            (
                m.name,
                hex::encode(Sha256::digest(own.render(m.sql).as_bytes())),
            )
        })
        .collect();
    for (name, sum) in recorded {
        assert!(
            sums.contains(&(name, sum.to_owned())),
            "{name}: {sum} not among {sums:?}"
        );
    }
    for (_, migrations) in SERVICES {
        for m in migrations.iter() {
            assert!(!own.render(m.sql).contains("{own}"), "{}", m.name);
        }
    }
}
