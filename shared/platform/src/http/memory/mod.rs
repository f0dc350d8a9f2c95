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
//! in the window, or under the floor of `min_retries_per_second` (10 a
//! second, for the window's length: Finagle's `minRetriesPerSec`), so a
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
//! starved host, it stays open). Overload is the gateway's throttle's to
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

mod breaker;
mod config;
mod retry_budget;
mod window;

use crate::counts::Counters;
#[cfg(test)]
use crate::counts::LocalCounters;
pub use breaker::{Outcome, Permit};
pub use config::{AfterFailure, FailureSettings, MemoryConfig};
pub use window::Recent;

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
    /// within the window) or sampled (all healthy), as `permit` read it.
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
}

#[cfg(test)]
mod testkit {
    use super::*;
    pub use crate::time::UnixMillis;

    pub fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000 + ms)
    }

    /// Every first attempt written (`sample` 1), so counts are exact.
    pub fn memory(counters: &LocalCounters) -> FailureMemory<'_, LocalCounters> {
        let config = MemoryConfig {
            sample: 1,
            ..MemoryConfig::default()
        };
        FailureMemory::new(counters, config, "gateway", "community")
    }

    /// One call at `ms`: permitted or not, and if so counted and ended.
    pub fn call(m: &FailureMemory<'_, LocalCounters>, ms: u64, failed: bool) -> Permit {
        let outcome = if failed {
            Outcome::Failed
        } else {
            Outcome::Succeeded
        };
        call_ending(m, ms, outcome)
    }

    /// One call at `ms` that ends as `outcome`.
    pub fn call_ending(m: &FailureMemory<'_, LocalCounters>, ms: u64, outcome: Outcome) -> Permit {
        let permitted = m.permit(at(ms));
        if permitted != Permit::Call && permitted != Permit::Probe {
            return permitted;
        }
        m.first_attempt(at(ms), 0);
        m.outcome(permitted, at(ms), outcome);
        permitted
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::testkit::*;
    use super::*;

    #[test]
    fn settings_come_from_variables_with_defaults_and_precise_errors() {
        let none = |_: &str| None;
        assert_eq!(MemoryConfig::parse(none), Ok(MemoryConfig::default()));
        let custom = MemoryConfig::parse(|name| match name {
            "failure_memory" => Some("off".into()),
            "retry_budget_percent" => Some("10".into()),
            "breaker_probe_ms" => Some("250".into()),
            "failure_memory_sample" => Some("1".into()),
            "retry_budget_min_per_second" => Some(" 0.2 ".into()),
            _ => None,
        })
        .unwrap();
        let after_failure = custom.after_failure.settings();
        assert_eq!(after_failure.min_retries_per_second, 0.2);
        assert_eq!(custom.min_retries(), 2.0, "0.2 a second over 10 s");
        assert!(!custom.enabled);
        assert_eq!(after_failure.retry_percent, 10);
        assert_eq!(after_failure.probe_interval, Duration::from_millis(250));
        assert_eq!(custom.sample, 1);
        for (name, value) in [
            ("failure_memory", "maybe"),
            ("retry_budget_percent", "120"),
            ("breaker_trip_percent", "0"),
            ("failure_window_ms", "ten"),
            ("failure_memory_sample", "0"),
            ("retry_budget_min_per_second", "-1"),
            ("retry_budget_min_per_second", "NaN"),
            ("retry_budget_min_per_second", "ten"),
            ("retry_budget_min_per_second", "10001"),
        ] {
            let err = MemoryConfig::parse(|n| (n == name).then(|| value.to_owned())).unwrap_err();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn the_failure_settings_read_exactly_their_listed_variables_and_the_healthy_ones_none_of_them()
    {
        type Get<'a> = &'a dyn Fn(&str) -> Option<String>;
        let asked = |parse: &dyn Fn(Get<'_>)| {
            let names = std::cell::RefCell::new(std::collections::BTreeSet::new());
            parse(&|name: &str| {
                names.borrow_mut().insert(name.to_owned());
                None
            });
            names.into_inner()
        };
        let failure = asked(&|get| {
            FailureSettings::parse(get).unwrap();
        });
        let listed = FailureSettings::VARIABLES.map(str::to_owned).into();
        assert_eq!(failure, listed);
        let healthy = asked(&|get| {
            MemoryConfig::parse_healthy(get, AfterFailure::Given(FailureSettings::default()))
                .unwrap();
        });
        assert!(healthy.is_disjoint(&listed), "{healthy:?}");
    }

    #[test]
    fn the_healthy_path_never_reads_the_settings_only_a_failure_needs() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static READS: AtomicUsize = AtomicUsize::new(0);
        let counters = LocalCounters::default();
        let config = MemoryConfig {
            sample: 1,
            after_failure: AfterFailure::ReadBy(|| {
                READS.fetch_add(1, Ordering::SeqCst);
                FailureSettings::default()
            }),
            ..MemoryConfig::default()
        };
        let m = FailureMemory::new(&counters, config, "gateway", "community");
        for i in 0..30 {
            assert_eq!(call(&m, i, false), Permit::Call);
        }
        assert_eq!(READS.load(Ordering::SeqCst), 0, "healthy: never read");
        call(&m, 31, true);
        assert!(m.may_retry(at(32)));
        assert!(
            READS.load(Ordering::SeqCst) >= 2,
            "the breaker and the retry budget read them"
        );
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
        assert_eq!(m.permit(at(60)), Permit::Call);
        assert!(m.may_retry(at(60)));
        assert!(counters.is_empty());
    }
}
