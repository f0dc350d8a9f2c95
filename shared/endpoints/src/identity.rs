//! `identity`'s endpoints: its route table and the operations that serve it.

use http::Method;
use meridian_platform::http::routes::Endpoint;

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
