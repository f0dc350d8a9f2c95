//! The retry budget: a retry is claimed by an atomic increment and judged
//! by the count it returned, against a share of the window's first
//! attempts or the floor.

use crate::time::UnixMillis;

use super::{Counters, FailureMemory};

impl<K: Counters> FailureMemory<'_, K> {
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
        let percent = self.config.after_failure.settings().retry_percent;
        let allowed = (recent.calls * f64::from(percent) / 100.0).max(self.config.min_retries());
        let epoch = self.epoch(now);
        let key = self.key(epoch, "retries");
        let Ok(claimed) = self.counters.add(&key, 1) else {
            return true; // the store failing is never a reason to refuse
        };
        if claimed == 1 {
            self.opened(epoch);
        }
        if claimed as f64 + previous.retries <= allowed {
            return true;
        }
        let _ = self.counters.add(&key, -1);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn retries_stay_under_a_fifth_of_first_attempts_above_the_floor() {
        let m = memory(LocalCounters::leaked());
        for _ in 0..1_000 {
            m.first_attempt(at(0), 0);
        }
        // 1,000 first attempts allow 200 retries; 100 is the floor.
        let mut granted = 0;
        for _ in 0..300 {
            if m.may_retry(at(0)) {
                granted += 1;
            }
        }
        assert_eq!(granted, 200);
        assert_eq!(m.recent(at(0)).retries, 200.0, "refused claims given back");
    }

    #[test]
    fn a_quiet_service_can_still_retry_up_to_the_floor() {
        let m = memory(LocalCounters::leaked());
        m.first_attempt(at(0), 0);
        // 10 a second, over the 10 s window.
        for _ in 0..100 {
            assert!(m.may_retry(at(0)));
        }
        assert!(!m.may_retry(at(0)));
    }

    /// The floor is a rate: the same 10 a second over a shorter window is
    /// fewer retries in it.
    #[test]
    fn the_floor_is_per_second_of_the_window() {
        let counters = LocalCounters::default();
        let config = MemoryConfig {
            sample: 1,
            window: std::time::Duration::from_secs(2),
            ..MemoryConfig::default()
        };
        let m = FailureMemory::new(&counters, config, "gateway", "community");
        m.first_attempt(at(0), 0);
        let granted = (0..50).filter(|_| m.may_retry(at(0))).count();
        assert_eq!(granted, 20);
    }

    /// Invocations racing for the last retries of a window: each claims
    /// one by an atomic increment and is judged by the count it got back,
    /// so exactly the budget's remainder is granted, even when every racer
    /// read the window before any of them claimed. No count is lost.
    #[test]
    fn racing_invocations_lose_no_count_and_never_pass_the_budget_together() {
        let m = memory(LocalCounters::leaked());
        for _ in 0..100 {
            m.first_attempt(at(0), 0);
        }
        // 100 retries allowed (the floor); already 95 made.
        for _ in 0..95 {
            assert!(m.may_retry(at(0)));
        }
        let racers = 8;
        let stale = m.recent(at(0));
        let granted = (0..racers).filter(|_| m.may_retry(at(0))).count();
        assert_eq!(stale.retries, 95.0, "what every racer read");
        assert_eq!(granted, 5, "the budget's remainder, not one more");
        let after = m.recent(at(0));
        assert_eq!(after.calls, 100.0, "no first attempt lost");
        assert_eq!(
            after.retries, 100.0,
            "no retry lost, refused ones given back"
        );
    }
}
