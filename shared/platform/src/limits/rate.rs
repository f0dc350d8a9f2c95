//! The request-rate limiter: one batch read to check a tenant, one
//! increment to count it.

use std::time::Duration;

use crate::counts::{opened_window, window_marker, Counters};
use crate::limits::policy::{RatePolicy, RateSettings};
use crate::secrets::{token_hash, TokenBin};
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
    /// Whether this credential was refused recently, after identity
    /// vouched for it, and the tenant is still over its rate: it may be
    /// refused again without asking identity.
    pub marked: bool,
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
    /// Where a refusal of the caller's credential is remembered
    /// ([`refused_key`]) and the fingerprint that tells it there, if it
    /// sent one.
    mark: Option<(String, u32)>,
    /// One request in this many is counted, for this many (1: each).
    sample: u64,
}

/// Where a refusal of the token whose hash is `token_hash` (identity's
/// stored `token_hash`: the store never holds a token) is remembered at
/// `slug`: the token's bin ([`TokenBin`]), so a tenant holds at most
/// [`TOKEN_BINS`](crate::secrets::TOKEN_BINS) marks whatever its members
/// mint. Identity removes it with the token's remembered resolution when
/// the token stops resolving; an expired one is removed when next read.
pub fn refused_key(slug: &str, token_hash: &str) -> String {
    bin_key(slug, TokenBin::of(token_hash))
}

/// The key of the mark in `bin` at `slug`.
fn bin_key(slug: &str, bin: TokenBin) -> String {
    format!("meridian/rate/{slug}/refused/{}", bin.index)
}

/// The tenant slug of a rate mark's key ([`refused_key`]), or `None` for
/// any other key.
pub fn refused_tenant(key: &str) -> Option<&str> {
    key.strip_prefix("meridian/rate/")?
        .split_once("/refused/")
        .map(|(slug, _)| slug)
}

/// The bits of a mark that hold the second its refusal ends (to the year
/// 4147); the token's fingerprint is above them.
const MARK_SECOND_BITS: u32 = 36;

/// A mark: the token's bin fingerprint above the second in which
/// `until_ms` falls (so a mark ends up to a second early: that credential
/// asks identity once more), so that another token of the bin reads it
/// as no mark of its own. One in 2^27 tokens of a bin shares a fingerprint:
/// a guess of a stranger's that finds one is answered the tenant's `429`
/// instead of a `401`, while the tenant is over its rate.
fn mark_value(fingerprint: u32, until_ms: u64) -> i64 {
    let second = (until_ms / 1_000).min((1 << MARK_SECOND_BITS) - 1);
    let value = u64::from(fingerprint) << MARK_SECOND_BITS | second;
    i64::try_from(value).unwrap_or(0)
}

/// A mark's fingerprint and the millisecond its refusal ends (0 for no
/// mark, or anything else than [`mark_value`] writes).
fn read_mark(value: i64) -> (u32, u64) {
    let value = u64::try_from(value).unwrap_or(0);
    let fingerprint = u32::try_from(value >> MARK_SECOND_BITS).unwrap_or(u32::MAX);
    (fingerprint, (value & ((1 << MARK_SECOND_BITS) - 1)) * 1_000)
}

impl<'a, K: Counters> RateLimiter<'a, K> {
    /// The limiter of the tenant named `slug` in its path, for a caller
    /// presenting `token` (its bearer token, if any).
    pub fn new(counters: &'a K, settings: RateSettings, slug: &str, token: Option<&str>) -> Self {
        let mark = token.map(|token| {
            let bin = TokenBin::of(&token_hash(token));
            (bin_key(slug, bin), bin.fingerprint)
        });
        Self {
            counters,
            settings,
            prefix: format!("meridian/rate/{slug}"),
            // Beside the counts, so one batch reads the override with them.
            override_key: format!("meridian/rate/{slug}/policy"),
            mark,
            sample: 1,
        }
    }

    /// The same limiter counting one request in `sample`, each count
    /// standing for `sample` (`count_sample`): for a key-value store with
    /// a write quota. The count stays an unbiased estimate of the rate, so
    /// the limit holds on average, and a tenant near its quota is refused a
    /// little early or late by the draw.
    pub fn sampled(self, sample: u32) -> Self {
        Self {
            sample: u64::from(sample.max(1)),
            ..self
        }
    }

    fn count_key(&self, policy: &RatePolicy, epoch: u64) -> String {
        // The window is part of the key: an override that changes it starts
        // counting afresh instead of reading counts of another length.
        format!("{}/{epoch}", self.family(policy))
    }

    fn window_ms(policy: &RatePolicy) -> u64 {
        u64::from(policy.window_s).saturating_mul(1_000).max(1)
    }

    /// Whether one more request fits at `now`: one batch read of the
    /// override, both windows' counts and the credential's mark (the
    /// override decides which windows, so an override read first costs a
    /// second read; an absent one means the default's were read with it).
    /// The store failing is never a reason to refuse: the request is
    /// allowed.
    pub fn check(&self, now: UnixMillis) -> Option<RateVerdict> {
        if !self.settings.enabled {
            return None;
        }
        let default = self.settings.default;
        let values = self.counters.read(&self.keys_for(&default, now)).ok()?;
        let [stored, current, previous, marked] = values[..] else {
            return None;
        };
        let policy = RatePolicy::decode(stored).unwrap_or(default);
        // The counts read are the default window's: the same when an
        // override changes only the quota or the concurrency.
        let (current, previous) = if policy.window_s == default.window_s {
            (current, previous)
        } else {
            match self.counters.read(&self.keys_for(&policy, now)).ok()?[..] {
                [_, current, previous, _] => (current, previous),
                _ => return None,
            }
        };
        let now_ms = now.as_millis();
        let mut verdict = Self::judge(policy, now, current, previous);
        let (fingerprint, until_ms) = read_mark(marked);
        // Marked (this credential's) and still over: a raised override or a
        // window that slid on lets the credential through at once.
        verdict.marked = self.mark.as_ref().is_some_and(|m| m.1 == fingerprint)
            && until_ms > now_ms
            && !verdict.allowed;
        if let Some((key, _)) = self
            .mark
            .as_ref()
            .filter(|_| marked != 0 && until_ms <= now_ms)
        {
            // A mark that has run out (any token's of the bin) is removed,
            // so a quiet tenant keeps none.
            let _ = self.counters.forget(std::slice::from_ref(key));
        }
        Some(verdict)
    }

    /// The keys [`Self::check`] reads first at `now` (none when off), to be
    /// read ahead with the request's other reads.
    pub fn read_keys(&self, now: UnixMillis) -> Vec<String> {
        match self.settings.enabled {
            true => {
                let mut keys = self.keys_for(&self.settings.default, now);
                keys.push(window_marker(&self.family(&self.settings.default)));
                keys
            }
            false => Vec::new(),
        }
    }

    fn keys_for(&self, policy: &RatePolicy, now: UnixMillis) -> Vec<String> {
        let epoch = now.as_millis() / Self::window_ms(policy);
        vec![
            self.override_key.clone(),
            self.count_key(policy, epoch),
            self.count_key(policy, epoch.saturating_sub(1)),
            // Never set for a caller without a token: reads as 0.
            self.mark
                .as_ref()
                .map(|(key, _)| key.clone())
                .unwrap_or_else(|| format!("{}/refused", self.prefix)),
        ]
    }

    /// Remembers that the caller's credential, which identity vouched for,
    /// was refused: until the window resets (plus `held`, how long its
    /// refusal is held before it is sent) it is refused again before
    /// resolution. Keyed by credential, not by slug, so a caller without a
    /// valid token is still answered 401 and a slug reveals nothing.
    pub fn mark_refused(&self, verdict: &RateVerdict, now: UnixMillis, held: Duration) {
        if let Some((key, fingerprint)) = &self.mark {
            let until = now
                .as_millis()
                .saturating_add(u64::from(verdict.reset_s) * 1_000)
                .saturating_add(crate::time::duration_ms(held));
            let _ = self.counters.set(key, mark_value(*fingerprint, until));
        }
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
            marked: false,
        }
    }

    /// Counts one request at `now` under `policy` (the one [`Self::check`]
    /// found). The first count of a window forgets the windows before the
    /// previous ([`opened_window`]; its marker is read
    /// ahead with the counts), so a tenant keeps at most two windows and
    /// the marker. Errors are ignored: a lost count only makes the limit
    /// looser. Sampled ([`Self::sampled`]), a draw of `roll` decides
    /// whether this request is the one in `sample` that is written (no
    /// draw is made when every request is counted).
    pub fn count(&self, policy: &RatePolicy, now: UnixMillis, roll: impl FnOnce() -> u64) {
        if self.sample > 1 && roll() % self.sample != 0 {
            return;
        }
        let weight = i64::try_from(self.sample).unwrap_or(1);
        let epoch = now.as_millis() / Self::window_ms(policy);
        if self.counters.add(&self.count_key(policy, epoch), weight) == Ok(weight) {
            opened_window(self.counters, &self.family(policy), epoch, |e| {
                vec![self.count_key(policy, e)]
            });
        }
    }

    /// What the counts of windows of `policy`'s length start with.
    fn family(&self, policy: &RatePolicy) -> String {
        format!("{}/{}", self.prefix, policy.window_s)
    }

    /// The key of the tenant's override, for a caller that reads it ahead
    /// while the limiter is off ([`Self::stored_override`]).
    pub fn override_key(&self) -> &str {
        &self.override_key
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
    use crate::counts::LocalCounters;

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
            l.count(&v.policy, at(ms), || unreachable!("counted without a draw"));
        }
        v
    }

    /// A quiet tenant, one request every few windows: the store keeps its
    /// last two windows and the marker, not one count per request; and
    /// with the request's reads read ahead, opening a window reads nothing
    /// more from the store.
    #[test]
    fn requests_far_apart_keep_two_windows_and_read_nothing_more() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(&counters, settings(10, 1), "acme", None);
        for i in 0..30 {
            let now = at(i * 3_500);
            counters.read_ahead(&l.read_keys(now));
            let reads = counters.reads();
            assert!(request(&l, i * 3_500).allowed);
            assert_eq!(counters.reads(), reads, "request {i}: all read ahead");
        }
        let windows = counters
            .keys()
            .into_iter()
            .filter(|k| {
                k.strip_prefix("meridian/rate/acme/1/")
                    .is_some_and(|e| e != "last")
            })
            .count();
        assert_eq!(windows, 1, "{:?}", counters.keys());
    }

    /// Sampled one in 16: of 1,600 requests in a window, about 100 are
    /// written, each for 16, and the count stays near what happened.
    #[test]
    fn a_sampled_count_writes_one_request_in_sample_and_stays_near_the_truth() {
        let counters = LocalCounters::default();
        let l = RateLimiter::new(&counters, settings(1_000_000, 10), "acme", None).sampled(16);
        let mut rolls = 0x9E37_79B9_7F4A_7C15_u64;
        let writes_before = counters.writes();
        for i in 0..1_600_u64 {
            // An even draw per request, as the gateway's jitter gives.
            rolls = rolls
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // Inside one 10 s window.
            let now = at(i);
            let v = l.check(now).unwrap();
            l.count(&v.policy, now, || rolls >> 11);
        }
        let written = counters.writes() - writes_before;
        assert!(
            (60..=160).contains(&written),
            "{written} writes for 1,600 requests"
        );
        let counted = counters
            .read(&["meridian/rate/acme/10/170000000".to_owned()])
            .unwrap()[0];
        assert_eq!(counted % 16, 0);
        assert!(
            (1_200..=2_000).contains(&counted),
            "counted {counted} of 1,600"
        );
    }

    #[test]
    fn a_burst_up_to_the_quota_is_allowed_and_the_next_request_is_not() {
        let l = RateLimiter::new(LocalCounters::leaked(), settings(10, 1), "acme", None);
        for i in 0..10 {
            let v = request(&l, i);
            assert!(v.allowed, "request {i}");
            assert_eq!(v.remaining, 10 - i as u32);
        }
        let refused = request(&l, 10);
        assert!(!refused.allowed);
        assert_eq!((refused.remaining, refused.reset_s), (0, 1));
        assert_eq!(refused.problem().status().as_u16(), 429);
        assert_eq!(refused.problem().retry_after(), Some(1));
        assert_eq!(refused.policy_header(), "\"tenant\";q=10;w=1");
        assert_eq!(refused.header(), "\"tenant\";r=0;t=1");
    }

    #[test]
    fn the_window_slides_so_the_rate_comes_back_gradually() {
        let l = RateLimiter::new(LocalCounters::leaked(), settings(10, 1), "acme", None);
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
        let flood = RateLimiter::new(&counters, settings(5, 1), "flood", None);
        let quiet = RateLimiter::new(&counters, settings(5, 1), "quiet", None);
        for i in 0..50 {
            request(&flood, i);
        }
        assert!(!flood.check(at(60)).unwrap().allowed);
        assert!(quiet.check(at(60)).unwrap().allowed);
    }

    #[test]
    fn an_override_replaces_the_default_and_counts_in_its_own_window() {
        let l = RateLimiter::new(LocalCounters::leaked(), settings(2, 1), "acme", None);
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
        let l = RateLimiter::new(&counters, settings(1_000, 1), "acme", None);
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
            None,
        );
        assert_eq!(l.check(at(0)), None);
        assert!(counters.is_empty());
    }

    /// A credential refused after identity vouched for it is refused
    /// again before resolution, until the window resets; another token of
    /// the same tenant, or none, is not.
    #[test]
    fn a_refused_credential_is_marked_until_the_window_resets() {
        let counters = LocalCounters::default();
        let flood = RateLimiter::new(&counters, settings(2, 1), "acme", Some("tok-1"));
        request(&flood, 0);
        request(&flood, 1);
        let v = flood.check(at(2)).unwrap();
        assert!(!v.allowed && !v.marked, "over, not yet marked");
        flood.mark_refused(&v, at(2), Duration::ZERO);
        assert!(flood.check(at(3)).unwrap().marked);
        let other = RateLimiter::new(&counters, settings(2, 1), "acme", Some("tok-2"));
        assert!(!other.check(at(3)).unwrap().marked);
        let anonymous = RateLimiter::new(&counters, settings(2, 1), "acme", None);
        assert!(!anonymous.check(at(3)).unwrap().marked);
        let elsewhere = RateLimiter::new(&counters, settings(2, 1), "other", Some("tok-1"));
        assert!(!elsewhere.check(at(3)).unwrap().marked);
        let marks = |c: &LocalCounters| c.keys().iter().filter(|k| k.contains("/refused/")).count();
        assert_eq!(marks(&counters), 1);
        assert!(!flood.check(at(1_003)).unwrap().marked, "the window reset");
        assert_eq!(
            marks(&counters),
            0,
            "a mark that ran out is removed when read"
        );
        flood.mark_refused(&v, at(4), Duration::ZERO);
        flood.set_override(Some(policy(10, 1))).unwrap();
        assert!(
            !flood.check(at(5)).unwrap().marked,
            "a raised quota lets it through"
        );
        assert!(
            counters.keys().iter().all(|k| !k.contains("tok")),
            "no token stored"
        );
    }

    #[test]
    fn a_tenant_holds_one_mark_a_bin_and_another_tokens_mark_is_not_its_own() {
        let counters = LocalCounters::default();
        let tokens: Vec<String> = (0..500).map(|n| format!("mrd_{n}")).collect();
        let limiter = |t: &str| RateLimiter::new(&counters, settings(2, 60), "acme", Some(t));
        request(&limiter("mrd_first"), 0);
        request(&limiter("mrd_first"), 1);
        let over = limiter("mrd_first").check(at(2)).unwrap();
        assert!(!over.allowed);
        tokens
            .iter()
            .for_each(|t| limiter(t).mark_refused(&over, at(2), Duration::ZERO));
        let marks = counters
            .keys()
            .into_iter()
            .filter(|k| k.contains("/refused/"))
            .count();
        assert_eq!(marks, usize::from(crate::secrets::TOKEN_BINS));
        // A token whose bin holds another's mark is not marked; the last
        // marked of each bin is.
        let mut last = std::collections::HashMap::new();
        tokens.iter().for_each(|t| {
            last.insert(refused_key("acme", &token_hash(t)), t);
        });
        let (kept, taken): (Vec<&String>, Vec<&String>) = tokens
            .iter()
            .partition(|t| last[&refused_key("acme", &token_hash(t))] == *t);
        assert_eq!(kept.len(), usize::from(crate::secrets::TOKEN_BINS));
        assert!(kept.iter().all(|t| limiter(t).check(at(3)).unwrap().marked));
        assert!(taken
            .iter()
            .all(|t| !limiter(t).check(at(3)).unwrap().marked));
        // A stranger's token finds its bin marked, by another: not marked.
        assert!(!limiter("junk").check(at(3)).unwrap().marked);
    }

    #[test]
    fn a_mark_reads_back_its_fingerprint_and_its_second() {
        for (fingerprint, until) in [(0, 1_000), ((1 << 27) - 1, 1_764_000_123_456), (12_345, 0)] {
            let (f, u) = read_mark(mark_value(fingerprint, until));
            assert_eq!((f, u), (fingerprint, until / 1_000 * 1_000));
        }
        // A value no mark has (negative, or a bare time) is an old mark of
        // nobody's.
        assert_eq!(read_mark(-5), (0, 0));
        assert_eq!(read_mark(0), (0, 0));
    }
}
