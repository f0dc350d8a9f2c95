//! The shared idempotency store on a real (host) SQLite.

use std::time::Duration;

use meridian_platform::http::idempotency::{
    claim, complete, fingerprint, release, Claimed, IdempotencyError, IdempotencyKey, Scope,
    StoredResponse,
};
use meridian_platform::http::ResponseExt;
use meridian_platform::store::db::Store;
use meridian_platform::time::ManualClock;
use meridian_platform::{Problem, RequestContext, UnixMillis};
use meridian_testing::{context_at, HostSqlite};

use meridian_testing::IDEMPOTENCY_DDL as DDL;

fn store() -> Store<HostSqlite, &'static ManualClock> {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new(
        UnixMillis::from_millis(1_700_000_000_000),
    )));
    let s = Store::new(HostSqlite::in_memory(), clock);
    let ddl = s.render(DDL);
    for stmt in meridian_platform::store::migrate::split_statements(&ddl) {
        s.execute(&ctx_of(&s, 1_000), stmt, &[]).unwrap();
    }
    s
}

fn ctx_of(s: &Store<HostSqlite, &'static ManualClock>, budget_ms: u64) -> RequestContext {
    use meridian_platform::Clock;
    context_at(s.clock().now(), Duration::from_millis(budget_ms), "test")
}

fn key(k: &str) -> IdempotencyKey {
    IdempotencyKey::parse(k).unwrap()
}

fn scope<'a>(k: &'a IdempotencyKey, actor: &'a str) -> Scope<'a> {
    Scope {
        tenant: "t1",
        actor,
        operation: "POST /members",
        key: k,
    }
}

/// `k` claimed for `body` and completed with `response`, as `u1`.
fn completed(
    s: &Store<HostSqlite, &'static ManualClock>,
    ctx: &RequestContext,
    k: &IdempotencyKey,
    body: &[u8],
    response: &StoredResponse,
) {
    claim(s, ctx, &scope(k, "u1"), &fingerprint(body), "owner").unwrap();
    complete(s, ctx, &scope(k, "u1"), "owner", response).unwrap();
}

fn created() -> StoredResponse {
    StoredResponse {
        status: http::StatusCode::CREATED,
        body: r#"{"id":"m1"}"#.into(),
    }
}

#[test]
fn a_completed_write_is_replayed_for_the_same_body() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    let fp = fingerprint(br#"{"a":1,"b":2}"#);
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
    complete(&s, &ctx, &scope(&k, "u1"), "owner", &created()).unwrap();
    // Key order and whitespace do not make a different body.
    let same = fingerprint(br#"{ "b": 2, "a": 1 }"#);
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &same, "owner"),
        Ok(Claimed::Replay(created()))
    );
}

#[test]
fn the_same_key_with_another_body_is_refused() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    completed(&s, &ctx, &k, b"{\"a\":1}", &created());
    let err = claim(
        &s,
        &ctx,
        &scope(&k, "u1"),
        &fingerprint(b"{\"a\":2}"),
        "owner",
    )
    .unwrap_err();
    assert_eq!(err, IdempotencyError::Reused);
    assert_eq!(Problem::from(err).status(), 422);
}

#[test]
fn a_duplicate_while_the_first_is_running_is_a_conflict() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    let fp = fingerprint(b"{}");
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
    let err = claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner").unwrap_err();
    assert_eq!(err, IdempotencyError::InProgress);
    assert_eq!(Problem::from(err).status(), 409);
}

#[test]
fn keys_are_scoped_by_actor() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    let fp = fingerprint(b"{}");
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u2"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
}

#[test]
fn a_released_claim_can_be_retried() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    let fp = fingerprint(b"{}");
    claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner").unwrap();
    release(&s, &ctx, &scope(&k, "u1"), "owner");
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
}

#[test]
fn a_claim_whose_owner_died_is_taken_over_after_its_deadline() {
    let s = store();
    let k = key("k1");
    let fp = fingerprint(b"{}");
    claim(&s, &ctx_of(&s, 500), &scope(&k, "u1"), &fp, "owner").unwrap();
    s.clock().advance(Duration::from_millis(501));
    assert_eq!(
        claim(&s, &ctx_of(&s, 500), &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
}

#[test]
fn a_claim_is_held_until_exactly_its_owners_deadline() {
    let s = store();
    let k = key("k1");
    let fp = fingerprint(b"{}");
    claim(&s, &ctx_of(&s, 500), &scope(&k, "u1"), &fp, "owner").unwrap();
    s.clock().advance(Duration::from_millis(499));
    assert_eq!(
        claim(&s, &ctx_of(&s, 500), &scope(&k, "u1"), &fp, "owner"),
        Err(IdempotencyError::InProgress)
    );
    s.clock().advance(Duration::from_millis(1));
    assert_eq!(
        claim(&s, &ctx_of(&s, 500), &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
}

#[test]
fn a_record_is_kept_for_exactly_the_retention_period() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    let fp = fingerprint(b"{\"a\":1}");
    claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner").unwrap();
    complete(&s, &ctx, &scope(&k, "u1"), "owner", &created()).unwrap();
    // DESIGN: "kept at least 24 hours" — spelled out, not read from the
    // constant under test.
    let day = Duration::from_secs(24 * 3600);
    assert_eq!(meridian_platform::http::idempotency::RETENTION, day);
    s.clock().advance(day - Duration::from_millis(1));
    assert_eq!(
        claim(&s, &ctx_of(&s, 1_000), &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Replay(created())),
        "kept a day less a millisecond"
    );
    s.clock().advance(Duration::from_millis(1));
    assert_eq!(
        claim(&s, &ctx_of(&s, 1_000), &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh),
        "gone at a day"
    );
}

#[test]
fn an_abandoned_write_gives_its_key_back_at_once() {
    use meridian_platform::http::idempotency::{begin, Begun};
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    let Ok(Begun::Proceed(write)) = begin(&s, &ctx, Some(&k), ("t1", "u1"), "POST /x", b"{}")
    else {
        panic!("a fresh key proceeds");
    };
    write.abandon(&s, &ctx);
    assert!(matches!(
        begin(&s, &ctx, Some(&k), ("t1", "u1"), "POST /x", b"{}"),
        Ok(Begun::Proceed(_))
    ));
}

#[test]
fn a_write_that_ran_out_of_budget_leaves_its_claim_to_end_at_the_deadline() {
    use meridian_platform::http::idempotency::{begin, Begun};
    use meridian_platform::wire::problem::{ErrorCode, Problem};
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 500);
    let begun = |s: &Store<HostSqlite, &'static ManualClock>| {
        begin(s, &ctx_of(s, 500), Some(&k), ("t1", "u1"), "POST /x", b"{}")
    };
    let Ok(Begun::Proceed(write)) = begun(&s) else {
        panic!("a fresh key proceeds");
    };
    // The budget ran out: no statement is made to release the claim...
    write.give_up(&s, &ctx, &Problem::from(ctx.spent()));
    assert!(matches!(
        begun(&s),
        Err(p) if p.code() == ErrorCode::IdempotencyKeyInProgress
    ));
    // ...which ends at the request's deadline by itself.
    s.clock().advance(Duration::from_millis(500));
    let Ok(Begun::Proceed(write)) = begun(&s) else {
        panic!("the key is free at the deadline");
    };
    // Any other failure gives the key back at once.
    write.give_up(
        &s,
        &ctx_of(&s, 500),
        &Problem::new(ErrorCode::UpstreamUnavailable, "x"),
    );
    assert!(matches!(begun(&s), Ok(Begun::Proceed(_))));
}

#[test]
fn a_replay_answers_with_the_stored_status_and_body() {
    use meridian_platform::http::idempotency::{begin, Begun};
    let s = store();
    let ctx = ctx_of(&s, 1_000);
    for (k, stored) in [
        ("created", created()),
        (
            "deleted",
            StoredResponse {
                status: http::StatusCode::NO_CONTENT,
                body: String::new(),
            },
        ),
    ] {
        let k = key(k);
        claim(&s, &ctx, &scope(&k, "u1"), &fingerprint(b"{}"), "owner").unwrap();
        complete(&s, &ctx, &scope(&k, "u1"), "owner", &stored).unwrap();
        let Ok(Begun::Replay(r)) = begin(&s, &ctx, Some(&k), ("t1", "u1"), "POST /members", b"{}")
        else {
            panic!("a completed key replays");
        };
        assert_eq!(r.status(), stored.status);
        assert_eq!(r.body(), stored.body.as_bytes());
        assert_eq!(r.header("idempotent-replayed"), Some("true"));
    }
}

#[test]
fn records_expire_after_the_retention_period() {
    let s = store();
    let k = key("k1");
    let ctx = ctx_of(&s, 1_000);
    completed(&s, &ctx, &k, b"{\"a\":1}", &created());
    s.clock().advance(Duration::from_secs(24 * 3600 + 1));
    let later = ctx_of(&s, 1_000);
    assert_eq!(
        claim(
            &s,
            &later,
            &scope(&k, "u1"),
            &fingerprint(b"{\"a\":2}"),
            "owner"
        ),
        Ok(Claimed::Fresh)
    );
}

#[test]
fn expired_records_are_purged_when_new_writes_complete() {
    let s = store();
    let ctx = ctx_of(&s, 1_000);
    for i in 0..3 {
        let k = key(&format!("old-{i}"));
        claim(&s, &ctx, &scope(&k, "u1"), "fp", "owner").unwrap();
        complete(&s, &ctx, &scope(&k, "u1"), "owner", &created()).unwrap();
    }
    s.clock().advance(Duration::from_secs(24 * 3600 + 1));
    let k = key("new");
    let ctx = ctx_of(&s, 1_000);
    claim(&s, &ctx, &scope(&k, "u1"), "fp", "owner").unwrap();
    let claimed = s
        .query(&ctx, "SELECT idem_key FROM idempotency_records", &[])
        .unwrap();
    assert_eq!(claimed.len(), 4, "a claim is one statement: nothing purged");
    complete(&s, &ctx, &scope(&k, "u1"), "owner", &created()).unwrap();
    let left = s
        .query(
            &ctx_of(&s, 1_000),
            "SELECT idem_key FROM idempotency_records",
            &[],
        )
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].text("idem_key").unwrap(), "new");
}

/// A connection that counts the statements run on it (the lock-wait
/// pragma aside).
struct Counting {
    db: HostSqlite,
    statements: std::cell::Cell<usize>,
}

impl meridian_platform::store::db::Database for Counting {
    fn run(
        &self,
        sql: &str,
        params: &[meridian_platform::store::db::Value],
    ) -> Result<Vec<meridian_platform::store::db::Row>, meridian_platform::store::db::DbError> {
        if !sql.starts_with("PRAGMA") {
            self.statements.set(self.statements.get() + 1);
        }
        self.db.run(sql, params)
    }
}

#[test]
fn a_fresh_claim_takes_the_write_lock_for_one_statement_and_a_busy_key_reads_once() {
    let seeded = store();
    let s = Store::new(
        Counting {
            db: seeded.db().copy(),
            statements: std::cell::Cell::new(0),
        },
        seeded.clock(),
    );
    let ctx = context_at(
        meridian_platform::Clock::now(&s.clock()),
        Duration::from_millis(1_000),
        "test",
    );
    let k = key("k1");
    let fp = fingerprint(b"{}");
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner"),
        Ok(Claimed::Fresh)
    );
    assert_eq!(
        s.db().statements.get(),
        1,
        "no transaction around the claim"
    );
    assert_eq!(
        claim(&s, &ctx, &scope(&k, "u1"), &fp, "owner"),
        Err(IdempotencyError::InProgress)
    );
    assert_eq!(
        s.db().statements.get(),
        3,
        "the upsert that took nothing, one read"
    );
}

#[test]
fn a_dead_owners_claim_is_not_taken_over_with_another_body() {
    let s = store();
    let k = key("k1");
    claim(
        &s,
        &ctx_of(&s, 500),
        &scope(&k, "u1"),
        &fingerprint(b"{\"a\":1}"),
        "dead",
    )
    .unwrap();
    s.clock().advance(Duration::from_millis(501));
    assert_eq!(
        claim(
            &s,
            &ctx_of(&s, 500),
            &scope(&k, "u1"),
            &fingerprint(b"{\"a\":2}"),
            "other"
        ),
        Err(IdempotencyError::Reused)
    );
    assert_eq!(
        claim(
            &s,
            &ctx_of(&s, 500),
            &scope(&k, "u1"),
            &fingerprint(b"{\"a\":1}"),
            "heir"
        ),
        Ok(Claimed::Fresh),
        "the same body takes it over"
    );
}

/// Two hosts whose clocks are five seconds apart, on one database: the
/// host whose clock runs ahead judges the other's claim expired while its
/// owner is still working, and takes it over. The owner that lost its
/// claim commits nothing and answers a conflict: one write of one key.
#[test]
fn a_claim_taken_over_by_a_host_whose_clock_runs_ahead_commits_nothing_for_its_first_owner() {
    use meridian_platform::http::idempotency::{begin, Begun, Written};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("billing.db");
    let host = |offset_ms: u64| {
        let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new(
            UnixMillis::from_millis(1_700_000_000_000 + offset_ms),
        )));
        Store::new(HostSqlite::open(&file), clock)
    };
    let (behind, ahead) = (host(0), host(5_000));
    let setup = ctx_of(&behind, 1_000);
    for stmt in meridian_platform::store::migrate::split_statements(&behind.render(DDL)) {
        behind.execute(&setup, stmt, &[]).unwrap();
    }
    behind
        .execute(&setup, "CREATE TABLE invoices (id TEXT NOT NULL)", &[])
        .unwrap();
    let k = key("invoice-1");
    let write = |id: &'static str| {
        move |tx: &Store<HostSqlite, &'static ManualClock>| {
            tx.execute(
                &ctx_of(tx, 3_000),
                "INSERT INTO invoices (id) VALUES (?)",
                &[id.into()],
            )?;
            Ok(Written::same(http::StatusCode::CREATED, &id))
        }
    };
    // The host behind claims the key for its 3 s budget...
    let first_ctx = ctx_of(&behind, 3_000);
    let Ok(Begun::Proceed(first)) = begin(
        &behind,
        &first_ctx,
        Some(&k),
        ("t1", "u1"),
        "POST /invoices",
        b"{}",
    ) else {
        panic!("a fresh key proceeds");
    };
    // ...the host ahead, 5 s later by its clock, finds that deadline passed
    // and takes the key over, and writes first.
    let second_ctx = ctx_of(&ahead, 3_000);
    let Ok(Begun::Proceed(second)) = begin(
        &ahead,
        &second_ctx,
        Some(&k),
        ("t1", "u1"),
        "POST /invoices",
        b"{}",
    ) else {
        panic!("the claim looks expired to the host ahead");
    };
    assert_eq!(
        second
            .commit(&ahead, &second_ctx, write("second"))
            .unwrap()
            .status(),
        201
    );
    // The first owner, still within its own budget, finishes its work.
    behind.clock().advance(Duration::from_millis(100));
    let lost = first
        .commit(&behind, &first_ctx, write("first"))
        .unwrap_err();
    assert_eq!(lost.status().as_u16(), 409, "{lost:?}");
    let rows = behind
        .query(&ctx_of(&behind, 1_000), "SELECT id FROM invoices", &[])
        .unwrap();
    assert_eq!(rows.len(), 1, "one write of one key");
    // And a replay answers what the write that stands made.
    let Ok(Begun::Replay(replayed)) = begin(
        &behind,
        &ctx_of(&behind, 1_000),
        Some(&k),
        ("t1", "u1"),
        "POST /invoices",
        b"{}",
    ) else {
        panic!("the key replays");
    };
    assert_eq!(replayed.status(), 201);
    assert_eq!(replayed.body().as_slice(), br#""second""#);
}
