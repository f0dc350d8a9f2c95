//! The pipeline of an internal service once its request is admitted and its
//! body read: `/health` (one statement that names no table), `POST
//! /migrate` (the schema brought up to date, as the migrating role where
//! one is configured), the service's own handler, and a read that found
//! the schema behind run once more after migrating. Generic over how a
//! database is opened ([`Databases`]), so the whole of it runs on the
//! host; `meridian-spin` opens Spin's SQLite and does the reading and
//! sending around it.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use crate::budget::gate::InternalGate;
use crate::budget::propagation::DEFAULT_SKEW_THRESHOLD;
use crate::http::body::BodyError;
use crate::http::message::{self, Request, RequestExt, ResponseExt};
pub use crate::http::pipeline::Answer;
use crate::http::pipeline::{Admission, Hop};
use crate::http::request_line::{route_template, RequestLine, Served};
use crate::http::routes::{self, Endpoint};
use crate::log::journal::{self, Event};
use crate::store::db::{failure, Database, DbError, Dialect, Store};
use crate::store::migrate::{migrate, Migration, MigrationError};
use crate::wire::headers;
use crate::wire::request_id::RequestId;
use crate::wire::signature::CallKey;
use crate::wire::unprefixed;
use crate::{Clock, ErrorCode, Problem, RequestContext};
use http::StatusCode;

/// What an internal service is: its name and its database.
#[derive(Debug, Clone, Copy)]
pub struct ServiceSpec<Op: 'static> {
    /// Component name, reported as `hop`.
    pub hop: &'static str,
    /// Label of the service's database.
    pub database: &'static str,
    /// The service's migrations for SQLite, in order.
    pub migrations: &'static [Migration],
    /// Its migrations for PostgreSQL, in order: the same schema in
    /// PostgreSQL's types, from `migrations/postgres/`.
    pub postgres_migrations: &'static [Migration],
    /// Its route table, for the route templates its log lines name.
    pub endpoints: &'static [Endpoint<Op>],
}

/// How a service's database is opened for one request.
pub trait Databases {
    /// The connection.
    type Db: Database;

    /// Opens the database labelled `label`, with the flag its statements
    /// set when they find a table or column missing (the schema behind
    /// the code); the flag stays readable after the connection is handed
    /// to the store.
    fn open(&self, label: &str) -> Result<(Self::Db, Rc<Cell<bool>>), DbError>;

    /// The same databases as the role that may change their schema
    /// (`POST /migrate` opens them so), where it is another than the one
    /// requests are served as; `None`: the same role.
    fn migrating(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }

    /// Whether the services share one database (a platform that allows
    /// one): each service's own tables are then its own by name
    /// ([`Store::shared_by`]).
    fn shared(&self) -> bool {
        false
    }
}

/// A service's database, opened for one request.
pub struct Opened<D, C> {
    /// The store the handler works on.
    pub store: Store<D, C>,
    /// Whether one of its statements found the schema behind the code.
    pub schema_behind: Rc<Cell<bool>>,
    /// The migrations opening it applied.
    pub applied: Vec<u32>,
}

impl<Op> ServiceSpec<Op> {
    /// The route template `path` is logged as: its row's, or the path
    /// with its ids and any text not a route word written generically.
    pub fn route_template(&self, path: &str) -> String {
        route_template(
            routes::template(self.endpoints, &routes::segments(path)),
            path,
        )
    }

    /// Opens the database, and with `check_ledger` brings its schema up to
    /// date, under the request's budget (see [`MIGRATE_PATH`]).
    pub fn open_store<O: Databases, C: Clock>(
        &self,
        databases: &O,
        clock: C,
        ctx: &RequestContext,
        check_ledger: bool,
    ) -> Result<Opened<O::Db, C>, Problem> {
        let (db, schema_behind) = databases.open(self.database).map_err(|e| match e {
            fault @ DbError::Unavailable(..) => Problem::from(fault),
            other => self.unavailable("opening the database", &other),
        })?;
        // Every statement checks the budget first and waits for a lock only
        // until the work deadline: the store sets both.
        let store = match databases.shared() {
            true => Store::new(db, clock).shared_by(self.hop),
            false => Store::new(db, clock),
        };
        if !check_ledger {
            return Ok(Opened {
                store,
                schema_behind,
                applied: Vec::new(),
            });
        }
        // A fresh database's first requests race to migrate it, and on a
        // loaded libSQL server one of them can be interrupted
        // (SQLITE_INTERRUPT) or find the lock held past its wait; in one
        // database for the whole app, the three services' first probes
        // race too, and a switch to write-ahead logging finds the file busy
        // at once rather than waiting (seen: billing's `/health` refused
        // after 60 ms of a 3 s budget). Migrating is idempotent (the
        // ledger, read again inside the migrations' transaction, which an
        // interrupt rolls back whole), so it runs up to twice more, within
        // the budget, before the request is refused.
        let migrations = match store.db().dialect() {
            Dialect::Sqlite => self.migrations,
            Dialect::Postgres => self.postgres_migrations,
        };
        let mut outcome = migrate(&store, ctx, migrations);
        for _ in 0..2 {
            match outcome {
                Err(MigrationError::Db(DbError::Locked(_) | DbError::Interrupted(_))) => {
                    outcome = migrate(&store, ctx, migrations);
                }
                _ => break,
            }
        }
        match outcome {
            Ok(applied) => {
                if !applied.is_empty() {
                    journal::event(Event::MigrationApplied {
                        versions: applied.clone(),
                    });
                }
                Ok(Opened {
                    store,
                    schema_behind,
                    applied,
                })
            }
            // The budget spent (the hop's 504), or a full, read-only or
            // unreadable file, or a lock or interrupt that outlasted the
            // wait (the retryable 503 and its failure line): the answer
            // every statement gets for it.
            Err(MigrationError::Db(
                e @ (DbError::Budget(_)
                | DbError::Unavailable(..)
                | DbError::Locked(_)
                | DbError::Interrupted(_)),
            )) => Err(e.into()),
            Err(e) => Err(self.unavailable(
                "migrating (where requests are served as a role that may not change the schema, `POST /ops/migrate` applies it as the migrating one)",
                &e,
            )),
        }
    }

    fn unavailable(&self, what: &'static str, cause: &dyn std::fmt::Display) -> Problem {
        journal::event(Event::Failure {
            what,
            cause: cause.to_string(),
        });
        Problem::new(ErrorCode::Internal, "the service's storage is unavailable")
    }
}

/// The path of the service's migrate call (`POST`), which the gateway's
/// admin route `POST /ops/migrate` sends to each service: the one request
/// that reads the migration ledger (and applies what is missing) before
/// anything else. Not a readiness probe (`/health` runs one statement that
/// names no table: an anonymous `/readyz` neither reads nor runs
/// migrations), and not other requests: the ledger read is a statement of
/// its own — on a PostgreSQL server a network away, two round trips of
/// every request. A request whose statements find the schema behind
/// brings it up to date then, as the role it is served as, and runs again
/// (see [`serve`]); a migration that changes no table or column a
/// statement names (an index, a function, a setting) is applied by the
/// next migrate call or by the next request that finds the schema behind.
pub const MIGRATE_PATH: &str = "/migrate";

/// Whether a request whose statements found the schema behind runs again
/// once it is brought up to date: a read always; a write only when it
/// failed with a server error (a write's statements that found a table
/// missing failed its transaction, which rolled back, and its key's claim
/// was given back: nothing of it is written). A write answered otherwise
/// stands — a statement after its commit (recording an event's delivery)
/// may have found the schema behind, and running it again would write twice.
fn runs_again(request: &Request, first: &Answer<'_>) -> bool {
    matches!(request.method().as_str(), "GET" | "HEAD") || first.response.status().is_server_error()
}

/// Serves one admitted request: answers `GET /health` and `POST /migrate`,
/// or opens the store and hands the request to `app` — a second time, for
/// a read that found the schema behind, once it is brought up to date.
pub async fn serve<Op, O, C, F, Fut, A>(
    ctx: RequestContext,
    request: Request,
    spec: &ServiceSpec<Op>,
    databases: &O,
    clock: C,
    app: F,
) -> Answer<'static>
where
    O: Databases,
    C: Clock + Clone,
    F: Fn(RequestContext, Store<O::Db, C>, Request) -> Fut,
    Fut: Future<Output = A>,
    A: Into<Answer<'static>>,
{
    if request.path() == MIGRATE_PATH {
        if request.method() != http::Method::POST {
            let problem = Problem::method_not_allowed(request.method().as_str(), "POST");
            return message::problem(&ctx, problem).into();
        }
        let migrating = databases.migrating();
        let databases = migrating.as_ref().unwrap_or(databases);
        return match spec.open_store(databases, clock, &ctx, true) {
            Err(problem) => message::problem(&ctx, problem).into(),
            Ok(opened) => message::json(
                StatusCode::OK,
                &serde_json::json!({"service": spec.hop, "applied": opened.applied}),
            )
            .into(),
        };
    }
    let opened = match spec.open_store(databases, clock.clone(), &ctx, false) {
        Err(problem) => return message::problem(&ctx, problem).into(),
        Ok(opened) => opened,
    };
    if request.path() == "/health" {
        // One statement that names no table: the database answers, and
        // nothing of its schema is read or changed.
        if let Err(e) = opened.store.query(&ctx, "SELECT 1", &[]) {
            return message::problem(&ctx, Problem::from(e)).into();
        }
        return message::json(
            StatusCode::OK,
            &serde_json::json!({"status": "ok", "service": spec.hop}),
        )
        .into();
    }
    let first = app(ctx.clone(), opened.store, request.clone()).await.into();
    if !opened.schema_behind.get() || !runs_again(&request, &first) {
        return first;
    }
    // A fresh database, or a migration not yet applied: bring the schema
    // up to date and read again — also when a concurrent first request
    // applied the migrations between our read and our look at the ledger
    // (one of 64 concurrent first reads of a fresh database answered 500
    // before). Only a schema still behind after that is a bug: a
    // statement naming what no migration creates.
    match spec.open_store(databases, clock, &ctx, true) {
        Ok(again) => {
            // Only what the second run's own statements find counts (the
            // migration's look at a missing ledger sets it too).
            let still_behind = again.schema_behind.clone();
            still_behind.set(false);
            let route = format!(
                "{} {}",
                request.method(),
                spec.route_template(request.path())
            );
            let second = app(ctx, again.store, request).await.into();
            if still_behind.get() {
                failure(
                    "storage: a statement names a table or column no migration creates",
                    route,
                );
            }
            second
        }
        Err(problem) => message::problem(&ctx, problem).into(),
    }
}

/// `request` with the internal prefix taken off its path, as the service's
/// handlers route it.
fn routed(mut request: Request, hop: &str) -> Request {
    let Some(path) = unprefixed(request.uri().path(), hop) else {
        return request;
    };
    let target = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    if let Ok(uri) = target.parse() {
        *request.uri_mut() = uri;
    }
    request
}

/// An internal service as a [`Hop`] of the one pipeline: its gate on the
/// head (the call's signature, the deadline and tenant headers, any budget
/// left), then [`serve`], each answer with its request id and the
/// request's log line.
pub struct ServiceHop<'a, Op: 'static, O, C, F> {
    /// What the service is.
    pub spec: &'a ServiceSpec<Op>,
    /// How its database is opened.
    pub databases: O,
    /// Wall clock.
    pub clock: C,
    /// The key the gate checks calls' signatures with (`internal_token`).
    pub key: CallKey,
    /// The service's handler.
    pub app: F,
}

/// A request the service's gate let in.
pub struct Entered {
    ctx: RequestContext,
    method: http::Method,
    route: String,
}

impl<Op, O, C: Clock, F> ServiceHop<'_, Op, O, C, F> {
    /// Writes the request's log line for `answer`.
    fn line(&self, method: &str, route: &str, ctx: Option<&RequestContext>, answer: &Answer<'_>) {
        let served = Served { method, route };
        RequestLine::new(served, ctx, &answer.response, self.clock.now()).emit();
    }
}

impl<Op, O, C, F, Fut, A> Hop for ServiceHop<'_, Op, O, C, F>
where
    O: Databases,
    C: Clock + Clone,
    F: Fn(RequestContext, Store<O::Db, C>, Request) -> Fut,
    Fut: Future<Output = A>,
    A: Into<Answer<'static>>,
{
    type Admitted = Entered;

    /// The handler's store, and with it the database connection, is
    /// dropped when its work after the answer ends.
    const WORK_AFTER_HOLDS_THE_THREAD: bool = true;

    fn admit(&self, head: &Request) -> Admission<Entered> {
        // Decided once, so the answer's body, its header and the log name
        // the same id.
        let request_id = RequestId::from_header_or_new(head.header(headers::REQUEST_ID));
        journal::begin(
            self.spec.hop,
            request_id.as_str(),
            head.header("traceparent"),
        );
        let path = head.path();
        let routed_path = unprefixed(path, self.spec.hop).unwrap_or(path);
        let (method, route) = (head.method().clone(), self.spec.route_template(routed_path));
        let gate = InternalGate {
            key: &self.key,
            hop: self.spec.hop,
            skew_threshold: DEFAULT_SKEW_THRESHOLD,
        };
        let target = head.uri().path_and_query().map_or("/", |pq| pq.as_str());
        match gate.pass(
            request_id.clone(),
            head.method().as_str(),
            target,
            |name| head.header(name),
            self.clock.now(),
        ) {
            Ok(admitted) => {
                if let Some(skew_ms) = admitted.skew_ms {
                    journal::event(Event::ClockSkew { skew_ms });
                }
                let ctx = admitted.ctx;
                Admission::Admitted {
                    read_until: ctx.work_deadline(),
                    admitted: Entered { ctx, method, route },
                }
            }
            Err(problem) => {
                let mut response = message::problem_for(request_id.as_str(), problem);
                response.set_header(headers::REQUEST_ID, request_id.as_str());
                let answer = Answer::from(response);
                self.line(method.as_str(), &route, None, &answer);
                Admission::Answered(answer)
            }
        }
    }

    async fn serve(
        &self,
        entered: Entered,
        request: Request,
        unread: Option<BodyError>,
    ) -> Answer<'_> {
        let Entered { ctx, method, route } = entered;
        let mut answer = match unread {
            None => {
                serve(
                    ctx.clone(),
                    routed(request, self.spec.hop),
                    self.spec,
                    &self.databases,
                    self.clock.clone(),
                    &self.app,
                )
                .await
            }
            Some(unread) => {
                let problem = unread.to_problem().unwrap_or_else(|| ctx.spent().into());
                message::problem(&ctx, problem).into()
            }
        };
        // Every answer to an admitted request carries its request id.
        answer
            .response
            .set_header(headers::REQUEST_ID, ctx.request_id().as_str());
        self.line(method.as_str(), &route, Some(&ctx), &answer);
        answer
    }
}

#[cfg(test)]
mod routed_tests {
    use super::*;

    #[test]
    fn a_routed_request_keeps_its_query() {
        let request = http::Request::builder()
            .uri("/_meridian/community/internal/residents?limit=5")
            .body(Vec::new())
            .unwrap();
        assert_eq!(
            routed(request, "community").uri().to_string(),
            "/internal/residents?limit=5"
        );
    }
}
