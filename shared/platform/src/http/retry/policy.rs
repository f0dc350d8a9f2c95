//! The retry policy: attempt cap, full-jitter exponential backoff, and the
//! rule that no attempt or backoff may pass the deadline.

use std::time::Duration;

use crate::budget::deadline::Deadline;
use crate::time::{duration_ms, UnixMillis};

/// A source of randomness for backoff jitter.
pub trait Jitter {
    /// A uniformly random `u64`.
    fn next_u64(&mut self) -> u64;

    /// A uniformly random duration in `0..=upper`, at millisecond grain.
    fn below(&mut self, upper: Duration) -> Duration {
        let upper = duration_ms(upper);
        match upper.checked_add(1) {
            Some(span) => Duration::from_millis(self.next_u64() % span),
            None => Duration::from_millis(self.next_u64()),
        }
    }
}

/// How many attempts and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: u32,
    base_delay: Duration,
    max_delay: Duration,
    min_attempt: Duration,
}

/// What to do after a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait this long, then try again.
    RetryAfter(Duration),
    /// Stop and report the last failure.
    GiveUp(GiveUp),
}

/// Why the loop stopped retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// The attempt cap was reached.
    AttemptsExhausted,
    /// After the backoff, too little budget would be left for a useful attempt.
    BudgetTooShort,
    /// The server asked us to wait longer than the budget allows.
    RetryAfterTooLong,
    /// The retry budget shared by all invocations had no retry left.
    RetryBudget,
}

impl RetryPolicy {
    /// The policy for retry-safe calls: at most 3 attempts, full-jitter
    /// backoff from 25 ms up to 400 ms, and only when at least 10 ms would be
    /// left for the next attempt.
    pub const fn standard() -> Self {
        Self {
            max_attempts: 3,
            base_delay: Duration::from_millis(25),
            max_delay: Duration::from_millis(400),
            min_attempt: Duration::from_millis(10),
        }
    }

    /// The policy for calls that are not safe to repeat: one attempt.
    pub const fn once() -> Self {
        Self {
            max_attempts: 1,
            ..Self::standard()
        }
    }

    /// Attempts at most.
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The least budget worth starting an attempt with.
    pub const fn min_attempt(&self) -> Duration {
        self.min_attempt
    }

    /// The backoff ceiling before attempt `attempts_made + 1`:
    /// `base * 2^(attempts_made - 1)`, capped.
    pub fn backoff_ceiling(&self, attempts_made: u32) -> Duration {
        let doublings = attempts_made.saturating_sub(1).min(16);
        self.base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay)
    }

    /// Decides what follows a transient failure, after `attempts_made`
    /// attempts, at `now`, under `deadline`.
    pub fn next(
        &self,
        attempts_made: u32,
        retry_after: Option<Duration>,
        now: UnixMillis,
        deadline: Deadline,
        jitter: &mut impl Jitter,
    ) -> Decision {
        if attempts_made >= self.max_attempts {
            return Decision::GiveUp(GiveUp::AttemptsExhausted);
        }
        let (delay, too_long) = match retry_after {
            Some(asked) => (asked, GiveUp::RetryAfterTooLong),
            None => (
                jitter.below(self.backoff_ceiling(attempts_made)),
                GiveUp::BudgetTooShort,
            ),
        };
        if deadline.allows(now.plus(delay), self.min_attempt) {
            Decision::RetryAfter(delay)
        } else {
            Decision::GiveUp(too_long)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Always picks the top of the range.
    struct Max;
    impl Jitter for Max {
        fn next_u64(&mut self) -> u64 {
            u64::MAX
        }
        fn below(&mut self, upper: Duration) -> Duration {
            upper
        }
    }

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(ms)
    }

    /// Always returns the same number.
    struct Fixed(u64);
    impl Jitter for Fixed {
        fn next_u64(&mut self) -> u64 {
            self.0
        }
    }

    #[test]
    fn jitter_is_uniform_over_zero_to_the_upper_bound_inclusive() {
        let ms = Duration::from_millis;
        assert_eq!(Fixed(57).below(ms(100)), ms(57));
        assert_eq!(Fixed(100).below(ms(100)), ms(100));
        assert_eq!(Fixed(101).below(ms(100)), ms(0));
        assert_eq!(Fixed(7).below(Duration::ZERO), Duration::ZERO);
    }

    fn deadline(ms: u64) -> Deadline {
        Deadline::at(at(ms))
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy::standard();
        let ceilings: Vec<u64> = (1..=6)
            .map(|n| p.backoff_ceiling(n).as_millis() as u64)
            .collect();
        assert_eq!(ceilings, [25, 50, 100, 200, 400, 400]);
    }

    #[test]
    fn full_jitter_stays_within_the_ceiling() {
        struct Seq(u64);
        impl Jitter for Seq {
            fn next_u64(&mut self) -> u64 {
                self.0 = self
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                self.0
            }
        }
        let mut j = Seq(7);
        let mut seen_low = false;
        for _ in 0..1_000 {
            let d = j.below(Duration::from_millis(50));
            assert!(d <= Duration::from_millis(50));
            seen_low |= d < Duration::from_millis(10);
        }
        assert!(seen_low, "full jitter should reach near zero");
    }

    #[test]
    fn a_transient_failure_with_budget_left_is_retried() {
        let d = RetryPolicy::standard().next(1, None, at(0), deadline(1_000), &mut Max);
        assert_eq!(d, Decision::RetryAfter(Duration::from_millis(25)));
    }

    #[test]
    fn the_third_failure_is_the_last() {
        let d = RetryPolicy::standard().next(3, None, at(0), deadline(10_000), &mut Max);
        assert_eq!(d, Decision::GiveUp(GiveUp::AttemptsExhausted));
    }

    #[test]
    fn unsafe_calls_get_exactly_one_attempt() {
        let d = RetryPolicy::once().next(1, None, at(0), deadline(10_000), &mut Max);
        assert_eq!(d, Decision::GiveUp(GiveUp::AttemptsExhausted));
    }

    #[test]
    fn no_retry_when_the_backoff_would_leave_no_useful_attempt() {
        // 25 ms backoff + 10 ms attempt = 35 ms needed, 34 left.
        let d = RetryPolicy::standard().next(1, None, at(0), deadline(34), &mut Max);
        assert_eq!(d, Decision::GiveUp(GiveUp::BudgetTooShort));
        let d = RetryPolicy::standard().next(1, None, at(0), deadline(35), &mut Max);
        assert_eq!(d, Decision::RetryAfter(Duration::from_millis(25)));
    }

    #[test]
    fn retry_after_is_honoured_when_it_fits_and_ends_the_loop_when_it_does_not() {
        for (asked, decision) in [
            (1, Decision::RetryAfter(Duration::from_secs(1))),
            (2, Decision::GiveUp(GiveUp::RetryAfterTooLong)),
        ] {
            let asked = Some(Duration::from_secs(asked));
            let d = RetryPolicy::standard().next(1, asked, at(0), deadline(2_000), &mut Max);
            assert_eq!(d, decision);
        }
    }
}
