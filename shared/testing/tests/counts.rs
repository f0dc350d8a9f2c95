//! Counters and entries in a SQL table (`TableCounters`), on the SQLite
//! Spin embeds: what the failure memory, the limits and the resolution
//! cache keep there behaves as in a key-value store. (On PostgreSQL the
//! same statements run in the Akamai profile's end-to-end run,
//! `scripts/hosted.sh akamai`.)

use meridian_platform::counts::{Counters, TableCounters, TABLE as COUNTS_TABLE};
use meridian_platform::store::db::Database;
use meridian_platform::tenancy::cache::Entries;
use meridian_testing::HostSqlite;

fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|&n| n.to_owned()).collect()
}

#[test]
fn the_table_is_made_on_first_use_and_an_increment_returns_the_new_count() {
    let counts = TableCounters::new(HostSqlite::in_memory());
    assert_eq!(counts.read(&keys(&["a"])), Ok(vec![0]), "absent is 0");
    assert_eq!(counts.add("a", 1), Ok(1));
    assert_eq!(counts.add("a", 4), Ok(5));
    assert_eq!(counts.add("a", -2), Ok(3));
    assert_eq!(counts.add("b", 7), Ok(7));
    assert_eq!(counts.read(&keys(&["b", "x", "a"])), Ok(vec![7, 0, 3]));
}

#[test]
fn set_and_forget_write_what_they_say() {
    let counts = TableCounters::new(HostSqlite::in_memory());
    counts.set("a", 9).unwrap();
    counts.set("a", 2).unwrap();
    counts.add("b", 1).unwrap();
    assert_eq!(counts.read(&keys(&["a", "b"])), Ok(vec![2, 1]));
    counts.forget(&keys(&["a", "b", "never"])).unwrap();
    assert_eq!(counts.read(&keys(&["a", "b"])), Ok(vec![0, 0]));
    counts.forget(&[]).unwrap();
}

#[test]
fn entries_are_bytes_beside_the_numbers() {
    let counts = TableCounters::new(HostSqlite::in_memory());
    counts.put("resolution:acme:x", b"\x00entry\xff").unwrap();
    counts.put("resolution:acme:x", b"second").unwrap();
    assert_eq!(
        counts.entries(&keys(&["missing", "resolution:acme:x"])),
        Ok(vec![None, Some(b"second".to_vec())])
    );
    counts.remove(&keys(&["resolution:acme:x"])).unwrap();
    assert_eq!(
        counts.entries(&keys(&["resolution:acme:x"])),
        Ok(vec![None])
    );
}

/// A read ahead is one statement; the reads it covers ask nothing more,
/// and a write drops what was read of its key.
#[test]
fn a_read_ahead_answers_the_reads_after_it_until_a_write() {
    let db = HostSqlite::in_memory();
    let counts = TableCounters::new(&db);
    counts.add("n", 3).unwrap();
    counts.put("e", b"bytes").unwrap();
    counts.read_ahead(&keys(&["n", "e"]));
    // Changed behind its back: the held values still answer.
    db.run(&format!("DELETE FROM {COUNTS_TABLE}"), &[]).unwrap();
    assert_eq!(counts.read(&keys(&["n"])), Ok(vec![3]));
    assert_eq!(
        counts.entries(&keys(&["e"])),
        Ok(vec![Some(b"bytes".to_vec())])
    );
    // Taken once: the next read asks the table.
    assert_eq!(counts.read(&keys(&["n"])), Ok(vec![0]));
    counts.add("n", 1).unwrap();
    counts.read_ahead(&keys(&["n"]));
    assert_eq!(
        counts.add("n", 1),
        Ok(2),
        "a write is never answered from a read ahead"
    );
    assert_eq!(counts.read(&keys(&["n"])), Ok(vec![2]));
}

/// Two connections to one database share the counts (as every instance
/// of every component shares the table).
#[test]
fn every_connection_sees_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counts.db");
    let one = TableCounters::new(HostSqlite::open(&path));
    let two = TableCounters::new(HostSqlite::open(&path));
    for _ in 0..50 {
        one.add("shared", 1).unwrap();
        two.add("shared", 2).unwrap();
    }
    assert_eq!(one.read(&keys(&["shared"])), Ok(vec![150]));
}

/// A store that fails answers an error, which the memory and the limits
/// take as an empty history (never a reason to refuse).
#[test]
fn a_broken_database_is_an_error_not_a_panic() {
    let db = HostSqlite::in_memory();
    db.run(&format!("CREATE VIEW {COUNTS_TABLE} AS SELECT 1 AS x"), &[])
        .unwrap();
    let counts = TableCounters::new(db);
    assert!(counts.add("a", 1).is_err());
    assert!(counts.read(&keys(&["a", "b"])).is_err());
    counts.read_ahead(&keys(&["a"]));
    assert!(counts.entries(&keys(&["a"])).is_err());
}

/// The counts' database behind a held lock: each statement waits out its
/// bound and fails. The first that times out is the request's last: the
/// reads and writes after it fail at once, without a statement, so a
/// request pays one bound for its counts, not one per count.
#[test]
fn after_a_statement_timed_out_no_count_of_the_request_asks_the_database() {
    use meridian_platform::store::db::{DbError, Row, Value};
    use std::cell::Cell;
    struct Held<'a> {
        db: HostSqlite,
        statements: &'a Cell<u32>,
    }
    impl Database for Held<'_> {
        fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
            self.statements.set(self.statements.get() + 1);
            if params.contains(&Value::Text("stuck".into())) {
                return Err(DbError::Locked(
                    "canceling statement due to lock timeout".into(),
                ));
            }
            self.db.run(sql, params)
        }
    }
    let statements = Cell::new(0);
    let counts = TableCounters::new(Held {
        db: HostSqlite::in_memory(),
        statements: &statements,
    });
    assert_eq!(counts.add("a", 1), Ok(1));
    let before = statements.get();
    assert!(counts.add("stuck", 1).is_err());
    assert_eq!(statements.get(), before + 1);
    assert!(counts.add("a", 1).is_err());
    assert!(counts.read(&keys(&["a"])).is_err());
    assert!(counts.entries(&keys(&["a"])).is_err());
    counts.read_ahead(&keys(&["a"]));
    assert_eq!(
        statements.get(),
        before + 1,
        "no statement after the timeout"
    );
}

/// An error that is not a timeout (a constraint, a missing table made on
/// the spot) leaves the next count free to ask.
#[test]
fn an_error_that_is_not_a_timeout_does_not_stop_the_next_count() {
    let db = HostSqlite::in_memory();
    db.run(&format!("CREATE VIEW {COUNTS_TABLE} AS SELECT 1 AS x"), &[])
        .unwrap();
    let counts = TableCounters::new(&db);
    assert!(counts.add("a", 1).is_err());
    db.run(&format!("DROP VIEW {COUNTS_TABLE}"), &[]).unwrap();
    assert_eq!(counts.add("a", 1), Ok(1));
}
