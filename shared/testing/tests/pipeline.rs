//! An internal service's pipeline (`meridian_platform::service`) on a real
//! (host) SQLite: `/health`, `POST /migrate` (as the migrating role where
//! there is one), and a read that finds the schema behind run again once it is migrated;
//! and the whole hop as the Spin entry runs it (`http::pipeline`): the
//! gate on the head, the body, the handler.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use meridian_platform::http::body::{BodyError, MAX_REQUEST_BODY_BYTES};
use meridian_platform::http::internal_headers;
use meridian_platform::http::pipeline::{self, Body, InHand};
use meridian_platform::http::prelude::*;
use meridian_platform::service::{serve, Answer, Databases, ServiceHop, ServiceSpec};
use meridian_platform::store::db::{Database, DbError, Row, StorageFault, Store, Value};
use meridian_platform::store::migrate::Migration;
use meridian_platform::time::ManualClock;
use meridian_platform::wire::signature::CallKey;
use meridian_platform::{Deadline, Problem, RequestContext, UnixMillis};
use meridian_testing::http::{as_received, request};
use meridian_testing::{context_at, HostSqlite};

const NOW: UnixMillis = UnixMillis::from_millis(1_700_000_000_000);

const NOTES: Migration = Migration {
    version: 1,
    name: "0001_notes.sql",
    sql: "CREATE TABLE notes (id TEXT PRIMARY KEY)",
};

const SPEC: ServiceSpec<()> = ServiceSpec {
    hop: "notes",
    database: "notes",
    migrations: &[NOTES],
    postgres_migrations: &[],
    endpoints: &[],
};

/// A host SQLite that sets the schema-behind flag, as Spin's does; and
/// interrupts the next statements (as many as `interrupt` counts) that
/// start with its text, as a loaded libSQL server can (`SQLITE_INTERRUPT`,
/// inside a transaction rolling it back).
struct Flagging {
    db: HostSqlite,
    /// Whether schema changes are refused, as for a PostgreSQL role that
    /// may read and write rows only.
    rows_only: bool,
    behind: Rc<Cell<bool>>,
    interrupt: Rc<Cell<Option<(&'static str, u32)>>>,
}

impl Database for Flagging {
    fn run(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let statement = sql.trim_start().to_ascii_uppercase();
        if self.rows_only
            && ["CREATE", "ALTER", "DROP"]
                .iter()
                .any(|w| statement.starts_with(w))
        {
            return Err(DbError::Sqlite(
                "permission denied for schema public".into(),
            ));
        }
        if let Some((prefix, times)) = self.interrupt.get().filter(|(p, _)| sql.starts_with(p)) {
            self.interrupt
                .set((times > 1).then_some((prefix, times - 1)));
            let _ = self.db.run("ROLLBACK", &[]);
            return Err(DbError::Interrupted("SQLITE_INTERRUPT".into()));
        }
        let result = self.db.run(sql, params);
        if matches!(result, Err(DbError::Missing(_))) {
            self.behind.set(true);
        }
        result
    }
}

/// Every open is a new connection to one database file, as each request
/// of a Spin service opens its own.
struct Files {
    dir: Rc<tempfile::TempDir>,
    opens: Cell<u32>,
    interrupt: Rc<Cell<Option<(&'static str, u32)>>>,
    /// Requests are served as a role that may not change the schema; a
    /// migrating role opens the same files with every right.
    split_roles: bool,
}

impl Files {
    fn new() -> Self {
        Self {
            dir: Rc::new(tempfile::tempdir().expect("temporary directory")),
            opens: Cell::new(0),
            interrupt: Rc::default(),
            split_roles: false,
        }
    }
}

impl Databases for Files {
    type Db = Flagging;

    fn open(&self, label: &str) -> Result<(Flagging, Rc<Cell<bool>>), DbError> {
        self.opens.set(self.opens.get() + 1);
        let db = HostSqlite::open(&self.dir.path().join(format!("{label}.db")));
        let behind = Rc::default();
        Ok((
            Flagging {
                db,
                rows_only: self.split_roles,
                behind: Rc::clone(&behind),
                interrupt: Rc::clone(&self.interrupt),
            },
            behind,
        ))
    }

    fn migrating(&self) -> Option<Self> {
        self.split_roles.then(|| Self {
            dir: Rc::clone(&self.dir),
            opens: Cell::new(0),
            interrupt: Rc::clone(&self.interrupt),
            split_roles: false,
        })
    }
}

/// A store that cannot be opened at all.
struct Unopenable;

impl Databases for Unopenable {
    type Db = Flagging;

    fn open(&self, _: &str) -> Result<(Flagging, Rc<Cell<bool>>), DbError> {
        Err(DbError::Unavailable(
            StorageFault::CannotOpen,
            "unable to open database file".into(),
        ))
    }
}

/// Runs a future that never waits (the host SQLite answers at once).
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the pipeline waited on the host"),
    }
}

fn ctx() -> RequestContext {
    context_at(NOW, Duration::from_secs(2), "notes")
}

type NoteStore = Store<Flagging, &'static ManualClock>;

/// A clock the pipeline can hand to both of a read's stores.
fn clock() -> &'static ManualClock {
    Box::leak(Box::new(ManualClock::new(NOW)))
}

/// The service's handler: counts the notes (a read) or adds one (a write),
/// counting its runs.
fn notes(
    runs: &Cell<u32>,
) -> impl Fn(RequestContext, NoteStore, Request) -> std::future::Ready<Answer<'static>> + '_ {
    move |ctx, store, request| {
        runs.set(runs.get() + 1);
        let outcome = match request.method().as_str() {
            "GET" => store
                .query(&ctx, "SELECT count(*) AS n FROM notes", &[])
                .and_then(|rows| rows.first().map_or(Ok(0), |r| r.integer("n"))),
            // A write, then (with `?then=absent`) a statement after its
            // commit that finds a table missing, its failure only logged
            // (as recording an event's delivery is).
            _ => store
                .execute(&ctx, "INSERT INTO notes (id) VALUES ('a')", &[])
                .inspect(|_| {
                    if request.uri().query() == Some("then=absent") {
                        let _ = store.query(&ctx, "SELECT * FROM absent", &[]);
                    }
                })
                .map(|_| 1),
        };
        std::future::ready(
            match outcome {
                Ok(n) => message::json(StatusCode::OK, &serde_json::json!({ "notes": n })),
                Err(e) => message::problem(&ctx, Problem::from(e)),
            }
            .into(),
        )
    }
}

fn run(
    spec: &ServiceSpec<()>,
    databases: &impl Databases<Db = Flagging>,
    request: Request,
    runs: &Cell<u32>,
) -> Response {
    now(serve(ctx(), request, spec, databases, clock(), notes(runs))).response
}

fn json(response: &Response) -> serde_json::Value {
    serde_json::from_slice(response.body()).unwrap_or_default()
}

#[test]
fn a_read_of_a_fresh_database_is_migrated_and_run_again() {
    let files = Files::new();
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(
        (r.status().as_u16(), json(&r)["notes"].as_i64()),
        (200, Some(0))
    );
    assert_eq!(runs.get(), 2, "once finding no table, once after migrating");
    assert_eq!(files.opens.get(), 2);
    // Migrated now: the next read runs once, and reads no ledger.
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(r.status(), 200);
    assert_eq!(runs.get(), 3);
    assert_eq!(files.opens.get(), 3);
}

#[test]
fn a_write_that_finds_the_schema_behind_fails_whole_and_runs_once_more_after_migrating() {
    // Writes read no ledger (on a server a network away it is two round
    // trips of every write): the first finds the table missing, its
    // transaction wrote nothing, and it runs again on the migrated schema.
    let files = Files::new();
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!(
        (r.status().as_u16(), runs.get(), files.opens.get()),
        (200, 2, 2)
    );
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(json(&r)["notes"], 1, "written once");
    // Migrated now: the next write runs once (the fixture's one id is
    // taken: a 409, not run again).
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!((r.status().as_u16(), runs.get()), (409, 4));
}

#[test]
fn a_write_that_succeeded_is_never_run_again_whatever_a_later_statement_found() {
    let files = Files::new();
    let runs = Cell::new(0);
    // Migrated by a read first.
    run(&SPEC, &files, request("GET", "/notes"), &runs);
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("POST", "/notes?then=absent"), &runs);
    assert_eq!((r.status().as_u16(), runs.get()), (200, 1));
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(json(&r)["notes"], 1, "written once");
}

#[test]
fn a_migration_the_server_interrupted_is_run_again_whole_and_the_write_once() {
    // The migration's table, interrupted inside its transaction: the
    // transaction is gone, the ledger says nothing ran, and migrating again
    // applies it; run statement by statement instead, the ledger's row
    // would be written outside any transaction and its COMMIT refused.
    let files = Files::new();
    files.interrupt.set(Some(("CREATE TABLE notes", 1)));
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!((r.status().as_u16(), runs.get()), (200, 2), "{}", json(&r));
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(json(&r)["notes"], 1);
}

#[test]
fn a_migration_the_server_interrupted_twice_is_still_run_and_a_third_time_refused() {
    // Three services racing to migrate one database can each be turned
    // away more than once: two more tries, within the budget.
    let files = Files::new();
    files.interrupt.set(Some(("CREATE TABLE notes", 2)));
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!((r.status().as_u16(), runs.get()), (200, 2), "{}", json(&r));
    let files = Files::new();
    files.interrupt.set(Some(("CREATE TABLE notes", 3)));
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!(r.status().as_u16(), 503, "{}", json(&r));
    assert_eq!(
        runs.get(),
        1,
        "the handler ran once, finding no table, and not after the refusal"
    );
}

#[test]
fn a_write_the_server_interrupted_is_a_retryable_503_and_is_not_run_again() {
    let files = Files::new();
    let runs = Cell::new(0);
    assert_eq!(
        run(&SPEC, &files, request("POST", "/migrate"), &runs).status(),
        200
    );
    files.interrupt.set(Some(("INSERT INTO notes", 1)));
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!(
        (r.status().as_u16(), json(&r)["retryable"].as_bool()),
        (503, Some(true))
    );
    assert_eq!(runs.get(), 1);
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(json(&r)["notes"], 0, "nothing written");
}

/// The tables of the database labelled `notes` in `files`.
fn tables(files: &Files) -> Vec<String> {
    let db = HostSqlite::open(&files.dir.path().join("notes.db"));
    db.run("SELECT name FROM sqlite_master WHERE type = 'table'", &[])
        .unwrap()
        .iter()
        .map(|row| row.text("name").unwrap().to_owned())
        .collect()
}

#[test]
fn health_asks_the_database_one_statement_and_reads_no_ledger() {
    let files = Files::new();
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("GET", "/health"), &runs);
    assert_eq!(
        (r.status().as_u16(), json(&r)),
        (200, serde_json::json!({"status": "ok", "service": "notes"}))
    );
    assert_eq!((runs.get(), files.opens.get()), (0, 1));
    assert!(tables(&files).is_empty(), "{:?}", tables(&files));
}

#[test]
fn migrate_applies_what_is_pending_says_which_and_takes_post_only() {
    let files = Files::new();
    let runs = Cell::new(0);
    let r = run(&SPEC, &files, request("POST", "/migrate"), &runs);
    assert_eq!(
        (r.status().as_u16(), json(&r)),
        (200, serde_json::json!({"service": "notes", "applied": [1]}))
    );
    assert_eq!(runs.get(), 0, "no handler runs");
    let mut found = tables(&files);
    found.sort();
    assert_eq!(found, ["notes", "schema_migrations"]);
    // Up to date: nothing to apply.
    let r = run(&SPEC, &files, request("POST", "/migrate"), &runs);
    assert_eq!(json(&r)["applied"], serde_json::json!([]));
    // The schema is there: a read runs once.
    run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(runs.get(), 1);
    let r = run(&SPEC, &files, request("GET", "/migrate"), &runs);
    assert_eq!(
        (r.status().as_u16(), json(&r)["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
}

#[test]
fn with_roles_split_requests_never_change_the_schema_and_migrate_does_as_the_migrating_role() {
    let files = Files {
        split_roles: true,
        ..Files::new()
    };
    let runs = Cell::new(0);
    // A fresh database: the serving role cannot create what the read
    // needs, and the request says the storage is unavailable.
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(r.status(), 500, "{}", json(&r));
    assert!(tables(&files).is_empty());
    // The operator's migrate, as the migrating role.
    let r = run(&SPEC, &files, request("POST", "/migrate"), &runs);
    assert_eq!(json(&r)["applied"], serde_json::json!([1]), "{}", json(&r));
    // Served as the serving role from here on.
    let r = run(&SPEC, &files, request("POST", "/notes"), &runs);
    assert_eq!(r.status(), 200, "{}", json(&r));
    let r = run(&SPEC, &files, request("GET", "/notes"), &runs);
    assert_eq!(json(&r)["notes"], 1);
}

#[test]
fn a_statement_no_migration_satisfies_is_run_twice_and_answered_as_internal() {
    const BROKEN: ServiceSpec<()> = ServiceSpec {
        migrations: &[],
        postgres_migrations: &[],
        ..SPEC
    };
    let files = Files::new();
    let runs = Cell::new(0);
    let r = run(&BROKEN, &files, request("GET", "/notes"), &runs);
    assert_eq!(
        (r.status().as_u16(), json(&r)["code"].as_str()),
        (500, Some("internal"))
    );
    assert_eq!(runs.get(), 2, "the read is tried again once, not more");
}

#[test]
fn a_database_that_cannot_be_opened_is_a_retryable_503_and_no_handler_runs() {
    let runs = Cell::new(0);
    for request in [
        request("GET", "/notes"),
        request("POST", "/notes"),
        request("GET", "/health"),
        request("POST", "/migrate"),
    ] {
        let r = run(&SPEC, &Unopenable, request, &runs);
        assert_eq!(
            (r.status().as_u16(), json(&r)["code"].as_str()),
            (503, Some("storage_unavailable"))
        );
    }
    assert_eq!(runs.get(), 0);
}

/// A body that records whether it was read.
struct Watched<'a> {
    bytes: Vec<u8>,
    read: &'a Cell<bool>,
}

impl Body for Watched<'_> {
    async fn read(
        self,
        head: &Request,
        limit: usize,
        until: Deadline,
    ) -> Result<Vec<u8>, BodyError> {
        self.read.set(true);
        InHand(self.bytes).read(head, limit, until).await
    }
}

const TOKEN: &str = "internal-secret";

/// A request as the gateway sends it: the internal headers for `token`
/// and a budget whose deadline is `budget_ms` from `NOW` (negative: spent).
fn internal(method: &str, token: &str, budget_ms: i64) -> Request {
    let start = UnixMillis::from_millis(NOW.as_millis().saturating_add_signed(budget_ms - 2_000));
    let ctx = context_at(start, Duration::from_secs(2), "gateway");
    as_received(
        request(method, "/notes"),
        internal_headers(&ctx, NOW),
        &CallKey::derive(token),
    )
}

/// One request through the whole hop, as the Spin entry runs it: the
/// answer, whether the body was read, and how often the handler ran.
fn through_the_hop(request: Request, body: &[u8]) -> (Response, bool, u32) {
    let files = Files::new();
    let (runs, read) = (Cell::new(0), Cell::new(false));
    let hop = ServiceHop {
        spec: &SPEC,
        databases: files,
        clock: clock(),
        key: CallKey::derive(TOKEN),
        app: notes(&runs),
    };
    let body = Watched {
        bytes: body.to_vec(),
        read: &read,
    };
    let answer = now(pipeline::run(&hop, request, body));
    (answer.response, read.get(), runs.get())
}

#[test]
fn a_request_the_gate_refuses_is_answered_on_its_head_and_its_body_never_read() {
    for (request, status) in [
        (internal("POST", "wrong-secret", 1_000), 404),
        (internal("POST", TOKEN, -5), 504),
    ] {
        let (r, read, runs) = through_the_hop(request, b"{}");
        assert_eq!(
            (r.status().as_u16(), read, runs),
            (status, false, 0),
            "{:?}",
            json(&r)
        );
        assert_eq!(r.header("x-request-id"), Some("test-request"));
    }
}

#[test]
fn an_admitted_request_is_served_with_its_body_and_carries_its_request_id() {
    let (r, read, runs) = through_the_hop(internal("POST", TOKEN, 1_000), b"{}");
    // Twice: a fresh database, found behind by the first run.
    assert_eq!(
        (r.status().as_u16(), read, runs),
        (200, true, 2),
        "{:?}",
        json(&r)
    );
    assert_eq!(r.header("x-request-id"), Some("test-request"));
}

#[test]
fn a_body_past_the_limit_is_a_413_and_no_handler_runs() {
    let huge = vec![b' '; MAX_REQUEST_BODY_BYTES + 1];
    let (r, read, runs) = through_the_hop(internal("POST", TOKEN, 1_000), &huge);
    assert_eq!((r.status().as_u16(), read, runs), (413, true, 0));
    assert_eq!(json(&r)["code"], "payload_too_large");
}

/// Whether `hop` lets the runtime deliver its answer before the work
/// after it.
fn lets_the_answer_go_first<H: pipeline::Hop>(_: &H) -> bool {
    H::WORK_AFTER_HOLDS_THE_THREAD
}

#[test]
fn a_service_lets_its_answer_go_before_its_store_closes() {
    // The store, and its database connection, is dropped when the work
    // after the answer ends; closing the last connection to a
    // write-ahead-logged file checkpoints and syncs it on the thread the
    // caller is woken on (meridian_spin::service::run_hop).
    let runs = Cell::new(0);
    let hop = ServiceHop {
        spec: &SPEC,
        databases: Files::new(),
        clock: clock(),
        key: CallKey::derive(TOKEN),
        app: notes(&runs),
    };
    assert!(lets_the_answer_go_first(&hop));
}
