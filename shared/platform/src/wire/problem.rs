//! RFC 9457 problem details: the one shape every non-2xx answer takes.

use http::StatusCode;
use serde::Serialize;

pub use super::code::ErrorCode;

/// Media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The `code` of a message that is a problem+json answer (`content_type`
/// is its header, `body` its bytes); `None` for any other message.
pub fn code_of(content_type: Option<&str>, body: &[u8]) -> Option<String> {
    if !content_type.is_some_and(|ct| ct.starts_with(PROBLEM_JSON)) {
        return None;
    }
    let body: serde_json::Value = serde_json::from_slice(body).ok()?;
    body.get("code")?.as_str().map(str::to_owned)
}

/// One field that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// The field's name as the client sent it (dotted for nested fields).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A field error.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A problem+json answer. Build with [`Problem::new`] and the `with_*`
/// methods; [`Problem::to_json`] is the only way it leaves the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    code: ErrorCode,
    status: StatusCode,
    detail: String,
    request_id: Option<String>,
    hop: Option<&'static str>,
    budget_ms: Option<u32>,
    errors: Box<[FieldError]>,
    allow: Option<Box<str>>,
    retry_after_s: Option<u32>,
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: String,
    title: &'static str,
    status: u16,
    detail: &'a str,
    code: &'static str,
    request_id: &'a str,
    retryable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    hop: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_ms: Option<u64>,
    #[serde(skip_serializing_if = "<[FieldError]>::is_empty")]
    errors: &'a [FieldError],
}

impl Problem {
    /// A problem with the code's default status.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            status: code.status(),
            detail: detail.into(),
            request_id: None,
            hop: None,
            budget_ms: None,
            errors: Box::default(),
            allow: None,
            retry_after_s: None,
        }
    }

    /// The 503 for a call not made because the downstream's recent calls
    /// mostly failed; `Retry-After` says when to try again (whole seconds,
    /// at least 1).
    pub fn downstream_failing(service: &str, wait: std::time::Duration) -> Self {
        Self {
            retry_after_s: Some(
                u32::try_from(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
                    .unwrap_or(u32::MAX)
                    .max(1),
            ),
            ..Self::new(
                ErrorCode::UpstreamUnavailable,
                format!("the {service} service is failing; it was not called"),
            )
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
        }
    }

    /// The 503 for a request the overload throttle refused before any work.
    pub fn overloaded(chance: f64) -> Self {
        Self {
            retry_after_s: Some(1),
            ..Self::new(
                ErrorCode::Overloaded,
                // A whole percentage: float formatting would add its code to
                // every component.
                format!(
                    "this route's requests are running out of budget; {} % of new ones are refused before any work",
                    (chance * 100.0).round() as u32
                ),
            )
        }
    }

    /// The 429 for a tenant over its request rate; `Retry-After` says
    /// when (whole seconds, at least 1).
    pub fn rate_limited(detail: impl Into<String>, retry_after_s: u32) -> Self {
        Self {
            retry_after_s: Some(retry_after_s.max(1)),
            ..Self::new(ErrorCode::RateLimited, detail)
        }
    }

    /// A `deadline_exceeded` problem naming the hop that gave up and the
    /// budget it had been given.
    pub fn deadline_exceeded(hop: &'static str, budget_ms: u64) -> Self {
        Self::new(
            ErrorCode::DeadlineExceeded,
            format!("the request budget ran out at {hop}"),
        )
        .with_hop(hop)
        .with_budget_ms(budget_ms)
    }

    /// The 404 for a row that does not exist or belongs to another tenant
    /// (the two are indistinguishable by design).
    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("no such {what}"))
    }

    /// The 405 for a known path and a method it does not take; `allow`
    /// lists the methods it does take, sent as the `Allow` header.
    pub fn method_not_allowed(method: &str, allow: impl Into<String>) -> Self {
        let allow: String = allow.into();
        let detail = format!("{method} is not allowed here; use {allow}");
        Self {
            allow: Some(allow.into_boxed_str()),
            ..Self::new(ErrorCode::MethodNotAllowed, detail)
        }
    }

    /// The 404 for a path no route serves.
    pub fn no_route() -> Self {
        Self::new(ErrorCode::NotFound, "no such route")
    }

    /// A `validation_failed` problem listing each bad field.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let detail = match errors.len() {
            1 => "1 field is invalid".to_owned(),
            n => format!("{n} fields are invalid"),
        };
        Self {
            errors: errors.into_boxed_slice(),
            ..Self::new(ErrorCode::ValidationFailed, detail)
        }
    }

    /// Overrides the status (only `upstream_unavailable` has two).
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Sets the request id reported in the body.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Names the component that gave up.
    pub fn with_hop(mut self, hop: &'static str) -> Self {
        self.hop = Some(hop);
        self
    }

    /// Reports the budget the hop had, in milliseconds.
    pub fn with_budget_ms(mut self, budget_ms: u64) -> Self {
        // Budgets are capped far below 2³² ms; kept small so a problem
        // stays cheap to return by value.
        self.budget_ms = Some(u32::try_from(budget_ms).unwrap_or(u32::MAX));
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The human-readable detail.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The methods a 405 says the path takes (the `Allow` header).
    pub fn allow(&self) -> Option<&str> {
        self.allow.as_deref()
    }

    /// Seconds to wait before trying again (the `Retry-After` header).
    pub fn retry_after(&self) -> Option<u32> {
        self.retry_after_s
    }

    /// The field errors of a validation problem.
    pub fn errors(&self) -> &[FieldError] {
        &self.errors
    }

    /// The problem+json body.
    pub fn to_json(&self) -> Vec<u8> {
        let body = Body {
            kind: format!("urn:meridian:problem:{}", self.code.as_str()),
            title: self.code.title(),
            status: self.status.as_u16(),
            detail: &self.detail,
            code: self.code.as_str(),
            request_id: self.request_id.as_deref().unwrap_or(""),
            retryable: self.code.retryable(),
            hop: self.hop,
            budget_ms: self.budget_ms.map(u64::from),
            errors: &self.errors,
        };
        serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec())
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.as_str(),
            self.status.as_u16(),
            self.detail
        )
    }
}

impl std::error::Error for Problem {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::message::ResponseExt;
    use serde_json::Value;

    fn json(p: &Problem) -> Value {
        serde_json::from_slice(&p.to_json()).unwrap()
    }

    #[test]
    fn a_failing_downstream_is_a_503_with_a_retry_after_of_at_least_a_second() {
        let p = Problem::downstream_failing("community", std::time::Duration::from_millis(300));
        assert_eq!((p.status().as_u16(), p.retry_after()), (503, Some(1)));
        let r = crate::http::message::problem_for("req-1", p);
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(json_of(r.body())["code"], "upstream_unavailable");
        let p = Problem::downstream_failing("community", std::time::Duration::from_millis(1_500));
        assert_eq!(p.retry_after(), Some(2));
    }

    #[test]
    fn a_405_names_the_allowed_methods_in_its_header() {
        let p = Problem::method_not_allowed("PUT", "GET, HEAD, POST");
        assert_eq!(
            (p.status().as_u16(), p.code()),
            (405, ErrorCode::MethodNotAllowed)
        );
        let r = crate::http::message::problem_for("req-1", p);
        assert_eq!(r.header("allow"), Some("GET, HEAD, POST"));
        assert_eq!(json_of(r.body())["code"], "method_not_allowed");
    }

    fn json_of(body: &[u8]) -> Value {
        serde_json::from_slice(body).unwrap()
    }

    #[test]
    fn statuses_follow_the_design_table() {
        let expected = [
            ("invalid_request", 400),
            ("invalid_timeout", 400),
            ("invalid_idempotency_key", 400),
            ("unauthorized", 401),
            ("forbidden", 403),
            ("not_found", 404),
            ("tenant_not_found", 404),
            ("method_not_allowed", 405),
            ("conflict", 409),
            ("idempotency_key_in_progress", 409),
            ("too_many_tokens", 409),
            ("payload_too_large", 413),
            ("unsupported_media_type", 415),
            ("validation_failed", 422),
            ("idempotency_key_reused", 422),
            ("rate_limited", 429),
            ("internal", 500),
            ("upstream_unavailable", 502),
            ("overloaded", 503),
            ("storage_unavailable", 503),
            ("deadline_exceeded", 504),
        ];
        for (code, status) in expected {
            let c = ErrorCode::from_wire(code).unwrap_or_else(|| panic!("{code} unknown"));
            assert_eq!(c.status().as_u16(), status, "{code}");
            assert_eq!(c.as_str(), code);
        }
        assert_eq!(ErrorCode::ALL.len(), expected.len());
    }

    #[test]
    fn a_problem_body_has_every_required_member() {
        let p = Problem::new(ErrorCode::Forbidden, "managers only").with_request_id("r-1");
        let v = json(&p);
        assert_eq!(v["type"], "urn:meridian:problem:forbidden");
        assert_eq!(v["title"], "Forbidden");
        assert_eq!(v["status"], 403);
        assert_eq!(v["detail"], "managers only");
        assert_eq!(v["code"], "forbidden");
        assert_eq!(v["request_id"], "r-1");
        assert_eq!(v["retryable"], false);
        assert!(v.get("hop").is_none());
        assert!(v.get("errors").is_none());
    }

    #[test]
    fn deadline_problems_name_the_hop_and_the_budget() {
        let v = json(&Problem::deadline_exceeded("gateway", 400));
        assert_eq!(v["status"], 504);
        assert_eq!(v["code"], "deadline_exceeded");
        assert_eq!(v["hop"], "gateway");
        assert_eq!(v["budget_ms"], 400);
        assert_eq!(v["retryable"], true);
    }

    #[test]
    fn validation_problems_list_each_field() {
        let p = Problem::validation(vec![
            FieldError::new("email", "must contain @"),
            FieldError::new("role", "must be admin, manager or resident"),
        ]);
        let v = json(&p);
        assert_eq!(v["status"], 422);
        assert_eq!(v["errors"][1]["field"], "role");
        assert_eq!(v["detail"], "2 fields are invalid");
    }

    #[test]
    fn upstream_unavailable_may_be_sent_as_503() {
        let p = Problem::new(ErrorCode::UpstreamUnavailable, "not ready")
            .with_status(StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(json(&p)["status"], 503);
    }
}
