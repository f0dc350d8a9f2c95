//! How a hop spends its budget, in one place: the least budget each kind of
//! step needs before it may start, and the part of the budget the hop keeps
//! back to answer. A step that does not fit is not started; the hop answers
//! with the budget-spent answer it got
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

/// Recording a step's outcome after it (an outbox delivery's success or
/// failure): one write and, when the lock wait must be set again, its
/// pragma. A step whose outcome is recorded ends this much earlier.
pub const RECORD: Duration = Duration::from_millis(10);

/// Recording that a token was used: an optional write during resolution.
pub const TOKEN_TOUCH: Duration = Duration::from_millis(20);

/// What answering costs once a hop stops working: building its answer
/// (the gateway's 504, a service's problem), its log line, and Spin
/// delivering it to the caller — a cost, not a share of the budget
/// (measured: docs/benchmarks.md, "Why the constants are what they are").
pub const ANSWER_COST: Duration = Duration::from_millis(12);

/// The shortest budget that keeps the whole answer reserve: four times
/// [`ANSWER_COST`]. Below it a hop keeps a quarter of the budget to answer
/// with, less than answering was measured to cost, so a request on such a
/// budget can be late for its budget alone: the gateway's throttle learns nothing from
/// its lateness (the gateway's `Ended`), whoever the caller is.
pub const FULL_RESERVE_BUDGET: Duration = Duration::from_millis(4 * ANSWER_COST.as_millis() as u64);

/// The answer reserve: the part of a budget a hop keeps back so that it can
/// still turn a late or failed step into its own answer (the gateway's 504,
/// a service's 201 after an optional step timed out) before its caller gives
/// up. [`ANSWER_COST`], or a quarter of a budget too small to spare it (at
/// least 1 ms), so that a short budget still leaves most of itself to work.
pub fn answer_reserve(budget: Duration) -> Duration {
    ANSWER_COST.min(budget / 4).max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_the_answer_cost_or_a_quarter_of_a_short_budget() {
        let ms = Duration::from_millis;
        assert_eq!(answer_reserve(ms(0)), ms(1));
        assert_eq!(answer_reserve(ms(1)), ms(1));
        assert_eq!(answer_reserve(ms(20)), ms(5));
        assert_eq!(answer_reserve(ms(48)), ANSWER_COST);
        assert_eq!(answer_reserve(FULL_RESERVE_BUDGET), ANSWER_COST);
        assert!(answer_reserve(FULL_RESERVE_BUDGET - ms(1)) < ANSWER_COST);
        assert_eq!(answer_reserve(ms(400)), ANSWER_COST);
        assert_eq!(answer_reserve(ms(3_000)), ANSWER_COST);
    }
}
