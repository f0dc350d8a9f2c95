//! Every endpoint of Meridian's three services, in one place. Each module
//! is one service's route table (`ENDPOINTS`: method, path template, the
//! operation that serves it, who may call it) and its operations (`Op`).
//! The service dispatches by its table and matches each `Op` to its handler
//! in one exhaustive `match`; the gateway forwards by the same rows (every
//! row under `/v1/{tenant}`), so a public endpoint is declared once for
//! both. docs/architecture.md's "Add an endpoint" names the other places
//! an endpoint touches.

#![forbid(unsafe_code)]

pub mod billing;
pub mod community;
pub mod identity;

/// The path every forwarded row starts with: a tenant's public API. A row
/// outside it is internal (another service or the gateway calls it) or one
/// the gateway answers itself (`POST /v1/tenants`).
pub const TENANT_PREFIX: &str = "/v1/{tenant}";

/// Whether the gateway forwards a row's path from the public API.
pub fn is_forwarded(template: &str) -> bool {
    template.starts_with(TENANT_PREFIX)
}
