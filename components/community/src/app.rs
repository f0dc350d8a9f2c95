//! Community's collaborators and the tenant/role checks its handlers share.

use meridian_platform::db::{Database, Store};
use meridian_platform::tenancy::TenantScope;
use meridian_platform::{Clock, Problem, RequestContext};

/// The community service: its store.
pub struct Community<D, C> {
    /// The community database.
    pub store: Store<D, C>,
}

impl<D: Database, C: Clock> Community<D, C> {
    /// Now, as stored in time columns.
    pub fn timestamp(&self) -> String {
        self.store.clock().now().to_rfc3339()
    }
}

/// Any member of the tenant: `(tenant id, scope)`.
pub fn member(ctx: &RequestContext) -> Result<(String, &TenantScope), Problem> {
    let scope = ctx.scope()?;
    Ok((scope.tenant_id.to_string(), scope))
}

/// Admins and managers only: `(tenant id, scope)`.
pub fn staff(ctx: &RequestContext) -> Result<(String, &TenantScope), Problem> {
    let scope = ctx.require(|r| r.is_staff(), "admins and managers")?;
    Ok((scope.tenant_id.to_string(), scope))
}
