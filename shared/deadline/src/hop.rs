//! The budget as one hop spends it: the deadline it works to, the budget
//! it had when the request arrived, and the time it keeps back to answer.

use std::time::Duration;

use crate::deadline::Deadline;
use crate::steps::answer_reserve;
use crate::time::{duration_ms, UnixMillis};

/// One hop's share of a request's budget. Every statement and outbound
/// call is checked against it before it starts ([`HopBudget::ensure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopBudget {
    deadline: Deadline,
    budget_at_arrival: Duration,
    hop: &'static str,
    /// Whether `deadline` already leaves this hop its answer reserve.
    reserved: bool,
}

/// The budget cannot fit the next step; the step was not started. Every
/// way a budget runs out — a statement refused, a call abandoned, a
/// downstream's own 504 seen by a service, the gateway's timer — becomes
/// this one value, and it becomes the one 504.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetSpent {
    /// The hop that gave up.
    pub hop: &'static str,
    /// The budget that hop had when the request arrived there, in ms (the
    /// one meaning of `budget_ms` on the wire).
    pub budget_ms: u64,
}

impl std::fmt::Display for BudgetSpent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "budget of {} ms spent at {}", self.budget_ms, self.hop)
    }
}

impl std::error::Error for BudgetSpent {}

impl HopBudget {
    /// The budget of a request that arrived at `now` with `deadline`, at
    /// the component named `hop`.
    pub fn new(deadline: Deadline, now: UnixMillis, hop: &'static str) -> Self {
        Self {
            budget_at_arrival: deadline.remaining(now),
            deadline,
            hop,
            reserved: false,
        }
    }

    /// The deadline this hop works to.
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The budget this hop had when the request arrived.
    pub fn budget_at_arrival(&self) -> Duration {
        self.budget_at_arrival
    }

    /// The component serving the request.
    pub fn hop(&self) -> &'static str {
        self.hop
    }

    /// The time this hop keeps back to answer: see [`answer_reserve`].
    pub fn answer_reserve(&self) -> Duration {
        answer_reserve(self.budget_at_arrival)
    }

    /// The last instant at which this hop may still be working on anything
    /// but its answer: the deadline less the answer reserve. Outbound calls
    /// (and the deadline they carry), retries, optional steps and lock
    /// waits all end here, so that whatever they come to, the hop still has
    /// its reserve to answer in before its caller gives up.
    pub fn work_deadline(&self) -> Deadline {
        if self.reserved {
            self.deadline
        } else {
            self.deadline.child(self.answer_reserve())
        }
    }

    /// The budget of a step this hop takes (an outbound call, an optional
    /// step such as inline event delivery): working to
    /// [`Self::work_deadline`]. A step of a step reserves nothing more. A
    /// step that runs out reports the *hop's* budget.
    pub fn for_step(&self) -> Self {
        Self {
            deadline: self.work_deadline(),
            reserved: true,
            ..*self
        }
    }

    /// [`Self::for_step`] for a step whose outcome the hop still records
    /// afterwards (a write): it ends `after` before the work deadline, so
    /// that recording it does not eat into the answer reserve.
    pub fn for_step_leaving(&self, after: Duration) -> Self {
        let step = self.for_step();
        Self {
            deadline: step.deadline.child(after),
            ..step
        }
    }

    /// Time left at `now`.
    pub fn remaining(&self, now: UnixMillis) -> Duration {
        self.deadline.remaining(now)
    }

    /// `Ok` when a step needing `needed` fits in the time left at `now`:
    /// the check made before every statement and outbound call.
    pub fn ensure(&self, now: UnixMillis, needed: Duration) -> Result<(), BudgetSpent> {
        if self.deadline.allows(now, needed) {
            Ok(())
        } else {
            Err(self.spent())
        }
    }

    /// The error for this hop's budget running out.
    pub fn spent(&self) -> BudgetSpent {
        BudgetSpent {
            hop: self.hop,
            budget_ms: duration_ms(self.budget_at_arrival),
        }
    }
}

impl AsRef<HopBudget> for HopBudget {
    fn as_ref(&self) -> &HopBudget {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::ANSWER_COST;

    fn budget(now: u64, ms: u64) -> HopBudget {
        HopBudget::new(
            Deadline::after(UnixMillis::from_millis(now), Duration::from_millis(ms)),
            UnixMillis::from_millis(now),
            "community",
        )
    }

    #[test]
    fn a_step_that_fits_is_allowed() {
        let b = budget(1_000, 100);
        assert_eq!(
            b.ensure(UnixMillis::from_millis(1_050), Duration::from_millis(10)),
            Ok(())
        );
    }

    #[test]
    fn a_step_that_cannot_finish_in_time_is_not_started() {
        let b = budget(1_000, 100);
        let err = b
            .ensure(UnixMillis::from_millis(1_095), Duration::from_millis(10))
            .unwrap_err();
        assert_eq!(
            err,
            BudgetSpent {
                hop: "community",
                budget_ms: 100
            }
        );
    }

    #[test]
    fn the_budget_names_its_hop_and_what_it_arrived_with() {
        let b = budget(1_000, 250);
        assert_eq!(b.hop(), "community");
        assert_eq!(b.budget_at_arrival(), Duration::from_millis(250));
        // A step keeps both: it reports the hop's budget, not its own.
        let step = b.for_step();
        assert_eq!(
            (step.hop(), step.budget_at_arrival()),
            ("community", Duration::from_millis(250))
        );
        assert_eq!(b.spent().to_string(), "budget of 250 ms spent at community");
    }

    #[test]
    fn an_expired_budget_refuses_even_a_free_step() {
        let b = budget(1_000, 100);
        assert!(b
            .ensure(UnixMillis::from_millis(1_100), Duration::ZERO)
            .is_err());
    }

    #[test]
    fn an_optional_step_ends_an_answer_reserve_before_the_hop() {
        let b = budget(1_000, 400);
        let step = b.for_step();
        assert_eq!(b.answer_reserve(), ANSWER_COST);
        assert_eq!(
            step.remaining(UnixMillis::from_millis(1_000)),
            Duration::from_millis(400) - ANSWER_COST
        );
        // The step is spent while the hop still has its reserve to answer in.
        let late = UnixMillis::from_millis(1_400).minus(ANSWER_COST);
        assert!(step.ensure(late, Duration::ZERO).is_err());
        assert!(b.ensure(late, ANSWER_COST).is_ok());
        assert_eq!(step.spent(), b.spent());
        // A step of a step reserves nothing more.
        assert_eq!(step.for_step().deadline(), step.deadline());
        assert_eq!(step.work_deadline(), b.work_deadline());
    }

    #[test]
    fn a_step_whose_outcome_is_recorded_ends_that_much_earlier() {
        let b = budget(1_000, 400);
        let step = b.for_step_leaving(Duration::from_millis(10));
        assert_eq!(
            step.deadline(),
            b.work_deadline().child(Duration::from_millis(10))
        );
        // Still a step of this hop: its work deadline is its own.
        assert_eq!(step.work_deadline(), step.deadline());
        assert_eq!(step.spent(), b.spent());
    }
}
