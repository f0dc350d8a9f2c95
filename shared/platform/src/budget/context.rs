//! The request context every repository and client method takes first:
//! budget, tenant, actor and request id travelling together.

use std::time::Duration;

use crate::budget::answer_reserve;
use crate::budget::deadline::Deadline;
use crate::tenancy::{Role, TenantScope};
use crate::time::{duration_ms, UnixMillis};
use crate::wire::problem::{ErrorCode, Problem};
use crate::wire::request_id::RequestId;

/// Everything a hop knows about the request it is serving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    request_id: RequestId,
    deadline: Deadline,
    budget_at_arrival: Duration,
    hop: &'static str,
    tenant: Option<TenantScope>,
    /// Whether `deadline` already leaves this hop its answer reserve.
    reserved: bool,
}

/// The budget cannot fit the next step; the step was not started. Every
/// way a budget runs out — a statement refused (`DbError::Budget`), a call
/// abandoned (`SendError::Deadline`), a downstream's own 504 seen by a
/// service, the gateway's timer — becomes this one value, and it becomes
/// the one 504 (`Problem::from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetSpent {
    /// The hop that gave up.
    pub hop: &'static str,
    /// The budget that hop had when the request arrived there, in ms (the
    /// one meaning of `budget_ms` on the wire).
    pub budget_ms: u64,
}

impl From<BudgetSpent> for Problem {
    /// The 504, and the event line that names the hop that ran out: every
    /// budget refusal is logged here, once.
    fn from(spent: BudgetSpent) -> Self {
        crate::log::journal::event(crate::log::journal::Event::BudgetSpent {
            hop: spent.hop,
            budget_ms: spent.budget_ms,
        });
        Problem::deadline_exceeded(spent.hop, spent.budget_ms)
    }
}

impl std::fmt::Display for BudgetSpent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "budget of {} ms spent at {}", self.budget_ms, self.hop)
    }
}

impl std::error::Error for BudgetSpent {}

impl RequestContext {
    /// The context of a request that arrived at `now` with `deadline`, served
    /// by the component named `hop`.
    pub fn new(
        request_id: RequestId,
        deadline: Deadline,
        now: UnixMillis,
        hop: &'static str,
    ) -> Self {
        Self {
            request_id,
            budget_at_arrival: deadline.remaining(now),
            deadline,
            hop,
            tenant: None,
            reserved: false,
        }
    }

    /// The same context, scoped to a resolved tenant and actor.
    pub fn with_tenant(mut self, scope: TenantScope) -> Self {
        self.tenant = Some(scope);
        self
    }

    /// The request id.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
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

    /// The resolved tenant and actor, if this request is tenant-scoped.
    pub fn tenant(&self) -> Option<&TenantScope> {
        self.tenant.as_ref()
    }

    /// The tenant scope, which every tenant route needs: its absence means
    /// the request did not come through the gateway's resolution.
    pub fn scope(&self) -> Result<&TenantScope, Problem> {
        self.tenant.as_ref().ok_or_else(|| {
            Problem::new(
                ErrorCode::InvalidRequest,
                "tenant routes need the tenant headers the gateway sets",
            )
        })
    }

    /// The tenant scope, if the actor's role passes `allowed`; else 403.
    pub fn require(
        &self,
        allowed: impl Fn(Role) -> bool,
        who: &str,
    ) -> Result<&TenantScope, Problem> {
        let scope = self.scope()?;
        if allowed(scope.role) {
            Ok(scope)
        } else {
            Err(Problem::new(
                ErrorCode::Forbidden,
                format!("only {who} may do this"),
            ))
        }
    }

    /// Any member of the tenant: `(tenant id, scope)`.
    pub fn member(&self) -> Result<(String, &TenantScope), Problem> {
        let scope = self.scope()?;
        Ok((scope.tenant_id.to_string(), scope))
    }

    /// Admins and managers only: `(tenant id, scope)`; others get a 403.
    pub fn staff(&self) -> Result<(String, &TenantScope), Problem> {
        let scope = self.require(Role::is_staff, "admins and managers")?;
        Ok((scope.tenant_id.to_string(), scope))
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

    /// The context for a step this hop takes (an outbound call, an optional
    /// step such as inline event delivery): the same request, working to
    /// [`Self::work_deadline`]. Taking a step of a step reserves nothing
    /// more. A step that runs out reports the *hop's* budget.
    pub fn for_step(&self) -> RequestContext {
        Self {
            deadline: self.work_deadline(),
            reserved: true,
            ..self.clone()
        }
    }

    /// [`Self::for_step`] for a step whose outcome the hop still records
    /// afterwards (a write): it ends `after` before the work deadline, so
    /// that recording it does not eat into the answer reserve.
    pub fn for_step_leaving(&self, after: Duration) -> RequestContext {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(now: u64, budget: u64) -> RequestContext {
        RequestContext::new(
            RequestId::parse("req-1").unwrap(),
            Deadline::after(UnixMillis::from_millis(now), Duration::from_millis(budget)),
            UnixMillis::from_millis(now),
            "community",
        )
    }

    #[test]
    fn a_step_that_fits_is_allowed() {
        let c = ctx(1_000, 100);
        assert_eq!(
            c.ensure(UnixMillis::from_millis(1_050), Duration::from_millis(10)),
            Ok(())
        );
    }

    #[test]
    fn a_step_that_cannot_finish_in_time_is_not_started() {
        let c = ctx(1_000, 100);
        let err = c
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
    fn the_context_names_its_hop_and_the_budget_it_arrived_with() {
        let c = ctx(1_000, 250);
        assert_eq!(c.hop(), "community");
        assert_eq!(c.budget_at_arrival(), Duration::from_millis(250));
        // A step keeps both: it reports the hop's budget, not its own.
        let step = c.for_step();
        assert_eq!(
            (step.hop(), step.budget_at_arrival()),
            ("community", Duration::from_millis(250))
        );
        assert_eq!(c.spent().to_string(), "budget of 250 ms spent at community");
    }

    #[test]
    fn an_expired_budget_refuses_even_a_free_step() {
        let c = ctx(1_000, 100);
        assert!(c
            .ensure(UnixMillis::from_millis(1_100), Duration::ZERO)
            .is_err());
    }

    #[test]
    fn an_optional_step_ends_an_answer_reserve_before_the_hop() {
        let c = ctx(1_000, 400);
        let step = c.for_step();
        let reserve = crate::budget::steps::ANSWER_COST;
        assert_eq!(c.answer_reserve(), reserve);
        assert_eq!(
            step.remaining(UnixMillis::from_millis(1_000)),
            Duration::from_millis(400) - reserve
        );
        // The step is spent while the hop still has its reserve to answer in.
        let late = UnixMillis::from_millis(1_400).minus(reserve);
        assert!(step.ensure(late, Duration::ZERO).is_err());
        assert!(c.ensure(late, reserve).is_ok());
        // Same request and hop: only the deadline moved.
        assert_eq!(step.request_id(), c.request_id());
        assert_eq!(step.spent(), c.spent());
        // A step of a step reserves nothing more.
        assert_eq!(step.for_step().deadline(), step.deadline());
        assert_eq!(step.work_deadline(), c.work_deadline());
    }

    #[test]
    fn a_step_whose_outcome_is_recorded_ends_that_much_earlier() {
        let c = ctx(1_000, 400);
        let step = c.for_step_leaving(Duration::from_millis(10));
        assert_eq!(
            step.deadline(),
            c.work_deadline().child(Duration::from_millis(10))
        );
        // Still a step of this hop: its work deadline is its own.
        assert_eq!(step.work_deadline(), step.deadline());
        assert_eq!(step.spent(), c.spent());
    }

    #[test]
    fn the_spent_problem_names_hop_and_budget() {
        let p = Problem::from(ctx(0, 250).spent());
        assert_eq!(p.status().as_u16(), 504);
        let v: serde_json::Value = serde_json::from_slice(&p.to_json()).unwrap();
        assert_eq!(v["hop"], "community");
        assert_eq!(v["budget_ms"], 250);
    }
}
