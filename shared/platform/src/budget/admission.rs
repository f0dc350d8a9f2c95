//! The gate in front of every internal service: internal token, valid
//! deadline, budget not spent — checked before any tenant-scoped work.

use std::time::Duration;

use crate::budget::context::{BudgetSpent, RequestContext};
use crate::budget::propagation::{Arrival, PropagationError};
use crate::secrets::constant_time_eq;
use crate::tenancy::{ActorId, Role, TenantId, TenantScope};
use crate::time::{duration_ms, UnixMillis};
use crate::wire::headers;
use crate::wire::problem::{ErrorCode, Problem};
use crate::wire::request_id::RequestId;

/// The settings of one internal service's gate.
#[derive(Debug, Clone, Copy)]
pub struct InternalGate<'a> {
    /// The shared internal token (`internal_token` variable).
    pub expected_token: &'a str,
    /// The component's name, reported as `hop` when it gives up.
    pub hop: &'static str,
    /// Header disagreement above which clock skew is reported.
    pub skew_threshold: Duration,
}

/// A request the gate let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The request's context, tenant-scoped when the gateway resolved one.
    pub ctx: RequestContext,
    /// Clock disagreement with the sender, when above the threshold.
    pub skew_ms: Option<i64>,
}

impl InternalGate<'_> {
    /// Checks a request `request_id` (decided once by the hop, from its
    /// header) that arrived at `now`; `header` looks a header up by
    /// lowercase name. The order matters: who is calling, then whether the
    /// budget is readable, then whether any of it is left.
    pub fn admit<'h>(
        &self,
        request_id: RequestId,
        header: impl Fn(&str) -> Option<&'h str>,
        now: UnixMillis,
    ) -> Result<Admitted, Problem> {
        let refuse = |p: Problem| p.with_request_id(request_id.as_str());

        if self.expected_token.is_empty() {
            return Err(refuse(Problem::new(
                ErrorCode::Internal,
                "the internal token is not configured",
            )));
        }
        if !tokens_match(header(headers::INTERNAL_TOKEN), self.expected_token) {
            return Err(refuse(Problem::new(
                ErrorCode::Unauthorized,
                "internal services accept only calls from Meridian's own components",
            )));
        }

        let arrival = Arrival::decode(
            header(headers::DEADLINE),
            header(headers::BUDGET_MS),
            now,
            self.skew_threshold,
        )
        .map_err(|e: PropagationError| {
            refuse(Problem::new(ErrorCode::InvalidRequest, e.to_string()))
        })?;

        if arrival.deadline.is_expired(now) {
            let given = header(headers::BUDGET_MS).and_then(|b| b.trim().parse().ok());
            let spent = BudgetSpent {
                hop: self.hop,
                budget_ms: given.unwrap_or_else(|| duration_ms(arrival.deadline.remaining(now))),
            };
            return Err(refuse(spent.into()));
        }

        let scope = tenant_scope(&header).map_err(refuse)?;
        let ctx = RequestContext::new(request_id, arrival.deadline, now, self.hop);
        let ctx = match scope {
            Some(scope) => ctx.with_tenant(scope),
            None => ctx,
        };
        Ok(Admitted {
            ctx,
            skew_ms: arrival.skew_ms,
        })
    }
}

fn tokens_match(presented: Option<&str>, expected: &str) -> bool {
    presented.is_some_and(|p| constant_time_eq(p, expected))
}

/// The tenant headers the gateway set: all three or none.
fn tenant_scope<'h>(
    header: &impl Fn(&str) -> Option<&'h str>,
) -> Result<Option<TenantScope>, Problem> {
    let (tenant, actor, role) = (
        header(headers::TENANT_ID),
        header(headers::ACTOR_ID),
        header(headers::ACTOR_ROLE),
    );
    let bad = |what: &str| {
        Problem::new(
            ErrorCode::InvalidRequest,
            format!("malformed {what} header"),
        )
    };
    match (tenant, actor, role) {
        (None, None, None) => Ok(None),
        (Some(t), Some(a), Some(r)) => Ok(Some(TenantScope {
            tenant_id: t.parse::<TenantId>().map_err(|_| bad(headers::TENANT_ID))?,
            actor_id: a.parse::<ActorId>().map_err(|_| bad(headers::ACTOR_ID))?,
            role: r.parse::<Role>().map_err(|_| bad(headers::ACTOR_ROLE))?,
        })),
        _ => Err(Problem::new(
            ErrorCode::InvalidRequest,
            "x-tenant-id, x-actor-id and x-actor-role come together or not at all",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const NOW: u64 = 1_700_000_000_000;
    const TENANT: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
    const ACTOR: &str = "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02";

    fn gate() -> InternalGate<'static> {
        InternalGate {
            expected_token: "s3cret",
            hop: "billing",
            skew_threshold: Duration::from_millis(250),
        }
    }

    fn valid() -> HashMap<&'static str, String> {
        HashMap::from([
            (headers::INTERNAL_TOKEN, "s3cret".to_owned()),
            (headers::DEADLINE, (NOW + 500).to_string()),
            (headers::BUDGET_MS, "500".to_owned()),
            (headers::REQUEST_ID, "req-42".to_owned()),
        ])
    }

    fn admit(h: &HashMap<&'static str, String>, now: u64) -> Result<Admitted, Problem> {
        gate().admit(
            RequestId::from_header_or_new(h.get(headers::REQUEST_ID).map(String::as_str)),
            |n| h.get(n).map(String::as_str),
            UnixMillis::from_millis(now),
        )
    }

    #[test]
    fn a_well_formed_internal_request_is_admitted_with_its_budget() {
        let a = admit(&valid(), NOW).unwrap();
        assert_eq!(
            a.ctx.remaining(UnixMillis::from_millis(NOW)),
            Duration::from_millis(500)
        );
        assert_eq!(a.ctx.request_id().as_str(), "req-42");
        assert_eq!(a.ctx.tenant(), None);
        assert_eq!(a.skew_ms, None);
    }

    #[test]
    fn a_missing_or_wrong_token_is_unauthorized() {
        let mut h = valid();
        h.insert(headers::INTERNAL_TOKEN, "s3cre".into());
        assert_eq!(admit(&h, NOW).unwrap_err().status(), 401);
        h.remove(headers::INTERNAL_TOKEN);
        let p = admit(&h, NOW).unwrap_err();
        assert_eq!(p.code(), ErrorCode::Unauthorized);
    }

    #[test]
    fn the_token_is_checked_before_the_deadline() {
        let mut h = valid();
        h.remove(headers::INTERNAL_TOKEN);
        h.remove(headers::DEADLINE);
        assert_eq!(admit(&h, NOW).unwrap_err().status(), 401);
    }

    #[test]
    fn a_request_without_a_valid_deadline_is_a_400() {
        for (name, value) in [
            (headers::DEADLINE, None),
            (headers::BUDGET_MS, None),
            (headers::DEADLINE, Some("soon")),
        ] {
            let mut h = valid();
            match value {
                Some(v) => h.insert(name, v.to_owned()),
                None => h.remove(name),
            };
            let p = admit(&h, NOW).unwrap_err();
            assert_eq!(
                (p.status().as_u16(), p.code()),
                (400, ErrorCode::InvalidRequest),
                "{name}"
            );
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&p.to_json()).unwrap()["request_id"],
                "req-42"
            );
        }
    }

    #[test]
    fn an_expired_request_is_refused_with_504_before_any_work() {
        let p = admit(&valid(), NOW + 500).unwrap_err();
        assert_eq!(p.status().as_u16(), 504);
        let v: serde_json::Value = serde_json::from_slice(&p.to_json()).unwrap();
        assert_eq!(v["hop"], "billing");
        assert_eq!(v["budget_ms"], 500);
    }

    #[test]
    fn tenant_headers_scope_the_context() {
        let mut h = valid();
        h.insert(headers::TENANT_ID, TENANT.into());
        h.insert(headers::ACTOR_ID, ACTOR.into());
        h.insert(headers::ACTOR_ROLE, "manager".into());
        let scope = *admit(&h, NOW).unwrap().ctx.tenant().unwrap();
        assert_eq!(scope.tenant_id.to_string(), TENANT);
        assert_eq!(scope.role, Role::Manager);
    }

    #[test]
    fn partial_or_malformed_tenant_headers_are_refused() {
        let mut h = valid();
        h.insert(headers::TENANT_ID, TENANT.into());
        assert_eq!(admit(&h, NOW).unwrap_err().status(), 400);
        h.insert(headers::ACTOR_ID, ACTOR.into());
        h.insert(headers::ACTOR_ROLE, "owner".into());
        assert_eq!(admit(&h, NOW).unwrap_err().status(), 400);
        h.insert(headers::ACTOR_ROLE, "admin".into());
        h.insert(headers::TENANT_ID, "not-a-uuid".into());
        assert_eq!(admit(&h, NOW).unwrap_err().status(), 400);
    }

    #[test]
    fn skew_between_the_headers_is_reported() {
        let mut h = valid();
        h.insert(headers::DEADLINE, (NOW + 5_500).to_string());
        let a = admit(&h, NOW).unwrap();
        assert_eq!(a.skew_ms, Some(5_000));
        assert_eq!(
            a.ctx.remaining(UnixMillis::from_millis(NOW)),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn an_unconfigured_token_refuses_everything() {
        let g = InternalGate {
            expected_token: "",
            ..gate()
        };
        let h = valid();
        let p = g
            .admit(
                RequestId::parse("req-42").unwrap(),
                |n| h.get(n).map(String::as_str),
                UnixMillis::from_millis(NOW),
            )
            .unwrap_err();
        assert_eq!(p.status().as_u16(), 500);
    }
}
