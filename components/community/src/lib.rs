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

use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::{Endpoint, Incoming};
use meridian_platform::service::ServiceSpec;
use meridian_platform::store::db::Database;
use meridian_platform::{Clock, Problem, RequestContext};

use app::Community;
use http::Method;

/// The service's name, database, schema and routes.
pub const SPEC: ServiceSpec<Op> = ServiceSpec {
    hop: "community",
    database: "community",
    migrations: migrations::ALL,
    postgres_migrations: migrations::POSTGRES,
    endpoints: ENDPOINTS,
};

/// What serves each endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    ListResidents,
    CreateResident,
    GetResident,
    UpdateResident,
    DeleteResident,
    ListNotifications,
    ListComplaints,
    CreateComplaint,
    GetComplaint,
    UpdateComplaint,
    ListAnnouncements,
    CreateAnnouncement,
    /// Billing's read of one resident.
    InternalResident,
    /// Billing's delivery of an event.
    ConsumeEvent,
    /// The residents linked to the calling member.
    LinkedResidents,
}

/// The route table: the public paths the gateway forwards (checked
/// against `openapi.yaml`), and the internal routes billing calls.
#[rustfmt::skip]
pub const ENDPOINTS: &[Endpoint<Op>] = &[
    Endpoint::member(Method::GET, "/v1/{tenant}/residents", Op::ListResidents),
    Endpoint::staff(Method::POST, "/v1/{tenant}/residents", Op::CreateResident),
    Endpoint::member(Method::GET, "/v1/{tenant}/residents/{id}", Op::GetResident),
    Endpoint::staff(Method::PATCH, "/v1/{tenant}/residents/{id}", Op::UpdateResident),
    Endpoint::staff(Method::DELETE, "/v1/{tenant}/residents/{id}", Op::DeleteResident),
    Endpoint::member(Method::GET, "/v1/{tenant}/residents/{id}/notifications", Op::ListNotifications),
    Endpoint::member(Method::GET, "/v1/{tenant}/complaints", Op::ListComplaints),
    Endpoint::member(Method::POST, "/v1/{tenant}/complaints", Op::CreateComplaint),
    Endpoint::member(Method::GET, "/v1/{tenant}/complaints/{id}", Op::GetComplaint),
    Endpoint::staff(Method::PATCH, "/v1/{tenant}/complaints/{id}", Op::UpdateComplaint),
    Endpoint::member(Method::GET, "/v1/{tenant}/announcements", Op::ListAnnouncements),
    Endpoint::staff(Method::POST, "/v1/{tenant}/announcements", Op::CreateAnnouncement),
    Endpoint::member(Method::GET, "/internal/residents/{id}", Op::InternalResident),
    Endpoint::caller(Method::POST, "/internal/events", Op::ConsumeEvent),
    Endpoint::member(Method::GET, "/internal/linked-residents", Op::LinkedResidents),
];

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
