//! Storage faults on a real (host) SQLite file: a full database, a
//! read-only one and a file that is not a database. Each keyed write is
//! answered with a retryable 503 `storage_unavailable`, leaves nothing
//! behind (no idempotency record, no row, no event), and the same key
//! writes once when the fault is lifted, on the same connection.

use std::time::Duration;

use meridian_platform::http::idempotency::{begin, Begun, IdempotencyKey, Written};
use meridian_platform::store::db::{Database, DbError, StorageFault, Store, Value};
use meridian_platform::time::ManualClock;
use meridian_platform::wire::problem::ErrorCode;
use meridian_platform::{Clock, RequestContext, UnixMillis};
use meridian_testing::{context_at, HostSqlite};

use meridian_testing::IDEMPOTENCY_DDL as IDEMPOTENCY;

/// A row and its event, written together as a service's write does.
const TABLES: &str = "CREATE TABLE things (id INTEGER PRIMARY KEY, payload BLOB NOT NULL);
CREATE TABLE outbox (id INTEGER PRIMARY KEY, thing INTEGER NOT NULL)";

type FileStore = Store<HostSqlite, &'static ManualClock>;

fn clock() -> &'static ManualClock {
    Box::leak(Box::new(ManualClock::new(UnixMillis::from_millis(
        1_700_000_000_000,
    ))))
}

fn ctx(s: &FileStore) -> RequestContext {
    context_at(s.clock().now(), Duration::from_secs(2), "test")
}

/// A migrated database in a file under `dir`.
fn file_store(dir: &std::path::Path) -> FileStore {
    let s = Store::new(HostSqlite::open(&dir.join("service.db")), clock());
    let c = ctx(&s);
    let ddl = s.render(IDEMPOTENCY);
    for stmt in meridian_platform::store::migrate::split_statements(&ddl)
        .into_iter()
        .chain(TABLES.split(';'))
    {
        s.execute(&c, stmt, &[]).unwrap();
    }
    s
}

/// A keyed write of a row (with a payload large enough to need new
/// pages) and its outbox event, as the services make them.
fn keyed_write(s: &FileStore, key: &IdempotencyKey) -> Result<u16, (u16, ErrorCode, bool)> {
    let c = ctx(s);
    let body = br#"{"thing":1}"#;
    let problem = |p: meridian_platform::wire::problem::Problem| {
        let json: serde_json::Value = serde_json::from_slice(&p.to_json()).unwrap();
        (
            p.status().as_u16(),
            ErrorCode::from_wire(json["code"].as_str().unwrap()).unwrap(),
            json["retryable"].as_bool().unwrap(),
        )
    };
    match begin(s, &c, Some(key), ("t1", "u1"), "POST /things", body).map_err(problem)? {
        Begun::Replay(r) => Ok(r.status().as_u16()),
        Begun::Proceed(write) => write
            .commit(s, &c, |tx| {
                tx.execute(
                    &c,
                    "INSERT INTO things (payload) VALUES (?)",
                    &[Value::Blob(vec![7; 64 * 1024])],
                )?;
                tx.execute(
                    &c,
                    "INSERT INTO outbox (thing) VALUES (last_insert_rowid())",
                    &[],
                )?;
                Ok(Written::same(
                    http::StatusCode::CREATED,
                    &serde_json::json!({"id": 1}),
                ))
            })
            .map(|r| r.status().as_u16())
            .map_err(problem),
    }
}

fn count(s: &FileStore, table: &str) -> i64 {
    let rows = s
        .query(&ctx(s), &format!("SELECT count(*) AS n FROM {table}"), &[])
        .unwrap();
    rows[0].integer("n").unwrap()
}

fn assert_nothing_written(s: &FileStore) {
    assert_eq!(count(s, "things"), 0, "a row was left behind");
    assert_eq!(count(s, "outbox"), 0, "an event was left behind");
    assert_eq!(
        count(s, "idempotency_records"),
        0,
        "an idempotency record was left behind"
    );
}

const UNAVAILABLE: (u16, ErrorCode, bool) = (503, ErrorCode::StorageUnavailable, true);

#[test]
fn a_write_to_a_full_database_is_a_retryable_503_and_writes_once_when_room_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let s = file_store(dir.path());
    let pages = s.query(&ctx(&s), "PRAGMA page_count", &[]).unwrap()[0]
        .integer("page_count")
        .unwrap();
    // SQLite's own limit on the file's size: the next page it needs is
    // refused exactly as a full filesystem refuses it (SQLITE_FULL).
    s.execute(&ctx(&s), &format!("PRAGMA max_page_count = {pages}"), &[])
        .unwrap();
    let key = IdempotencyKey::parse("full-1").unwrap();
    assert_eq!(keyed_write(&s, &key), Err(UNAVAILABLE));
    assert_nothing_written(&s);

    s.execute(&ctx(&s), "PRAGMA max_page_count = 1073741823", &[])
        .unwrap();
    assert_eq!(keyed_write(&s, &key), Ok(201));
    assert_eq!(keyed_write(&s, &key), Ok(201), "the replay");
    assert_eq!((count(&s, "things"), count(&s, "outbox")), (1, 1));
}

#[test]
fn a_write_to_a_read_only_database_is_a_retryable_503_and_reads_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let s = file_store(dir.path());
    s.execute(&ctx(&s), "PRAGMA query_only = ON", &[]).unwrap();
    let key = IdempotencyKey::parse("ro-1").unwrap();
    assert_eq!(keyed_write(&s, &key), Err(UNAVAILABLE));
    assert_nothing_written(&s);

    s.execute(&ctx(&s), "PRAGMA query_only = OFF", &[]).unwrap();
    assert_eq!(keyed_write(&s, &key), Ok(201));
    assert_eq!((count(&s, "things"), count(&s, "outbox")), (1, 1));
}

#[test]
fn a_file_that_is_not_a_database_is_storage_unavailable_not_an_internal_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service.db");
    std::fs::write(&path, vec![b'x'; 8192]).unwrap();
    let db = HostSqlite::open(&path);
    let err = db.run("SELECT 1 FROM sqlite_master", &[]).unwrap_err();
    assert!(
        matches!(err, DbError::Unavailable(StorageFault::NotADatabase, _)),
        "{err:?}"
    );
    let problem = meridian_platform::wire::problem::Problem::from(err);
    assert_eq!(problem.status(), 503);
}

#[test]
fn sqlites_own_messages_name_each_fault_and_nothing_else_is_taken_for_one() {
    for (message, fault) in [
        ("database or disk is full", StorageFault::Full),
        (
            "attempt to write a readonly database",
            StorageFault::ReadOnly,
        ),
        ("file is not a database", StorageFault::NotADatabase),
        (
            "database disk image is malformed",
            StorageFault::NotADatabase,
        ),
        ("unable to open database file", StorageFault::CannotOpen),
        ("disk I/O error", StorageFault::Io),
        (
            "Io(\"error sending request for url (http://127.0.0.1:1/v2/pipeline)\")",
            StorageFault::Unreachable,
        ),
    ] {
        assert_eq!(
            DbError::sqlite(message.into()),
            DbError::Unavailable(fault, message.into()),
            "{message}"
        );
    }
    for other in [
        "near \"SELEC\": syntax error",
        "no such table: things",
        "datatype mismatch",
    ] {
        assert!(
            !matches!(DbError::sqlite(other.into()), DbError::Unavailable(..)),
            "{other}"
        );
    }
}
