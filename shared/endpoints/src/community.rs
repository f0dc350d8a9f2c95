//! `community`'s endpoints: its route table and the operations that serve it.

use http::Method;
use meridian_platform::http::routes::Endpoint;

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
