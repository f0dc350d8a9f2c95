//! Meridian's `community` service, private behind the gateway: residents,
//! complaints, announcements, and the notifications billing's events
//! become. This file is the Spin entry point and the route table.

pub mod announcements;
pub mod app;
pub mod complaints;
pub mod migrations;
pub mod model;
pub mod notifications;
pub mod repo;
pub mod residents;

use meridian_endpoints::community::{Op, ENDPOINTS};
use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::Incoming;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::service::ServiceSpec;
use meridian_platform::store::db::Database;
use meridian_platform::{Clock, Problem, RequestContext};

use app::Community;

/// The service's name, database, schema and routes.
pub const SPEC: ServiceSpec<Op> = ServiceSpec {
    hop: "community",
    database: "community",
    migrations: migrations::ALL,
    postgres_migrations: migrations::POSTGRES,
    endpoints: ENDPOINTS,
};

/// A request dispatched by the table, as community's handlers are handed it.
pub type Call<'a> = Incoming<'a, Op>;

/// Serves one request: dispatched by the table, then the operation's
/// handler.
pub fn handle<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
) -> Response {
    let served = Call::dispatch(ENDPOINTS, ctx, request).and_then(|call| match call.op() {
        // A plain list is the store's page of the tenant's rows.
        Op::ListResidents => app.scoped(ctx)?.page(&call, repo::list_residents),
        Op::CreateResident => residents::create(app, &call),
        Op::GetResident | Op::InternalResident => residents::get(app, &call),
        Op::UpdateResident => residents::update(app, &call),
        Op::DeleteResident => residents::delete(app, &call),
        Op::ListNotifications => notifications::list(app, &call),
        Op::ListComplaints => complaints::list(app, &call),
        Op::CreateComplaint => complaints::create(app, &call),
        Op::GetComplaint => complaints::get(app, &call),
        Op::UpdateComplaint => complaints::update(app, &call),
        Op::ListAnnouncements => app.scoped(ctx)?.page(&call, repo::list_announcements),
        Op::CreateAnnouncement => announcements::create(app, &call),
        Op::ConsumeEvent => notifications::consume(app, &call),
        Op::LinkedResidents => residents::linked(app, &call),
    });
    served.unwrap_or_else(|problem: Problem| message::problem(ctx, problem))
}

meridian_spin::service_component!(crate::SPEC, |ctx, store, request| async move {
    crate::handle(&crate::app::Community { store }, &ctx, &request)
});
