//! Failure memory shared by every invocation: a retry budget and a circuit
//! breaker per caller and downstream, kept in a key-value store.
//!
//! Why here and not in memory: each Spin invocation is a fresh instance,
//! so the in-process retry budgets and breakers of Finagle, linkerd or
//! gRPC would start empty on every request — during an outage every
//! request would make all its attempts, and every client would wait out a
//! failure that one look at recent history predicts. The deadline travels
//! outside the invocation in a header; failure history travels outside it
//! in the store.
//!
//! What is kept, per caller → downstream, in windows of `window` (10 s):
//! first attempts, retries and failed attempts, as atomic counters keyed by
//! window number, plus the time of the last failure, last success and last
//! probe. The sliding estimate over the last `window` weighs the previous
//! window by how much of it still overlaps (the sliding-window-counter
//! approximation): one batch read per call, no per-second keys.
//!
//! Retry budget (Finagle's `RetryBudget`, linkerd's retry budget): a retry
//! is allowed while retries stay under `retry_percent` of first attempts
//! in the window, or under the floor of `min_retries` per window, so a
//! quiet service can still retry an occasional failure.
//!
//! Breaker: when at least `min_volume` attempts in the window and at least
//! `trip_percent` of them failed, and the most recent outcome was a
//! failure, calls are refused at once (503 `upstream_unavailable`,
//! `Retry-After`), except one probe per `probe_interval`; the first
//! success recorded after the last failure closes it.
//!
//! Races: invocations read, decide and write without a lock. Counters are
//! atomic increments, so no count is lost; a decision may be made on a
//! count a few increments old, so under concurrency `c` the budget can be
//! exceeded by at most `c` retries per window, and up to `c` probes can
//! start in the same instant. The store failing is never a reason to
//! refuse a call: the memory then reads as empty.

use std::time::Duration;

use serde::Serialize;

use crate::time::UnixMillis;

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

/// The settings (Spin variables `retry_budget_*`, `breaker_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryConfig {
    /// Off: every call is made and every allowed retry too, as before.
    pub enabled: bool,
    /// The window the counts cover.
    pub window: Duration,
    /// Retries allowed, as a percentage of first attempts in the window.
    pub retry_percent: u32,
    /// Retries always allowed per window.
    pub min_retries: u32,
    /// Attempts in the window before the breaker may open.
    pub min_volume: u32,
    /// Failed attempts, in percent, that open it.
    pub trip_percent: u32,
    /// How often an open breaker lets one call through to probe.
    pub probe_interval: Duration,
}

impl Default for MemoryConfig {
    /// Finagle's and linkerd's budget: 20 % over 10 s. The floor is 3
    /// retries a second (Finagle's is 10), low enough that at 30 % failures
    /// a service seeing a few dozen requests a second stays near 1.2
    /// attempts per request. The breaker needs 10 attempts and half of
    /// them failing; it probes every 500 ms, so recovery is seen within a
    /// second.
    fn default() -> Self {
        Self {
            enabled: true,
            window: Duration::from_secs(10),
            retry_percent: 20,
            min_retries: 30,
            min_volume: 10,
            trip_percent: 50,
            probe_interval: Duration::from_millis(500),
        }
    }
}

impl MemoryConfig {
    /// The settings from Spin variables (`get` returns a variable's value,
    /// `None` when unset): `failure_memory` (`on`/`off`),
    /// `retry_budget_percent`, `retry_budget_min_retries`,
    /// `breaker_min_volume`, `breaker_trip_percent`, `breaker_probe_ms`,
    /// `failure_window_ms`; an unset one keeps its default.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let d = Self::default();
        let number =
            |name: &str, default: u64, range: std::ops::RangeInclusive<u64>| match get(name) {
                None => Ok(default),
                Some(raw) => raw
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| range.contains(n))
                    .ok_or_else(|| {
                        format!(
                            "{name} must be a whole number from {} to {}",
                            range.start(),
                            range.end()
                        )
                    }),
            };
        let enabled = match get("failure_memory").as_deref().map(str::trim) {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => return Err(format!("failure_memory must be on or off, not {other:?}")),
        };
        let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(Self {
            enabled,
            window: Duration::from_millis(number("failure_window_ms", 10_000, 1_000..=600_000)?),
            retry_percent: small(number(
                "retry_budget_percent",
                d.retry_percent.into(),
                0..=100,
            )?),
            min_retries: small(number(
                "retry_budget_min_retries",
                d.min_retries.into(),
                0..=100_000,
            )?),
            min_volume: small(number(
                "breaker_min_volume",
                d.min_volume.into(),
                1..=100_000,
            )?),
            trip_percent: small(number(
                "breaker_trip_percent",
                d.trip_percent.into(),
                1..=100,
            )?),
            probe_interval: Duration::from_millis(number("breaker_probe_ms", 500, 10..=60_000)?),
        })
    }
}

/// What the window says about one caller → downstream pair.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recent {
    /// First attempts (estimated over the sliding window).
    pub calls: f64,
    /// Retries.
    pub retries: f64,
    /// Failed attempts, first or not.
    pub failures: f64,
    /// Last failure, Unix ms (0: none).
    pub last_failure: i64,
    /// Last success recorded, Unix ms.
    pub last_success: i64,
    /// Last probe started, Unix ms.
    pub last_probe: i64,
}

/// Whether a call may be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Yes.
    Call,
    /// The breaker is open and this call is its probe.
    Probe,
    /// The breaker is open: answer at once; try again after this long.
    Refuse(Duration),
}

const KINDS: [&str; 3] = ["calls", "retries", "failures"];

/// The memory of one caller's calls to one downstream.
pub struct FailureMemory<'a, K: Counters> {
    counters: &'a K,
    config: MemoryConfig,
    prefix: String,
}

impl<'a, K: Counters> FailureMemory<'a, K> {
    /// The memory of `caller`'s calls to `to`.
    pub fn new(counters: &'a K, config: MemoryConfig, caller: &str, to: &str) -> Self {
        Self {
            counters,
            config,
            prefix: format!("meridian/{caller}/{to}"),
        }
    }

    fn window_ms(&self) -> u64 {
        u64::try_from(self.config.window.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn epoch(&self, now: UnixMillis) -> u64 {
        now.as_millis() / self.window_ms()
    }

    fn key(&self, epoch: u64, kind: &str) -> String {
        format!("{}/{epoch}/{kind}", self.prefix)
    }

    fn stamp(&self, what: &str) -> String {
        format!("{}/last_{what}", self.prefix)
    }

    /// The window's counts at `now`, in one read; empty when off or when
    /// the store cannot be read.
    pub fn recent(&self, now: UnixMillis) -> Recent {
        if !self.config.enabled {
            return Recent::default();
        }
        let epoch = self.epoch(now);
        let mut keys: Vec<String> = Vec::with_capacity(9);
        for e in [epoch, epoch.saturating_sub(1)] {
            keys.extend(KINDS.iter().map(|k| self.key(e, k)));
        }
        keys.extend(["failure", "success", "probe"].map(|w| self.stamp(w)));
        let Ok(v) = self.counters.read(&keys) else {
            return Recent::default();
        };
        if v.len() != keys.len() {
            return Recent::default();
        }
        // How much of the previous window still lies within the last `window`.
        let into = (now.as_millis() % self.window_ms()) as f64 / self.window_ms() as f64;
        let weigh = |current: i64, previous: i64| current as f64 + previous as f64 * (1.0 - into);
        Recent {
            calls: weigh(v[0], v[3]),
            retries: weigh(v[1], v[4]),
            failures: weigh(v[2], v[5]),
            last_failure: v[6],
            last_success: v[7],
            last_probe: v[8],
        }
    }

    /// Whether a call may start at `now`, given `recent`. An open breaker
    /// lets one probe through per `probe_interval` and claims it.
    pub fn admit(&self, recent: &Recent, now: UnixMillis) -> Admit {
        if !self.config.enabled || !self.is_open(recent) {
            return Admit::Call;
        }
        let now_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
        let interval = i64::try_from(self.config.probe_interval.as_millis()).unwrap_or(i64::MAX);
        let since = now_ms.saturating_sub(recent.last_probe);
        if since >= interval {
            // Claimed by writing the time; invocations that read the old
            // time at the same instant probe too (a bounded few).
            let _ = self.counters.set(&self.stamp("probe"), now_ms);
            return Admit::Probe;
        }
        let wait = u64::try_from(interval - since).unwrap_or(0);
        Admit::Refuse(Duration::from_millis(wait))
    }

    /// Whether the breaker is open on `recent`.
    pub fn is_open(&self, recent: &Recent) -> bool {
        let attempts = recent.calls + recent.retries;
        attempts >= f64::from(self.config.min_volume)
            && recent.failures * 100.0 >= attempts * f64::from(self.config.trip_percent)
            && recent.last_failure > recent.last_success
    }

    /// Whether one more retry fits the budget, given `recent` and the
    /// retries this call has made so far.
    pub fn may_retry(&self, recent: &Recent, made: u32) -> bool {
        if !self.config.enabled {
            return true;
        }
        let allowed = (recent.calls * f64::from(self.config.retry_percent) / 100.0)
            .max(f64::from(self.config.min_retries));
        recent.retries + f64::from(made) + 1.0 <= allowed
    }

    /// Counts an attempt that starts at `now` (the first, or a retry).
    /// The first write to a new window forgets the window before the
    /// previous one, so the store holds at most three windows per pair.
    pub fn attempt(&self, now: UnixMillis, first: bool) {
        if !self.config.enabled {
            return;
        }
        let epoch = self.epoch(now);
        let kind = if first { "calls" } else { "retries" };
        if let Ok(1) = self.counters.add(&self.key(epoch, kind), 1) {
            if epoch >= 2 {
                let stale: Vec<String> = KINDS.iter().map(|k| self.key(epoch - 2, k)).collect();
                let _ = self.counters.forget(&stale);
            }
        }
    }

    /// Records how an attempt ended at `now`. A success is written only
    /// when there is a failure to outweigh: the healthy path writes nothing
    /// here.
    pub fn outcome(&self, recent: &Recent, now: UnixMillis, failed: bool) {
        if !self.config.enabled {
            return;
        }
        let now_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
        if failed {
            let _ = self.counters.add(&self.key(self.epoch(now), "failures"), 1);
            let _ = self.counters.set(&self.stamp("failure"), now_ms);
        } else if recent.failures > 0.0 || recent.last_failure > recent.last_success {
            let _ = self.counters.set(&self.stamp("success"), now_ms);
        }
    }
}

/// Counters in a map: tests, and anything that wants the logic without a
/// shared store.
#[derive(Debug, Default)]
pub struct LocalCounters(std::cell::RefCell<std::collections::HashMap<String, i64>>);

impl LocalCounters {
    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }
}

impl Counters for LocalCounters {
    fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        let mut map = self.0.borrow_mut();
        let value = map.entry(key.to_owned()).or_insert(0);
        *value += delta;
        Ok(*value)
    }

    fn read(&self, keys: &[String]) -> Result<Vec<i64>, String> {
        let map = self.0.borrow();
        Ok(keys
            .iter()
            .map(|k| map.get(k).copied().unwrap_or(0))
            .collect())
    }

    fn set(&self, key: &str, value: i64) -> Result<(), String> {
        self.0.borrow_mut().insert(key.to_owned(), value);
        Ok(())
    }

    fn forget(&self, keys: &[String]) -> Result<(), String> {
        let mut map = self.0.borrow_mut();
        for key in keys {
            map.remove(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000 + ms)
    }

    fn memory(counters: &LocalCounters) -> FailureMemory<'_, LocalCounters> {
        FailureMemory::new(counters, MemoryConfig::default(), "gateway", "community")
    }

    #[test]
    fn settings_come_from_variables_with_defaults_and_precise_errors() {
        let none = |_: &str| None;
        assert_eq!(MemoryConfig::parse(none), Ok(MemoryConfig::default()));
        let custom = MemoryConfig::parse(|name| match name {
            "failure_memory" => Some("off".into()),
            "retry_budget_percent" => Some("10".into()),
            "breaker_probe_ms" => Some("250".into()),
            _ => None,
        })
        .unwrap();
        assert!(!custom.enabled);
        assert_eq!(custom.retry_percent, 10);
        assert_eq!(custom.probe_interval, Duration::from_millis(250));
        for (name, value) in [
            ("failure_memory", "maybe"),
            ("retry_budget_percent", "120"),
            ("breaker_trip_percent", "0"),
            ("failure_window_ms", "ten"),
        ] {
            let err = MemoryConfig::parse(|n| (n == name).then(|| value.to_owned())).unwrap_err();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn retries_stay_under_a_fifth_of_first_attempts_above_the_floor() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for _ in 0..500 {
            m.attempt(at(0), true);
        }
        // 500 first attempts allow 100 retries; 30 is the floor.
        let mut granted = 0;
        for _ in 0..200 {
            let recent = m.recent(at(0));
            if m.may_retry(&recent, 0) {
                m.attempt(at(0), false);
                granted += 1;
            }
        }
        assert_eq!(granted, 100);
    }

    #[test]
    fn a_quiet_service_can_still_retry_up_to_the_floor() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        m.attempt(at(0), true);
        let recent = m.recent(at(0));
        assert!(m.may_retry(&recent, 0));
        assert!(m.may_retry(&recent, 28));
        assert!(!m.may_retry(&recent, 30));
    }

    #[test]
    fn mostly_failing_calls_open_the_breaker_and_a_success_closes_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..10 {
            let recent = m.recent(at(i));
            assert_eq!(m.admit(&recent, at(i)), Admit::Call, "call {i}");
            m.attempt(at(i), true);
            m.outcome(&recent, at(i), true);
        }
        let recent = m.recent(at(20));
        assert!(m.is_open(&recent));
        // The first call after the trip probes; the next waits.
        assert_eq!(m.admit(&recent, at(20)), Admit::Probe);
        let recent = m.recent(at(30));
        assert_eq!(
            m.admit(&recent, at(30)),
            Admit::Refuse(Duration::from_millis(490))
        );
        // The probe succeeds: the breaker closes for everyone.
        m.outcome(&recent, at(40), false);
        let recent = m.recent(at(50));
        assert!(!m.is_open(&recent));
        assert_eq!(m.admit(&recent, at(50)), Admit::Call);
    }

    #[test]
    fn a_few_failures_below_the_volume_or_ratio_never_open_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..9 {
            m.attempt(at(i), true);
            m.outcome(&m.recent(at(i)), at(i), true);
        }
        assert!(
            !m.is_open(&m.recent(at(10))),
            "9 attempts are below the volume"
        );
        for i in 10..30 {
            m.attempt(at(i), true);
            m.outcome(&m.recent(at(i)), at(i), i % 3 == 0);
        }
        assert!(!m.is_open(&m.recent(at(40))), "30 % failing stays closed");
    }

    #[test]
    fn the_window_slides_and_old_windows_are_forgotten() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for _ in 0..10 {
            m.attempt(at(0), true);
        }
        // Half-way through the next window, half of the old one counts.
        assert_eq!(m.recent(at(15_000)).calls, 5.0);
        // Two windows on, nothing of it remains, and the first write there
        // forgot it.
        m.attempt(at(25_000), true);
        assert_eq!(m.recent(at(25_000)).calls, 1.0);
        assert_eq!(counters.len(), 1, "only the current window's key is kept");
    }

    #[test]
    fn the_healthy_path_writes_one_counter_and_no_stamps() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..100 {
            let recent = m.recent(at(i));
            m.attempt(at(i), true);
            m.outcome(&recent, at(i), false);
        }
        assert_eq!(counters.len(), 1);
    }

    #[test]
    fn off_it_allows_everything_and_writes_nothing() {
        let counters = LocalCounters::default();
        let config = MemoryConfig {
            enabled: false,
            ..MemoryConfig::default()
        };
        let m = FailureMemory::new(&counters, config, "gateway", "community");
        for i in 0..50 {
            m.attempt(at(i), true);
            m.outcome(&m.recent(at(i)), at(i), true);
        }
        assert_eq!(m.admit(&m.recent(at(60)), at(60)), Admit::Call);
        assert!(m.may_retry(&m.recent(at(60)), 1_000));
        assert!(counters.is_empty());
    }

    /// Invocations racing on the same window: each reads, then writes. No
    /// increment is lost, and the overshoot of the budget is at most the
    /// number of racers.
    #[test]
    fn racing_invocations_lose_no_count_and_overshoot_by_at_most_their_number() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for _ in 0..100 {
            m.attempt(at(0), true);
        }
        // 20 retries allowed; already 15 made.
        for _ in 0..15 {
            m.attempt(at(0), false);
        }
        let racers = 8;
        let seen: Vec<Recent> = (0..racers).map(|_| m.recent(at(0))).collect();
        let granted = seen.iter().filter(|r| m.may_retry(r, 0)).count();
        for _ in 0..granted {
            m.attempt(at(0), false);
        }
        let after = m.recent(at(0));
        assert_eq!(after.calls, 100.0, "no first attempt lost");
        assert_eq!(after.retries, 15.0 + granted as f64, "no retry lost");
        assert!(after.retries - 30.0 <= racers as f64, "overshoot bounded");
    }
}
