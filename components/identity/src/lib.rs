//! Meridian's `identity` service, private behind the gateway: tenants,
//! users, memberships and API tokens, and the one resolution call the
//! gateway makes per request. This file is the Spin entry point and
//! the dispatch of its route table (`meridian_endpoints::identity`);
//! handlers live in their own modules.

pub mod app;
pub mod members;
pub mod migrations;
pub mod model;
pub mod repo;
pub mod resolve;
pub mod tenants;
pub mod tokens;

use meridian_endpoints::identity::{Op, ENDPOINTS};
use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::Incoming;
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
        admin_token: meridian_platform::secrets::AdminToken::read_with(
            meridian_spin::vars::admin_token,
        ),
        resolutions: Box::new(meridian_spin::counters::SpinCounters::default()),
    };
    crate::handle(&app, &ctx, &request)
});
