//! Meridian's `billing` service, private behind the gateway: invoices and
//! payments made exactly once for the caller, with a transactional outbox
//! whose events reach community. This file is the Spin entry point and the
//! dispatch of its route table (`meridian_endpoints::billing`).

pub mod app;
pub mod invoices;
pub mod migrations;
pub mod model;
pub mod money;
pub mod outbox;
pub mod payments;
pub mod repo;

use meridian_endpoints::billing::{Op, ENDPOINTS};
use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::Incoming;
use meridian_platform::service::ServiceSpec;
use meridian_platform::RequestContext;

use app::{Billing, Env};

/// The service's name, database, schema and routes.
pub const SPEC: ServiceSpec<Op> = ServiceSpec {
    hop: "billing",
    database: "billing",
    migrations: migrations::ALL,
    postgres_migrations: migrations::POSTGRES,
    endpoints: ENDPOINTS,
};

/// A request dispatched by the table, as billing's handlers are handed it.
pub type Call<'a> = Incoming<'a, Op>;

/// Serves one request: dispatched by the table, then the operation's
/// handler.
pub async fn handle<E: Env>(app: &Billing<E>, ctx: &RequestContext, request: &Request) -> Response {
    let call = match Call::dispatch(ENDPOINTS, ctx, request) {
        Ok(call) => call,
        Err(problem) => return message::problem(ctx, problem),
    };
    let served = match call.op() {
        Op::ListInvoices => invoices::list(app, &call).await,
        Op::CreateInvoice => invoices::create(app, &call).await,
        Op::GetInvoice => invoices::get(app, &call).await,
        Op::VoidInvoice => invoices::void(app, &call),
        Op::ListPayments => payments::list(app, &call).await,
        Op::CreatePayment => payments::create(app, &call).await,
        Op::Relay => outbox::relay(app, &call).await,
    };
    served.unwrap_or_else(|problem| message::problem(ctx, problem))
}

meridian_spin::service_component!(crate::SPEC, |ctx, store, request| async move {
    use meridian_platform::secrets::AdminToken;
    use meridian_spin::{vars, Spin};
    let app = crate::app::Billing {
        store,
        upstream: Spin::service_upstream(),
        community_url: vars::service_url(
            crate::app::COMMUNITY,
            "community_url",
            "http://community.spin.internal",
        ),
        admin_token: AdminToken::read_with(vars::admin_token),
        after_answer: Default::default(),
    };
    let response = crate::handle(&app, &ctx, &request).await;
    // The answer goes first; a write's events are delivered after it.
    meridian_platform::service::Answer::then(response, async move {
        app.deliver_after_answer(&ctx).await
    })
});
