//! What identity hands out: tenants, members, tokens and resolutions.

use meridian_platform::tenancy::{ActorId, Role, TenantId};
use meridian_platform::time::Timestamp;
use serde::Serialize;

meridian_platform::row_id!(
    /// A membership's id: one person in one tenant.
    MembershipId
);
meridian_platform::row_id!(
    /// A platform user's id: one per email across every tenant, never
    /// shown to a tenant.
    UserId
);
meridian_platform::row_id!(
    /// An API token's id.
    TokenId
);

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenant {
    /// UUID.
    pub id: TenantId,
    /// URL slug.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// RFC 3339 creation time.
    pub created_at: Timestamp,
}

/// A membership with its user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// Membership UUID.
    pub id: MembershipId,
    /// The person's id in this tenant (the actor id of their tokens); the
    /// same email in another tenant has another.
    pub user_id: ActorId,
    /// The member's email.
    pub email: String,
    /// The member's name, as this tenant's admin gave it.
    pub name: String,
    /// `admin`, `manager` or `resident`.
    pub role: Role,
    /// RFC 3339 creation time.
    pub created_at: Timestamp,
}

/// Who a token belongs to, as the gateway needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// Tenant UUID.
    pub tenant_id: String,
    /// The person's id in the tenant: the actor.
    pub actor_id: String,
    /// The actor's role in the tenant.
    pub role: Role,
}
