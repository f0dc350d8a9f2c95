//! The failure memory's settings and their Spin variables.

use std::time::Duration;

use crate::time::duration_ms;

/// The settings (Spin variables `retry_budget_*`, `breaker_*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryConfig {
    /// Off: every call is made and every allowed retry too, as before.
    pub enabled: bool,
    /// The window the counts cover.
    pub window: Duration,
    /// Retries allowed, as a percentage of first attempts in the window.
    pub retry_percent: u32,
    /// Retries always allowed, per second of the window (Finagle's
    /// `minRetriesPerSec`): a quiet caller's retries, which the percentage
    /// of its few first attempts would refuse. A fraction is a retry every
    /// so many seconds (0.2: one in five seconds).
    pub min_retries_per_second: f64,
    /// Attempts in the window before the breaker may open.
    pub min_volume: u32,
    /// Failed attempts, in percent, that open it.
    pub trip_percent: u32,
    /// How often an open breaker lets one call through to probe.
    pub probe_interval: Duration,
    /// One first attempt in this many is written, counting for all of
    /// them: the healthy path's only write, sampled to keep its cost
    /// off the request (1: every one).
    pub sample: u32,
}

impl Default for MemoryConfig {
    /// Finagle's and linkerd's budget: 20 % over 10 s, and Finagle's floor
    /// of 10 retries a second: a sequential client at 30 % failures needs
    /// about 0.4 retries per read, which 20 % of its first attempts would
    /// refuse (95 of 120 reads served at a floor of 3 a second, 112 or
    /// more at 10); a caller busy enough for the floor to matter less than
    /// the percentage (50 requests a second and up) is held to 1.2 attempts
    /// per request. The breaker needs 20 attempts and four in
    /// five of them failing (Hystrix's volume; a trip point well above
    /// what an early streak of a 30 % failure reaches: P(≥ 16 of 20) is
    /// about 5·10⁻⁶); it probes every 500 ms, so recovery is seen within a
    /// second. While healthy, one first attempt in 64 is written (as 64):
    /// the only write on the healthy path.
    fn default() -> Self {
        Self {
            enabled: true,
            window: Duration::from_secs(10),
            retry_percent: 20,
            min_retries_per_second: 10.0,
            min_volume: 20,
            trip_percent: 80,
            probe_interval: Duration::from_millis(500),
            sample: 64,
        }
    }
}

impl MemoryConfig {
    /// The retries always allowed in one window: the floor a second, for
    /// the window's length.
    pub fn min_retries(&self) -> f64 {
        self.min_retries_per_second * self.window.as_secs_f64()
    }

    /// The settings from Spin variables (`get` returns a variable's value,
    /// `None` when unset): `failure_memory` (`on`/`off`),
    /// `retry_budget_percent`, `retry_budget_min_per_second`,
    /// `breaker_min_volume`, `breaker_trip_percent`, `breaker_probe_ms`,
    /// `failure_window_ms`, `failure_memory_sample`; an unset one keeps its
    /// default.
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
        let count = |name: &str, default: u32, range: std::ops::RangeInclusive<u64>| {
            number(name, default.into(), range).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        let millis = |name: &str, default: Duration, range| {
            number(name, duration_ms(default), range).map(Duration::from_millis)
        };
        Ok(Self {
            enabled,
            window: millis("failure_window_ms", d.window, 1_000..=600_000)?,
            retry_percent: count("retry_budget_percent", d.retry_percent, 0..=100)?,
            min_retries_per_second: match get("retry_budget_min_per_second") {
                None => d.min_retries_per_second,
                Some(raw) => raw
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|n| (0.0..=10_000.0).contains(n))
                    .ok_or_else(|| {
                        "retry_budget_min_per_second must be a number from 0 to 10000 (0.2: one retry in five seconds)"
                            .to_owned()
                    })?,
            },
            min_volume: count("breaker_min_volume", d.min_volume, 1..=100_000)?,
            trip_percent: count("breaker_trip_percent", d.trip_percent, 1..=100)?,
            probe_interval: millis("breaker_probe_ms", d.probe_interval, 10..=60_000)?,
            sample: count("failure_memory_sample", d.sample, 1..=1_000)?,
        })
    }
}
