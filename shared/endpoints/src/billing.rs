//! `billing`'s endpoints: its route table and the operations that serve it.

use http::Method;
use meridian_platform::http::routes::Endpoint;

/// What serves each endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    ListInvoices,
    CreateInvoice,
    GetInvoice,
    VoidInvoice,
    ListPayments,
    CreatePayment,
    /// A scheduler's run of the outbox relay (it checks the admin token).
    Relay,
}

/// The route table: the public paths the gateway forwards (checked
/// against `openapi.yaml`), and the relay.
#[rustfmt::skip]
pub const ENDPOINTS: &[Endpoint<Op>] = &[
    Endpoint::member(Method::GET, "/v1/{tenant}/invoices", Op::ListInvoices),
    Endpoint::staff(Method::POST, "/v1/{tenant}/invoices", Op::CreateInvoice),
    Endpoint::member(Method::GET, "/v1/{tenant}/invoices/{id}", Op::GetInvoice),
    Endpoint::staff(Method::PATCH, "/v1/{tenant}/invoices/{id}", Op::VoidInvoice),
    Endpoint::member(Method::GET, "/v1/{tenant}/invoices/{id}/payments", Op::ListPayments),
    Endpoint::staff(Method::POST, "/v1/{tenant}/invoices/{id}/payments", Op::CreatePayment),
    Endpoint::caller(Method::POST, "/internal/outbox/relay", Op::Relay),
];
