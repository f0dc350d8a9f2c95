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
//! window number, and the time until which the breaker is open. The
//! sliding estimate over the last `window` weighs the previous window by
//! how much of it still overlaps (the sliding-window-counter
//! approximation). The healthy path reads one key per call and writes a
//! sampled count of first attempts (one in `sample`, counting for all);
//! the window is read only after a failure.
//!
//! Retry budget (Finagle's `RetryBudget`, linkerd's retry budget): a retry
//! is allowed while retries stay under `retry_percent` of first attempts
//! in the window, or under the floor of `min_retries` per window, so a
//! quiet service can still retry an occasional failure.
//!
//! Breaker: a failure after which at least `min_volume` attempts are in
//! the window and at least `trip_percent` of them failed opens it for
//! `probe_interval`: calls are refused at once (503 `upstream_unavailable`,
//! `Retry-After`). Then one call — whichever claims the probe first, by an
//! atomic increment — is let through: its success closes the breaker and
//! clears the window (the history before it is no longer evidence, and
//! calls refused while open were never counted, so an old window would
//! reopen it at the next failure), its failure opens it for another
//! interval.
//!
//! What counts as a failure ([`Outcome`]): only what the downstream did —
//! a refused or broken connection, or its own 5xx. A call that ran out of
//! budget, or a downstream's 504 `deadline_exceeded`, is *ignored*: on a
//! starved host every call runs out of time, and a caller cannot tell that
//! from a failing downstream (the metastable loop of Bronson et al., HotOS
//! 2021: time-outs open the breaker, its probes time out on the same
//! starved host, it stays open). Overload is the gateway's admission's to
//! refuse, early and in proportion; the breaker sheds only a downstream
//! that answers, and answers that it is failing. Its trip point is high
//! (80 % of at least 20 attempts), so a partial failure that retries can
//! mask is never turned into a complete one.
//!
//! Races: invocations read, decide and write without a lock. Counters are
//! atomic increments, so no count is lost. A retry is claimed by an
//! increment and judged by the count that increment returned, so racing
//! invocations cannot together pass the budget (a refused claim is given
//! back; a granted one the deadline then stops still counts, which only
//! makes the budget stricter). What a race can cost: the first attempts a
//! decision weighs may be a few increments old (fewer retries allowed,
//! never more), and sampling makes their count an estimate (exact on
//! average, ± one sample). Exactly one invocation wins each probe. The
//! store failing is never a reason to refuse a call: the memory then reads
//! as empty and the breaker closed.

mod config;
mod counters;

pub use config::MemoryConfig;
pub use counters::{Counters, LocalCounters};

use std::time::Duration;

use crate::time::UnixMillis;

/// What the window says about one caller → downstream pair.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recent {
    /// First attempts (estimated over the sliding window).
    pub calls: f64,
    /// Retries.
    pub retries: f64,
    /// Failed attempts, first or not.
    pub failures: f64,
}

impl Recent {
    fn plus(&self, other: &Recent) -> Recent {
        Recent {
            calls: self.calls + other.calls,
            retries: self.retries + other.retries,
            failures: self.failures + other.failures,
        }
    }
}

/// How an attempt ended, as the breaker counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The downstream answered (any status below 500: a 4xx, a 429
    /// included, is the downstream working).
    Succeeded,
    /// The downstream failed: its connection was refused or broke, or it
    /// answered its own 5xx.
    Failed,
    /// Says nothing about the downstream: the budget ran out first, or
    /// the downstream ran out of the shared budget (its 504
    /// `deadline_exceeded`).
    Ignored,
}

/// Whether a call may be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Yes: the breaker is closed.
    Call,
    /// The breaker was open and its wait is over: this call is the one
    /// probe that decides whether it closes.
    Probe,
    /// The breaker is open: answer at once; try again after this long.
    Refuse(Duration),
}

const KINDS: [&str; 3] = ["calls", "retries", "failures"];

/// The memory of one caller's calls to one downstream.
///
/// The healthy path reads one key (is the breaker open?) and writes one in
/// `sample` first attempts. The window's counts are read only when a call
/// failed: to decide whether to retry, and whether to open the breaker.
pub struct FailureMemory<'a, K: Counters> {
    counters: &'a K,
    config: MemoryConfig,
    prefix: String,
    /// Whether first attempts are counted one by one (a failure was seen
    /// within the window) or sampled (all healthy), as `admit` read it.
    exact: std::cell::Cell<bool>,
    /// The probe this call claimed, by the opening it probes (its key is
    /// forgotten once the probe's outcome is known).
    probe: std::cell::Cell<Option<i64>>,
}

impl<'a, K: Counters> FailureMemory<'a, K> {
    /// The memory of `caller`'s calls to `to`.
    pub fn new(counters: &'a K, config: MemoryConfig, caller: &str, to: &str) -> Self {
        Self {
            counters,
            config,
            prefix: format!("meridian/{caller}/{to}"),
            exact: std::cell::Cell::new(false),
            probe: std::cell::Cell::new(None),
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

    /// The breaker's state, one number: positive, open until that Unix ms;
    /// negative, closed, the last failure at minus that; absent, healthy.
    fn state_key(&self) -> String {
        format!("{}/state", self.prefix)
    }

    fn probe_key(&self, open_until: i64) -> String {
        format!("{}/probe/{open_until}", self.prefix)
    }

    fn ms(now: UnixMillis) -> i64 {
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
    }

    /// The window's counts at `now`, in one read; empty when off or when
    /// the store cannot be read.
    pub fn recent(&self, now: UnixMillis) -> Recent {
        self.counts(now)
            .map(|(current, previous)| current.plus(&previous))
            .unwrap_or_default()
    }

    /// The current window's counts and the previous one's, weighed by how
    /// much of it still lies within the last `window` (one read).
    fn counts(&self, now: UnixMillis) -> Option<(Recent, Recent)> {
        if !self.config.enabled {
            return None;
        }
        let epoch = self.epoch(now);
        let mut keys: Vec<String> = Vec::with_capacity(6);
        for e in [epoch, epoch.saturating_sub(1)] {
            keys.extend(KINDS.iter().map(|k| self.key(e, k)));
        }
        let v = self.counters.read(&keys).ok()?;
        let [calls, retries, failures, calls_before, retries_before, failures_before] = v[..]
        else {
            return None;
        };
        let into = (now.as_millis() % self.window_ms()) as f64 / self.window_ms() as f64;
        let weigh = |(calls, retries, failures): (i64, i64, i64), weight: f64| Recent {
            calls: calls as f64 * weight,
            retries: retries as f64 * weight,
            failures: failures as f64 * weight,
        };
        Some((
            weigh((calls, retries, failures), 1.0),
            weigh((calls_before, retries_before, failures_before), 1.0 - into),
        ))
    }

    /// Whether a call may start at `now`: one read of the breaker's state.
    /// When an open breaker's wait is over, the first call to claim the
    /// probe (an atomic increment) makes it; the others keep waiting.
    pub fn admit(&self, now: UnixMillis) -> Admit {
        if !self.config.enabled {
            return Admit::Call;
        }
        let now_ms = Self::ms(now);
        let window = i64::try_from(self.window_ms()).unwrap_or(i64::MAX);
        let state = match self.counters.read(&[self.state_key()]).as_deref() {
            Ok([state]) => *state,
            _ => 0,
        };
        // Count one by one while failures are recent: the breaker's ratio
        // must not rest on a sample.
        self.exact
            .set(state > 0 || (state < 0 && now_ms.saturating_add(state) < window));
        let until = match state {
            until if until > 0 => until,
            _ => return Admit::Call,
        };
        if now_ms < until {
            return Admit::Refuse(Duration::from_millis(
                u64::try_from(until - now_ms).unwrap_or(0),
            ));
        }
        match self.counters.add(&self.probe_key(until), 1) {
            Ok(1) | Err(_) => {
                self.probe.set(Some(until));
                Admit::Probe
            }
            Ok(_) => Admit::Refuse(self.config.probe_interval),
        }
    }

    /// Whether the breaker should be open on `recent`: enough attempts in
    /// the window, and enough of them failed.
    pub fn trips(&self, recent: &Recent) -> bool {
        let attempts = recent.calls + recent.retries;
        attempts >= f64::from(self.config.min_volume)
            && recent.failures * 100.0 >= attempts * f64::from(self.config.trip_percent)
    }

    /// Whether one more retry fits the budget at `now`, and if so, counts
    /// it. The retry is claimed first (an atomic increment) and judged by
    /// the count the claim returned: racing invocations each get their own
    /// count, so together they stay within the budget. A refused claim is
    /// given back. Reads the window afresh (a failure path only).
    pub fn may_retry(&self, now: UnixMillis) -> bool {
        let Some((current, previous)) = self.counts(now) else {
            return true;
        };
        let recent = current.plus(&previous);
        let allowed = (recent.calls * f64::from(self.config.retry_percent) / 100.0)
            .max(f64::from(self.config.min_retries));
        let key = self.key(self.epoch(now), "retries");
        let Ok(claimed) = self.counters.add(&key, 1) else {
            return true; // the store failing is never a reason to refuse
        };
        if claimed as f64 + previous.retries <= allowed {
            return true;
        }
        let _ = self.counters.add(&key, -1);
        false
    }

    /// Counts a call's first attempt, starting at `now`. While all is
    /// healthy, it is written only when `roll` (a random number) picks it,
    /// one in `sample`, and then counts `sample`; after a recent failure (as
    /// [`Self::admit`] read), every one is. (A retry is counted when
    /// [`Self::may_retry`] grants it.) The first write to a new window
    /// forgets the window before the previous one, so the store holds at
    /// most three windows per pair.
    pub fn first_attempt(&self, now: UnixMillis, roll: u64) {
        if !self.config.enabled {
            return;
        }
        let sample = if self.exact.get() {
            1
        } else {
            u64::from(self.config.sample.max(1))
        };
        if roll % sample != 0 {
            return;
        }
        let epoch = self.epoch(now);
        let delta = i64::try_from(sample).unwrap_or(1);
        if self.counters.add(&self.key(epoch, "calls"), delta) == Ok(delta) && epoch >= 2 {
            let stale: Vec<String> = KINDS.iter().map(|k| self.key(epoch - 2, k)).collect();
            let _ = self.counters.forget(&stale);
        }
    }

    /// Records how an attempt that was admitted as `admitted` ended at
    /// `now`. A failure is counted and noted in the state, and opens the
    /// breaker (for `probe_interval`) when the window trips it; a probe's
    /// success closes it and clears the window. A success in the closed
    /// state writes nothing, and an ignored outcome decides nothing (an
    /// ignored probe gives its claim back, so the next call probes).
    /// A probe's claim is forgotten here, so claims do not pile up in the
    /// store (an invocation that claims after that finds the key new and
    /// probes, and forgets it in turn).
    pub fn outcome(&self, admitted: Admit, now: UnixMillis, outcome: Outcome) {
        if !self.config.enabled {
            return;
        }
        let probe = admitted == Admit::Probe;
        if probe {
            if let Some(until) = self.probe.take() {
                let _ = self.counters.forget(&[self.probe_key(until)]);
            }
        }
        let now_ms = Self::ms(now);
        let state = match outcome {
            Outcome::Ignored => return,
            Outcome::Succeeded if !probe => return,
            Outcome::Succeeded => {
                // Closed, on a clean window, counted one by one for a window.
                let epoch = self.epoch(now);
                let mut stale: Vec<String> = Vec::with_capacity(6);
                for e in [epoch, epoch.saturating_sub(1)] {
                    stale.extend(KINDS.iter().map(|k| self.key(e, k)));
                }
                let _ = self.counters.forget(&stale);
                -now_ms
            }
            Outcome::Failed => {
                let _ = self.counters.add(&self.key(self.epoch(now), "failures"), 1);
                if probe || self.trips(&self.recent(now)) {
                    now_ms.saturating_add(
                        i64::try_from(self.config.probe_interval.as_millis()).unwrap_or(i64::MAX),
                    )
                } else {
                    -now_ms
                }
            }
        };
        let _ = self.counters.set(&self.state_key(), state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000 + ms)
    }

    /// Every first attempt written (`sample` 1), so counts are exact.
    fn memory(counters: &LocalCounters) -> FailureMemory<'_, LocalCounters> {
        let config = MemoryConfig {
            sample: 1,
            ..MemoryConfig::default()
        };
        FailureMemory::new(counters, config, "gateway", "community")
    }

    /// One call at `ms`: admitted or not, and if so counted and ended.
    fn call(m: &FailureMemory<'_, LocalCounters>, ms: u64, failed: bool) -> Admit {
        let outcome = if failed {
            Outcome::Failed
        } else {
            Outcome::Succeeded
        };
        call_ending(m, ms, outcome)
    }

    /// One call at `ms` that ends as `outcome`.
    fn call_ending(m: &FailureMemory<'_, LocalCounters>, ms: u64, outcome: Outcome) -> Admit {
        let admitted = m.admit(at(ms));
        if admitted != Admit::Call && admitted != Admit::Probe {
            return admitted;
        }
        m.first_attempt(at(ms), 0);
        m.outcome(admitted, at(ms), outcome);
        admitted
    }

    #[test]
    fn settings_come_from_variables_with_defaults_and_precise_errors() {
        let none = |_: &str| None;
        assert_eq!(MemoryConfig::parse(none), Ok(MemoryConfig::default()));
        let custom = MemoryConfig::parse(|name| match name {
            "failure_memory" => Some("off".into()),
            "retry_budget_percent" => Some("10".into()),
            "breaker_probe_ms" => Some("250".into()),
            "failure_memory_sample" => Some("1".into()),
            _ => None,
        })
        .unwrap();
        assert!(!custom.enabled);
        assert_eq!(custom.retry_percent, 10);
        assert_eq!(custom.probe_interval, Duration::from_millis(250));
        assert_eq!(custom.sample, 1);
        for (name, value) in [
            ("failure_memory", "maybe"),
            ("retry_budget_percent", "120"),
            ("breaker_trip_percent", "0"),
            ("failure_window_ms", "ten"),
            ("failure_memory_sample", "0"),
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
            m.first_attempt(at(0), 0);
        }
        // 500 first attempts allow 100 retries; 30 is the floor.
        let mut granted = 0;
        for _ in 0..200 {
            if m.may_retry(at(0)) {
                granted += 1;
            }
        }
        assert_eq!(granted, 100);
        assert_eq!(m.recent(at(0)).retries, 100.0, "refused claims given back");
    }

    #[test]
    fn a_quiet_service_can_still_retry_up_to_the_floor() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        m.first_attempt(at(0), 0);
        for _ in 0..30 {
            assert!(m.may_retry(at(0)));
        }
        assert!(!m.may_retry(at(0)));
    }

    #[test]
    fn mostly_failing_calls_open_the_breaker_and_a_successful_probe_closes_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..20 {
            assert_eq!(call(&m, i, true), Admit::Call, "call {i}");
        }
        // Tripped by the twentieth failure, at 19 ms: open until 519 ms.
        assert_eq!(m.admit(at(30)), Admit::Refuse(Duration::from_millis(489)));
        // The wait is over: one probe, the others keep waiting.
        assert_eq!(m.admit(at(520)), Admit::Probe);
        assert_eq!(m.admit(at(521)), Admit::Refuse(Duration::from_millis(500)));
        // The probe fails: open again for another interval.
        m.outcome(Admit::Probe, at(520), Outcome::Failed);
        assert_eq!(m.admit(at(600)), Admit::Refuse(Duration::from_millis(420)));
        // The next probe succeeds: closed for everyone.
        assert_eq!(call(&m, 1_020, false), Admit::Probe);
        assert_eq!(m.admit(at(1_030)), Admit::Call);
    }

    #[test]
    fn failures_below_the_volume_or_ratio_never_open_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..19 {
            call(&m, i, true);
        }
        assert_eq!(
            m.admit(at(20)),
            Admit::Call,
            "19 attempts are below the volume"
        );
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 10..60 {
            assert_eq!(
                call(&m, i, i % 10 < 3),
                Admit::Call,
                "30 % failing: call {i}"
            );
        }
    }

    #[test]
    fn after_a_failure_every_first_attempt_is_counted_for_a_window() {
        let counters = LocalCounters::default();
        let m = FailureMemory::new(&counters, MemoryConfig::default(), "gateway", "community");
        // Healthy: rolls that are not multiples of 64 write nothing.
        for i in 1..10 {
            m.admit(at(i));
            m.first_attempt(at(i), i);
        }
        assert_eq!(m.recent(at(10)).calls, 0.0);
        let admitted = m.admit(at(10));
        m.first_attempt(at(10), 10);
        m.outcome(admitted, at(10), Outcome::Failed);
        // From now on, exact.
        for i in 11..21 {
            m.admit(at(i));
            m.first_attempt(at(i), i);
        }
        assert_eq!(m.recent(at(30)).calls, 10.0);
        // A window later, sampled again.
        m.admit(at(10_011));
        m.first_attempt(at(10_011), 1);
        assert_eq!(m.recent(at(10_011)).calls, 10.0 * (1.0 - 0.0011));
    }

    #[test]
    fn the_window_slides_and_old_windows_are_forgotten() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for _ in 0..10 {
            m.first_attempt(at(0), 0);
        }
        // Half-way through the next window, half of the old one counts.
        assert_eq!(m.recent(at(15_000)).calls, 5.0);
        // Two windows on, nothing of it remains, and the first write there
        // forgot it.
        m.first_attempt(at(25_000), 0);
        assert_eq!(m.recent(at(25_000)).calls, 1.0);
        assert_eq!(counters.len(), 1, "only the current window's key is kept");
    }

    #[test]
    fn a_sampled_first_attempt_counts_for_the_ones_not_written() {
        let counters = LocalCounters::default();
        let m = FailureMemory::new(&counters, MemoryConfig::default(), "gateway", "community");
        // Rolls 0..640: one in 64 is written, as 64.
        for roll in 0..640 {
            m.first_attempt(at(0), roll);
        }
        assert_eq!(m.recent(at(0)).calls, 640.0);
        assert!(m.may_retry(at(0)));
        assert_eq!(m.recent(at(0)).retries, 1.0, "retries are never sampled");
    }

    /// The healthy path: one read per call, and no write but the sampled
    /// count of first attempts.
    #[test]
    fn the_healthy_path_writes_only_the_sampled_count() {
        let counters = LocalCounters::default();
        let m = FailureMemory::new(&counters, MemoryConfig::default(), "gateway", "community");
        for i in 0..100 {
            let admitted = m.admit(at(i));
            m.first_attempt(at(i), i);
            m.outcome(admitted, at(i), Outcome::Succeeded);
        }
        assert_eq!(counters.len(), 1);
        assert_eq!(m.recent(at(100)).calls, 128.0, "2 samples of 64");
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
            call(&m, i, true);
        }
        assert_eq!(m.admit(at(60)), Admit::Call);
        assert!(m.may_retry(at(60)));
        assert!(counters.is_empty());
    }

    /// Invocations racing for the last retries of a window: each claims
    /// one by an atomic increment and is judged by the count it got back,
    /// so exactly the budget's remainder is granted, even when every racer
    /// read the window before any of them claimed. No count is lost.
    #[test]
    fn racing_invocations_lose_no_count_and_never_pass_the_budget_together() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for _ in 0..100 {
            m.first_attempt(at(0), 0);
        }
        // 30 retries allowed (the floor); already 25 made.
        for _ in 0..25 {
            assert!(m.may_retry(at(0)));
        }
        let racers = 8;
        let stale = m.recent(at(0));
        let granted = (0..racers).filter(|_| m.may_retry(at(0))).count();
        assert_eq!(stale.retries, 25.0, "what every racer read");
        assert_eq!(granted, 5, "the budget's remainder, not one more");
        let after = m.recent(at(0));
        assert_eq!(after.calls, 100.0, "no first attempt lost");
        assert_eq!(
            after.retries, 30.0,
            "no retry lost, refused ones given back"
        );
    }

    /// Racing for the probe: exactly one wins.
    #[test]
    fn one_probe_however_many_invocations_find_the_wait_over() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..20 {
            call(&m, i, true);
        }
        let probes = (0..8).filter(|_| m.admit(at(600)) == Admit::Probe).count();
        assert_eq!(probes, 1);
    }

    /// Each opening's probe claim is forgotten with the probe's outcome:
    /// an outage of many openings leaves no trail of claims in the store.
    #[test]
    fn probe_claims_do_not_pile_up() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..20 {
            call(&m, i, true);
        }
        for opening in 1..=20 {
            let t = opening * 600;
            assert_eq!(call(&m, t, true), Admit::Probe, "opening {opening}");
            assert_eq!(
                m.admit(at(t + 1)),
                Admit::Refuse(Duration::from_millis(499))
            );
        }
        let claims: Vec<String> = counters
            .keys()
            .into_iter()
            .filter(|k| k.contains("/probe/"))
            .collect();
        assert!(claims.is_empty(), "{claims:?}");
    }

    /// An early streak that a 30 % failure rate produces (half of the first
    /// attempts failing) does not open it: retries mask such a failure.
    #[test]
    fn an_early_streak_of_a_partial_failure_does_not_open_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..40 {
            // 1 in 2 failing, then 3 in 10.
            let failed = if i < 20 { i % 2 == 0 } else { i % 10 < 3 };
            assert_eq!(call(&m, i, failed), Admit::Call, "call {i}");
        }
    }

    /// Time-outs say nothing about the downstream (on a starved host every
    /// call runs out of time): however many, they never open the breaker.
    #[test]
    fn calls_that_ran_out_of_budget_never_open_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..200 {
            assert_eq!(call_ending(&m, i, Outcome::Ignored), Admit::Call);
        }
        assert_eq!(m.recent(at(200)).failures, 0.0);
    }

    /// A probe that ran out of budget decides nothing: the next call probes.
    #[test]
    fn an_ignored_probe_hands_the_probe_to_the_next_call() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..20 {
            call(&m, i, true);
        }
        assert_eq!(call_ending(&m, 600, Outcome::Ignored), Admit::Probe);
        assert_eq!(m.admit(at(601)), Admit::Probe);
    }

    /// After a successful probe the window starts clean: the failures of
    /// the outage, and the calls it refused (never counted), no longer
    /// reopen it at the next failure.
    #[test]
    fn a_successful_probe_clears_the_window_so_one_failure_does_not_reopen_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..20 {
            call(&m, i, true);
        }
        assert_eq!(call(&m, 600, false), Admit::Probe);
        assert_eq!(call(&m, 601, true), Admit::Call);
        assert_eq!(m.admit(at(602)), Admit::Call, "one failure after closing");
        assert_eq!(m.recent(at(602)).failures, 1.0);
    }
}
