//! The failure memory's counters and the resolution cache's entries in
//! Spin's key-value store (`wasi:keyvalue`, the store labelled `default`):
//! atomic increments, one batch read.
//! Locally the store is Spin's SQLite file; on a cluster the runtime
//! configuration maps `default` to Redis (or another shared store), so every
//! replica sees the same history.

use std::cell::OnceCell;

use meridian_platform::http::memory::Counters;
use meridian_platform::tenancy::cache::Entries;
#[cfg(not(feature = "without-atomics"))]
use spin_sdk::wit::wasi::keyvalue::atomics;
use spin_sdk::wit::wasi::keyvalue::{batch, store};

/// The key-value store label the components are granted.
pub const STORE: &str = "default";

/// Counters in the `default` store, opened on first use.
#[derive(Default)]
pub struct SpinCounters {
    bucket: OnceCell<Result<store::Bucket, String>>,
}

impl SpinCounters {
    fn bucket(&self) -> Result<&store::Bucket, String> {
        self.bucket
            .get_or_init(|| store::open(STORE).map_err(|e| format!("{e:?}")))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A stored number: Spin's SQLite store keeps an incremented value as 8
/// little-endian bytes, Redis as decimal text (and this module writes
/// decimal text). Eight bytes that are all digits would be a number above
/// 3·10¹⁸, which no count or timestamp here reaches.
fn decode(bytes: &[u8]) -> i64 {
    let text = bytes.iter().all(|b| b.is_ascii_digit() || *b == b'-');
    if text && !bytes.is_empty() {
        return std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
    }
    <[u8; 8]>::try_from(bytes).map_or(0, i64::from_le_bytes)
}

impl Counters for SpinCounters {
    #[cfg(not(feature = "without-atomics"))]
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        atomics::increment(self.bucket()?, key, delta).map_err(|e| format!("{e:?}"))
    }

    /// A read and a write: another request's update between the two is
    /// lost (the feature's cost, see Cargo.toml).
    #[cfg(feature = "without-atomics")]
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
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
        // The healthy path's one read: a plain get is the store's cheapest call.
        if let [key] = keys {
            let value = self.bucket()?.get(key).map_err(|e| format!("{e:?}"))?;
            return Ok(vec![value.as_deref().map_or(0, decode)]);
        }
        // One batch read, in the order asked ([`Entries::entries`]).
        Ok(self
            .entries(keys)?
            .iter()
            .map(|value| value.as_deref().map_or(0, decode))
            .collect())
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.bucket()?
            .set(key, value.to_string().as_bytes())
            .map_err(|e| format!("{e:?}"))
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        batch::delete_many(self.bucket()?, keys).map_err(|e| format!("{e:?}"))
    }
}

impl Entries for SpinCounters {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        let mut found = batch::get_many(self.bucket()?, keys).map_err(|e| format!("{e:?}"))?;
        // In the order asked: a store may answer in any order, or leave an
        // absent key out.
        Ok(keys
            .iter()
            .map(|key| {
                let at = found.iter().position(|(k, _)| k == key)?;
                found.swap_remove(at).1
            })
            .collect())
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.bucket()?.set(key, value).map_err(|e| format!("{e:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn both_encodings_of_a_stored_number_are_read() {
        assert_eq!(decode(&5i64.to_le_bytes()), 5);
        assert_eq!(
            decode(&1_764_000_000_000i64.to_le_bytes()),
            1_764_000_000_000
        );
        assert_eq!(decode(b"1764000000000"), 1_764_000_000_000);
        assert_eq!(decode(b"12345678"), 12_345_678);
        assert_eq!(decode(b"-3"), -3);
        assert_eq!(decode(b""), 0);
        assert_eq!(decode(b"xyz"), 0);
    }
}
