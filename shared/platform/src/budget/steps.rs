//! How a hop spends its budget, in one place: the least budget each kind of
//! step needs before it may start, and the part of the budget the hop keeps
//! back to answer. A step that does not fit is not started; the hop answers
//! with the [`BudgetSpent`](crate::budget::context::BudgetSpent) it got
//! instead, which is the same 504 wherever it is decided.

use std::time::Duration;

/// One SQL statement.
pub const STATEMENT: Duration = Duration::from_millis(2);

/// One outbound call (or one forward at the gateway): a call with less
/// could not get an answer back in time.
pub const CALL: Duration = Duration::from_millis(2);

/// One delivery of an outbox event to community.
pub const DELIVERY: Duration = Duration::from_millis(10);

/// Delivering events inline, after a write committed: an optional step,
/// tried only with at least this much of the work budget left.
pub const INLINE_DELIVERY: Duration = Duration::from_millis(50);

/// Recording that a token was used: an optional write during resolution.
pub const TOKEN_TOUCH: Duration = Duration::from_millis(20);

/// The answer reserve: the part of a budget a hop keeps back so that it can
/// still turn a late or failed step into its own answer (the gateway's 504,
/// a service's 201 after an optional step timed out) before its caller gives
/// up. A twentieth of the budget the hop was given, kept between 1 and 50 ms.
pub fn answer_reserve(budget: Duration) -> Duration {
    (budget / 20).clamp(Duration::from_millis(1), Duration::from_millis(50))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_a_twentieth_kept_between_1_and_50_ms() {
        let ms = Duration::from_millis;
        assert_eq!(answer_reserve(ms(0)), ms(1));
        assert_eq!(answer_reserve(ms(1)), ms(1));
        assert_eq!(answer_reserve(ms(400)), ms(20));
        assert_eq!(answer_reserve(ms(3_000)), ms(50));
    }
}
