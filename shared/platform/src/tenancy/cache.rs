//! Resolutions remembered in the shared key-value store, so that a read
//! need not pay a hop to identity on every request (as API gateways cache
//! authorization decisions), without ever serving an answer identity has
//! since changed.
//!
//! An entry, under `resolution:{slug}:{bin}` — one of the tenant's
//! [`TOKEN_BINS`](crate::secrets::TOKEN_BINS), read from the token's
//! SHA-256 (never the token itself) — holds the tenant, actor and role
//! identity answered, when
//! it stops being trusted (`ttl` after it was written), and the tenant's
//! *generation* as the gateway read it before asking identity. Identity
//! sets the generation (`resolution-generation:{slug}`) to a fresh value
//! after every change that can change a resolution of that tenant — a
//! member removed, a token revoked — and before it answers. The gateway
//! reads the entry and the generation together, in one batch read, and
//! serves the entry only when its generation is the current one.
//!
//! Why that keeps the API's promise (a removed member's or a revoked
//! token's next request is refused) where the store is shared by the
//! gateway and identity: a request that starts after the change was
//! answered reads the new generation, which no entry written before it
//! holds; an entry with the new generation was written from an answer
//! identity gave after it set it, so after the change committed. The
//! generation is a fresh unique value set, not an increment, so this
//! holds without the store's atomics too (two racing changes each leave a
//! value no earlier entry holds).
//!
//! What can be stale, and for how long:
//! - a store shared by the gateway and identity (all in one `spin up`;
//!   the split layout with one store file or one Redis): nothing, ever;
//! - a change whose generation the store refused to take (identity logs
//!   `resolution_generation_failed`): its tenant's entries, at most `ttl`;
//! - a gateway whose `default` store is not identity's: every entry, up to
//!   `ttl` — so turn the cache off there (`resolution_cache = "off"`).
//!
//! Each entry carries a MAC (HMAC-SHA-256) over its key and its fields,
//! under a key derived from the gateway's internal token: anything else
//! that can write to the store (a pod that reaches the cluster's Redis, a
//! process with the store's file) cannot mint an entry that makes it a
//! tenant's admin, nor move one to another slug or token. An entry whose
//! MAC does not verify is a miss. The MAC covers the token's hash too, so
//! an entry of another token in the same bin is a miss: the bin then
//! takes the new answer.
//!
//! Entries are overwritten on a miss, so a tenant holds at most
//! [`TOKEN_BINS`](crate::secrets::TOKEN_BINS) of them whatever its members
//! mint; identity removes a token's bin when it revokes the token or
//! removes its member ([`hashed_entry_key`]).
//!
//! A store that cannot be read is a miss: the gateway asks identity, as
//! without a cache, and remembers nothing. Only answers that resolved are
//! remembered; a refusal (401, 404) always asks identity again.

use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::secrets::{derived_key, token_hash, TokenBin};
use crate::tenancy::{TenantScope, TenantSlug};
use crate::time::{duration_ms, UnixMillis};

/// Byte values in the shared key-value store.
pub trait Entries {
    /// The values of `keys`, in order (`None`: absent), in one read.
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String>;
    /// Stores `value` under `key`.
    fn put(&self, key: &str, value: &[u8]) -> Result<(), String>;
    /// Removes `keys` (absent ones are no error).
    fn remove(&self, keys: &[String]) -> Result<(), String>;
}

/// A shared handle reads and writes what it points at (a test keeps one
/// to look at what a service wrote).
impl<T: Entries + ?Sized> Entries for std::rc::Rc<T> {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        (**self).entries(keys)
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        (**self).put(key, value)
    }

    fn remove(&self, keys: &[String]) -> Result<(), String> {
        (**self).remove(keys)
    }
}

/// The cache's settings (Spin variable `resolution_cache`: `on`, `off`)
/// and the key its entries are signed with ([`CacheConfig::signed_with`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// How long an entry is trusted after it was written; `None`: off.
    pub ttl: Option<Duration>,
    /// The MAC key; no entry verifies until one is set.
    mac_key: Option<[u8; 32]>,
}

impl std::fmt::Debug for CacheConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheConfig")
            .field("ttl", &self.ttl)
            .field("signed", &self.mac_key.is_some())
            .finish()
    }
}

impl Default for CacheConfig {
    /// On, for 30 s: the bound on what a store fault can leave stale, and
    /// on how late a token's `last_used_at` is (identity refreshes it at
    /// most once a minute, and now only on a miss).
    fn default() -> Self {
        Self {
            ttl: Some(Duration::from_secs(30)),
            mac_key: None,
        }
    }
}

impl CacheConfig {
    /// From the variable's value (`None`: the default, on).
    pub fn parse(raw: Option<&str>) -> Result<Self, String> {
        match raw.map(str::trim) {
            None | Some("on") => Ok(Self::default()),
            Some("off") => Ok(Self {
                ttl: None,
                ..Self::default()
            }),
            Some(other) => Err(format!("resolution_cache must be on or off, not {other:?}")),
        }
    }

    /// The same, its entries signed under a key derived from `secret`
    /// (the gateway's internal token), domain-separated so that the key
    /// is good for nothing else. An empty secret signs nothing: every
    /// look-up is a miss.
    pub fn signed_with(self, secret: &str) -> Self {
        let mac_key =
            (!secret.is_empty()).then(|| derived_key(b"meridian resolution cache v1\0", secret));
        Self { mac_key, ..self }
    }
}

/// The key of `slug`'s generation.
pub fn generation_key(slug: &TenantSlug) -> String {
    format!("resolution-generation:{}", slug.as_str())
}

/// Where the entry for `token` at `slug` is kept: its bin's key, and the
/// token's hash the entry is sealed with.
fn entry_place(slug: &TenantSlug, token: &str) -> (String, String) {
    let hash = token_hash(token);
    (hashed_entry_key(slug, &hash), hash)
}

/// The key of the bin of the token whose hash (identity's stored
/// `token_hash`) is `hash`: what identity removes when the token stops
/// resolving (revoked, or its member removed). Not what keeps a stale
/// answer from being served — the generation does that ([`invalidate`]).
pub fn hashed_entry_key(slug: &TenantSlug, hash: &str) -> String {
    format!("resolution:{}:{}", slug.as_str(), TokenBin::of(hash).index)
}

/// The tenant slug of a remembered resolution's key
/// ([`hashed_entry_key`]), or `None` for any other key.
pub fn entry_tenant(key: &str) -> Option<&str> {
    key.strip_prefix("resolution:")?
        .rsplit_once(':')
        .map(|(slug, _)| slug)
}

/// Moves `slug`'s generation on: every entry of the tenant stops being
/// served. Identity calls it after a change that can change a resolution
/// has committed, and before it answers.
pub fn invalidate<S: Entries + ?Sized>(store: &S, slug: &TenantSlug) -> Result<(), String> {
    // A UUID v7: its time and random bits make it a value no entry holds.
    let fresh = uuid::Uuid::now_v7().simple().to_string();
    store.put(&generation_key(slug), fresh.as_bytes())
}

/// What a look-up found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A current entry: identity need not be asked.
    Hit(TenantScope),
    /// No current entry: ask identity, then [`ResolutionCache::remember`]
    /// its answer under the generation read here.
    Miss {
        /// The entry's key.
        key: String,
        /// The token's hash, which the entry is sealed with.
        hash: String,
        /// The tenant's generation before identity was asked.
        generation: Vec<u8>,
    },
    /// Off, or the store could not be read: ask identity, remember nothing.
    Bypassed,
}

/// The cache over one store.
pub struct ResolutionCache<'a, S: Entries + ?Sized> {
    store: &'a S,
    config: CacheConfig,
}

impl<'a, S: Entries + ?Sized> ResolutionCache<'a, S> {
    /// The cache in `store`.
    pub fn new(store: &'a S, config: CacheConfig) -> Self {
        Self { store, config }
    }

    /// The keys [`Self::look_up`] reads (none when off): the entry for
    /// `token` at `slug`, and the tenant's generation.
    pub fn read_keys(&self, slug: &TenantSlug, token: &str) -> Vec<String> {
        match self.config.ttl {
            Some(_) => vec![entry_place(slug, token).0, generation_key(slug)],
            None => Vec::new(),
        }
    }

    /// The entry for `token` at `slug`, if it is current at `now`: one
    /// batch read of the entry and the tenant's generation. The two are
    /// read together, so an entry is judged by the generation of the same
    /// moment, read ahead or not.
    pub fn look_up(&self, slug: &TenantSlug, token: &str, now: UnixMillis) -> Lookup {
        let Some(ttl) = self.config.ttl else {
            return Lookup::Bypassed;
        };
        let (key, hash) = entry_place(slug, token);
        let Ok(mut found) = self.store.entries(&[key.clone(), generation_key(slug)]) else {
            return Lookup::Bypassed;
        };
        let (Some(generation), Some(entry)) = (found.pop(), found.pop()) else {
            return Lookup::Bypassed;
        };
        let generation = generation.unwrap_or_default();
        let current = entry
            .as_deref()
            .and_then(|bytes| self.open(&key, &hash, bytes))
            .filter(|e| {
                e.generation == generation
                && now.as_millis() < e.expires_ms
                // Not trusted beyond `ttl` from now, whoever's clock wrote it.
                && e.expires_ms <= now.as_millis().saturating_add(duration_ms(ttl))
            });
        match current {
            Some(e) => Lookup::Hit(e.scope),
            None => Lookup::Miss {
                key,
                hash,
                generation,
            },
        }
    }

    /// Remembers identity's `scope` for a look-up that missed, as of `now`.
    pub fn remember(&self, lookup: Lookup, scope: &TenantScope, now: UnixMillis) {
        let (
            Some(ttl),
            Lookup::Miss {
                key,
                hash,
                generation,
            },
        ) = (self.config.ttl, lookup)
        else {
            return;
        };
        let entry = Entry {
            scope: *scope,
            expires_ms: now.as_millis().saturating_add(duration_ms(ttl)),
            generation,
        };
        let Some(sealed) = self.seal(&key, &hash, &entry) else {
            return;
        };
        // A write the store refuses only means the next request asks again.
        let _ = self.store.put(&key, sealed.as_bytes());
    }

    /// The MAC of `fields` stored under `key` for the token whose hash is
    /// `hash`, when a key is set.
    fn mac(&self, key: &str, hash: &str, fields: &str) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.config.mac_key?).ok()?;
        mac.update(key.as_bytes());
        mac.update(b"\n");
        mac.update(hash.as_bytes());
        mac.update(b"\n");
        mac.update(fields.as_bytes());
        Some(mac)
    }

    /// `entry` as stored under `key` for the token whose hash is `hash`:
    /// its fields, then their MAC in hex.
    fn seal(&self, key: &str, hash: &str, entry: &Entry) -> Option<String> {
        let fields = entry.encode();
        let tag = self.mac(key, hash, &fields)?.finalize().into_bytes();
        Some(format!("{fields} {}", hex::encode(tag)))
    }

    /// The entry stored under `key` as `bytes`, if its MAC verifies for
    /// the token whose hash is `hash` (compared in constant time).
    fn open(&self, key: &str, hash: &str, bytes: &[u8]) -> Option<Entry> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (fields, tag) = text.rsplit_once(' ')?;
        let tag = hex::decode(tag).ok()?;
        self.mac(key, hash, fields)?.verify_slice(&tag).ok()?;
        Entry::decode(fields.as_bytes())
    }
}

/// A stored resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    scope: TenantScope,
    expires_ms: u64,
    generation: Vec<u8>,
}

impl Entry {
    /// `{expires} {tenant} {actor} {role} {generation, hex}`.
    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.expires_ms,
            self.scope.tenant_id,
            self.scope.actor_id,
            self.scope.role.as_str(),
            hex::encode(&self.generation)
        )
    }

    /// Anything else than what [`Self::encode`] writes is no entry.
    fn decode(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut fields = text.split(' ');
        let entry = Self {
            expires_ms: fields.next()?.parse().ok()?,
            scope: TenantScope {
                tenant_id: fields.next()?.parse().ok()?,
                actor_id: fields.next()?.parse().ok()?,
                role: fields.next()?.parse().ok()?,
            },
            generation: hex::decode(fields.next()?).ok()?,
        };
        fields.next().is_none().then_some(entry)
    }
}

/// Entries in a map: tests, and anything that wants the logic without a
/// shared store.
#[derive(Debug, Default)]
pub struct LocalEntries {
    map: std::cell::RefCell<std::collections::HashMap<String, Vec<u8>>>,
    /// When set, every call fails, as a store that cannot be reached.
    pub failing: std::cell::Cell<bool>,
}

impl LocalEntries {
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.map.borrow().get(key).cloned()
    }

    /// Every key held.
    pub fn keys(&self) -> Vec<String> {
        self.map.borrow().keys().cloned().collect()
    }
}

impl Entries for LocalEntries {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        if self.failing.get() {
            return Err("unreachable".into());
        }
        let map = self.map.borrow();
        Ok(keys.iter().map(|k| map.get(k).cloned()).collect())
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        if self.failing.get() {
            return Err("unreachable".into());
        }
        self.map.borrow_mut().insert(key.to_owned(), value.to_vec());
        Ok(())
    }

    fn remove(&self, keys: &[String]) -> Result<(), String> {
        if self.failing.get() {
            return Err("unreachable".into());
        }
        let mut map = self.map.borrow_mut();
        keys.iter().for_each(|key| {
            map.remove(key);
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::Role;

    fn slug(s: &str) -> TenantSlug {
        TenantSlug::parse(s).unwrap()
    }

    fn scope(role: Role) -> TenantScope {
        TenantScope {
            tenant_id: "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01".parse().unwrap(),
            actor_id: "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02".parse().unwrap(),
            role,
        }
    }

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_764_000_000_000 + ms)
    }

    fn on() -> CacheConfig {
        CacheConfig::parse(Some("on"))
            .unwrap()
            .signed_with("the-gateways-internal-token-0123456789")
    }

    /// Looks up, and on a miss remembers `answer` as identity's.
    fn resolve(cache: &ResolutionCache<LocalEntries>, token: &str, answer: Role, now: u64) -> Role {
        match cache.look_up(&slug("acme"), token, at(now)) {
            Lookup::Hit(s) => s.role,
            lookup => {
                cache.remember(lookup, &scope(answer), at(now));
                answer
            }
        }
    }

    #[test]
    fn a_remembered_resolution_is_served_until_it_expires() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(0)),
            Lookup::Miss { .. }
        ));
        resolve(&cache, "t1", Role::Manager, 0);
        assert_eq!(
            cache.look_up(&slug("acme"), "t1", at(29_999)),
            Lookup::Hit(scope(Role::Manager))
        );
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(30_000)),
            Lookup::Miss { .. }
        ));
        // Another token, or the same token at another slug, is its own entry.
        assert!(matches!(
            cache.look_up(&slug("acme"), "t2", at(1)),
            Lookup::Miss { .. }
        ));
        assert!(matches!(
            cache.look_up(&slug("other"), "t1", at(1)),
            Lookup::Miss { .. }
        ));
    }

    #[test]
    fn the_token_is_never_stored_only_its_hash() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        resolve(&cache, "mrd_secret_token", Role::Admin, 0);
        let keys: Vec<String> = store.map.borrow().keys().cloned().collect();
        assert_eq!(keys.len(), 1);
        assert!(!keys[0].contains("secret"), "{keys:?}");
        let value = store.get(&keys[0]).unwrap();
        assert!(!String::from_utf8(value).unwrap().contains("secret"));
    }

    #[test]
    fn after_a_change_no_entry_written_before_it_is_served() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        resolve(&cache, "t1", Role::Manager, 0);
        invalidate(&store, &slug("acme")).unwrap();
        // Identity now answers otherwise, and that is what is served.
        assert_eq!(resolve(&cache, "t1", Role::Resident, 10), Role::Resident);
        assert_eq!(resolve(&cache, "t1", Role::Admin, 20), Role::Resident);
        // A second change moves it on again, never back.
        invalidate(&store, &slug("acme")).unwrap();
        assert_eq!(resolve(&cache, "t1", Role::Admin, 30), Role::Admin);
        // Another tenant's entries are untouched.
        let other = match cache.look_up(&slug("other"), "t1", at(40)) {
            lookup @ Lookup::Miss { .. } => lookup,
            found => panic!("{found:?}"),
        };
        cache.remember(other, &scope(Role::Manager), at(40));
        invalidate(&store, &slug("acme")).unwrap();
        assert!(matches!(
            cache.look_up(&slug("other"), "t1", at(50)),
            Lookup::Hit(_)
        ));
    }

    /// The race the generation exists for: a request read the generation,
    /// asked identity before the change committed, and remembers the old
    /// answer after the change moved the generation on.
    #[test]
    fn an_answer_from_before_a_change_remembered_after_it_is_not_served() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        let before = cache.look_up(&slug("acme"), "t1", at(0));
        invalidate(&store, &slug("acme")).unwrap();
        cache.remember(before, &scope(Role::Admin), at(5));
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(6)),
            Lookup::Miss { .. }
        ));
    }

    /// What a writer to the store can still do, and for how long: it
    /// cannot move an entry to another generation (the generation is under
    /// the entry's MAC), but it can roll the store back — the revoked
    /// token's entry and the tenant's old generation, both as they were.
    /// Nothing in the store can tell its own rollback; the entry's sealed
    /// expiry bounds the replay to the cache's ttl after identity answered.
    #[test]
    fn a_rolled_back_store_replays_an_entry_no_longer_than_its_sealed_expiry() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        let (key, generation) = (
            entry_place(&slug("acme"), "t1").0,
            generation_key(&slug("acme")),
        );
        invalidate(&store, &slug("acme")).unwrap();
        resolve(&cache, "t1", Role::Admin, 0);
        let (old_entry, old_generation) =
            (store.get(&key).unwrap(), store.get(&generation).unwrap());
        // The token is revoked: identity forgets its entry and moves the
        // generation on.
        store.remove(std::slice::from_ref(&key)).unwrap();
        invalidate(&store, &slug("acme")).unwrap();
        // The old entry under the new generation is no entry...
        store.put(&key, &old_entry).unwrap();
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(10_000)),
            Lookup::Miss { .. }
        ));
        // ...nor is it with its generation rewritten (the MAC)...
        let text = String::from_utf8(old_entry.clone()).unwrap();
        let current = hex::encode(store.get(&generation).unwrap());
        let moved = text.replace(&hex::encode(&old_generation), &current);
        store.put(&key, moved.as_bytes()).unwrap();
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(10_000)),
            Lookup::Miss { .. }
        ));
        // ...but both rolled back are served, until the entry's sealed
        // expiry, the ttl (30 s) after identity answered, and never after.
        store.put(&key, &old_entry).unwrap();
        store.put(&generation, &old_generation).unwrap();
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(29_999)),
            Lookup::Hit(_)
        ));
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(30_000)),
            Lookup::Miss { .. }
        ));
    }

    #[test]
    fn an_entry_that_claims_to_live_longer_than_the_ttl_is_not_trusted() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        // Written by a clock a minute ahead.
        resolve(&cache, "t1", Role::Manager, 60_000);
        assert!(matches!(
            cache.look_up(&slug("acme"), "t1", at(0)),
            Lookup::Miss { .. }
        ));
    }

    #[test]
    fn a_store_that_fails_or_holds_garbage_means_asking_identity() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        resolve(&cache, "t1", Role::Manager, 0);
        store.failing.set(true);
        assert_eq!(cache.look_up(&slug("acme"), "t1", at(1)), Lookup::Bypassed);
        store.failing.set(false);
        let key = entry_place(&slug("acme"), "t1").0;
        for garbage in [
            &b""[..],
            b"x",
            b"1 2 3 4 5",
            &[0xff, 0xfe],
            b"99999999999999 a b admin ",
        ] {
            store.put(&key, garbage).unwrap();
            assert!(
                matches!(
                    cache.look_up(&slug("acme"), "t1", at(1)),
                    Lookup::Miss { .. }
                ),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn an_entry_written_without_the_key_is_not_served() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        let (key, hash) = entry_place(&slug("acme"), "t1");
        let generation = hex::encode(b"g1");
        store.put(&generation_key(&slug("acme")), b"g1").unwrap();
        let forged = Entry {
            scope: scope(Role::Admin),
            expires_ms: at(20_000).as_millis(),
            generation: b"g1".to_vec(),
        };
        // Unsigned (as before entries were signed), signed under another
        // key, or a real one's MAC with a field changed: none is served.
        let other = ResolutionCache::new(&store, CacheConfig::default().signed_with("another"));
        let unsigned = forged.encode();
        let wrong_key = other.seal(&key, &hash, &forged).unwrap();
        let real = cache.seal(
            &key,
            &hash,
            &Entry {
                scope: scope(Role::Resident),
                ..forged.clone()
            },
        );
        let tampered = real.unwrap().replace("resident", "admin");
        assert!(unsigned.ends_with(&generation));
        for value in [unsigned, wrong_key, tampered] {
            store.put(&key, value.as_bytes()).unwrap();
            assert!(
                matches!(
                    cache.look_up(&slug("acme"), "t1", at(1)),
                    Lookup::Miss { .. }
                ),
                "{value}"
            );
        }
        // Nor is a real entry of another token, moved to this one's key
        // or sealed under it (as if the two shared a bin).
        let (other_key, other_hash) = entry_place(&slug("acme"), "t2");
        for moved in [
            cache.seal(&other_key, &other_hash, &forged).unwrap(),
            cache.seal(&key, &other_hash, &forged).unwrap(),
        ] {
            store.put(&key, moved.as_bytes()).unwrap();
            assert!(matches!(
                cache.look_up(&slug("acme"), "t1", at(1)),
                Lookup::Miss { .. }
            ));
        }
        // The same entry sealed under its own key is.
        store
            .put(&key, cache.seal(&key, &hash, &forged).unwrap().as_bytes())
            .unwrap();
        assert_eq!(
            cache.look_up(&slug("acme"), "t1", at(1)),
            Lookup::Hit(scope(Role::Admin))
        );
    }

    #[test]
    fn a_tenant_holds_one_entry_a_bin_whatever_its_tokens() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, on());
        let tokens: Vec<String> = (0..500).map(|n| format!("mrd_{n}")).collect();
        tokens.iter().for_each(|t| {
            resolve(&cache, t, Role::Resident, 0);
        });
        let entries = store.map.borrow().len();
        assert_eq!(entries, usize::from(crate::secrets::TOKEN_BINS));
        // Two tokens of one bin take turns: each is a hit until the other
        // is remembered over it, then a miss.
        let bin_of = |t: &str| entry_place(&slug("acme"), t).0;
        let (a, b) = tokens
            .iter()
            .enumerate()
            .find_map(|(i, a)| {
                let b = tokens[i + 1..].iter().find(|b| bin_of(b) == bin_of(a))?;
                Some((a.as_str(), b.as_str()))
            })
            .unwrap();
        resolve(&cache, a, Role::Manager, 1);
        assert_eq!(
            cache.look_up(&slug("acme"), a, at(2)),
            Lookup::Hit(scope(Role::Manager))
        );
        assert!(matches!(
            cache.look_up(&slug("acme"), b, at(2)),
            Lookup::Miss { .. }
        ));
        resolve(&cache, b, Role::Admin, 3);
        assert_eq!(
            cache.look_up(&slug("acme"), b, at(4)),
            Lookup::Hit(scope(Role::Admin))
        );
        assert!(matches!(
            cache.look_up(&slug("acme"), a, at(4)),
            Lookup::Miss { .. }
        ));
    }

    #[test]
    fn without_a_key_nothing_is_remembered_or_served() {
        let store = LocalEntries::default();
        let cache = ResolutionCache::new(&store, CacheConfig::default());
        resolve(&cache, "t1", Role::Manager, 0);
        assert!(store.map.borrow().is_empty());
    }

    #[test]
    fn off_it_reads_and_writes_nothing() {
        let store = LocalEntries::default();
        let config = CacheConfig::parse(Some("off")).unwrap();
        let cache = ResolutionCache::new(&store, config);
        assert_eq!(cache.look_up(&slug("acme"), "t1", at(0)), Lookup::Bypassed);
        cache.remember(Lookup::Bypassed, &scope(Role::Admin), at(0));
        assert!(store.map.borrow().is_empty());
        assert!(CacheConfig::parse(Some("yes")).is_err());
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let entry = Entry {
            scope: scope(Role::Resident),
            expires_ms: 1_764_000_030_000,
            generation: b"0192".to_vec(),
        };
        assert_eq!(
            Entry::decode(entry.encode().as_bytes()),
            Some(entry.clone())
        );
        let fresh = Entry {
            generation: Vec::new(),
            ..entry
        };
        assert_eq!(Entry::decode(fresh.encode().as_bytes()), Some(fresh));
    }
}
