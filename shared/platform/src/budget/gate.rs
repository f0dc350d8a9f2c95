//! The gate in front of every internal service: the call's signature,
//! a valid deadline, budget not spent — checked before any tenant-scoped
//! work.

use std::time::Duration;

use crate::budget::context::{BudgetSpent, RequestContext};
use crate::budget::propagation::{PropagationError, ReceivedBudget};
use crate::tenancy::{ActorId, Role, TenantId, TenantScope};
use crate::time::{duration_ms, UnixMillis};
use crate::wire::headers;
use crate::wire::problem::{ErrorCode, Problem};
use crate::wire::request_id::RequestId;
use crate::wire::signature::{CallKey, SignedCall};

/// How long after its deadline a call's signature still verifies: a
/// signed call that arrives late — the clocks of two hosts apart, a slow
/// network — is refused as out of budget (`504`), which its caller
/// understands; one older than this is a replay, answered as an unknown
/// route. The replay window of a captured call is its budget and this.
pub const SIGNATURE_LIFETIME_PAST_DEADLINE: Duration = Duration::from_secs(30);

/// The settings of one internal service's gate.
#[derive(Debug, Clone, Copy)]
pub struct InternalGate<'a> {
    /// The key calls are signed with (from the `internal_token` variable).
    pub key: &'a CallKey,
    /// The component's name, reported as `hop` when it gives up.
    pub hop: &'static str,
    /// Header disagreement above which clock skew is reported.
    pub skew_threshold: Duration,
}

/// A request the gate let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// The request's context, tenant-scoped when the gateway resolved one.
    pub ctx: RequestContext,
    /// Clock disagreement with the sender, when above the threshold.
    pub skew_ms: Option<i64>,
}

impl InternalGate<'_> {
    /// Checks a request `request_id` (decided once by the hop, from its
    /// header) for `method` and `target` (its path and query as it
    /// arrived) that arrived at `now`; `header` looks a header up by
    /// lowercase name. The order matters: who is calling, then whether the
    /// budget is readable, then whether any of it is left.
    ///
    /// A caller whose signature does not verify is answered as an unknown
    /// route is ([`Problem::no_route`]): where the services' routes are
    /// public, a stranger learns nothing of what lies behind them.
    pub fn pass<'h>(
        &self,
        request_id: RequestId,
        method: &'h str,
        target: &'h str,
        header: impl Fn(&str) -> Option<&'h str> + Copy,
        now: UnixMillis,
    ) -> Result<Passed, Problem> {
        let refuse = |p: Problem| p.with_request_id(request_id.as_str());

        let call = SignedCall {
            method,
            target,
            header,
        };
        let expired = header(headers::DEADLINE)
            .and_then(|d| d.trim().parse::<u64>().ok())
            .is_some_and(|deadline| {
                UnixMillis::from_millis(deadline).plus(SIGNATURE_LIFETIME_PAST_DEADLINE) < now
            });
        if expired || !self.key.verifies(&call, header(headers::SIGNATURE)) {
            return Err(refuse(Problem::no_route()));
        }

        let arrival = ReceivedBudget::decode(
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
        let mut ctx = RequestContext::new(request_id, arrival.deadline, now, self.hop);
        if let Some(key) = self.key.cursor_key() {
            ctx = ctx.with_cursor_key(key);
        }
        let ctx = match scope {
            Some(scope) => ctx.with_tenant(scope),
            None => ctx,
        };
        Ok(Passed {
            ctx,
            skew_ms: arrival.skew_ms,
        })
    }
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

    const SECRET: &str = "the-internal-secret-0123456789abcdef";
    const TARGET: &str = "/internal/invoices?limit=5";

    fn key() -> &'static CallKey {
        static KEY: std::sync::OnceLock<CallKey> = std::sync::OnceLock::new();
        KEY.get_or_init(|| CallKey::derive(SECRET))
    }

    fn gate() -> InternalGate<'static> {
        InternalGate {
            key: key(),
            hop: "billing",
            skew_threshold: Duration::from_millis(250),
        }
    }

    fn valid() -> HashMap<&'static str, String> {
        HashMap::from([
            (headers::DEADLINE, (NOW + 500).to_string()),
            (headers::BUDGET_MS, "500".to_owned()),
            (headers::REQUEST_ID, "req-42".to_owned()),
        ])
    }

    /// `h` with the signature of a `GET` of `TARGET` as `h` stands.
    fn signed(mut h: HashMap<&'static str, String>) -> HashMap<&'static str, String> {
        let signature = key()
            .sign(&SignedCall {
                method: "GET",
                target: TARGET,
                header: |n: &str| h.get(n).map(String::as_str),
            })
            .unwrap();
        h.insert(headers::SIGNATURE, signature);
        h
    }

    fn pass(h: &HashMap<&'static str, String>, now: u64) -> Result<Passed, Problem> {
        pass_as(gate(), h, now)
    }

    fn pass_as(
        gate: InternalGate<'_>,
        h: &HashMap<&'static str, String>,
        now: u64,
    ) -> Result<Passed, Problem> {
        gate.pass(
            RequestId::from_header_or_new(h.get(headers::REQUEST_ID).map(String::as_str)),
            "GET",
            TARGET,
            |n| h.get(n).map(String::as_str),
            UnixMillis::from_millis(now),
        )
    }

    #[test]
    fn a_well_formed_internal_request_passes_with_its_budget() {
        let a = pass(&signed(valid()), NOW).unwrap();
        assert_eq!(
            a.ctx.remaining(UnixMillis::from_millis(NOW)),
            Duration::from_millis(500)
        );
        assert_eq!(a.ctx.request_id().as_str(), "req-42");
        assert_eq!(a.ctx.tenant(), None);
        assert_eq!(a.skew_ms, None);
    }

    /// What a caller without a valid signature gets: an unknown route's answer.
    fn is_no_route(p: &Problem) -> bool {
        p.to_json() == Problem::no_route().with_request_id("req-42").to_json()
            && p.status() == Problem::no_route().status()
    }

    #[test]
    fn a_missing_wrong_or_replayed_signature_is_answered_as_an_unknown_route() {
        let mut h = signed(valid());
        h.insert(headers::SIGNATURE, "00".repeat(32));
        assert!(is_no_route(&pass(&h, NOW).unwrap_err()));
        h.remove(headers::SIGNATURE);
        assert!(is_no_route(&pass(&h, NOW).unwrap_err()));
        // Another secret's signature.
        let other = CallKey::derive("another-internal-secret-0123456789ab");
        let other_gate = InternalGate {
            key: &other,
            ..gate()
        };
        assert!(is_no_route(
            &pass_as(other_gate, &signed(valid()), NOW).unwrap_err()
        ));
        // A signature replayed with another tenant, actor or role.
        let mut scoped = valid();
        scoped.insert(headers::TENANT_ID, TENANT.into());
        scoped.insert(headers::ACTOR_ID, ACTOR.into());
        scoped.insert(headers::ACTOR_ROLE, "resident".into());
        let mut promoted = signed(scoped);
        assert!(pass(&promoted, NOW).is_ok());
        promoted.insert(headers::ACTOR_ROLE, "admin".into());
        assert!(is_no_route(&pass(&promoted, NOW).unwrap_err()));
    }

    #[test]
    fn a_replay_on_another_path_or_method_is_answered_as_an_unknown_route() {
        let h = signed(valid());
        for (method, target) in [("GET", "/internal/payments"), ("POST", TARGET)] {
            let p = gate()
                .pass(
                    RequestId::parse("req-42").unwrap(),
                    method,
                    target,
                    |n| h.get(n).map(String::as_str),
                    UnixMillis::from_millis(NOW),
                )
                .unwrap_err();
            assert!(is_no_route(&p), "{method} {target}");
        }
    }

    #[test]
    fn a_signature_past_its_lifetime_is_answered_as_an_unknown_route_and_a_late_one_as_spent() {
        let h = signed(valid());
        let late = NOW + 500 + 1_000;
        assert_eq!(pass(&h, late).unwrap_err().status().as_u16(), 504);
        let lifetime = u64::try_from(SIGNATURE_LIFETIME_PAST_DEADLINE.as_millis()).unwrap();
        assert_eq!(
            pass(&h, NOW + 500 + lifetime)
                .unwrap_err()
                .status()
                .as_u16(),
            504
        );
        assert!(is_no_route(
            &pass(&h, NOW + 500 + lifetime + 1).unwrap_err()
        ));
    }

    #[test]
    fn the_signature_is_checked_before_the_deadline() {
        let mut h = valid();
        h.remove(headers::DEADLINE);
        assert!(is_no_route(&pass(&h, NOW).unwrap_err()));
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
            let p = pass(&signed(h), NOW).unwrap_err();
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
        let p = pass(&signed(valid()), NOW + 500).unwrap_err();
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
        let scope = *pass(&signed(h), NOW).unwrap().ctx.tenant().unwrap();
        assert_eq!(scope.tenant_id.to_string(), TENANT);
        assert_eq!(scope.role, Role::Manager);
    }

    #[test]
    fn partial_or_malformed_tenant_headers_are_refused() {
        let mut h = valid();
        h.insert(headers::TENANT_ID, TENANT.into());
        assert_eq!(pass(&signed(h.clone()), NOW).unwrap_err().status(), 400);
        h.insert(headers::ACTOR_ID, ACTOR.into());
        h.insert(headers::ACTOR_ROLE, "owner".into());
        assert_eq!(pass(&signed(h.clone()), NOW).unwrap_err().status(), 400);
        h.insert(headers::ACTOR_ROLE, "admin".into());
        h.insert(headers::TENANT_ID, "not-a-uuid".into());
        assert_eq!(pass(&signed(h), NOW).unwrap_err().status(), 400);
    }

    #[test]
    fn skew_between_the_headers_is_reported() {
        let mut h = valid();
        h.insert(headers::DEADLINE, (NOW + 5_500).to_string());
        let a = pass(&signed(h), NOW).unwrap();
        assert_eq!(a.skew_ms, Some(5_000));
        assert_eq!(
            a.ctx.remaining(UnixMillis::from_millis(NOW)),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn an_unconfigured_secret_refuses_everything() {
        let none = CallKey::derive("");
        let g = InternalGate {
            key: &none,
            ..gate()
        };
        assert!(is_no_route(&pass_as(g, &signed(valid()), NOW).unwrap_err()));
    }
}
