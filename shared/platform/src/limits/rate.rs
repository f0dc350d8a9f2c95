//! The request-rate limiter: one batch read to check a tenant, one
//! increment to count it.

use crate::http::memory::Counters;
use crate::limits::policy::{RatePolicy, RateSettings};
use crate::time::UnixMillis;
use crate::wire::problem::Problem;

/// What the window said about one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateVerdict {
    /// The policy that applied (the tenant's override, or the default).
    pub policy: RatePolicy,
    /// Requests the estimate says are left in the window (0 when over).
    pub remaining: u32,
    /// Whole seconds until the current window ends, at least 1.
    pub reset_s: u32,
    /// Whether the request may go ahead.
    pub allowed: bool,
}

impl RateVerdict {
    /// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): the
    /// quota and its window.
    pub fn policy_header(&self) -> String {
        format!(
            "\"tenant\";q={};w={}",
            self.policy.quota, self.policy.window_s
        )
    }

    /// `RateLimit`: what is left and when the window resets.
    pub fn header(&self) -> String {
        format!("\"tenant\";r={};t={}", self.remaining, self.reset_s)
    }

    /// The 429 for a request that was not allowed.
    pub fn problem(&self) -> Problem {
        Problem::rate_limited(
            format!(
                "this tenant is over its rate of {} requests per {} s; try again later",
                self.policy.quota, self.policy.window_s
            ),
            self.reset_s,
        )
    }
}

/// The rate limiter of one tenant (by slug), over the shared counters.
pub struct RateLimiter<'a, K: Counters> {
    counters: &'a K,
    settings: RateSettings,
    prefix: String,
    override_key: String,
}

impl<'a, K: Counters> RateLimiter<'a, K> {
    /// The limiter of the tenant named `slug` in its path.
    pub fn new(counters: &'a K, settings: RateSettings, slug: &str) -> Self {
        Self {
            counters,
            settings,
            prefix: format!("meridian/rate/{slug}"),
            // Beside the counts, so one batch reads the override with them.
            override_key: format!("meridian/rate/{slug}/policy"),
        }
    }

    fn count_key(&self, policy: &RatePolicy, epoch: u64) -> String {
        // The window is part of the key: an override that changes it starts
        // counting afresh instead of reading counts of another length.
        format!("{}/{}/{epoch}", self.prefix, policy.window_s)
    }

    fn window_ms(policy: &RatePolicy) -> u64 {
        u64::from(policy.window_s).saturating_mul(1_000).max(1)
    }

    /// Whether one more request fits at `now`: one batch read (the
    /// override and both windows' counts — the override decides which
    /// keys, so a first read learns it; an absent override means the
    /// default's keys were read along with it). The store failing is never
    /// a reason to refuse: the request is allowed.
    pub fn check(&self, now: UnixMillis) -> Option<RateVerdict> {
        if !self.settings.enabled {
            return None;
        }
        let default = self.settings.default;
        let keys = self.keys_for(&default, now);
        let values = self.counters.read(&keys).ok()?;
        let [stored, current, previous] = values[..] else {
            return None;
        };
        let policy = RatePolicy::decode(stored).unwrap_or(default);
        let (current, previous) = if policy == default {
            (current, previous)
        } else {
            let keys = self.keys_for(&policy, now);
            match self.counters.read(&keys).ok()?[..] {
                [_, current, previous] => (current, previous),
                _ => return None,
            }
        };
        Some(Self::judge(policy, now, current, previous))
    }

    fn keys_for(&self, policy: &RatePolicy, now: UnixMillis) -> Vec<String> {
        let epoch = now.as_millis() / Self::window_ms(policy);
        vec![
            self.override_key.clone(),
            self.count_key(policy, epoch),
            self.count_key(policy, epoch.saturating_sub(1)),
        ]
    }

    /// The sliding-window estimate: the current window's count plus the
    /// previous one's, weighed by how much of it still overlaps.
    fn judge(policy: RatePolicy, now: UnixMillis, current: i64, previous: i64) -> RateVerdict {
        let window = Self::window_ms(&policy);
        let into = now.as_millis() % window;
        let overlap = (window - into) as f64 / window as f64;
        let estimate = current.max(0) as f64 + previous.max(0) as f64 * overlap;
        let quota = f64::from(policy.quota);
        let left = (quota - estimate).max(0.0);
        let reset_ms = window - into;
        RateVerdict {
            policy,
            remaining: left as u32,
            reset_s: u32::try_from(reset_ms.div_ceil(1_000))
                .unwrap_or(u32::MAX)
                .max(1),
            allowed: estimate + 1.0 <= quota,
        }
    }

    /// Counts one request at `now` under `policy` (the one [`Self::check`]
    /// found). The first count of a window forgets the one before the
    /// previous, so a tenant keeps at most three keys. Errors are ignored:
    /// a lost count only makes the limit looser.
    pub fn count(&self, policy: &RatePolicy, now: UnixMillis) {
        let epoch = now.as_millis() / Self::window_ms(policy);
        if self.counters.add(&self.count_key(policy, epoch), 1) == Ok(1) && epoch >= 2 {
            let _ = self.counters.forget(&[self.count_key(policy, epoch - 2)]);
        }
    }

    /// A platform admin's override (`None`: the default applies).
    pub fn stored_override(&self) -> Result<Option<RatePolicy>, String> {
        let values = self
            .counters
            .read(std::slice::from_ref(&self.override_key))?;
        Ok(values.first().copied().and_then(RatePolicy::decode))
    }

    /// Sets (or with `None`, removes) the tenant's override.
    pub fn set_override(&self, policy: Option<RatePolicy>) -> Result<(), String> {
        match policy {
            Some(policy) => self.counters.set(&self.override_key, policy.encode()),
            None => self
                .counters
                .forget(std::slice::from_ref(&self.override_key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::memory::LocalCounters;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000 + ms)
    }

    fn policy(quota: u64, window_s: u64) -> RatePolicy {
        RatePolicy::new(quota, window_s).unwrap()
    }

    fn settings(quota: u64, window_s: u64) -> RateSettings {
        RateSettings {
            enabled: true,
            default: policy(quota, window_s),
        }
    }

    /// Checks and, when allowed, counts: what the gateway does.
    fn request(l: &RateLimiter<'_, LocalCounters>, ms: u64) -> RateVerdict {
        let v = l.check(at(ms)).unwrap();
        if v.allowed {
            l.count(&v.policy, at(ms));
        }
        v
    }

    #[test]
    fn a_burst_up_to_the_quota_is_allowed_and_the_next_request_is_not() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(&counters, settings(10, 1), "acme");
        for i in 0..10 {
            let v = request(&l, i);
            assert!(v.allowed, "request {i}");
            assert_eq!(v.remaining, 10 - i as u32);
        }
        let refused = request(&l, 10);
        assert!(!refused.allowed);
        assert_eq!((refused.remaining, refused.reset_s), (0, 1));
        assert_eq!(refused.problem().status(), 429);
        assert_eq!(refused.problem().retry_after(), Some(1));
        assert_eq!(refused.policy_header(), "\"tenant\";q=10;w=1");
        assert_eq!(refused.header(), "\"tenant\";r=0;t=1");
    }

    #[test]
    fn the_window_slides_so_the_rate_comes_back_gradually() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(&counters, settings(10, 1), "acme");
        for i in 0..10 {
            request(&l, i);
        }
        // Half-way through the next second, half of the last one counts.
        let v = l.check(at(1_500)).unwrap();
        assert!(v.allowed);
        assert_eq!(v.remaining, 5);
        // Two windows on, nothing is left of it.
        assert_eq!(l.check(at(2_999)).unwrap().remaining, 10);
    }

    #[test]
    fn tenants_are_counted_apart() {
        let counters = LocalCounters::default();
        let flood = RateLimiter::new(&counters, settings(5, 1), "flood");
        let quiet = RateLimiter::new(&counters, settings(5, 1), "quiet");
        for i in 0..50 {
            request(&flood, i);
        }
        assert!(!flood.check(at(60)).unwrap().allowed);
        assert!(quiet.check(at(60)).unwrap().allowed);
    }

    #[test]
    fn an_override_replaces_the_default_and_counts_in_its_own_window() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(&counters, settings(2, 1), "acme");
        request(&l, 0);
        request(&l, 1);
        assert!(!l.check(at(2)).unwrap().allowed);
        l.set_override(Some(policy(100, 10))).unwrap();
        assert_eq!(l.stored_override(), Ok(Some(policy(100, 10))));
        let v = request(&l, 3);
        assert!(v.allowed);
        assert_eq!(v.policy, policy(100, 10));
        assert_eq!(v.remaining, 100);
        l.set_override(None).unwrap();
        assert_eq!(l.stored_override(), Ok(None));
        assert!(
            !l.check(at(4)).unwrap().allowed,
            "the default's count is kept"
        );
    }

    #[test]
    fn a_tenant_keeps_at_most_three_keys() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(&counters, settings(1_000, 1), "acme");
        for second in 0..20 {
            request(&l, second * 1_000);
        }
        assert!(counters.len() <= 3, "{}", counters.len());
    }

    #[test]
    fn off_it_reads_and_writes_nothing() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(
            &counters,
            RateSettings {
                enabled: false,
                ..RateSettings::default()
            },
            "acme",
        );
        assert_eq!(l.check(at(0)), None);
        assert!(counters.is_empty());
    }
}
