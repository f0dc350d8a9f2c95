//! Community's collaborators.

use meridian_platform::http::scoped::Scoped;
use meridian_platform::store::db::{Database, Store};
use meridian_platform::time::Timestamp;
use meridian_platform::{Clock, Problem, RequestContext};

/// The community service: its store.
pub struct Community<D, C> {
    /// The community database.
    pub store: Store<D, C>,
}

impl<D: Database, C: Clock> Community<D, C> {
    /// Now, as stored in time columns.
    pub fn timestamp(&self) -> Timestamp {
        Timestamp::at(self.store.clock().now())
    }

    /// The store scoped to the request's tenant, for the repositories.
    pub fn scoped<'a>(&'a self, ctx: &'a RequestContext) -> Result<Scoped<'a, D, C>, Problem> {
        Scoped::of(&self.store, ctx)
    }
}
