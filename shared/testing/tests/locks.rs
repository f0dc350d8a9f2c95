//! Lock waits on a real SQLite file: a statement behind another
//! connection's write lock gives up by the hop's work deadline, with the
//! hop's own 504, and never runs when the budget is already gone.

use std::time::{Duration, Instant};

use meridian_platform::store::db::{DbError, Store};
use meridian_platform::{Clock, SystemClock};
use meridian_testing::{context_at, HostSqlite};

#[test]
fn a_statement_behind_a_held_lock_gives_up_at_the_work_deadline() {
    let dir = std::env::temp_dir().join(format!("meridian-locks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("billing.db");
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);",
        )
        .unwrap();

    let store = Store::new(HostSqlite::open(&path), SystemClock);
    let ctx = context_at(SystemClock.now(), Duration::from_millis(300), "billing");
    let started = Instant::now();
    let err = store
        .query(&ctx, "SELECT count(*) FROM t", &[])
        .unwrap_err();
    let waited = started.elapsed();
    println!("gave up after {waited:?} of a 300 ms budget");

    assert_eq!(err, DbError::Budget(ctx.spent()));
    // rusqlite's default would have waited 5 s; the bound is 300 ms less the
    // 12 ms reserve and the 5 ms slack. Waking up is coarse (SQLite's busy
    // handler sleeps in steps); the upper side allows the suite's 10 ms
    // tolerance for a loaded machine.
    assert!(
        waited >= Duration::from_millis(200),
        "gave up early: {waited:?}"
    );
    assert!(
        waited <= Duration::from_millis(310),
        "waited past the budget: {waited:?}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
