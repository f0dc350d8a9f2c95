//! Billing's collaborators: its store, the upstream caller for community,
//! and the platform admin token that guards the public relay trigger.

use meridian_platform::http::retry::{Jitter, Sleeper};
use meridian_platform::http::upstream::Upstream;
use meridian_platform::http::HttpClient;
use meridian_platform::store::db::{Database, Store};
use meridian_platform::Clock;

/// The billing service.
pub struct Billing<D, C, H, S, J> {
    /// The billing database.
    pub store: Store<D, C>,
    /// Calls to community.
    pub upstream: Upstream<H, C, S, J>,
    /// Base URL of community, without a trailing slash.
    pub community_url: String,
    /// `admin_token`, for relay triggers from outside; empty refuses them.
    pub admin_token: String,
}

impl<D: Database, C: Clock, H: HttpClient, S: Sleeper, J: Jitter + Clone> Billing<D, C, H, S, J> {
    /// Now, as stored in time columns.
    pub fn timestamp(&self) -> String {
        self.store.clock().now().to_rfc3339()
    }
}
