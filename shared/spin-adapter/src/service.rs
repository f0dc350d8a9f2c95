//! The common shape of an internal service: the gate, `/health`, the
//! database opened and migrated under the budget, then the service's own
//! routes as a plain function.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use meridian_platform::http::body::MAX_BODY_BYTES;
use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::http::routes::RouteSpec;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::log::{route_template, RequestLine, Served};
use meridian_platform::store::db::{failure, DbError, Store};
use meridian_platform::store::migrate::{migrate, Migration, MigrationError};
use meridian_platform::wire::headers;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext, SystemClock};
use spin_sdk::http::{IncomingRequest, ResponseOutparam};

use crate::sqlite::SpinSqlite;
use crate::{convert, internal};

/// The store every service handler works on.
pub type SpinStore = Store<SpinSqlite, SystemClock>;

/// What an internal service is: its name and its database.
#[derive(Debug, Clone, Copy)]
pub struct ServiceSpec {
    /// Component name, reported as `hop`.
    pub hop: &'static str,
    /// SQLite label of the service's database.
    pub database: &'static str,
    /// The service's migrations, in order.
    pub migrations: &'static [Migration],
    /// Its public routes, for the route templates its log lines name.
    pub routes: &'static [RouteSpec],
}

/// A service's database, opened for one request.
pub struct Opened {
    /// The store the handler works on.
    pub store: SpinStore,
    /// Whether one of its statements found the schema behind the code.
    pub schema_behind: Rc<Cell<bool>>,
    /// Whether opening it applied migrations.
    pub migrated: bool,
}

impl ServiceSpec {
    /// Opens the database, and with `check_ledger` brings its schema up to
    /// date, under the request's budget (see [`checks_ledger`]).
    pub fn open_store(&self, ctx: &RequestContext, check_ledger: bool) -> Result<Opened, Problem> {
        let db = SpinSqlite::open(self.database).map_err(|e| match e {
            fault @ DbError::Unavailable(..) => Problem::from(fault),
            other => self.unavailable("opening the database", &other),
        })?;
        let schema_behind = db.schema_behind();
        // Every statement checks the budget first and waits for a lock only
        // until the work deadline: the store sets both.
        let store = Store::new(db, SystemClock);
        if !check_ledger {
            return Ok(Opened {
                store,
                schema_behind,
                migrated: false,
            });
        }
        // A fresh database's first requests race to migrate it, and on a
        // loaded libSQL server one of them can be interrupted
        // (SQLITE_INTERRUPT) or find the lock held past its wait. Migrating
        // is idempotent (the ledger), so it runs once more, within the
        // budget, before the request is refused.
        let outcome = match migrate(&store, ctx, self.migrations) {
            Err(MigrationError::Db(DbError::Locked(_))) => migrate(&store, ctx, self.migrations),
            first => first,
        };
        match outcome {
            Ok(applied) => {
                let migrated = !applied.is_empty();
                if migrated {
                    journal::event(Event::MigrationApplied { versions: applied });
                }
                Ok(Opened {
                    store,
                    schema_behind,
                    migrated,
                })
            }
            // The budget spent (the hop's 504), or a full, read-only or
            // unreadable file, or a lock or interrupt that outlasted the
            // wait (the retryable 503 and its failure line): the answer
            // every statement gets for it.
            Err(MigrationError::Db(
                e @ (DbError::Budget(_) | DbError::Unavailable(..) | DbError::Locked(_)),
            )) => Err(e.into()),
            Err(e) => Err(self.unavailable("migrating", &e)),
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

/// Whether `request` reads the migration ledger (and applies what is
/// missing) before its work. Writes do, and `/health`, which readiness
/// probes call right after a deploy. Reads do not: the ledger read is a
/// statement of its own, on most requests, and it cost reads up to a fifth
/// of their throughput (BENCHMARKS.md). A read whose statements find the
/// schema behind brings it up to date then, and runs again (see [`serve`]);
/// a migration that changes data but no table a read uses is applied by
/// the next write or readiness probe.
pub fn checks_ledger(request: &ServiceRequest) -> bool {
    request.path == "/health" || !matches!(request.method.as_str(), "GET" | "HEAD")
}

/// Serves one admitted request: answers `GET /health`, or opens the store
/// and hands the request to `app` — a second time, for a read that found
/// the schema behind, once it is brought up to date.
async fn serve<F, Fut, A>(
    ctx: RequestContext,
    request: ServiceRequest,
    spec: &ServiceSpec,
    app: F,
) -> Answer
where
    F: Fn(RequestContext, SpinStore, ServiceRequest) -> Fut,
    Fut: Future<Output = A>,
    A: Into<Answer>,
{
    let check = checks_ledger(&request);
    let opened = match spec.open_store(&ctx, check) {
        Err(problem) => return ServiceResponse::problem(&ctx, problem).into(),
        Ok(opened) => opened,
    };
    if request.path == "/health" {
        return ServiceResponse::json(
            200,
            &serde_json::json!({"status": "ok", "service": spec.hop}),
        )
        .into();
    }
    if check {
        return app(ctx, opened.store, request).await.into();
    }
    let first = app(ctx.clone(), opened.store, request.clone()).await.into();
    if !opened.schema_behind.get() {
        return first;
    }
    // A fresh database, or a migration not yet applied: bring the schema
    // up to date and read again — also when a concurrent first request
    // applied the migrations between our read and our look at the ledger
    // (one of 64 concurrent first reads of a fresh database answered 500
    // before). Only a schema still behind after that is a bug: a
    // statement naming what no migration creates.
    match spec.open_store(&ctx, true) {
        Ok(again) => {
            // Only what the second run's own statements find counts (the
            // migration's look at a missing ledger sets it too).
            let still_behind = again.schema_behind.clone();
            still_behind.set(false);
            let route = format!(
                "{} {}",
                request.method,
                route_template(spec.routes, &request.path)
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
        Err(problem) => ServiceResponse::problem(&ctx, problem).into(),
    }
}

/// The whole of a service's Spin entry point: admits the request on its
/// head alone (so an expired or unauthorized request is refused before its
/// body is read), reads the body within the limit and the work deadline,
/// serves it with `app`, and sends the answer.
pub async fn run<F, Fut, A>(
    incoming: IncomingRequest,
    out: ResponseOutparam,
    spec: &ServiceSpec,
    app: F,
) where
    F: Fn(RequestContext, SpinStore, ServiceRequest) -> Fut,
    Fut: Future<Output = A>,
    A: Into<Answer>,
{
    let mut request = convert::read_head(&incoming);
    // Decided once, so the answer's body, its header and the log name the same id.
    let request_id = RequestId::from_header_or_new(request.header(headers::REQUEST_ID));
    journal::begin(spec.hop, request_id.as_str(), request.header("traceparent"));
    let (method, route) = (
        request.method.clone(),
        route_template(spec.routes, &request.path),
    );
    let (ctx, answer) = match internal::admit(&request, &request_id, spec.hop) {
        Err(refusal) => (None, Answer::from(refusal)),
        Ok(admitted) => {
            let ctx = admitted.ctx;
            let until = ctx.work_deadline();
            // Every answer to an admitted request carries its request id.
            let mut answer =
                match convert::read_body(incoming, &request, MAX_BODY_BYTES, until).await {
                    Ok(body) => {
                        request.body = body;
                        serve(ctx.clone(), request, spec, app).await
                    }
                    Err(unread) => {
                        let problem = unread.to_problem().unwrap_or_else(|| ctx.spent().into());
                        ServiceResponse::problem(&ctx, problem).into()
                    }
                };
            answer
                .response
                .set_header(headers::REQUEST_ID, request_id.as_str());
            (Some(ctx), answer)
        }
    };
    let served = Served {
        method: &method,
        route: &route,
    };
    let Answer { response, after } = answer;
    RequestLine::new(served, ctx.as_ref(), &response, SystemClock.now()).emit();
    convert::send_response(out, response);
    // The caller has its answer (the body is finished); the instance runs
    // on until what was left for after it is done.
    if let Some(after) = after {
        after.await;
    }
}

/// What a service's handler gives back: the response, and work to do once
/// it has been sent (a write's event deliveries), which the caller need
/// not wait for.
pub struct Answer {
    /// Sent as soon as the handler returns.
    pub response: ServiceResponse,
    /// Run after the response has gone.
    pub after: Option<std::pin::Pin<Box<dyn Future<Output = ()>>>>,
}

impl Answer {
    /// `response` now, then `after`.
    pub fn then(response: ServiceResponse, after: impl Future<Output = ()> + 'static) -> Self {
        Self {
            response,
            after: Some(Box::pin(after)),
        }
    }
}

impl From<ServiceResponse> for Answer {
    fn from(response: ServiceResponse) -> Self {
        Self {
            response,
            after: None,
        }
    }
}

/// The Spin entry point of a private service: `service_component!(SPEC,
/// |ctx, store, request| async move { ... })` exports a handler that runs
/// every request through [`run`] (admission, budget, migrations) and then
/// the closure. Compiled for Wasm only: the export names are not valid
/// symbols for a host library.
#[macro_export]
macro_rules! service_component {
    ($spec:expr, |$ctx:ident, $store:ident, $request:ident| $body:expr) => {
        // The SDK's export macro expands to `unsafe` glue; it is allowed here only.
        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code)]
        mod entry {
            #[::spin_sdk::http_component]
            async fn handle(
                incoming: ::spin_sdk::http::IncomingRequest,
                out: ::spin_sdk::http::ResponseOutparam,
            ) {
                $crate::service::run(incoming, out, &$spec, |$ctx, $store, $request| $body).await
            }
        }
    };
}
