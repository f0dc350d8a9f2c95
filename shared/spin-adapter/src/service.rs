//! A private service's Spin entry point: the request's head admitted, its
//! body read, the platform's pipeline (`meridian_platform::service`) run on
//! Spin's SQLite, the answer sent, and what was left for after it.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

use meridian_platform::http::body::MAX_BODY_BYTES;
use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::log::journal;
use meridian_platform::log::{RequestLine, Served};
use meridian_platform::service::{serve, Answer, Databases, ServiceSpec};
use meridian_platform::store::db::{DbError, Store};
use meridian_platform::wire::headers;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Clock, RequestContext, SystemClock};
use spin_sdk::http::{IncomingRequest, ResponseOutparam};

use crate::sqlite::SpinSqlite;
use crate::{convert, internal};

/// The store every service handler works on.
pub type SpinStore = Store<SpinSqlite, SystemClock>;

/// The app's SQLite databases, by label.
pub struct SpinDatabases;

impl Databases for SpinDatabases {
    type Db = SpinSqlite;

    fn open(&self, label: &str) -> Result<(SpinSqlite, Rc<Cell<bool>>), DbError> {
        let db = SpinSqlite::open(label)?;
        let schema_behind = db.schema_behind();
        Ok((db, schema_behind))
    }
}

/// The whole of a service's Spin entry point: admits the request on its
/// head alone (so an expired or unauthorized request is refused before its
/// body is read), reads the body within the limit and the work deadline,
/// serves it with `app`, and sends the answer.
pub async fn run<Op, F, Fut, A>(
    incoming: IncomingRequest,
    out: ResponseOutparam,
    spec: &ServiceSpec<Op>,
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
    let (method, route) = (request.method.clone(), spec.route_template(&request.path));
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
                        serve(ctx.clone(), request, spec, &SpinDatabases, SystemClock, app).await
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
