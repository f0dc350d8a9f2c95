//! Identity's collaborators, and helpers its handlers share.

use meridian_platform::store::db::{Database, Store};
use meridian_platform::time::Timestamp;
use meridian_platform::Clock;

/// The identity service: its store and the platform admin's token.
pub struct Identity<D, C> {
    /// The identity database.
    pub store: Store<D, C>,
    /// `admin_token`; empty when unset, which refuses tenant creation.
    pub admin_token: String,
}

impl<D: Database, C: Clock> Identity<D, C> {
    /// Now, as stored in `created_at` columns.
    pub fn timestamp(&self) -> Timestamp {
        Timestamp::at(self.store.clock().now())
    }
}
