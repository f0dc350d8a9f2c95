//! Outbound calls: the client contract that the Spin adapter implements and
//! tests fake, how a call can fail, and the internal headers and
//! signature every call carries.

use std::time::Duration;

use thiserror::Error;

use crate::budget::context::{BudgetSpent, RequestContext};
use crate::budget::propagation::BudgetHeaders;
use crate::http::message::{Request, Response};
use crate::http::retry::Verdict;
use crate::time::UnixMillis;
use crate::wire::headers;
use crate::wire::signature::{CallKey, SignedCall};

/// Why an outbound call produced no response.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SendError {
    /// The budget ran out before or during the call; it was abandoned.
    #[error("{0}")]
    Deadline(BudgetSpent),
    /// The connection could not be made (refused, DNS, TLS).
    #[error("connection failed: {0}")]
    Connect(String),
    /// The connection broke or the response was malformed.
    #[error("transport failed: {0}")]
    Transport(String),
    /// The runtime refused the call (e.g. not in `allowed_outbound_hosts`) or
    /// the request could not be built.
    #[error("request refused: {0}")]
    Refused(String),
    /// Not attempted: the downstream's recent calls mostly failed (the
    /// breaker is open). Try again after this long.
    #[error("not attempted: the downstream is failing (retry after {0:?})")]
    CircuitOpen(Duration),
}

impl From<BudgetSpent> for SendError {
    fn from(spent: BudgetSpent) -> Self {
        Self::Deadline(spent)
    }
}

impl SendError {
    /// A one-word name of the failure, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Deadline(_) => "deadline",
            Self::Connect(_) => "connect",
            Self::Transport(_) => "transport",
            Self::Refused(_) => "refused",
            Self::CircuitOpen(_) => "circuit_open",
        }
    }

    /// Whether the downstream failed (it could not be reached or broke the
    /// answer off), as the failure memory counts it. Running out of budget
    /// is not its failure: on a starved host every call does.
    pub fn is_downstream_failure(&self) -> bool {
        matches!(self, Self::Connect(_) | Self::Transport(_))
    }

    /// Connection and transport failures are transient; running out of
    /// budget or a refused call is final.
    pub fn verdict(&self) -> Verdict {
        match self {
            Self::Connect(_) | Self::Transport(_) => Verdict::Transient { retry_after: None },
            Self::Deadline(_) | Self::Refused(_) | Self::CircuitOpen(_) => Verdict::Final,
        }
    }
}

/// A call to another service: `method` to the absolute `url`, with
/// `body`. Refused, as the runtime refuses a call it cannot make, when
/// `url` is not a URI.
pub fn request(method: http::Method, url: &str, body: Vec<u8>) -> Result<Request, SendError> {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(body)
        .map_err(|e| SendError::Refused(format!("not a URL: {url} ({e})")))
}

/// Sends requests to other services under the request's budget.
// Components are single-threaded, so the futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait HttpClient {
    /// Sends `request` with the context's internal headers, giving up when
    /// the context's deadline passes.
    async fn send(&self, ctx: &RequestContext, request: Request) -> Result<Response, SendError>;
}

/// The internal headers for a call made at `now`: budget, request id and
/// tenant scope. The client sets these last, so no caller-supplied value
/// can override them, and then signs the call ([`signed`]).
pub fn internal_headers(ctx: &RequestContext, now: UnixMillis) -> Vec<(&'static str, String)> {
    let budget = BudgetHeaders::encode(ctx.deadline(), now);
    let mut out = vec![
        (headers::DEADLINE, budget.deadline),
        (headers::BUDGET_MS, budget.budget_ms),
        (headers::REQUEST_ID, ctx.request_id().to_string()),
    ];
    if let Some(scope) = ctx.tenant() {
        out.push((headers::TENANT_ID, scope.tenant_id.to_string()));
        out.push((headers::ACTOR_ID, scope.actor_id.to_string()));
        out.push((headers::ACTOR_ROLE, scope.role.as_str().to_owned()));
    }
    out
}

/// Sets the signature of a call of `method` to `target` (its path and
/// query) whose headers, the internal ones included, are `headers`:
/// nothing is set without a secret, and the callee then refuses the call.
pub fn signed(key: &CallKey, method: &str, target: &str, headers: &mut http::HeaderMap) {
    let signature = key.sign(&SignedCall {
        method,
        target,
        header: |name: &str| headers.get(name).and_then(|v| v.to_str().ok()),
    });
    match signature.and_then(|s| http::HeaderValue::from_str(&s).ok()) {
        Some(value) => headers.insert(headers::SIGNATURE, value),
        None => headers.remove(headers::SIGNATURE),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::deadline::Deadline;
    use crate::tenancy::{Role, TenantScope};
    use crate::wire::request_id::RequestId;
    use std::time::Duration;

    #[test]
    fn internal_headers_carry_budget_and_identity_but_no_secret() {
        let now = UnixMillis::from_millis(10_000);
        let scope = TenantScope {
            tenant_id: "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01".parse().unwrap(),
            actor_id: "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02".parse().unwrap(),
            role: Role::Admin,
        };
        let ctx = RequestContext::new(
            RequestId::parse("r1").unwrap(),
            Deadline::after(now, Duration::from_millis(300)),
            now,
            "gateway",
        )
        .with_tenant(scope);
        let h = internal_headers(&ctx, UnixMillis::from_millis(10_100));
        let get = |n: &str| h.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str());
        assert_eq!(get(headers::DEADLINE), Some("10300"));
        assert_eq!(get(headers::BUDGET_MS), Some("200"));
        assert_eq!(get(headers::REQUEST_ID), Some("r1"));
        assert_eq!(
            get(headers::SIGNATURE),
            None,
            "signed once the head is whole"
        );
        assert_eq!(
            get(headers::TENANT_ID),
            Some("0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01")
        );
        assert_eq!(get(headers::ACTOR_ROLE), Some("admin"));
    }

    #[test]
    fn a_signed_head_verifies_and_an_unsigned_key_clears_a_forged_signature() {
        let key = CallKey::derive("the-internal-secret-0123456789abcdef");
        let mut h = http::HeaderMap::new();
        h.insert(headers::DEADLINE, http::HeaderValue::from_static("10300"));
        signed(&key, "GET", "/health", &mut h);
        let presented = h.get(headers::SIGNATURE).and_then(|v| v.to_str().ok());
        let call = SignedCall {
            method: "GET",
            target: "/health",
            header: |n: &str| h.get(n).and_then(|v| v.to_str().ok()),
        };
        assert!(key.verifies(&call, presented));
        let mut forged = h.clone();
        signed(&CallKey::derive(""), "GET", "/health", &mut forged);
        assert_eq!(forged.get(headers::SIGNATURE), None);
    }

    #[test]
    fn a_call_needs_a_url() {
        let r = request(
            http::Method::GET,
            "http://community.spin.internal/x?y=1",
            Vec::new(),
        );
        assert_eq!(r.unwrap().uri().host(), Some("community.spin.internal"));
        let e = request(http::Method::GET, "http://bad host/", Vec::new()).unwrap_err();
        assert_eq!(e.kind(), "refused");
    }

    #[test]
    fn connection_failures_are_transient_and_deadlines_final() {
        assert!(matches!(
            SendError::Connect("refused".into()).verdict(),
            Verdict::Transient { .. }
        ));
        assert_eq!(
            SendError::from(BudgetSpent {
                hop: "billing",
                budget_ms: 400
            })
            .verdict(),
            Verdict::Final
        );
        assert_eq!(
            SendError::Refused("denied".into()).verdict(),
            Verdict::Final
        );
    }
}
