//! Meridian's `community` service, private behind the gateway: residents,
//! complaints, announcements, and the notifications billing's events
//! become. This file is the Spin entry point and the route table.
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

pub mod announcements;
pub mod app;
pub mod complaints;
pub mod migrations;
pub mod model;
pub mod notifications;
pub mod repo;
pub mod residents;

use meridian_platform::http::message::{ServiceRequest, ServiceResponse};
use meridian_platform::http::routes::{self, RouteSpec};
use meridian_platform::service::ServiceSpec;
use meridian_platform::store::db::Database;
use meridian_platform::{Clock, RequestContext};

use app::Community;

/// The service's name, database and schema.
pub const SPEC: ServiceSpec = ServiceSpec {
    hop: "community",
    database: "community",
    migrations: migrations::ALL,
    routes: ROUTES,
};

/// The route table: the public paths the gateway forwards, and the
/// internal routes billing calls.
pub fn handle<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &ServiceRequest,
) -> ServiceResponse {
    let segments = request.segments();
    let method = request.route_method();
    let result = match (method, segments.as_slice()) {
        ("GET", ["v1", _, "residents"]) => residents::list(app, ctx, request),
        ("POST", ["v1", _, "residents"]) => residents::create(app, ctx, request),
        ("GET", ["v1", _, "residents", id]) | ("GET", ["internal", "residents", id]) => {
            residents::get(app, ctx, id)
        }
        ("PATCH", ["v1", _, "residents", id]) => residents::update(app, ctx, request, id),
        ("DELETE", ["v1", _, "residents", id]) => residents::delete(app, ctx, request, id),
        ("GET", ["v1", _, "residents", id, "notifications"]) => {
            notifications::list(app, ctx, request, id)
        }
        ("GET", ["v1", _, "complaints"]) => complaints::list(app, ctx, request),
        ("POST", ["v1", _, "complaints"]) => complaints::create(app, ctx, request),
        ("GET", ["v1", _, "complaints", id]) => complaints::get(app, ctx, id),
        ("PATCH", ["v1", _, "complaints", id]) => complaints::update(app, ctx, request, id),
        ("GET", ["v1", _, "announcements"]) => announcements::list(app, ctx, request),
        ("POST", ["v1", _, "announcements"]) => announcements::create(app, ctx, request),
        ("POST", ["internal", "events"]) => notifications::consume(app, ctx, request),
        ("GET", ["internal", "linked-residents"]) => residents::linked(app, ctx),
        (_, path) => Err(routes::unmatched(ROUTES, method, path)),
    };
    result.unwrap_or_else(|problem| ServiceResponse::problem(ctx, problem))
}

/// The public paths this service serves and the methods each takes: the
/// source of every 405's `Allow`, and checked against `openapi.yaml`.
pub const ROUTES: &[RouteSpec] = &[
    RouteSpec::new("/v1/{tenant}/residents", "GET, HEAD, POST"),
    RouteSpec::new("/v1/{tenant}/residents/{id}", "GET, HEAD, PATCH, DELETE"),
    RouteSpec::new("/v1/{tenant}/residents/{id}/notifications", "GET, HEAD"),
    RouteSpec::new("/v1/{tenant}/complaints", "GET, HEAD, POST"),
    RouteSpec::new("/v1/{tenant}/complaints/{id}", "GET, HEAD, PATCH"),
    RouteSpec::new("/v1/{tenant}/announcements", "GET, HEAD, POST"),
];

meridian_spin::service_component!(crate::SPEC, |ctx, store, request| async move {
    crate::handle(&crate::app::Community { store }, &ctx, &request)
});
