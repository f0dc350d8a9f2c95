//! Wall-clock time as an input: Unix epoch milliseconds and the `Clock` that reads them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time as milliseconds since the Unix epoch (UTC), the unit of
/// every deadline Meridian puts on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMillis(u64);

impl UnixMillis {
    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// This instant moved later by `d` (saturating).
    pub fn plus(self, d: Duration) -> Self {
        Self(self.0.saturating_add(duration_ms(d)))
    }

    /// This instant moved earlier by `d` (saturating at the epoch).
    pub fn minus(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(duration_ms(d)))
    }

    /// Time from `earlier` to `self`, zero when `earlier` is not earlier.
    pub fn since(self, earlier: UnixMillis) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl UnixMillis {
    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-29T15:01:38.123Z`.
    pub fn to_rfc3339(self) -> String {
        let ms = self.0 % 1_000;
        let secs = self.0 / 1_000;
        let (days, day_secs) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days as i64);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            day_secs / 3_600,
            day_secs / 60 % 60,
            day_secs % 60
        )
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Whole milliseconds of `d`, saturating at `u64::MAX`.
pub fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A source of wall-clock time. Code that reasons about deadlines takes one
/// instead of reading the clock itself, so tests can be exact.
pub trait Clock {
    /// The current time.
    fn now(&self) -> UnixMillis;
}

/// The system wall clock; in a Spin component it matches the host clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixMillis {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        UnixMillis(duration_ms(since_epoch))
    }
}

/// A clock that only moves when told to, for tests and simulations. An
/// atomic, so a callback the clock is lent to (a SQL function a test
/// registers on a connection, which must be `Send`) can move it too.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: UnixMillis) -> Self {
        Self(AtomicU64::new(start.0))
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let d = duration_ms(d);
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |at| {
                Some(at.saturating_add(d))
            });
    }

    /// Puts the clock at `at` (a fuzz run reuses one clock per input).
    pub fn set(&self, at: UnixMillis) {
        self.0.store(at.0, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixMillis {
        UnixMillis(self.0.load(Ordering::Relaxed))
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> UnixMillis {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let t = UnixMillis::from_millis(5);
        assert_eq!(
            t.minus(Duration::from_millis(10)),
            UnixMillis::from_millis(0)
        );
        assert_eq!(
            UnixMillis::from_millis(u64::MAX).plus(Duration::from_secs(1)),
            UnixMillis::from_millis(u64::MAX)
        );
        assert_eq!(t.since(UnixMillis::from_millis(9)), Duration::ZERO);
    }

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new(UnixMillis::from_millis(1_000));
        assert_eq!(clock.now(), UnixMillis::from_millis(1_000));
        clock.advance(Duration::from_millis(250));
        assert_eq!(clock.now(), UnixMillis::from_millis(1_250));
    }

    #[test]
    fn instants_format_as_rfc3339_utc() {
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_795_964_498_123, "2026-11-29T15:01:38.123Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
        ] {
            assert_eq!(UnixMillis::from_millis(ms).to_rfc3339(), text, "{ms}");
        }
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now().as_millis() > 1_577_836_800_000);
    }
}
