//! Community's collaborators.

use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::store::db::{Database, Store};
use meridian_platform::Clock;

/// The community service: its store.
pub struct Community<D, C> {
    /// The community database.
    pub store: Store<D, C>,
}

impl<D: Database, C: Clock> ServiceStore for Community<D, C> {
    type Db = D;
    type Clock = C;

    fn store(&self) -> &Store<D, C> {
        &self.store
    }
}
