//! The migration runner on a real (host) SQLite.

use std::time::Duration;

use meridian_platform::store::db::{DbError, Store};
use meridian_platform::store::migrate::{migrate, Migration, MigrationError};
use meridian_platform::time::ManualClock;
use meridian_platform::UnixMillis;
use meridian_testing::{context_at, HostSqlite};

const NOW: UnixMillis = UnixMillis::from_millis(1_700_000_000_000);

fn store() -> Store<HostSqlite, ManualClock> {
    Store::new(HostSqlite::in_memory(), ManualClock::new(NOW))
}

fn ctx() -> meridian_platform::RequestContext {
    context_at(NOW, Duration::from_secs(1), "test")
}

const FIRST: Migration = Migration {
    version: 1,
    name: "0001_notes.sql",
    sql: "CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);\n-- a comment; with a semicolon\nCREATE INDEX notes_body ON notes (body);",
};
const SECOND: Migration = Migration {
    version: 2,
    name: "0002_tags.sql",
    sql: "ALTER TABLE notes ADD COLUMN tag TEXT;",
};

fn tables(store: &Store<HostSqlite, ManualClock>) -> Vec<String> {
    store
        .query(
            &ctx(),
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.text("name").unwrap().to_owned())
        .collect()
}

#[test]
fn migrations_apply_in_order_once_and_are_recorded() {
    let s = store();
    assert_eq!(migrate(&s, &ctx(), &[FIRST, SECOND]), Ok(vec![1, 2]));
    assert_eq!(migrate(&s, &ctx(), &[FIRST, SECOND]), Ok(vec![]));
    let recorded = s
        .query(
            &ctx(),
            "SELECT version, name FROM schema_migrations ORDER BY version",
            &[],
        )
        .unwrap();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[1].text("name").unwrap(), "0002_tags.sql");
    s.execute(
        &ctx(),
        "INSERT INTO notes (id, body, tag) VALUES ('a', 'b', 'c')",
        &[],
    )
    .unwrap();
}

#[test]
fn a_new_migration_is_applied_on_top_of_old_ones() {
    let s = store();
    assert_eq!(migrate(&s, &ctx(), &[FIRST]), Ok(vec![1]));
    assert_eq!(migrate(&s, &ctx(), &[FIRST, SECOND]), Ok(vec![2]));
}

#[test]
fn an_edited_migration_is_refused() {
    let s = store();
    migrate(&s, &ctx(), &[FIRST]).unwrap();
    let edited = Migration {
        sql: "CREATE TABLE notes (id TEXT);",
        ..FIRST
    };
    assert_eq!(
        migrate(&s, &ctx(), &[edited]),
        Err(MigrationError::Edited {
            version: 1,
            name: "0001_notes.sql"
        })
    );
}

#[test]
fn a_failing_migration_leaves_nothing_behind() {
    let s = store();
    let broken = Migration {
        version: 1,
        name: "0001_broken.sql",
        sql: "CREATE TABLE half (id TEXT); CREATE TABLE half (id TEXT);",
    };
    assert!(matches!(
        migrate(&s, &ctx(), &[broken]),
        Err(MigrationError::Db(DbError::Sqlite(_)))
    ));
    assert_eq!(tables(&s), ["schema_migrations"]);
    assert_eq!(migrate(&s, &ctx(), &[FIRST]), Ok(vec![1]));
}

#[test]
fn versions_out_of_order_are_refused() {
    assert_eq!(
        migrate(&store(), &ctx(), &[SECOND, FIRST]),
        Err(MigrationError::OutOfOrder(1))
    );
}

#[test]
fn no_statement_runs_for_an_expired_request() {
    let s = store();
    let expired = context_at(NOW, Duration::ZERO, "test");
    assert!(matches!(
        migrate(&s, &expired, &[FIRST]),
        Err(MigrationError::Db(DbError::Budget(_)))
    ));
    assert!(tables(&s).is_empty(), "not even the ledger was created");
}

const WAL: Migration = Migration {
    version: 2,
    name: "0002_write_ahead_log.sql",
    sql: "-- a settings migration\nPRAGMA journal_mode = WAL;\n",
};

fn journal_mode(store: &Store<HostSqlite, ManualClock>) -> String {
    store.query(&ctx(), "PRAGMA journal_mode", &[]).unwrap()[0]
        .text("journal_mode")
        .unwrap()
        .to_owned()
}

#[test]
fn a_settings_migration_runs_outside_a_transaction_on_a_file_and_is_recorded_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("billing.db");
    let s = Store::new(HostSqlite::open(&path), ManualClock::new(NOW));
    assert_eq!(journal_mode(&s), "delete");
    // Inside a transaction SQLite would refuse the change; the runner
    // applies it on its own and records it.
    assert_eq!(migrate(&s, &ctx(), &[FIRST, WAL]), Ok(vec![1, 2]));
    assert_eq!(journal_mode(&s), "wal");
    assert_eq!(migrate(&s, &ctx(), &[FIRST, WAL]), Ok(vec![]));
    // The mode is the file's: a new connection finds it.
    let again = Store::new(HostSqlite::open(&path), ManualClock::new(NOW));
    assert_eq!(journal_mode(&again), "wal");
    let recorded = again
        .query(
            &ctx(),
            "SELECT version FROM schema_migrations WHERE version = 2",
            &[],
        )
        .unwrap();
    assert_eq!(recorded.len(), 1);
}

#[test]
fn an_existing_database_is_switched_when_the_settings_migration_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("billing.db");
    let s = Store::new(HostSqlite::open(&path), ManualClock::new(NOW));
    assert_eq!(migrate(&s, &ctx(), &[FIRST]), Ok(vec![1]));
    s.execute(
        &ctx(),
        "INSERT INTO notes (id, body) VALUES ('a', 'kept')",
        &[],
    )
    .unwrap();
    assert_eq!(migrate(&s, &ctx(), &[FIRST, WAL]), Ok(vec![2]));
    assert_eq!(journal_mode(&s), "wal");
    let kept = s.query(&ctx(), "SELECT body FROM notes", &[]).unwrap();
    assert_eq!(kept[0].text("body").unwrap(), "kept");
}
