//! The Spin entry point of every component: the platform's one pipeline
//! (`meridian_platform::http::pipeline`) run on Spin's request, the answer
//! sent, and what was left for after it; a private service's hop on Spin's
//! SQLite.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use http::StatusCode;
use meridian_platform::http::body::BodyError;
use meridian_platform::http::message;
use meridian_platform::http::pipeline::{self, Body, Hop};
use meridian_platform::http::{Request, RequestExt, Response};
use meridian_platform::log::journal::{self, Event};
use meridian_platform::service::{Answer, Databases, ServiceHop, ServiceSpec};
use meridian_platform::store::db::{DbError, Store};
use meridian_platform::wire::headers;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Deadline, RequestContext, SystemClock};
use meridian_platform::{ErrorCode, Problem};
use spin_sdk::http::{IncomingRequest, ResponseOutparam};

use crate::database::{Engine, SpinDb};
use crate::{convert, vars};

/// The store every service handler works on.
pub type SpinStore = Store<SpinDb, SystemClock>;

/// The service's database as its variables configure it: a PostgreSQL
/// server (`postgres_address`), or Spin's SQLite — each service's own
/// label, or one for the whole app (`sqlite_database`).
pub struct SpinDatabases {
    /// The engine and where it is.
    pub engine: Engine,
}

impl SpinDatabases {
    /// As the variables `postgres_address` and `sqlite_database` say.
    pub fn from_variables() -> Self {
        Self {
            engine: Engine::from(vars::get("postgres_address"), vars::get("sqlite_database")),
        }
    }
}

impl Databases for SpinDatabases {
    type Db = SpinDb;

    /// On PostgreSQL, the service's own server and database as the
    /// migrating role (`postgres_migrator`, `user:password`: a component
    /// variable outside `settings`, read only here) when it is set:
    /// requests are then served as a role that may read and write rows but
    /// not change the schema (docs/storage.md, "Roles").
    fn migrating(&self) -> Option<Self> {
        let Engine::Postgres { address } = &self.engine else {
            return None;
        };
        let migrator = vars::get("postgres_migrator")?;
        Some(Self {
            engine: Engine::Postgres {
                address: as_role(address, migrator.trim())?,
            },
        })
    }

    fn open(&self, label: &str) -> Result<(SpinDb, Rc<Cell<bool>>), DbError> {
        let db = SpinDb::open(&self.engine, label)?;
        let schema_behind = db.schema_behind();
        Ok((db, schema_behind))
    }

    fn shared(&self) -> bool {
        matches!(self.engine, Engine::Sqlite { one: Some(_) })
    }
}

/// `address` (`postgres://user:password@host:port/database`) with its
/// credentials replaced by `credentials` (`user:password`); `None` when it
/// has no `scheme://` to put them after.
fn as_role(address: &str, credentials: &str) -> Option<String> {
    let (scheme, rest) = address.split_once("://")?;
    let place = rest.rsplit_once('@').map_or(rest, |(_, place)| place);
    Some(format!("{scheme}://{credentials}@{place}"))
}

/// Runs one Spin request, whose head is `head` ([`convert::read_head`]),
/// through `hop`, the one pipeline every component shares
/// (`meridian_platform::http::pipeline`): its head admitted, its body read
/// from Spin's stream only if admitted, then served; the answer sent, and
/// what was left for after it run once it has gone.
pub async fn run_hop<H: Hop>(
    head: Request,
    incoming: IncomingRequest,
    out: ResponseOutparam,
    hop: &H,
) {
    if let Some(weak) = vars::weak_secrets() {
        let refused = refused_to_serve(&head, weak, "secrets are missing or weak");
        convert::send_response(out, refused);
        return;
    }
    if let Some(why) = vars::unusable_origin() {
        let refused = refused_to_serve(&head, why, "public origin cannot carry internal calls");
        convert::send_response(out, refused);
        return;
    }
    let Answer { response, after } = pipeline::run(hop, head, SpinBody(incoming)).await;
    convert::send_response(out, response);
    // The answer is finished; the instance runs on until what was left for
    // after it is done.
    if let Some(after) = after {
        if H::WORK_AFTER_HOLDS_THE_THREAD {
            yield_to_the_host().await;
        }
        after.await;
    }
}

/// The answer of a component whose deployment must not serve: weak
/// secrets ([`vars::weak_secrets`]) or an unusable public origin
/// ([`vars::unusable_origin`]). A 503 on every route, and a log line that
/// says which setting and why, until the operator fixes it.
fn refused_to_serve(head: &Request, cause: String, what: &str) -> Response {
    let request_id = RequestId::from_header_or_new(head.header(headers::REQUEST_ID));
    journal::event(Event::Failure {
        what: "refusing to serve: fix the deployment's settings (secrets: allow_dev_secrets = \"on\" in development only)",
        cause,
    });
    let problem = Problem::new(
        ErrorCode::Internal,
        format!("this deployment's {what}; its log says which"),
    )
    .with_status(StatusCode::SERVICE_UNAVAILABLE);
    let mut response = message::problem_for(request_id.as_str(), problem);
    message::set_header(
        response.headers_mut(),
        headers::REQUEST_ID,
        request_id.as_str(),
    );
    response
}

/// Lets the runtime deliver an answer before the work after it: handing
/// the answer to Spin does not deliver it until this instance gives the
/// thread back, so work after the answer that holds the thread (a store
/// closing its SQLite connection, which may checkpoint with two fsyncs)
/// would delay it. A 100 µs wait on the clock suspends the instance; only
/// hops whose work after the answer may hold the thread pay it
/// ([`Hop::WORK_AFTER_HOLDS_THE_THREAD`]). The figures: docs/benchmarks.md,
/// "Why the constants are what they are".
async fn yield_to_the_host() {
    crate::sleep(std::time::Duration::from_micros(100)).await;
}

/// The body of a Spin request, read from its stream.
pub struct SpinBody(pub IncomingRequest);

impl Body for SpinBody {
    async fn read(
        self,
        head: &Request,
        limit: usize,
        until: Deadline,
    ) -> Result<Vec<u8>, BodyError> {
        convert::read_body(self.0, head, limit, until).await
    }
}

/// The whole of a service's Spin entry point: the service as a hop of the
/// pipeline ([`ServiceHop`]: admitted on its head alone, so an expired or
/// unauthorized request is refused before its body is read), on Spin's
/// SQLite and clock, serving with `app`.
pub async fn run<Op, F, Fut, A>(
    incoming: IncomingRequest,
    out: ResponseOutparam,
    spec: &ServiceSpec<Op>,
    app: F,
) where
    F: Fn(RequestContext, SpinStore, Request) -> Fut,
    Fut: Future<Output = A>,
    A: Into<Answer<'static>>,
{
    let hop = ServiceHop {
        spec,
        databases: SpinDatabases::from_variables(),
        clock: SystemClock,
        key: vars::call_key(),
        app,
    };
    run_hop(convert::read_head(&incoming), incoming, out, &hop).await;
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

#[cfg(test)]
mod tests {
    use super::as_role;

    #[test]
    fn a_migrating_address_is_the_services_own_place_as_another_role() {
        assert_eq!(
            as_role(
                "postgres://server:s%40cret@db.internal:5432/identity",
                "owner:pw"
            )
            .as_deref(),
            Some("postgres://owner:pw@db.internal:5432/identity")
        );
        assert_eq!(
            as_role("postgres://db.internal/identity", "owner:pw").as_deref(),
            Some("postgres://owner:pw@db.internal/identity")
        );
        assert_eq!(as_role("db.internal/identity", "owner:pw"), None);
    }
}
