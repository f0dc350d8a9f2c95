//! The failure memory's settings and their Spin variables.

use std::time::Duration;

use crate::time::duration_ms;

/// The settings (Spin variables `failure_memory`, `failure_window_ms`,
/// `failure_memory_sample`, and the `retry_budget_*` and `breaker_*` of
/// [`AfterFailure`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryConfig {
    /// Off: every call is made and every allowed retry too, as before.
    pub enabled: bool,
    /// The window the counts cover.
    pub window: Duration,
    /// One first attempt in this many is written, counting for all of
    /// them: the healthy path's only write, sampled to keep its cost
    /// off the request (1: every one).
    pub sample: u32,
    /// What only a failed call, a retry or an open breaker needs.
    pub after_failure: AfterFailure,
}

/// The retry budget's and the breaker's settings: what the memory needs
/// only once a call failed or the breaker is open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailureSettings {
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
}

/// The [`FailureSettings`], given, or read when first needed: a
/// component reads them only on the path that needs them, so its healthy
/// requests do not pay for their variables.
#[derive(Debug, Clone, Copy)]
pub enum AfterFailure {
    /// Known already.
    Given(FailureSettings),
    /// Read by this function (which remembers them for the instance).
    ReadBy(fn() -> FailureSettings),
}

impl AfterFailure {
    /// The settings.
    pub fn settings(&self) -> FailureSettings {
        match self {
            Self::Given(settings) => *settings,
            Self::ReadBy(read) => read(),
        }
    }
}

impl PartialEq for AfterFailure {
    /// Equal when they hold, or read, the same settings.
    fn eq(&self, other: &Self) -> bool {
        self.settings() == other.settings()
    }
}

impl Default for FailureSettings {
    /// Finagle's and linkerd's budget, 20 % over 10 s, with Finagle's
    /// floor of 10 retries a second; the breaker opens on four failures in
    /// five of at least 20 attempts (Hystrix's volume) and probes every
    /// 500 ms. Why these: docs/benchmarks.md, "Why the constants are what
    /// they are".
    fn default() -> Self {
        Self {
            retry_percent: 20,
            min_retries_per_second: 10.0,
            min_volume: 20,
            trip_percent: 80,
            probe_interval: Duration::from_millis(500),
        }
    }
}

impl Default for MemoryConfig {
    /// On, over 10 s; while healthy, one first attempt in 64 is written
    /// (as 64): the only write on the healthy path.
    fn default() -> Self {
        Self {
            enabled: true,
            window: Duration::from_secs(10),
            sample: 64,
            after_failure: AfterFailure::Given(FailureSettings::default()),
        }
    }
}

/// Spin variables as `get` gives them (`None` when unset), read as the
/// failure memory's settings are written.
struct Variables<F>(F);

type Range = std::ops::RangeInclusive<u64>;

impl<F: Fn(&str) -> Option<String>> Variables<F> {
    /// A whole number in `range`, or `default` when unset.
    fn number(&self, name: &str, default: u64, range: Range) -> Result<u64, String> {
        match (self.0)(name) {
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
        }
    }

    /// A count ([`Self::number`]).
    fn count(&self, name: &str, default: u32, range: Range) -> Result<u32, String> {
        let n = self.number(name, default.into(), range)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Milliseconds ([`Self::number`]).
    fn millis(&self, name: &str, default: Duration, range: Range) -> Result<Duration, String> {
        let n = self.number(name, duration_ms(default), range)?;
        Ok(Duration::from_millis(n))
    }
}

impl FailureSettings {
    /// The Spin variables they are read from ([`Self::parse`]).
    pub const VARIABLES: [&'static str; 5] = [
        "retry_budget_percent",
        "retry_budget_min_per_second",
        "breaker_min_volume",
        "breaker_trip_percent",
        "breaker_probe_ms",
    ];

    /// From Spin variables (`get` returns a variable's value, `None` when
    /// unset): `retry_budget_percent`, `retry_budget_min_per_second`,
    /// `breaker_min_volume`, `breaker_trip_percent`, `breaker_probe_ms`;
    /// an unset one keeps its default.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let d = Self::default();
        let read = Variables(&get);
        Ok(Self {
            retry_percent: read.count("retry_budget_percent", d.retry_percent, 0..=100)?,
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
            min_volume: read.count("breaker_min_volume", d.min_volume, 1..=100_000)?,
            trip_percent: read.count("breaker_trip_percent", d.trip_percent, 1..=100)?,
            probe_interval: read.millis("breaker_probe_ms", d.probe_interval, 10..=60_000)?,
        })
    }
}

impl MemoryConfig {
    /// The retries always allowed in one window: the floor a second, for
    /// the window's length.
    pub fn min_retries(&self) -> f64 {
        self.after_failure.settings().min_retries_per_second * self.window.as_secs_f64()
    }

    /// Every setting from Spin variables (`get` returns a variable's
    /// value, `None` when unset): `failure_memory` (`on`/`off`),
    /// `failure_window_ms`, `failure_memory_sample` and
    /// [`FailureSettings::parse`]'s; an unset one keeps its default.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let after_failure = AfterFailure::Given(FailureSettings::parse(&get)?);
        Self::parse_healthy(get, after_failure)
    }

    /// The settings the healthy path needs from Spin variables, as
    /// [`Self::parse`] reads them, and `after_failure` for the rest.
    pub fn parse_healthy(
        get: impl Fn(&str) -> Option<String>,
        after_failure: AfterFailure,
    ) -> Result<Self, String> {
        let d = Self::default();
        let read = Variables(&get);
        let enabled = match get("failure_memory").as_deref().map(str::trim) {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => return Err(format!("failure_memory must be on or off, not {other:?}")),
        };
        Ok(Self {
            enabled,
            window: read.millis("failure_window_ms", d.window, 1_000..=600_000)?,
            sample: read.count("failure_memory_sample", d.sample, 1..=1_000)?,
            after_failure,
        })
    }
}
