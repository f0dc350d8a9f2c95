//! What identity hands out: tenants, members, tokens and resolutions.

use serde::Serialize;

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenant {
    /// UUID.
    pub id: String,
    /// URL slug.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// RFC 3339 creation time.
    pub created_at: String,
}

/// A membership with its user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// Membership UUID.
    pub id: String,
    /// User UUID.
    pub user_id: String,
    /// The user's email.
    pub email: String,
    /// The user's name.
    pub name: String,
    /// `admin`, `manager` or `resident`.
    pub role: String,
    /// RFC 3339 creation time.
    pub created_at: String,
}

/// Who a token belongs to, as the gateway needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// Tenant UUID.
    pub tenant_id: String,
    /// User UUID: the actor.
    pub actor_id: String,
    /// The actor's role in the tenant.
    pub role: String,
}
