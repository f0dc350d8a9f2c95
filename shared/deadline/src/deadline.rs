//! The request deadline: an absolute instant every hop spends from.

use std::time::Duration;

use crate::time::UnixMillis;

/// The absolute instant by which a request must be answered.
///
/// Created once at the gateway, carried on every hop and only ever made
/// earlier, never later: nothing below the gateway substitutes a fresh budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline(UnixMillis);

impl Deadline {
    /// The deadline `budget` after `now`.
    pub fn after(now: UnixMillis, budget: Duration) -> Self {
        Self(now.plus(budget))
    }

    /// The deadline at an absolute instant.
    pub const fn at(instant: UnixMillis) -> Self {
        Self(instant)
    }

    /// The absolute instant.
    pub const fn instant(self) -> UnixMillis {
        self.0
    }

    /// Time left at `now`; zero once expired.
    pub fn remaining(self, now: UnixMillis) -> Duration {
        self.0.since(now)
    }

    /// Whether no time is left at `now`.
    pub fn is_expired(self, now: UnixMillis) -> bool {
        now >= self.0
    }

    /// Whether at least `needed` is left at `now`.
    pub fn allows(self, now: UnixMillis, needed: Duration) -> bool {
        !self.is_expired(now) && self.remaining(now) >= needed
    }

    /// The earlier of two deadlines.
    pub fn min(self, other: Deadline) -> Deadline {
        std::cmp::min(self, other)
    }

    /// The deadline to hand to a child call: `reserve` earlier, so this hop
    /// still has time to turn the child's failure into its own answer.
    pub fn child(self, reserve: Duration) -> Deadline {
        Self(self.0.minus(reserve))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(ms)
    }

    #[test]
    fn remaining_counts_down_to_zero_and_stays_there() {
        let d = Deadline::after(at(1_000), Duration::from_millis(300));
        assert_eq!(d.remaining(at(1_000)), Duration::from_millis(300));
        assert_eq!(d.remaining(at(1_299)), Duration::from_millis(1));
        assert_eq!(d.remaining(at(1_300)), Duration::ZERO);
        assert_eq!(d.remaining(at(9_999)), Duration::ZERO);
    }

    #[test]
    fn a_deadline_is_expired_from_its_instant_on() {
        let d = Deadline::at(at(500));
        assert!(!d.is_expired(at(499)));
        assert!(d.is_expired(at(500)));
        assert!(d.is_expired(at(501)));
    }

    #[test]
    fn allows_needs_the_whole_step_to_fit() {
        let d = Deadline::at(at(100));
        assert!(d.allows(at(90), Duration::from_millis(10)));
        assert!(!d.allows(at(91), Duration::from_millis(10)));
        assert!(!d.allows(at(100), Duration::ZERO));
    }

    #[test]
    fn min_picks_the_earlier_deadline() {
        let a = Deadline::at(at(10));
        let b = Deadline::at(at(20));
        assert_eq!(a.min(b), a);
        assert_eq!(b.min(a), a);
    }

    #[test]
    fn child_budget_keeps_a_reserve_for_the_callers_reply() {
        let parent = Deadline::after(at(0), Duration::from_millis(400));
        let child = parent.child(Duration::from_millis(20));
        assert_eq!(child.remaining(at(0)), Duration::from_millis(380));
        assert!(child < parent);
    }

    #[test]
    fn child_of_a_tiny_budget_is_already_expired() {
        let parent = Deadline::after(at(1_000), Duration::from_millis(1));
        assert!(parent.child(Duration::from_millis(5)).is_expired(at(1_000)));
    }

    proptest! {
        #[test]
        fn a_child_never_outlives_its_parent(now in 0u64..1 << 50, budget in 0u64..100_000, reserve in 0u64..100_000) {
            let parent = Deadline::after(at(now), Duration::from_millis(budget));
            let child = parent.child(Duration::from_millis(reserve));
            prop_assert!(child <= parent);
            prop_assert!(child.remaining(at(now)) <= parent.remaining(at(now)));
        }
    }
}
