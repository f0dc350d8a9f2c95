//! Meridian's `identity` service, private behind the gateway: tenants,
//! users, memberships and API tokens, and the one resolution call the
//! gateway makes per request. This file is the Spin entry point and the
//! route table; handlers live in their own modules.

pub mod app;
pub mod members;
pub mod migrations;
pub mod model;
pub mod repo;
pub mod resolve;
pub mod tenants;
pub mod tokens;

use http::Method;
use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::{Endpoint, Incoming};
use meridian_platform::service::ServiceSpec;
use meridian_platform::store::db::Database;
use meridian_platform::{Clock, RequestContext};

use app::Identity;

/// The service's name, database, schema and routes.
pub const SPEC: ServiceSpec<Op> = ServiceSpec {
    hop: "identity",
    database: "identity",
    migrations: migrations::ALL,
    postgres_migrations: migrations::POSTGRES,
    endpoints: ENDPOINTS,
};

/// What serves each endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// The gateway's resolution of a slug and a token.
    Resolve,
    CreateTenant,
    GetTenant,
    ListMembers,
    CreateMember,
    DeleteMember,
    CreateToken,
    RevokeToken,
}

/// The route table: the public paths the gateway forwards (checked
/// against `openapi.yaml`), and the internal resolution. Tenant creation
/// checks the platform admin token itself; a token's owner or an admin
/// may revoke it.
#[rustfmt::skip]
pub const ENDPOINTS: &[Endpoint<Op>] = &[
    Endpoint::caller(Method::GET, "/internal/resolve", Op::Resolve),
    Endpoint::caller(Method::POST, "/v1/tenants", Op::CreateTenant),
    Endpoint::member(Method::GET, "/v1/{tenant}", Op::GetTenant),
    Endpoint::admin(Method::GET, "/v1/{tenant}/members", Op::ListMembers),
    Endpoint::admin(Method::POST, "/v1/{tenant}/members", Op::CreateMember),
    Endpoint::admin(Method::DELETE, "/v1/{tenant}/members/{id}", Op::DeleteMember),
    Endpoint::member(Method::POST, "/v1/{tenant}/tokens", Op::CreateToken),
    Endpoint::member(Method::DELETE, "/v1/{tenant}/tokens/{id}", Op::RevokeToken),
];

/// A request dispatched by the table, as identity's handlers are handed it.
pub type Call<'a> = Incoming<'a, Op>;

/// Serves one request: dispatched by the table, then the operation's
/// handler.
pub fn handle<D: Database, C: Clock>(
    app: &Identity<D, C>,
    ctx: &RequestContext,
    request: &Request,
) -> Response {
    let served = Call::dispatch(ENDPOINTS, ctx, request).and_then(|call| match call.op() {
        Op::Resolve => resolve::resolve(app, &call),
        Op::CreateTenant => tenants::create(app, &call),
        Op::GetTenant => tenants::get(app, &call),
        Op::ListMembers => members::list(app, &call),
        Op::CreateMember => members::create(app, &call),
        Op::CreateToken => tokens::create(app, &call),
        // The two changes that can change a resolution: each ends in
        // `Identity::tokens_stopped` before its answer.
        Op::DeleteMember => members::delete(app, &call),
        Op::RevokeToken => tokens::revoke(app, &call),
    });
    served.unwrap_or_else(|problem| message::problem(ctx, problem))
}

meridian_spin::service_component!(crate::SPEC, |ctx, store, request| async move {
    let app = crate::app::Identity {
        store,
        admin_token: meridian_spin::vars::admin_token(),
        resolutions: Box::new(meridian_spin::counters::SpinCounters::default()),
    };
    crate::handle(&app, &ctx, &request)
});
