//! The counters the failure memory and admission keep: the trait a shared
//! store implements, and a map for tests and host use.

use crate::tenancy::cache::{Entries, LocalEntries};

/// Atomic counters in a shared store (Spin's key-value store in a
/// component, a map in tests).
pub trait Counters {
    /// Adds `delta` to `key` (absent is 0) and returns the new value.
    fn add(&self, key: &str, delta: i64) -> Result<i64, String>;
    /// The values of `keys`, 0 for an absent one, in order.
    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String>;
    /// Sets `key` to `value`.
    fn set(&self, key: &str, value: i64) -> Result<(), String>;
    /// Forgets `keys`.
    fn forget(&self, keys: &[String]) -> Result<(), String>;
}

/// Counters in a map, and byte entries beside them: tests, and anything
/// that wants the logic without a shared store.
#[derive(Debug, Default)]
pub struct LocalCounters {
    numbers: std::cell::RefCell<std::collections::HashMap<String, i64>>,
    /// The byte entries (the resolution cache's), kept apart from the
    /// numbers [`Self::len`] and [`Self::keys`] report.
    pub entries: LocalEntries,
}

impl LocalCounters {
    /// How many counters it holds.
    pub fn len(&self) -> usize {
        self.numbers.borrow().len()
    }

    /// Whether it holds no counter.
    pub fn is_empty(&self) -> bool {
        self.numbers.borrow().is_empty()
    }

    /// The counters' keys.
    pub fn keys(&self) -> Vec<String> {
        self.numbers.borrow().keys().cloned().collect()
    }
}

impl Counters for LocalCounters {
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        let mut map = self.numbers.borrow_mut();
        let value = map.entry(key.to_owned()).or_insert(0);
        *value += delta;
        Ok(*value)
    }

    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
        let map = self.numbers.borrow();
        Ok(keys
            .iter()
            .map(|k| map.get(k).copied().unwrap_or(0))
            .collect())
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.numbers.borrow_mut().insert(key.to_owned(), value);
        Ok(())
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        let mut map = self.numbers.borrow_mut();
        for key in keys {
            map.remove(key);
        }
        Ok(())
    }
}

impl Entries for LocalCounters {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        self.entries.entries(keys)
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.entries.put(key, value)
    }
}
