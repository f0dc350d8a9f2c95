//! A store seen from one request in one tenant: what a tenant-scoped
//! repository function takes, so that the tenant is named once, by its
//! type (the scope's `TenantId`, not a string another id could be passed
//! for), and the request's context travels with it.

use crate::budget::context::RequestContext;
use crate::store::db::{Database, Store, Value};
use crate::tenancy::TenantScope;
use crate::time::Clock;
use crate::wire::problem::Problem;

/// The store, the request's context and its tenant scope (the tenant,
/// and the caller's actor and role).
pub struct Scoped<'a, D, C> {
    /// The store (or the transaction) statements run on.
    pub store: &'a Store<D, C>,
    /// The request they run for: its budget, its log.
    pub ctx: &'a RequestContext,
    /// The tenant every statement filters by, and who is asking.
    pub scope: &'a TenantScope,
}

impl<'a, D: Database, C: Clock> Scoped<'a, D, C> {
    /// `store` for the tenant the gateway resolved for `ctx` (a 400 when
    /// the request has no tenant headers).
    pub fn of(store: &'a Store<D, C>, ctx: &'a RequestContext) -> Result<Self, Problem> {
        Ok(Self {
            store,
            ctx,
            scope: ctx.scope()?,
        })
    }

    /// The same request and tenant on `tx` (a transaction of the store).
    pub fn on<'t>(&self, tx: &'t Store<D, C>) -> Scoped<'t, D, C>
    where
        'a: 't,
    {
        Scoped {
            store: tx,
            ctx: self.ctx,
            scope: self.scope,
        }
    }

    /// The tenant as a statement parameter.
    pub fn tenant(&self) -> Value {
        self.scope.tenant_id.to_string().into()
    }
}
