//! The breaker: one read of its state per call, a probe claimed by an
//! atomic increment when an open breaker's wait is over, and what an
//! attempt's outcome does to it (see the module above for the rules).

use std::time::Duration;

use crate::time::UnixMillis;

use super::window::{Recent, KINDS};
use super::{Counters, FailureMemory};

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
pub enum Permit {
    /// Yes: the breaker is closed.
    Call,
    /// The breaker was open and its wait is over: this call is the one
    /// probe that decides whether it closes.
    Probe,
    /// The breaker is open: answer at once; try again after this long.
    Refuse(Duration),
}

impl<K: Counters> FailureMemory<'_, K> {
    /// The breaker's state, one number: positive, open until that Unix ms;
    /// negative, closed, the last failure at minus that; absent, healthy.
    fn state_key(&self) -> String {
        format!("{}/state", self.prefix)
    }

    /// The keys [`Self::permit`] reads (none when off): the breaker's state.
    pub fn read_keys(&self) -> Vec<String> {
        match self.config.enabled {
            true => vec![self.state_key()],
            false => Vec::new(),
        }
    }

    fn probe_key(&self, open_until: i64) -> String {
        format!("{}/probe/{open_until}", self.prefix)
    }

    /// Whether a call may start at `now`: one read of the breaker's state.
    /// When an open breaker's wait is over, the first call to claim the
    /// probe (an atomic increment) makes it; the others keep waiting.
    pub fn permit(&self, now: UnixMillis) -> Permit {
        if !self.config.enabled {
            return Permit::Call;
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
            _ => return Permit::Call,
        };
        if now_ms < until {
            return Permit::Refuse(Duration::from_millis(
                u64::try_from(until - now_ms).unwrap_or(0),
            ));
        }
        match self.counters.add(&self.probe_key(until), 1) {
            Ok(1) | Err(_) => {
                self.probe.set(Some(until));
                Permit::Probe
            }
            Ok(_) => Permit::Refuse(self.config.after_failure.settings().probe_interval),
        }
    }

    /// Whether the breaker should be open on `recent`: enough attempts in
    /// the window, and enough of them failed.
    pub fn trips(&self, recent: &Recent) -> bool {
        let attempts = recent.calls + recent.retries;
        let settings = self.config.after_failure.settings();
        attempts >= f64::from(settings.min_volume)
            && recent.failures * 100.0 >= attempts * f64::from(settings.trip_percent)
    }

    /// Records how an attempt that was permitted as `permitted` ended at
    /// `now`. A failure is counted and noted in the state, and opens the
    /// breaker (for `probe_interval`) when the window trips it; a probe's
    /// success closes it and clears the window. A success in the closed
    /// state writes nothing, and an ignored outcome decides nothing (an
    /// ignored probe gives its claim back, so the next call probes).
    /// A probe's claim is forgotten here, so claims do not pile up in the
    /// store (an invocation that claims after that finds the key new and
    /// probes, and forgets it in turn).
    pub fn outcome(&self, permitted: Permit, now: UnixMillis, outcome: Outcome) {
        if !self.config.enabled {
            return;
        }
        let probe = permitted == Permit::Probe;
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
                let epoch = self.epoch(now);
                if self.counters.add(&self.key(epoch, "failures"), 1) == Ok(1) {
                    self.opened(epoch);
                }
                if probe || self.trips(&self.recent(now)) {
                    now_ms.saturating_add(
                        i64::try_from(
                            self.config
                                .after_failure
                                .settings()
                                .probe_interval
                                .as_millis(),
                        )
                        .unwrap_or(i64::MAX),
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
    use std::time::Duration;

    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn mostly_failing_calls_open_the_breaker_and_a_successful_probe_closes_it() {
        let m = memory(LocalCounters::leaked());
        for i in 0..20 {
            assert_eq!(call(&m, i, true), Permit::Call, "call {i}");
        }
        // Tripped by the twentieth failure, at 19 ms: open until 519 ms.
        assert_eq!(m.permit(at(30)), Permit::Refuse(Duration::from_millis(489)));
        // The wait is over: one probe, the others keep waiting.
        assert_eq!(m.permit(at(520)), Permit::Probe);
        assert_eq!(
            m.permit(at(521)),
            Permit::Refuse(Duration::from_millis(500))
        );
        // The probe fails: open again for another interval.
        m.outcome(Permit::Probe, at(520), Outcome::Failed);
        assert_eq!(
            m.permit(at(600)),
            Permit::Refuse(Duration::from_millis(420))
        );
        // The next probe succeeds: closed for everyone.
        assert_eq!(call(&m, 1_020, false), Permit::Probe);
        assert_eq!(m.permit(at(1_030)), Permit::Call);
    }

    #[test]
    fn failures_below_the_volume_or_ratio_never_open_it() {
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 0..19 {
            call(&m, i, true);
        }
        assert_eq!(
            m.permit(at(20)),
            Permit::Call,
            "19 attempts are below the volume"
        );
        let counters = LocalCounters::default();
        let m = memory(&counters);
        for i in 10..60 {
            assert_eq!(
                call(&m, i, i % 10 < 3),
                Permit::Call,
                "30 % failing: call {i}"
            );
        }
    }

    /// Racing for the probe: exactly one wins.
    #[test]
    fn one_probe_however_many_invocations_find_the_wait_over() {
        let m = memory(LocalCounters::leaked());
        for i in 0..20 {
            call(&m, i, true);
        }
        let probes = (0..8)
            .filter(|_| m.permit(at(600)) == Permit::Probe)
            .count();
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
            assert_eq!(call(&m, t, true), Permit::Probe, "opening {opening}");
            assert_eq!(
                m.permit(at(t + 1)),
                Permit::Refuse(Duration::from_millis(499))
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
        let m = memory(LocalCounters::leaked());
        for i in 0..40 {
            // 1 in 2 failing, then 3 in 10.
            let failed = if i < 20 { i % 2 == 0 } else { i % 10 < 3 };
            assert_eq!(call(&m, i, failed), Permit::Call, "call {i}");
        }
    }

    /// Time-outs say nothing about the downstream (on a starved host every
    /// call runs out of time): however many, they never open the breaker.
    #[test]
    fn calls_that_ran_out_of_budget_never_open_it() {
        let m = memory(LocalCounters::leaked());
        for i in 0..200 {
            assert_eq!(call_ending(&m, i, Outcome::Ignored), Permit::Call);
        }
        assert_eq!(m.recent(at(200)).failures, 0.0);
    }

    /// A probe that ran out of budget decides nothing: the next call probes.
    #[test]
    fn an_ignored_probe_hands_the_probe_to_the_next_call() {
        let m = memory(LocalCounters::leaked());
        for i in 0..20 {
            call(&m, i, true);
        }
        assert_eq!(call_ending(&m, 600, Outcome::Ignored), Permit::Probe);
        assert_eq!(m.permit(at(601)), Permit::Probe);
    }

    /// After a successful probe the window starts clean: the failures of
    /// the outage, and the calls it refused (never counted), no longer
    /// reopen it at the next failure.
    #[test]
    fn a_successful_probe_clears_the_window_so_one_failure_does_not_reopen_it() {
        let m = memory(LocalCounters::leaked());
        for i in 0..20 {
            call(&m, i, true);
        }
        assert_eq!(call(&m, 600, false), Permit::Probe);
        assert_eq!(call(&m, 601, true), Permit::Call);
        assert_eq!(m.permit(at(602)), Permit::Call, "one failure after closing");
        assert_eq!(m.recent(at(602)).failures, 1.0);
    }
}
