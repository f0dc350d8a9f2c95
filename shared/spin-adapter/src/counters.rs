//! The failure memory's counters and the resolution cache's entries,
//! shared by every invocation: in Spin's key-value store (`wasi:keyvalue`,
//! the store labelled `default`) — atomic increments, and batch reads (a
//! request's reads read ahead in one, [`Counters::read_ahead`]) — or, when
//! `counts_address` names a PostgreSQL database, in its `meridian_counts`
//! table (a host whose key-value store has no `atomics` or too few writes:
//! Akamai Functions; docs/storage.md).
//! Locally the store is Spin's SQLite file; on a cluster the runtime
//! configuration maps `default` to Redis (or another shared store), so every
//! replica sees the same history.

use std::cell::OnceCell;
#[cfg(not(feature = "without-postgres"))]
use std::time::Duration;

#[cfg(not(feature = "without-postgres"))]
use meridian_platform::counts::TableCounters;
use meridian_platform::counts::{decode_number as decode, Counters, Held};
use meridian_platform::tenancy::cache::Entries;
#[cfg(not(feature = "without-atomics"))]
use spin_sdk::wit::wasi::keyvalue::atomics;
#[cfg(not(feature = "without-batch"))]
use spin_sdk::wit::wasi::keyvalue::batch;
use spin_sdk::wit::wasi::keyvalue::store;

#[cfg(not(feature = "without-postgres"))]
use meridian_store::spin::postgres::SpinPostgres;

/// The key-value store label the components are granted.
pub const STORE: &str = "default";

/// How long one statement on the counts' PostgreSQL may wait or run: a
/// count is never worth a request's budget (a failed one reads as none).
#[cfg(not(feature = "without-postgres"))]
const TABLE_WAIT: Duration = Duration::from_millis(250);

/// The counts of this instance, wherever the variables put them: chosen,
/// and opened, on first use.
#[derive(Default)]
pub struct SpinCounters {
    store: OnceCell<Store>,
    /// Counts no other component reads (a service's failure memory):
    /// where counts are in PostgreSQL and the service's own database is
    /// too, they are kept in that database, on the connection its store
    /// holds.
    #[cfg_attr(
        feature = "without-postgres",
        expect(
            dead_code,
            reason = "a build without PostgreSQL keeps no counts in a database"
        )
    )]
    own: bool,
}

enum Store {
    KeyValue(KeyValueCounters),
    #[cfg(not(feature = "without-postgres"))]
    Table(Result<TableCounters<SpinPostgres>, String>),
    /// Counts asked of a PostgreSQL database this build cannot open.
    #[cfg(feature = "without-postgres")]
    Unavailable(String),
}

impl SpinCounters {
    /// Counts only this component reads: a request's failure memory then
    /// costs no checkout of a database of its own.
    pub fn own() -> Self {
        Self {
            own: true,
            ..Self::default()
        }
    }

    fn store(&self) -> &Store {
        self.store
            .get_or_init(|| match crate::vars::get("counts_address") {
                None => Store::KeyValue(KeyValueCounters::default()),
                #[cfg(feature = "without-postgres")]
                Some(_) => Store::Unavailable(
                    "counts_address is set, and this build has no PostgreSQL".into(),
                ),
                #[cfg(not(feature = "without-postgres"))]
                Some(address) => {
                    // Only a service's own counts ask (a component
                    // without the variable would pay a host call for it).
                    let own = self
                        .own
                        .then(|| crate::vars::get("postgres_address"))
                        .flatten();
                    Store::Table(
                        match own {
                            // The store's connection, with its bounds (the
                            // role's ceilings, docs/storage.md "Bounds").
                            Some(own) => SpinPostgres::open(&own),
                            None => SpinPostgres::open_bounded(&address, TABLE_WAIT),
                        }
                        .map(TableCounters::new)
                        .map_err(|e| format!("opening the counts' database: {e}")),
                    )
                }
            })
    }

    /// The counters to use, or why there are none.
    fn counters(&self) -> Result<&dyn CountStore, String> {
        match self.store() {
            Store::KeyValue(kv) => Ok(kv),
            #[cfg(feature = "without-postgres")]
            Store::Unavailable(why) => Err(why.clone()),
            #[cfg(not(feature = "without-postgres"))]
            Store::Table(table) => table
                .as_ref()
                .map(|t| t as &dyn CountStore)
                .map_err(Clone::clone),
        }
    }
}

/// Counters with entries beside them.
trait CountStore: Counters + Entries {}
impl<T: Counters + Entries> CountStore for T {}

impl Counters for SpinCounters {
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.counters()?.add(key, delta)
    }

    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
        self.counters()?.read(keys)
    }

    fn stored_keys(&self) -> Result<Vec<String>, String> {
        self.counters()?.stored_keys()
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.counters()?.set(key, value)
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        self.counters()?.forget(keys)
    }

    /// Nothing to read chooses and opens nothing: with every feature that
    /// keeps state off, the store may be one that cannot be reached.
    fn read_ahead(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        if let Ok(counters) = self.counters() {
            counters.read_ahead(keys);
        }
    }
}

impl Entries for SpinCounters {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        self.counters()?.entries(keys)
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.counters()?.put(key, value)
    }

    fn remove(&self, keys: &[String]) -> Result<(), String> {
        self.counters()?.remove(keys)
    }
}

/// Counters in the `default` store, opened on first use.
#[derive(Default)]
struct KeyValueCounters {
    bucket: OnceCell<Result<store::Bucket, String>>,
    /// What was read ahead, until the reads that want it.
    held: Held,
}

impl KeyValueCounters {
    fn bucket(&self) -> Result<&store::Bucket, String> {
        self.bucket
            .get_or_init(|| store::open(STORE).map_err(|e| format!("{e:?}")))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The values of `keys` in the order asked, in one batch read: a
    /// store may answer in any order, or leave an absent key out.
    #[cfg(not(feature = "without-batch"))]
    fn fetch(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        let mut found = batch::get_many(self.bucket()?, keys).map_err(|e| format!("{e:?}"))?;
        Ok(keys
            .iter()
            .map(|key| {
                let at = found.iter().position(|(k, _)| k == key)?;
                found.swap_remove(at).1
            })
            .collect())
    }

    /// The values of `keys` in the order asked, one read each (a store
    /// without `batch`).
    #[cfg(feature = "without-batch")]
    fn fetch(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        let bucket = self.bucket()?;
        keys.iter()
            .map(|key| bucket.get(key).map_err(|e| format!("{e:?}")))
            .collect()
    }
}

impl Counters for KeyValueCounters {
    #[cfg(not(feature = "without-atomics"))]
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.held.drop_key(key);
        atomics::increment(self.bucket()?, key, delta).map_err(|e| format!("{e:?}"))
    }

    /// A read and a write: another request's update between the two is
    /// lost (the feature's cost, see Cargo.toml).
    #[cfg(feature = "without-atomics")]
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.held.drop_key(key);
        let bucket = self.bucket()?;
        let now = bucket
            .get(key)
            .map_err(|e| format!("{e:?}"))?
            .as_deref()
            .map_or(0, decode)
            .saturating_add(delta);
        bucket
            .set(key, now.to_string().as_bytes())
            .map_err(|e| format!("{e:?}"))?;
        Ok(now)
    }

    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
        if let Some(values) = self.held.take_numbers(keys) {
            return Ok(values);
        }
        // The healthy path's one read: a plain get is the store's cheapest call.
        if let [key] = keys {
            let value = self.bucket()?.get(key).map_err(|e| format!("{e:?}"))?;
            return Ok(vec![value.as_deref().map_or(0, decode)]);
        }
        // One batch read, in the order asked.
        Ok(self
            .fetch(keys)?
            .iter()
            .map(|value| value.as_deref().map_or(0, decode))
            .collect())
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.held.drop_key(key);
        self.bucket()?
            .set(key, value.to_string().as_bytes())
            .map_err(|e| format!("{e:?}"))
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        keys.iter().for_each(|key| self.held.drop_key(key));
        #[cfg(not(feature = "without-batch"))]
        return batch::delete_many(self.bucket()?, keys).map_err(|e| format!("{e:?}"));
        #[cfg(feature = "without-batch")]
        {
            let bucket = self.bucket()?;
            keys.iter()
                .try_for_each(|key| bucket.delete(key).map_err(|e| format!("{e:?}")))
        }
    }

    /// Page by page (`list-keys` and its cursor).
    fn stored_keys(&self) -> Result<Vec<String>, String> {
        let bucket = self.bucket()?;
        let mut keys = Vec::new();
        let mut cursor = None;
        loop {
            let page = bucket
                .list_keys(cursor.as_deref())
                .map_err(|e| format!("{e:?}"))?;
            keys.extend(page.keys);
            cursor = match page.cursor {
                Some(next) if !next.is_empty() => Some(next),
                _ => return Ok(keys),
            };
        }
    }

    /// Nothing to read opens nothing: with every feature that keeps state
    /// off, the store may be one that cannot be reached (a cluster's Redis
    /// named in a runtime configuration), which Spin's client would spend
    /// ~30 s failing to reach.
    fn read_ahead(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        if let Ok(values) = self.fetch(keys) {
            self.held.hold(keys, values);
        }
    }
}

impl Entries for KeyValueCounters {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        match self.held.take(keys) {
            Some(values) => Ok(values),
            None => self.fetch(keys),
        }
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.held.drop_key(key);
        self.bucket()?.set(key, value).map_err(|e| format!("{e:?}"))
    }

    fn remove(&self, keys: &[String]) -> Result<(), String> {
        Counters::forget(self, keys)
    }
}
