//! A store seen from one request in one tenant: what a tenant-scoped
//! repository function takes, so that the tenant is named once, by its
//! type (the scope's `TenantId`, not a string another id could be passed
//! for), and the request's context travels with it.

use crate::budget::context::RequestContext;
use crate::http::idempotency::{write_all_once, write_once, Written};
use crate::http::message::Response;
use crate::http::page::{Cursors, PageRequest, Window};
use crate::http::routes::Incoming;
use crate::store::batch::Write;
use crate::store::db::{sequenced, Database, DbError, Row, Store, Value};
use crate::tenancy::TenantScope;
use crate::time::{Clock, Timestamp};
use crate::wire::problem::Problem;

/// What every service's handlers ask of its app besides their call: its
/// store, now as a row's timestamp, and the store seen as the request's
/// tenant. A service implements `store`; the rest is written here once.
pub trait ServiceStore {
    /// The service's database.
    type Db: Database;
    /// Its clock.
    type Clock: Clock;

    /// The service's store.
    fn store(&self) -> &Store<Self::Db, Self::Clock>;

    /// Now, as stored in time columns.
    fn timestamp(&self) -> Timestamp {
        Timestamp::at(self.store().clock().now())
    }

    /// The store seen as the tenant the gateway resolved for `ctx` (a 400
    /// when the request has no tenant headers).
    fn scoped<'a>(
        &'a self,
        ctx: &'a RequestContext,
    ) -> Result<Scoped<'a, Self::Db, Self::Clock>, Problem> {
        Scoped::of(self.store(), ctx)
    }
}

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
    /// `store` seen as `scope`'s tenant for the request `ctx`: for a
    /// write that makes the tenant itself, before any request could have
    /// been resolved to it.
    pub fn new(store: &'a Store<D, C>, ctx: &'a RequestContext, scope: &'a TenantScope) -> Self {
        Self { store, ctx, scope }
    }

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

    /// The row `sql` finds with `params`, decoded; `None` when it finds
    /// none (the first, when it finds several).
    pub fn one<T>(
        &self,
        sql: &str,
        params: &[Value],
        decode: impl FnOnce(&Row) -> Result<T, DbError>,
    ) -> Result<Option<T>, DbError> {
        let rows = self.store.query(self.ctx, sql, params)?;
        rows.first().map(decode).transpose()
    }

    /// The rows of one page of a list, as `(seq, row)` pairs: `sql`
    /// selects `seq` and ends in `seq > ? ORDER BY seq LIMIT ?`, whose two
    /// parameters come from `window`, after `params` (taken, not copied).
    pub fn listed<T>(
        &self,
        sql: &str,
        params: impl IntoIterator<Item = Value>,
        window: Window,
        decode: impl Fn(&Row) -> Result<T, DbError>,
    ) -> Result<Vec<(i64, T)>, DbError> {
        let window = [Value::Integer(window.after), Value::Integer(window.limit)];
        let all: Vec<Value> = params.into_iter().chain(window).collect();
        sequenced(&self.store.query(self.ctx, sql, &all)?, decode)
    }

    /// The answer to a list request: the page the call's `?limit=` and
    /// `?cursor=` ask for (a bad one is a 400), read by `fetch` as
    /// `(seq, row)` pairs from the window it is given.
    pub fn page<T, E, Op>(
        &self,
        call: &Incoming<'_, Op>,
        fetch: impl FnOnce(&Self, Window) -> Result<Vec<(i64, T)>, E>,
    ) -> Result<Response, Problem>
    where
        T: serde::Serialize,
        Problem: From<E>,
    {
        let cursors = Cursors::new(self.ctx.cursor_key(), self.scope.tenant_id);
        PageRequest::from_query(call.query(), cursors)?.list(|window| fetch(self, window))
    }

    /// The call's write, made once per idempotency key ([`write_once`],
    /// under the route's operation): `work` runs on this tenant's view of
    /// the transaction that also records its answer, and a repeated key is
    /// answered what was recorded.
    pub fn write_once<Op>(
        &self,
        call: &Incoming<'_, Op>,
        work: impl FnOnce(&Scoped<'_, D, C>) -> Result<Written, Problem>,
    ) -> Result<Response, Problem> {
        write_once(self.store, call, |tx| work(&self.on(tx)))
    }

    /// The call's write known before it runs (`writes`, answered
    /// `written`), made once per idempotency key as one batch
    /// ([`write_all_once`]: on PostgreSQL one statement with the key's
    /// record).
    pub fn write_all_once<Op>(
        &self,
        call: &Incoming<'_, Op>,
        writes: Vec<Write>,
        written: Written,
    ) -> Result<Response, Problem> {
        write_all_once(self.store, call, writes, written)
    }
}
