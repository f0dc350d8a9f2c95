//! Identity's collaborators, and helpers its handlers share.

use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::limits::rate::refused_key;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::secrets::AdminToken;
use meridian_platform::store::db::{Database, Store};
use meridian_platform::tenancy::cache::{self, Entries};
use meridian_platform::tenancy::TenantSlug;
use meridian_platform::Clock;

/// The identity service: its store, the platform admin's token, and the
/// key-value store the gateway's resolution cache lives in.
pub struct Identity<D, C> {
    /// The identity database.
    pub store: Store<D, C>,
    /// `admin_token`, read where tenant creation checks it; empty (unset)
    /// refuses it.
    pub admin_token: AdminToken,
    /// Where the resolution cache's generations are (Spin's `default`
    /// key-value store, shared with the gateway).
    pub resolutions: Box<dyn Entries>,
}

impl<D: Database, C: Clock> ServiceStore for Identity<D, C> {
    type Db = D;
    type Clock = C;

    fn store(&self) -> &Store<D, C> {
        &self.store
    }
}

impl<D: Database, C: Clock> Identity<D, C> {
    /// After a change that stopped tokens of `slug` resolving (a token
    /// revoked, a member removed, or a replay of either: `hashes` is then
    /// empty) committed, and before it is answered. First the gateway's
    /// remembered resolutions of the tenant stop being served (its
    /// generation moves on); a store that refuses leaves them for at most
    /// their time to live (30 s). Then the bins the shared store keeps a
    /// stopped token in (its remembered resolution, its rate-limit mark)
    /// are emptied, so a quiet tenant keeps no key of a token it stopped;
    /// a store that refuses leaves keys nobody is served from. Either way the
    /// change itself stands, and the operator is told.
    pub fn tokens_stopped(&self, slug: &str, hashes: &[String]) {
        let Ok(slug) = TenantSlug::parse(slug) else {
            return; // names no tenant: nothing of it can be remembered
        };
        if let Err(cause) = cache::invalidate(self.resolutions.as_ref(), &slug) {
            journal::event(Event::Failure {
                what: "moving the tenant's resolution generation on",
                cause,
            });
        }
        let keys: Vec<String> = hashes
            .iter()
            .flat_map(|hash| {
                [
                    cache::hashed_entry_key(&slug, hash),
                    refused_key(slug.as_str(), hash),
                ]
            })
            .collect();
        if keys.is_empty() {
            return;
        }
        if let Err(cause) = self.resolutions.remove(&keys) {
            journal::event(Event::Failure {
                what: "removing stopped tokens' keys from the shared store",
                cause,
            });
        }
    }
}
