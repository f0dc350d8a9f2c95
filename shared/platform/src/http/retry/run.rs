//! The retry loop: runs attempts under a policy and a deadline.

use std::future::Future;
use std::time::Duration;

use super::classify::Verdict;
use super::policy::{Decision, GiveUp, Jitter, RetryPolicy};
use crate::budget::deadline::Deadline;
use crate::time::Clock;

/// Waits without blocking other work. In a component this is a
/// monotonic-clock pollable; in tests it moves a manual clock.
// Components are single-threaded, so the futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait Sleeper {
    /// Resolves after `d`.
    async fn sleep(&self, d: Duration);
}

/// The last attempt's result, how many attempts were made, and why the loop
/// stopped early, if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempted<T> {
    /// The last attempt's result.
    pub last: T,
    /// Attempts made, at least 1.
    pub attempts: u32,
    /// Set when the last attempt failed transiently and was not retried.
    pub gave_up: Option<GiveUp>,
}

/// Runs `attempt` (given the attempt number, from 1) until its verdict is
/// final, the policy's attempts are used up, or the deadline cannot fit a
/// useful attempt after the backoff. The caller checks that the first
/// attempt fits; every later one is checked here.
pub async fn run<T, F, Fut>(
    policy: &RetryPolicy,
    deadline: Deadline,
    clock: &impl Clock,
    sleeper: &impl Sleeper,
    jitter: &mut impl Jitter,
    attempt: F,
) -> Attempted<T>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = (T, Verdict)>,
{
    run_gated(policy, deadline, clock, sleeper, jitter, |_| true, attempt).await
}

/// [`run`], with `may_retry` (given the retries made so far) asked before
/// each retry the policy grants: the shared retry budget's say.
pub async fn run_gated<T, F, Fut>(
    policy: &RetryPolicy,
    deadline: Deadline,
    clock: &impl Clock,
    sleeper: &impl Sleeper,
    jitter: &mut impl Jitter,
    mut may_retry: impl FnMut(u32) -> bool,
    mut attempt: F,
) -> Attempted<T>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = (T, Verdict)>,
{
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (last, verdict) = attempt(attempts).await;
        let Verdict::Transient { retry_after } = verdict else {
            return Attempted {
                last,
                attempts,
                gave_up: None,
            };
        };
        let decision = match policy.next(attempts, retry_after, clock.now(), deadline, jitter) {
            Decision::RetryAfter(_) if !may_retry(attempts - 1) => {
                Decision::GiveUp(GiveUp::RetryBudget)
            }
            decision => decision,
        };
        match decision {
            // The policy only grants a delay that fits; bounding it again
            // keeps a future policy change from sleeping past the deadline.
            Decision::RetryAfter(delay) => {
                sleeper
                    .sleep(delay.min(deadline.remaining(clock.now())))
                    .await
            }
            Decision::GiveUp(reason) => {
                return Attempted {
                    last,
                    attempts,
                    gave_up: Some(reason),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{ManualClock, UnixMillis};
    use futures::executor::block_on;
    use proptest::prelude::*;
    use std::cell::RefCell;
    use std::future::Future;

    struct ClockSleeper<'a>(&'a ManualClock, RefCell<Vec<Duration>>);
    impl Sleeper for ClockSleeper<'_> {
        async fn sleep(&self, d: Duration) {
            self.1.borrow_mut().push(d);
            self.0.advance(d);
        }
    }

    struct Fixed(u64);
    impl Jitter for Fixed {
        fn next_u64(&mut self) -> u64 {
            self.0
        }
    }

    fn start() -> UnixMillis {
        UnixMillis::from_millis(1_700_000_000_000)
    }

    /// Runs `attempt` under `policy` with `budget` on a manual clock that
    /// only backoffs move; returns the outcome and the backoffs slept.
    fn drive<T, Fut>(
        policy: &RetryPolicy,
        budget: Duration,
        jitter: u64,
        attempt: impl FnMut(u32) -> Fut,
    ) -> (Attempted<T>, Vec<Duration>)
    where
        Fut: Future<Output = (T, Verdict)>,
    {
        let clock = ManualClock::new(start());
        let sleeper = ClockSleeper(&clock, RefCell::default());
        let deadline = Deadline::after(start(), budget);
        let out = block_on(run(
            policy,
            deadline,
            &clock,
            &sleeper,
            &mut Fixed(jitter),
            attempt,
        ));
        (out, sleeper.1.into_inner())
    }

    const TRANSIENT: Verdict = Verdict::Transient { retry_after: None };

    #[test]
    fn a_final_answer_ends_the_loop_after_one_attempt() {
        let (out, slept) = drive(
            &RetryPolicy::standard(),
            Duration::from_secs(1),
            0,
            |_| async { (200, Verdict::Final) },
        );
        let once = Attempted {
            last: 200,
            attempts: 1,
            gave_up: None,
        };
        assert_eq!(out, once);
        assert!(slept.is_empty());
    }

    #[test]
    fn transient_failures_are_retried_until_success() {
        let (out, slept) = drive(
            &RetryPolicy::standard(),
            Duration::from_secs(1),
            u64::MAX,
            |n| async move {
                if n < 3 {
                    (503, TRANSIENT)
                } else {
                    (200, Verdict::Final)
                }
            },
        );
        assert_eq!(
            out,
            Attempted {
                last: 200,
                attempts: 3,
                gave_up: None
            }
        );
        assert_eq!(slept.len(), 2);
    }

    #[test]
    fn a_retry_the_budget_refuses_is_not_made() {
        let clock = ManualClock::new(start());
        let sleeper = ClockSleeper(&clock, RefCell::default());
        let asked = RefCell::new(Vec::new());
        let out = block_on(run_gated(
            &RetryPolicy::standard(),
            Deadline::after(start(), Duration::from_secs(5)),
            &clock,
            &sleeper,
            &mut Fixed(3),
            |made| {
                asked.borrow_mut().push(made);
                made < 1
            },
            |_| async { (503, TRANSIENT) },
        ));
        assert_eq!((out.attempts, out.gave_up), (2, Some(GiveUp::RetryBudget)));
        assert_eq!(*asked.borrow(), [0, 1]);
        assert_eq!(
            sleeper.1.borrow().len(),
            1,
            "no backoff for a refused retry"
        );
    }

    #[test]
    fn a_persistent_failure_stops_at_three_attempts_and_a_once_policy_at_one() {
        for (policy, attempts) in [(RetryPolicy::standard(), 3), (RetryPolicy::once(), 1)] {
            let (out, _) = drive(&policy, Duration::from_secs(5), 3, |_| async {
                (502, TRANSIENT)
            });
            assert_eq!(
                (out.attempts, out.gave_up),
                (attempts, Some(GiveUp::AttemptsExhausted))
            );
        }
    }

    proptest! {
        /// However attempts fail and however the jitter and `Retry-After`
        /// fall, the loop ends by the deadline and never starts an attempt
        /// that lacks the policy's minimum budget.
        #[test]
        fn no_retry_schedule_ever_ends_after_the_deadline(
            budget_ms in 0u64..5_000,
            attempt_ms in proptest::collection::vec(0u64..3_000, 3),
            transient in proptest::collection::vec(any::<bool>(), 3),
            retry_after_s in proptest::collection::vec(proptest::option::of(0u64..4), 3),
            jitter in any::<u64>(),
        ) {
            let policy = RetryPolicy::standard();
            let clock = ManualClock::new(start());
            let deadline = Deadline::after(start(), Duration::from_millis(budget_ms));
            prop_assume!(deadline.allows(clock.now(), policy.min_attempt()));
            let sleeper = ClockSleeper(&clock, RefCell::default());
            let starts = RefCell::new(Vec::new());
            let out = block_on(run(&policy, deadline, &clock, &sleeper, &mut Fixed(jitter), |n| {
                let i = (n - 1) as usize;
                starts.borrow_mut().push(deadline.remaining(clock.now()));
                // An attempt is raced against the remaining budget, so it
                // never takes longer than what is left.
                let took = Duration::from_millis(attempt_ms[i]).min(deadline.remaining(clock.now()));
                clock.advance(took);
                let verdict = if transient[i] {
                    Verdict::Transient { retry_after: retry_after_s[i].map(Duration::from_secs) }
                } else {
                    Verdict::Final
                };
                async move { ((), verdict) }
            }));
            prop_assert!(clock.now() <= deadline.instant());
            prop_assert!(out.attempts >= 1 && out.attempts <= policy.max_attempts());
            for left in starts.borrow().iter() {
                prop_assert!(*left >= policy.min_attempt());
            }
        }
    }
}
