//! The request context every repository and client method takes first:
//! budget, tenant, actor and request id travelling together.

use std::time::Duration;

pub use meridian_deadline::hop::{BudgetSpent, HopBudget};

use crate::budget::deadline::Deadline;
use crate::secrets::CursorKey;
use crate::tenancy::{Role, TenantScope};
use crate::time::UnixMillis;
use crate::wire::problem::{ErrorCode, Problem};
use crate::wire::request_id::RequestId;

/// Everything a hop knows about the request it is serving: its budget
/// ([`HopBudget`], which is all that storage needs of it), its id and, once
/// resolved, its tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    request_id: RequestId,
    budget: HopBudget,
    tenant: Option<TenantScope>,
    /// What the service seals its page cursors with: set by the internal
    /// gate that admitted the request.
    cursor_key: Option<CursorKey>,
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

impl AsRef<HopBudget> for RequestContext {
    fn as_ref(&self) -> &HopBudget {
        &self.budget
    }
}

impl RequestContext {
    /// The context of a request that arrived at `now` with `deadline`, served
    /// by the component named `hop`.
    pub fn new(
        request_id: RequestId,
        deadline: Deadline,
        now: UnixMillis,
        hop: &'static str,
    ) -> Self {
        Self::of(request_id, HopBudget::new(deadline, now, hop))
    }

    /// The context of a request whose hop budget is already made (the
    /// gateway makes it once, on arrival).
    pub fn of(request_id: RequestId, budget: HopBudget) -> Self {
        Self {
            request_id,
            budget,
            tenant: None,
            cursor_key: None,
        }
    }

    /// The same context, with the key the service seals cursors with.
    pub fn with_cursor_key(mut self, key: CursorKey) -> Self {
        self.cursor_key = Some(key);
        self
    }

    /// The key the service seals cursors with: the gate's, or for a
    /// context it did not admit (a host test's), [`CursorKey::unkeyed`].
    pub fn cursor_key(&self) -> CursorKey {
        self.cursor_key.clone().unwrap_or_else(CursorKey::unkeyed)
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

    /// The budget this hop spends.
    pub fn budget(&self) -> &HopBudget {
        &self.budget
    }

    /// The deadline this hop works to.
    pub fn deadline(&self) -> Deadline {
        self.budget.deadline()
    }

    /// The budget this hop had when the request arrived.
    pub fn budget_at_arrival(&self) -> Duration {
        self.budget.budget_at_arrival()
    }

    /// The component serving the request.
    pub fn hop(&self) -> &'static str {
        self.budget.hop()
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

    /// The time this hop keeps back to answer ([`HopBudget::answer_reserve`]).
    pub fn answer_reserve(&self) -> Duration {
        self.budget.answer_reserve()
    }

    /// The last instant this hop works to ([`HopBudget::work_deadline`]).
    pub fn work_deadline(&self) -> Deadline {
        self.budget.work_deadline()
    }

    /// The context for a step this hop takes ([`HopBudget::for_step`]):
    /// the same request, working to [`Self::work_deadline`].
    pub fn for_step(&self) -> RequestContext {
        Self {
            budget: self.budget.for_step(),
            ..self.clone()
        }
    }

    /// [`Self::for_step`] for a step whose outcome the hop still records
    /// afterwards ([`HopBudget::for_step_leaving`]).
    pub fn for_step_leaving(&self, after: Duration) -> RequestContext {
        Self {
            budget: self.budget.for_step_leaving(after),
            ..self.clone()
        }
    }

    /// Time left at `now`.
    pub fn remaining(&self, now: UnixMillis) -> Duration {
        self.budget.remaining(now)
    }

    /// `Ok` when a step needing `needed` fits in the time left at `now`
    /// ([`HopBudget::ensure`]).
    pub fn ensure(&self, now: UnixMillis, needed: Duration) -> Result<(), BudgetSpent> {
        self.budget.ensure(now, needed)
    }

    /// The error for this hop's budget running out.
    pub fn spent(&self) -> BudgetSpent {
        self.budget.spent()
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

    // The budget's own rules are `meridian_deadline::hop`'s tests; these
    // hold that the context keeps its request through a step.

    #[test]
    fn a_step_is_the_same_request_working_to_the_hops_work_deadline() {
        let c = ctx(1_000, 400);
        let step = c.for_step();
        assert_eq!(step.request_id(), c.request_id());
        assert_eq!(step.budget(), &c.budget().for_step());
        assert_eq!(step.deadline(), c.work_deadline());
        assert_eq!(step.spent(), c.spent());
        let leaving = c.for_step_leaving(Duration::from_millis(10));
        assert_eq!(leaving.request_id(), c.request_id());
        assert_eq!(
            leaving.deadline(),
            c.work_deadline().child(Duration::from_millis(10))
        );
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
