//! Meridian's `billing` service, private behind the gateway: invoices and
//! payments made exactly once for the caller, with a transactional outbox
//! whose events reach community. This file is the Spin entry point and the
//! route table.
// `deny`, not `forbid`: the SDK's export macro needs its own `allow`.
#![deny(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::string_slice,
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

pub mod app;
pub mod invoices;
pub mod migrations;
pub mod model;
pub mod money;
pub mod outbox;
pub mod payments;
pub mod repo;

use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::http::routes::{self, RouteSpec};
use meridian_platform::service::ServiceSpec;
use meridian_platform::RequestContext;

use app::{Billing, Env};

/// The service's name, database and schema.
pub const SPEC: ServiceSpec = ServiceSpec {
    hop: "billing",
    database: "billing",
    migrations: migrations::ALL,
    routes: ROUTES,
};

/// The route table: the public paths the gateway forwards, and the relay.
pub async fn handle<E: Env>(
    app: &Billing<E>,
    ctx: &RequestContext,
    request: &ServiceRequest,
) -> ServiceResponse {
    let segments = request.segments();
    let method = request.route_method();
    let result = match (method, segments.as_slice()) {
        ("GET", ["v1", _, "invoices"]) => app.list_invoices(ctx, request).await,
        ("POST", ["v1", _, "invoices"]) => app.create_invoice(ctx, request).await,
        ("GET", ["v1", _, "invoices", id]) => app.get_invoice(ctx, id).await,
        ("PATCH", ["v1", _, "invoices", id]) => app.void_invoice(ctx, request, id),
        ("GET", ["v1", _, "invoices", id, "payments"]) => app.list_payments(ctx, request, id).await,
        ("POST", ["v1", _, "invoices", id, "payments"]) => {
            app.create_payment(ctx, request, id).await
        }
        ("POST", ["internal", "outbox", "relay"]) => app.relay(ctx, request).await,
        (_, path) => Err(routes::unmatched(ROUTES, method, path)),
    };
    result.unwrap_or_else(|problem| ServiceResponse::problem(ctx, problem))
}

/// The public paths this service serves and the methods each takes: the
/// source of every 405's `Allow`, and checked against `openapi.yaml`.
pub const ROUTES: &[RouteSpec] = &[
    RouteSpec::new("/v1/{tenant}/invoices", "GET, HEAD, POST"),
    RouteSpec::new("/v1/{tenant}/invoices/{id}", "GET, HEAD, PATCH"),
    RouteSpec::new("/v1/{tenant}/invoices/{id}/payments", "GET, HEAD, POST"),
];

meridian_spin::service_component!(crate::SPEC, |ctx, store, request| async move {
    use meridian_spin::{vars, Spin};
    let app = crate::app::Billing {
        store,
        upstream: Spin::upstream(),
        community_url: vars::service_url("community_url", "http://community.spin.internal"),
        // Read only where it is checked (the relay): one variable less per request.
        admin_token: match request.path.starts_with("/internal/outbox/") {
            true => vars::get("admin_token").unwrap_or_default(),
            false => String::new(),
        },
        after_answer: Default::default(),
    };
    let response = crate::handle(&app, &ctx, &request).await;
    // The answer goes first; a write's events are delivered after it.
    meridian_platform::service::Answer::then(response, async move {
        app.deliver_after_answer(&ctx).await
    })
});
