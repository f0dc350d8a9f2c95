//! Billing's collaborators: its store, the upstream caller for community,
//! and the platform admin token that guards the public relay trigger.

use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::secrets::AdminToken;
use meridian_platform::store::db::{Database, Store};

/// The service billing calls, as its failure memory names it.
pub const COMMUNITY: &str = "community";

/// What billing runs on: the database, and what its calls to community run
/// on. Spin's in the component, fakes in tests.
pub trait Env: Calls {
    /// The billing database.
    type Db: Database;
}

/// Spin's: the component's own database, and Spin for its calls.
impl Env for meridian_spin::Spin {
    type Db = meridian_spin::database::SpinDb;
}

/// The billing service.
pub struct Billing<E: Env> {
    /// The billing database.
    pub store: Store<E::Db, E::Clock>,
    /// Calls to community.
    pub upstream: Upstream<E>,
    /// Base URL of community, without a trailing slash.
    pub community_url: String,
    /// `admin_token`, read where a relay trigger from outside is checked;
    /// empty (unset) refuses them.
    pub admin_token: AdminToken,
    /// Events a write committed, delivered once its answer has gone
    /// ([`Billing::deliver_after_answer`]).
    pub after_answer: std::cell::RefCell<Vec<crate::model::OutboxEvent>>,
}

impl<E: Env> ServiceStore for Billing<E> {
    type Db = E::Db;
    type Clock = E::Clock;

    fn store(&self) -> &Store<E::Db, E::Clock> {
        &self.store
    }
}
