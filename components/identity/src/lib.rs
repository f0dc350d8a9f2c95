//! Meridian's `identity` service, private behind the gateway: tenants,
//! users, memberships and API tokens, and the one resolution call the
//! gateway makes per request. This file is the Spin entry point and the
//! route table; handlers live in their own modules.
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
pub mod members;
pub mod migrations;
pub mod model;
pub mod repo;
pub mod resolve;
pub mod tenants;
pub mod tokens;

use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::http::routes::{self, RouteSpec};
use meridian_platform::service::ServiceSpec;
use meridian_platform::store::db::Database;
use meridian_platform::{Clock, RequestContext};

use app::Identity;

/// The service's name, database and schema.
pub const SPEC: ServiceSpec = ServiceSpec {
    hop: "identity",
    database: "identity",
    migrations: migrations::ALL,
    routes: ROUTES,
};

/// The route table. Paths are the public ones the gateway forwards, plus
/// the internal resolution.
pub fn handle<D: Database, C: Clock>(
    app: &Identity<D, C>,
    ctx: &RequestContext,
    request: &ServiceRequest,
) -> ServiceResponse {
    let segments = request.segments();
    let method = request.route_method();
    let result = match (method, segments.as_slice()) {
        ("GET", ["internal", "resolve"]) => resolve::resolve(app, ctx, request),
        ("POST", ["v1", "tenants"]) => tenants::create(app, ctx, request),
        ("GET", ["v1", slug]) if *slug != "tenants" => tenants::get(app, ctx),
        ("GET", ["v1", _, "members"]) => members::list(app, ctx, request),
        ("POST", ["v1", _, "members"]) => members::create(app, ctx, request),
        // The two changes that can change a resolution: the gateway's
        // remembered ones of the tenant stop being served before the answer.
        ("DELETE", ["v1", slug, "members", id]) => {
            members::delete(app, ctx, request, id).inspect(|_| app.resolutions_changed(slug))
        }
        ("POST", ["v1", _, "tokens"]) => tokens::create(app, ctx, request),
        ("DELETE", ["v1", slug, "tokens", id]) => {
            tokens::revoke(app, ctx, request, id).inspect(|_| app.resolutions_changed(slug))
        }
        (_, path) => Err(routes::unmatched(ROUTES, method, path)),
    };
    result.unwrap_or_else(|problem| ServiceResponse::problem(ctx, problem))
}

/// The public paths this service serves and the methods each takes: the
/// source of every 405's `Allow`, and checked against `openapi.yaml`.
pub const ROUTES: &[RouteSpec] = &[
    RouteSpec::new("/v1/tenants", "POST"),
    RouteSpec::new("/v1/{tenant}", "GET, HEAD"),
    RouteSpec::new("/v1/{tenant}/members", "GET, HEAD, POST"),
    RouteSpec::new("/v1/{tenant}/members/{id}", "DELETE"),
    RouteSpec::new("/v1/{tenant}/tokens", "POST"),
    RouteSpec::new("/v1/{tenant}/tokens/{id}", "DELETE"),
];

meridian_spin::service_component!(crate::SPEC, |ctx, store, request| async move {
    let app = crate::app::Identity {
        store,
        admin_token: meridian_spin::vars::get("admin_token").unwrap_or_default(),
        resolutions: Box::new(meridian_spin::counters::SpinCounters::default()),
    };
    crate::handle(&app, &ctx, &request)
});
