//! The concurrent-request limiter (Stripe's second limiter): at most
//! `limit` of a tenant's requests in progress at once. The rate limiter
//! bounds how many requests a tenant sends in a window, not how many run at
//! the same moment: a flood's first burst — its whole quota at once, each
//! request queueing behind the others on the host — is what took a quiet
//! tenant's latency. Counting work in progress bounds that share directly.
//!
//! In progress is an increment when a request is let in and a decrement
//! when it ends, on the count of the window it started in. The count is
//! windowed, not one key, so an instance that dies between the two (the
//! runtime stops it, a crash) cannot hold a slot for ever: what it left is
//! forgotten with its window. A window outlasts the longest request, so
//! a request in progress is always in the current window's count or the
//! previous one's, and the two together are what is in progress; a slot
//! lost to a dead instance is freed at most two windows later.

use std::time::Duration;

use crate::counts::{opened_window, window_marker, Counters};
use crate::limits::policy::LimitSetting;
pub use crate::limits::policy::{limit_in_range, MAX_CONCURRENCY};
use crate::time::UnixMillis;
use crate::wire::problem::Problem;

/// The limiter's setting: the Spin variable `tenant_concurrency_limit`,
/// a number of requests (the default, 8) or `off`.
pub type ConcurrencySettings = LimitSetting<u32>;

impl Default for ConcurrencySettings {
    /// Eight requests in progress per tenant: about what a 2-core node
    /// serves at once at its peak (Meridian's goodput peaks at 8
    /// connections there, docs/benchmarks.md). A tenant within its rate (100 a
    /// second on average) answered in milliseconds has one or two in
    /// progress; the limit binds when its requests queue, which is when
    /// they would take the others' share. Measured beside a 64-connection
    /// flood, a quiet tenant's p99 was lower at 8 than at 10 or 20
    /// (docs/benchmarks.md, "Goodput under overload"); raise it per tenant,
    /// or for a larger deployment, as it grows.
    fn default() -> Self {
        Self {
            enabled: true,
            default: 8,
        }
    }
}

impl ConcurrencySettings {
    /// The setting from the variable's value (`None`: unset, the default).
    pub fn parse(raw: Option<&str>) -> Result<Self, String> {
        Self::parse_with(raw, |raw| {
            raw.parse::<u64>().ok().and_then(limit_in_range).ok_or_else(|| {
                format!(
                    "tenant_concurrency_limit must be a whole number from 1 to {MAX_CONCURRENCY} or off, not {raw:?}"
                )
            })
        })
    }
}

/// A request let in: the count it is in, to leave when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    epoch: u64,
}

/// What a request saw in progress before it was let in: the counts of
/// the window it looked in and of the one before ([`ConcurrencyLimiter::look`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    epoch: u64,
    current: i64,
    previous: i64,
}

impl Seen {
    /// The tenant's requests in progress.
    pub fn in_progress(&self) -> i64 {
        self.current.max(0).saturating_add(self.previous.max(0))
    }

    /// Whether one more request would be over `limit`: refused without
    /// being counted ([`ConcurrencyLimiter::enter`] judges it exactly).
    pub fn check(&self, limit: u32) -> Result<(), Busy> {
        let in_progress = self.in_progress().saturating_add(1);
        match in_progress > i64::from(limit) {
            true => Err(Busy { in_progress, limit }),
            false => Ok(()),
        }
    }
}

/// A request refused: how many were in progress, and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// The tenant's requests in progress, this one included.
    pub in_progress: i64,
    /// The limit that applied.
    pub limit: u32,
}

impl Busy {
    /// The 429: retryable once one of the tenant's requests has ended.
    pub fn problem(&self) -> Problem {
        Problem::rate_limited(
            format!(
                "this tenant has {} requests in progress, more than its limit of {}; try again when one has finished",
                self.in_progress - 1,
                self.limit
            ),
            1,
        )
    }
}

/// The concurrency limiter of one tenant (by slug), over the shared
/// counters.
pub struct ConcurrencyLimiter<'a, K: Counters> {
    counters: &'a K,
    enabled: bool,
    family: String,
    window_ms: u64,
}

impl<'a, K: Counters> ConcurrencyLimiter<'a, K> {
    /// The limiter of the tenant named `slug`, whose requests take at most
    /// `longest` (the largest budget a request may have, and the hold of
    /// a refusal): a window is at least a second longer than that, so no
    /// request outlives two.
    pub fn new(
        counters: &'a K,
        settings: ConcurrencySettings,
        slug: &str,
        longest: Duration,
    ) -> Self {
        let window_s = longest.as_secs().saturating_add(2);
        Self {
            counters,
            enabled: settings.enabled,
            // The window is part of the key: a deployment that changes its
            // longest budget starts counting afresh.
            family: format!("meridian/inflight/{slug}/{window_s}"),
            window_ms: window_s.saturating_mul(1_000),
        }
    }

    fn epoch(&self, now: UnixMillis) -> u64 {
        now.as_millis() / self.window_ms.max(1)
    }

    fn count_key(&self, epoch: u64) -> String {
        format!("{}/{epoch}", self.family)
    }

    /// The keys [`Self::look`] and [`Self::enter`] read at `now` (none
    /// when off), to be read ahead with the request's other reads: the
    /// current and the previous window's counts and the marker of the
    /// last window opened.
    pub fn read_keys(&self, now: UnixMillis) -> Vec<String> {
        let epoch = self.epoch(now);
        match self.enabled {
            true => vec![
                self.count_key(epoch),
                self.count_key(epoch.saturating_sub(1)),
                window_marker(&self.family),
            ],
            false => Vec::new(),
        }
    }

    /// What is in progress at `now`, read and not written (`None`: off,
    /// or the store failed). A request that sees its tenant at the limit
    /// can be refused before anything is spent on it ([`Seen::check`]).
    pub fn look(&self, now: UnixMillis) -> Option<Seen> {
        if !self.enabled {
            return None;
        }
        let epoch = self.epoch(now);
        let keys = [
            self.count_key(epoch),
            self.count_key(epoch.saturating_sub(1)),
        ];
        match self.counters.read(&keys).ok()?[..] {
            [current, previous] => Some(Seen {
                epoch,
                current,
                previous,
            }),
            _ => None,
        }
    }

    /// Lets one request in at `now` under `limit` (the tenant's override,
    /// or the default), or refuses it. Counted first, then judged, so two
    /// racing requests cannot both take the last slot. `Ok(None)`: not
    /// counted (off, or the store failed — never a reason to refuse).
    /// `seen`, what the request looked at in the same window: its previous
    /// count is not read again (it only ever goes down, so an older value
    /// can only refuse, never let one in too many).
    pub fn enter(
        &self,
        now: UnixMillis,
        limit: u32,
        seen: Option<Seen>,
    ) -> Result<Option<Slot>, Busy> {
        if !self.enabled {
            return Ok(None);
        }
        let epoch = self.epoch(now);
        let Ok(current) = self.counters.add(&self.count_key(epoch), 1) else {
            return Ok(None);
        };
        if current == 1 {
            // The first count of a window forgets the windows before the
            // previous one (its marker read ahead with the counts).
            opened_window(self.counters, &self.family, epoch, |e| {
                vec![self.count_key(e)]
            });
        }
        let previous = match seen.filter(|seen| seen.epoch == epoch) {
            Some(seen) => seen.previous,
            None => self
                .counters
                .read(&[self.count_key(epoch.saturating_sub(1))])
                .ok()
                .and_then(|values| values.first().copied())
                .unwrap_or(0),
        };
        let in_progress = current.saturating_add(previous.max(0));
        let slot = Slot { epoch };
        if in_progress > i64::from(limit) {
            self.leave(slot, now);
            return Err(Busy { in_progress, limit });
        }
        Ok(Some(slot))
    }

    /// Ends the request that took `slot`, at `now`. A count whose window
    /// is no longer read (only after a request longer than the window
    /// allows) is left alone, not written back into the store. Errors are
    /// ignored: a lost decrement holds a slot until its window goes.
    pub fn leave(&self, slot: Slot, now: UnixMillis) {
        if self.epoch(now) <= slot.epoch.saturating_add(1) {
            let _ = self.counters.add(&self.count_key(slot.epoch), -1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::LocalCounters;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000 + ms)
    }

    const LONGEST: Duration = Duration::from_secs(10);
    /// The window [`LONGEST`] makes.
    const WINDOW_MS: u64 = 12_000;

    fn limiter<'a>(
        counters: &'a LocalCounters,
        slug: &str,
    ) -> ConcurrencyLimiter<'a, LocalCounters> {
        ConcurrencyLimiter::new(counters, ConcurrencySettings::default(), slug, LONGEST)
    }

    #[test]
    fn the_setting_is_a_number_or_off_and_anything_else_is_named() {
        assert_eq!(
            ConcurrencySettings::parse(None),
            Ok(ConcurrencySettings::default())
        );
        assert_eq!(
            ConcurrencySettings::parse(Some(" 8 ")),
            Ok(ConcurrencySettings {
                enabled: true,
                default: 8
            })
        );
        assert!(!ConcurrencySettings::parse(Some("off")).unwrap().enabled);
        for bad in ["0", "-1", "10001", "eight", "8/1s", ""] {
            let err = ConcurrencySettings::parse(Some(bad)).unwrap_err();
            assert!(err.contains("tenant_concurrency_limit"), "{bad}: {err}");
        }
    }

    #[test]
    fn up_to_the_limit_is_let_in_and_a_request_ending_frees_its_slot() {
        let l = limiter(LocalCounters::leaked(), "acme");
        let slots: Vec<Slot> = (0..3)
            .map(|i| l.enter(at(i), 3, None).unwrap().unwrap())
            .collect();
        let busy = l.enter(at(3), 3, None).unwrap_err();
        assert_eq!(
            busy,
            Busy {
                in_progress: 4,
                limit: 3
            }
        );
        let problem = busy.problem();
        assert_eq!(problem.status().as_u16(), 429);
        assert_eq!(problem.retry_after(), Some(1));
        assert!(
            problem.detail().contains("3 requests in progress"),
            "{problem:?}"
        );
        assert!(
            l.enter(at(4), 3, None).is_err(),
            "a refusal takes no slot, but frees none"
        );
        let mut slots = slots.into_iter();
        l.leave(slots.next().unwrap(), at(5));
        assert!(
            l.enter(at(6), 3, None).unwrap().is_some(),
            "one ended, one more in"
        );
        assert!(l.enter(at(7), 3, None).is_err());
    }

    /// A request that started in the previous window is still in
    /// progress in this one, and leaves the count it entered.
    #[test]
    fn requests_from_the_previous_window_still_count_and_leave_their_own_count() {
        let l = limiter(LocalCounters::leaked(), "acme");
        let early = l.enter(at(WINDOW_MS - 1), 2, None).unwrap().unwrap();
        let _late = l.enter(at(WINDOW_MS + 1), 2, None).unwrap().unwrap();
        assert!(
            l.enter(at(WINDOW_MS + 2), 2, None).is_err(),
            "both windows count"
        );
        l.leave(early, at(WINDOW_MS + 3));
        assert!(l.enter(at(WINDOW_MS + 4), 2, None).unwrap().is_some());
    }

    /// An instance that never left (it died) holds its slot only until its
    /// window is two back; and a decrement that comes later than that is
    /// not written into a forgotten window.
    #[test]
    fn a_slot_never_left_is_freed_two_windows_later_and_keys_stay_bounded() {
        let counters = LocalCounters::default();
        let l = limiter(&counters, "acme");
        let lost = l.enter(at(0), 1, None).unwrap().unwrap();
        assert!(
            l.enter(at(WINDOW_MS), 1, None).is_err(),
            "still held next window"
        );
        let later = l.enter(at(2 * WINDOW_MS), 1, None).unwrap().unwrap();
        l.leave(lost, at(2 * WINDOW_MS + 1));
        l.leave(later, at(2 * WINDOW_MS + 2));
        assert!(l.enter(at(2 * WINDOW_MS + 3), 1, None).unwrap().is_some());
        for w in 3..30 {
            let s = l.enter(at(w * 3 * WINDOW_MS), 1, None).unwrap().unwrap();
            l.leave(s, at(w * 3 * WINDOW_MS + 5));
        }
        let counts = counters
            .keys()
            .into_iter()
            .filter(|k| k.starts_with("meridian/inflight/acme/12/") && !k.ends_with("/last"))
            .count();
        assert!(counts <= 2, "{:?}", counters.keys());
    }

    #[test]
    fn tenants_are_counted_apart() {
        let counters = LocalCounters::default();
        let flood = limiter(&counters, "flood");
        let quiet = limiter(&counters, "quiet");
        for i in 0..5 {
            let _ = flood.enter(at(i), 5, None);
        }
        assert!(flood.enter(at(6), 5, None).is_err());
        assert!(quiet.enter(at(7), 5, None).unwrap().is_some());
    }

    /// A look is a read: at the limit it refuses with nothing written,
    /// below it the request still enters (and is judged) as before.
    #[test]
    fn a_look_refuses_at_the_limit_without_writing_anything() {
        let counters = LocalCounters::default();
        let l = limiter(&counters, "acme");
        let early = l.enter(at(WINDOW_MS - 1), 2, None).unwrap().unwrap();
        let _late = l.enter(at(WINDOW_MS + 1), 2, None).unwrap().unwrap();
        let before = counters.keys();
        let seen = l.look(at(WINDOW_MS + 2)).unwrap();
        assert_eq!(seen.in_progress(), 2, "both windows count");
        assert_eq!(
            seen.check(2),
            Err(Busy {
                in_progress: 3,
                limit: 2
            })
        );
        assert!(seen.check(3).is_ok());
        assert_eq!(counters.keys(), before, "nothing written");
        l.leave(early, at(WINDOW_MS + 3));
        let seen = l.look(at(WINDOW_MS + 4)).unwrap();
        assert!(seen.check(2).is_ok());
        assert!(l.enter(at(WINDOW_MS + 4), 2, Some(seen)).unwrap().is_some());
        assert!(l.enter(at(WINDOW_MS + 5), 2, None).is_err(), "full again");
    }

    /// With its keys read ahead, letting a request in is one increment (a
    /// window's first also writes the marker) and reads nothing more,
    /// looked at first or not; a look from another window is not trusted.
    #[test]
    fn with_its_keys_read_ahead_a_look_and_an_entry_read_nothing_more() {
        let counters = LocalCounters::default();
        let l = limiter(&counters, "acme");
        for i in 0..10 {
            let now = at(i * 5_000);
            counters.read_ahead(&l.read_keys(now));
            let reads = counters.reads();
            let seen = (i % 2 == 1).then(|| l.look(now).unwrap());
            let slot = l.enter(now, 3, seen).unwrap().unwrap();
            assert_eq!(counters.reads(), reads, "request {i}");
            l.leave(slot, now);
        }
        let stale = l.look(at(0)).unwrap();
        let _held = l.enter(at(WINDOW_MS * 9), 3, None).unwrap();
        let reads = counters.reads();
        let slot = l.enter(at(WINDOW_MS * 9 + 1), 3, Some(stale)).unwrap();
        assert!(slot.is_some());
        assert_eq!(
            counters.reads(),
            reads + 1,
            "the previous count read afresh"
        );
    }

    #[test]
    fn off_it_reads_and_writes_nothing() {
        let counters = LocalCounters::default();
        let settings = ConcurrencySettings {
            enabled: false,
            ..ConcurrencySettings::default()
        };
        let l = ConcurrencyLimiter::new(&counters, settings, "acme", LONGEST);
        assert!(l.read_keys(at(0)).is_empty());
        assert_eq!(l.look(at(0)), None);
        assert_eq!(l.enter(at(0), 1, None), Ok(None));
        assert!(counters.is_empty());
    }
}
