//! Plain HTTP messages for outbound calls, and the client contract that the
//! Spin adapter implements and tests fake.

use std::time::Duration;

use thiserror::Error;

use crate::budget::context::{BudgetSpent, RequestContext};
use crate::budget::propagation::BudgetHeaders;
use crate::http::retry::Verdict;
use crate::time::UnixMillis;
use crate::wire::headers;
use crate::wire::problem::ErrorCode;

/// A request to another service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundRequest {
    /// Upper-case method name.
    pub method: String,
    /// Absolute URL: `http://host[:port]/path?query`.
    pub url: String,
    /// Headers to send, lowercase names. Internal headers are added by the client.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl OutboundRequest {
    /// A bodiless request.
    pub fn new(method: &str, url: impl Into<String>) -> Self {
        Self {
            method: method.to_ascii_uppercase(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Sets the body.
    pub fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }
}

/// A response from another service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundResponse {
    /// The status code.
    pub status: u16,
    /// Headers, lowercase names.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl OutboundResponse {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        crate::http::message::find_header(&self.headers, name)
    }

    /// The `code` member of a problem+json body, if this is one.
    pub fn problem_code(&self) -> Option<String> {
        crate::wire::problem::code_of(self.header("content-type"), &self.body)
    }

    /// Whether the downstream ran out of the shared budget: its own 504
    /// `deadline_exceeded`. For the caller the budget is spent as well.
    pub fn spent_the_budget(&self) -> bool {
        self.problem_code().as_deref() == Some(ErrorCode::DeadlineExceeded.as_str())
    }
}

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

/// Sends requests to other services under the request's budget.
// Components are single-threaded, so the futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait HttpClient {
    /// Sends `request` with the context's internal headers, giving up when
    /// the context's deadline passes.
    async fn send(
        &self,
        ctx: &RequestContext,
        request: OutboundRequest,
    ) -> Result<OutboundResponse, SendError>;
}

/// The internal headers for a call made at `now`: budget, request id,
/// tenant scope and the internal token. The client sets these last, so no
/// caller-supplied value can override them.
pub fn internal_headers(
    ctx: &RequestContext,
    now: UnixMillis,
    internal_token: &str,
) -> Vec<(&'static str, String)> {
    let budget = BudgetHeaders::encode(ctx.deadline(), now);
    let mut out = vec![
        (headers::DEADLINE, budget.deadline),
        (headers::BUDGET_MS, budget.budget_ms),
        (headers::REQUEST_ID, ctx.request_id().to_string()),
        (headers::INTERNAL_TOKEN, internal_token.to_owned()),
    ];
    if let Some(scope) = ctx.tenant() {
        out.push((headers::TENANT_ID, scope.tenant_id.to_string()));
        out.push((headers::ACTOR_ID, scope.actor_id.to_string()));
        out.push((headers::ACTOR_ROLE, scope.role.as_str().to_owned()));
    }
    out
}

/// An absolute `http(s)` URL split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// `true` for https.
    pub https: bool,
    /// `host[:port]`.
    pub authority: &'a str,
    /// Path and query, at least `/`.
    pub path_and_query: &'a str,
}

/// Splits an absolute URL; `None` unless it is `http://` or `https://` with a host.
pub fn split_url(url: &str) -> Option<UrlParts<'_>> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        (true, url.strip_prefix("https://")?)
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.is_empty() || authority.contains(['@', ' ']) {
        return None;
    }
    Some(UrlParts {
        https,
        authority,
        path_and_query: if path.is_empty() { "/" } else { path },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::deadline::Deadline;
    use crate::tenancy::{Role, TenantScope};
    use crate::wire::request_id::RequestId;
    use std::time::Duration;

    #[test]
    fn urls_split_into_scheme_authority_and_path() {
        assert_eq!(
            split_url("http://community.spin.internal/v1/a/residents?limit=5"),
            Some(UrlParts {
                https: false,
                authority: "community.spin.internal",
                path_and_query: "/v1/a/residents?limit=5"
            })
        );
        assert_eq!(
            split_url("https://127.0.0.1:8080"),
            Some(UrlParts {
                https: true,
                authority: "127.0.0.1:8080",
                path_and_query: "/"
            })
        );
        assert_eq!(split_url("http://h?x=1").unwrap().path_and_query, "?x=1");
        assert_eq!(split_url("ftp://x/"), None);
        assert_eq!(split_url("http:///path"), None);
        assert_eq!(split_url("http://user@host/"), None);
    }

    #[test]
    fn internal_headers_carry_budget_identity_and_token() {
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
        let h = internal_headers(&ctx, UnixMillis::from_millis(10_100), "tok");
        let get = |n: &str| h.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str());
        assert_eq!(get(headers::DEADLINE), Some("10300"));
        assert_eq!(get(headers::BUDGET_MS), Some("200"));
        assert_eq!(get(headers::REQUEST_ID), Some("r1"));
        assert_eq!(get(headers::INTERNAL_TOKEN), Some("tok"));
        assert_eq!(
            get(headers::TENANT_ID),
            Some("0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01")
        );
        assert_eq!(get(headers::ACTOR_ROLE), Some("admin"));
    }

    #[test]
    fn a_problem_code_is_read_only_from_problem_bodies() {
        let mut r = OutboundResponse {
            status: 504,
            headers: vec![("content-type".into(), "application/problem+json".into())],
            body: br#"{"code":"deadline_exceeded"}"#.to_vec(),
        };
        assert_eq!(r.problem_code().as_deref(), Some("deadline_exceeded"));
        assert!(r.spent_the_budget());
        r.headers[0].1 = "text/plain".into();
        assert_eq!(r.problem_code(), None);
        assert!(!r.spent_the_budget());
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
