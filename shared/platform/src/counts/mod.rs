//! The counts every invocation shares, and the one place the key-value
//! guards keep them: the failure memory (`crate::http::memory`), the
//! tenant limits and the overload throttle (`crate::limits`) and the resolution cache
//! (`crate::tenancy::cache`'s entries) all sit on [`Counters`]. A shared
//! store implements it — Spin's key-value store in `meridian-spin`, or a
//! SQL table ([`TableCounters`], for a host whose store has no atomic
//! increments) — and [`LocalCounters`] is a map for tests and host use;
//! [`Held`] is what a store read ahead holds until the reads that want it.

mod table;

pub use table::{TableCounters, TABLE};

use std::cell::{Cell, RefCell};

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
    /// Reads `keys` together, ahead of this invocation's reads that want
    /// them: a later [`Self::read`] or [`Entries::entries`] of keys all
    /// read ahead is answered from what was read, once, instead of asking
    /// the store again. A write to a key drops what was read of it. A store
    /// that cannot read ahead (or fails to) leaves every read to the store;
    /// no keys, no read (the store is not even opened).
    fn read_ahead(&self, _keys: &[String]) {}

    /// Every key the store holds (numbers and entries): the platform
    /// admin's count of the keys (`GET /ops/keys`), never a request's path.
    fn stored_keys(&self) -> Result<Vec<String>, String> {
        Err("this store cannot list its keys".into())
    }
}

/// Keeps a family of windowed counts (keys naming their window's number)
/// to its last two windows, however far apart its writes come. Called by
/// the writer whose write opened window `epoch` (its increment returned
/// its own delta): the family's marker ([`window_marker`]) names the last window opened
/// before it; that one and the one before it are forgotten unless they
/// are still `epoch`'s previous window, and `epoch` becomes the last
/// opened. Every window is opened through here, so no other can be stored
/// (forgetting only `epoch − 2` would leave a window behind every gap of
/// more than two). `keys_of` names a window's keys. A marker the store
/// cannot give is taken as none: only `epoch − 2` is forgotten then.
pub fn opened_window<K: Counters + ?Sized>(
    counters: &K,
    family: &str,
    epoch: u64,
    keys_of: impl Fn(u64) -> Vec<String>,
) {
    let marker = window_marker(family);
    let last = counters
        .read(std::slice::from_ref(&marker))
        .ok()
        .and_then(|values| values.first().copied())
        .and_then(|last| u64::try_from(last).ok())
        .filter(|&last| last > 0);
    let older = match last {
        // A later window already opened (a writer whose clock is ahead).
        Some(last) if last >= epoch => return,
        Some(last) => [last, last.saturating_sub(1)],
        None => [epoch.saturating_sub(2); 2],
    };
    let mut stale: Vec<u64> = older
        .into_iter()
        .filter(|e| e.saturating_add(1) < epoch)
        .collect();
    stale.dedup();
    let stale: Vec<String> = stale.into_iter().flat_map(keys_of).collect();
    if !stale.is_empty() {
        let _ = counters.forget(&stale);
    }
    let _ = counters.set(&marker, i64::try_from(epoch).unwrap_or(i64::MAX));
}

/// The key naming the last window opened of the family whose keys start
/// with `family` ([`opened_window`]).
pub fn window_marker(family: &str) -> String {
    format!("{family}/last")
}

/// A stored number: Spin's SQLite store keeps an incremented value as 8
/// little-endian bytes, Redis as decimal text (and [`Counters::set`]
/// writes decimal text). Eight bytes that are all digits would be a number
/// above 3·10¹⁸, which no count or timestamp here reaches.
pub fn decode_number(bytes: &[u8]) -> i64 {
    let text = bytes.iter().all(|b| b.is_ascii_digit() || *b == b'-');
    if text && !bytes.is_empty() {
        return std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
    }
    <[u8; 8]>::try_from(bytes).map_or(0, i64::from_le_bytes)
}

/// What a store read ahead ([`Counters::read_ahead`]): each key's value
/// (`None`: absent) until a read takes it or a write drops it.
#[derive(Debug, Default)]
pub struct Held(RefCell<Vec<(String, Option<Vec<u8>>)>>);

impl Held {
    /// Holds `values`, read for `keys` in that order, beside what is held.
    pub fn hold(&self, keys: &[String], values: Vec<Option<Vec<u8>>>) {
        let mut held = self.0.borrow_mut();
        for (key, value) in keys.iter().zip(values) {
            held.retain(|(k, _)| k != key);
            held.push((key.clone(), value));
        }
    }

    /// The values of `keys`, in order, when every one is held (then none
    /// of them is held any more); `None`, and nothing taken, otherwise.
    pub fn take(&self, keys: &[String]) -> Option<Vec<Option<Vec<u8>>>> {
        let mut held = self.0.borrow_mut();
        if keys.is_empty() || !keys.iter().all(|key| held.iter().any(|(k, _)| k == key)) {
            return None;
        }
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            let at = held.iter().position(|(k, _)| k == key)?;
            values.push(held.swap_remove(at).1);
        }
        Some(values)
    }

    /// The numbers of `keys` ([`decode_number`]; absent is 0), when every
    /// one is held.
    pub fn take_numbers(&self, keys: &[String]) -> Option<Vec<i64>> {
        let values = self.take(keys)?;
        Some(
            values
                .iter()
                .map(|value| value.as_deref().map_or(0, decode_number))
                .collect(),
        )
    }

    /// Drops what was read of `key`: it is about to be written.
    pub fn drop_key(&self, key: &str) {
        self.0.borrow_mut().retain(|(k, _)| k != key);
    }
}

/// Counters in a map, and byte entries beside them: tests, and anything
/// that wants the logic without a shared store.
#[derive(Debug, Default)]
pub struct LocalCounters {
    numbers: RefCell<std::collections::HashMap<String, i64>>,
    /// What was read ahead, as a shared store's would be held.
    held: Held,
    /// How many reads reached the map (reads answered from what was read
    /// ahead do not; a read ahead does).
    reads: Cell<usize>,
    /// How many writes (adds, sets, forgets) reached the map.
    writes: Cell<usize>,
    /// The byte entries (the resolution cache's), kept apart from the
    /// numbers [`Self::len`] and [`Self::keys`] report.
    pub entries: LocalEntries,
}

impl LocalCounters {
    /// Counters of their own for the rest of a test that does not look at
    /// them (leaked: a test is short).
    #[cfg(test)]
    pub fn leaked() -> &'static Self {
        Box::leak(Box::default())
    }

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

    /// How many reads (of numbers, of entries, or ahead) reached the store.
    pub fn reads(&self) -> usize {
        self.reads.get()
    }

    fn count_read(&self) {
        self.reads.set(self.reads.get() + 1);
    }

    /// How many writes (adds, sets, forgets: one each, as a store's calls
    /// are counted against a write quota) reached the store.
    pub fn writes(&self) -> usize {
        self.writes.get()
    }

    fn count_write(&self) {
        self.writes.set(self.writes.get() + 1);
    }
}

impl Counters for LocalCounters {
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        self.held.drop_key(key);
        self.count_write();
        let mut map = self.numbers.borrow_mut();
        let value = map.entry(key.to_owned()).or_insert(0);
        *value += delta;
        Ok(*value)
    }

    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
        if let Some(values) = self.held.take_numbers(keys) {
            return Ok(values);
        }
        self.count_read();
        let map = self.numbers.borrow();
        Ok(keys
            .iter()
            .map(|k| map.get(k).copied().unwrap_or(0))
            .collect())
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.held.drop_key(key);
        self.count_write();
        self.numbers.borrow_mut().insert(key.to_owned(), value);
        Ok(())
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        self.count_write();
        let mut map = self.numbers.borrow_mut();
        for key in keys {
            self.held.drop_key(key);
            map.remove(key);
        }
        Ok(())
    }

    fn stored_keys(&self) -> Result<Vec<String>, String> {
        let mut keys = self.keys();
        keys.extend(self.entries.keys());
        Ok(keys)
    }

    /// Numbers as the shared store keeps an incremented one (8
    /// little-endian bytes), entries as they are.
    fn read_ahead(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        self.count_read();
        let numbers = self.numbers.borrow();
        let entries = self.entries.entries(keys).unwrap_or_default();
        let values = keys
            .iter()
            .zip(entries)
            .map(|(key, entry)| match numbers.get(key) {
                Some(n) => Some(n.to_le_bytes().to_vec()),
                None => entry,
            })
            .collect();
        self.held.hold(keys, values);
    }
}

impl Entries for LocalCounters {
    fn entries(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, String> {
        if let Some(values) = self.held.take(keys) {
            return Ok(values);
        }
        self.count_read();
        self.entries.entries(keys)
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), String> {
        self.held.drop_key(key);
        self.entries.put(key, value)
    }

    fn remove(&self, keys: &[String]) -> Result<(), String> {
        keys.iter().for_each(|key| self.held.drop_key(key));
        self.entries.remove(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family(counters: &LocalCounters) -> Vec<String> {
        let mut windows: Vec<String> = counters
            .keys()
            .into_iter()
            .filter(|k| k.starts_with("w/") && k != "w/last")
            .collect();
        windows.sort();
        windows
    }

    /// Opens window `epoch` of the family `w/{epoch}` as a writer would.
    fn open(counters: &LocalCounters, epoch: u64) {
        if counters.add(&format!("w/{epoch}"), 1) == Ok(1) {
            opened_window(counters, "w", epoch, |e| vec![format!("w/{e}")]);
        }
    }

    #[test]
    fn an_opened_window_keeps_the_previous_one_and_forgets_the_rest() {
        let counters = LocalCounters::default();
        open(&counters, 100);
        open(&counters, 101);
        assert_eq!(
            family(&counters),
            ["w/100", "w/101"],
            "the previous is kept"
        );
        open(&counters, 102);
        assert_eq!(family(&counters), ["w/101", "w/102"]);
        // A gap of many windows: both the last and the one before it go.
        open(&counters, 900);
        assert_eq!(family(&counters), ["w/900"]);
        open(&counters, 905);
        assert_eq!(family(&counters), ["w/905"]);
        assert_eq!(counters.read(&keys(&["w/last"])).unwrap(), [905]);
    }

    #[test]
    fn a_marker_ahead_of_the_writer_is_left_alone() {
        let counters = LocalCounters::default();
        open(&counters, 200);
        // A writer whose clock is behind opens an older window.
        open(&counters, 150);
        assert_eq!(family(&counters), ["w/150", "w/200"]);
        assert_eq!(counters.read(&keys(&["w/last"])).unwrap(), [200]);
    }

    #[test]
    fn an_unmarked_family_forgets_the_window_two_back_as_before() {
        let counters = LocalCounters::default();
        counters.add("w/48", 1).unwrap();
        counters.add("w/49", 1).unwrap();
        open(&counters, 50);
        assert_eq!(family(&counters), ["w/49", "w/50"]);
    }

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn both_encodings_of_a_stored_number_are_read() {
        assert_eq!(decode_number(&5i64.to_le_bytes()), 5);
        assert_eq!(
            decode_number(&1_764_000_000_000i64.to_le_bytes()),
            1_764_000_000_000
        );
        assert_eq!(decode_number(b"1764000000000"), 1_764_000_000_000);
        assert_eq!(decode_number(b"12345678"), 12_345_678);
        assert_eq!(decode_number(b"-3"), -3);
        assert_eq!(decode_number(b""), 0);
        assert_eq!(decode_number(b"xyz"), 0);
    }

    #[test]
    fn what_was_read_ahead_answers_one_read_of_keys_all_held() {
        let held = Held::default();
        held.hold(
            &keys(&["a", "b", "c"]),
            vec![Some(b"1".to_vec()), None, Some(b"x".to_vec())],
        );
        // Not all held: nothing taken.
        assert_eq!(held.take(&keys(&["a", "z"])), None);
        assert_eq!(held.take(&[]), None);
        // In the order asked; then gone.
        assert_eq!(held.take_numbers(&keys(&["b", "a"])), Some(vec![0, 1]));
        assert_eq!(held.take(&keys(&["a"])), None);
        assert_eq!(held.take(&keys(&["c"])), Some(vec![Some(b"x".to_vec())]));
        // Held again, a key's newer value replaces its older one.
        held.hold(&keys(&["a"]), vec![Some(b"2".to_vec())]);
        held.hold(&keys(&["a"]), vec![Some(b"3".to_vec())]);
        assert_eq!(held.take_numbers(&keys(&["a"])), Some(vec![3]));
        assert_eq!(held.take(&keys(&["a"])), None);
    }

    #[test]
    fn a_read_ahead_is_one_read_and_a_write_drops_what_it_read_of_its_key() {
        let counters = LocalCounters::default();
        counters.add("n", 4).unwrap();
        counters.put("e", b"bytes").unwrap();
        counters.read_ahead(&keys(&["n", "m", "e"]));
        assert_eq!(counters.reads(), 1);
        // Answered from what was read ahead: no read reaches the store.
        assert_eq!(counters.read(&keys(&["n", "m"])).unwrap(), vec![4, 0]);
        assert_eq!(
            counters.entries(&keys(&["e"])).unwrap(),
            vec![Some(b"bytes".to_vec())]
        );
        assert_eq!(counters.reads(), 1);
        // Taken once: the next read asks the store.
        assert_eq!(counters.read(&keys(&["n"])).unwrap(), vec![4]);
        assert_eq!(counters.reads(), 2);
        // A write after the read ahead: the read sees the write.
        counters.read_ahead(&keys(&["n", "e"]));
        counters.add("n", 1).unwrap();
        counters.put("e", b"newer").unwrap();
        assert_eq!(counters.read(&keys(&["n"])).unwrap(), vec![5]);
        assert_eq!(
            counters.entries(&keys(&["e"])).unwrap(),
            vec![Some(b"newer".to_vec())]
        );
        counters.read_ahead(&keys(&["n"]));
        counters.set("n", 9).unwrap();
        assert_eq!(counters.read(&keys(&["n"])).unwrap(), vec![9]);
        counters.read_ahead(&keys(&["n"]));
        counters.forget(&keys(&["n"])).unwrap();
        assert_eq!(counters.read(&keys(&["n"])).unwrap(), vec![0]);
    }
}
