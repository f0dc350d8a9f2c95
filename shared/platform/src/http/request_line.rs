//! The request's log line: one JSON line per request a component
//! answers, on stderr (Spin keeps each component's stderr and forwards it
//! as log records), built from the request, its answer and what the
//! journal (`crate::log::journal`) recorded while serving it. Ids, codes
//! and durations only — never a token, a body or an email — so a line can
//! be shipped anywhere.

use serde::Serialize;

use crate::log::journal::{self, CallRecord};
use crate::log::write_line;

use crate::budget::context::RequestContext;
use crate::http::message::{Response, ResponseExt};
use crate::time::{duration_ms, Timestamp, UnixMillis};
use crate::wire::problem::code_of;

/// What one component did for one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestLine {
    /// When the answer was ready.
    pub ts: Timestamp,
    /// The component.
    pub service: &'static str,
    /// The request id every hop shares.
    pub request_id: String,
    /// The W3C trace id of the `traceparent` the component received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The tenant, once resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// The method.
    pub method: String,
    /// The route template (`/v1/{tenant}/invoices/{id}`), never the raw path.
    pub route: String,
    /// The answer's status.
    pub status: u16,
    /// The problem's code, for a problem answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The budget the component had on arrival, ms.
    pub budget_ms: u64,
    /// What was left of it at the answer, ms.
    pub left_ms: u64,
    /// Statements run.
    pub statements: u32,
    /// Time inside them, µs.
    pub storage_us: u64,
    /// Statements that started after the request's deadline (see
    /// [`journal::Event::StatementLate`]); left out while none did.
    #[serde(skip_serializing_if = "is_zero")]
    pub late_statements: u32,
    /// Each outbound call: to whom, attempts, status, time.
    pub calls: Vec<CallRecord>,
}

/// The request, as the line needs it beyond what [`journal::begin`] took.
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    /// The method.
    pub method: &'a str,
    /// The route template (see [`route_template`]).
    pub route: &'a str,
}

impl RequestLine {
    /// The line for `response` to `request`, answered under `ctx`: the
    /// component, request id and trace id the request's [`journal`] began
    /// with, and what it counted since; a request answered before it had a
    /// budget (a probe, a refusal at the edge) has no context and logs a
    /// budget of 0.
    pub fn new(
        request: Served<'_>,
        ctx: Option<&RequestContext>,
        response: &Response,
        now: UnixMillis,
    ) -> Self {
        let spent = journal::spent();
        let (service, request_id, trace_id) = journal::scope();
        Self {
            ts: Timestamp::at(now),
            service,
            request_id,
            trace_id,
            tenant_id: ctx
                .and_then(RequestContext::tenant)
                .map(|scope| scope.tenant_id.to_string()),
            method: request.method.to_owned(),
            route: request.route.to_owned(),
            status: response.status().as_u16(),
            code: code_of(response.header("content-type"), response.body()),
            budget_ms: ctx.map_or(0, |ctx| duration_ms(ctx.budget_at_arrival())),
            left_ms: ctx.map_or(0, |ctx| duration_ms(ctx.remaining(now))),
            statements: spent.statements,
            storage_us: u64::try_from(spent.storage.as_micros()).unwrap_or(u64::MAX),
            late_statements: spent.late_statements,
            calls: spent.calls,
        }
    }

    /// The JSON line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Writes the line to stderr.
    pub fn emit(&self) {
        write_line(self.to_json());
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The template `path` matches among `routes`; for any other path (an
/// internal one, or one no route serves), the path with each id-like
/// segment written `{id}` and each segment that is neither a plain word (up
/// to 32 of `a-z 0-9 - _`) nor a `{word}` placeholder written `{?}`, at
/// most 8 segments: a path is the client's text, and a log line carries
/// none of it but route words.
pub fn route_template(known: Option<&str>, path: &str) -> String {
    const MAX_SEGMENTS: usize = 8;
    if let Some(template) = known {
        return template.to_owned();
    }
    let segments = crate::http::routes::segments(path);
    let word = |s: &str| {
        s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    let mut generic: Vec<&str> = segments
        .iter()
        .take(MAX_SEGMENTS)
        .map(|s| {
            let placeholder = s
                .strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .is_some_and(word);
            if crate::ids::parse_id(s).is_some() {
                "{id}"
            } else if word(s) || placeholder {
                s
            } else {
                "{?}"
            }
        })
        .collect();
    if segments.len() > MAX_SEGMENTS {
        generic.push("…");
    }
    format!("/{}", generic.join("/"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::http::routes::Endpoint;
    use crate::tenancy::{Role, TenantScope};
    use crate::wire::problem::{ErrorCode, Problem};
    use crate::wire::request_id::RequestId;
    use crate::Deadline;

    const ROUTES: &[Endpoint<()>] = &[Endpoint::member(
        http::Method::GET,
        "/v1/{tenant}/invoices/{id}",
        (),
    )];

    /// The template `path` is logged as among `ROUTES`.
    fn logged(path: &str) -> String {
        let segments = crate::http::routes::segments(path);
        route_template(crate::http::routes::template(ROUTES, &segments), path)
    }

    #[test]
    fn a_path_no_route_serves_is_logged_without_the_clients_text() {
        assert_eq!(
            logged("/v1/{tenant}/tokens/\u{fffd}=\u{fffd}g"),
            "/v1/{tenant}/tokens/{?}"
        );
        assert_eq!(
            route_template(None, "/v1/acme/residents/DROP TABLE;/x"),
            "/v1/acme/residents/{?}/x"
        );
        let long = format!("/{}", ["a"; 20].join("/"));
        assert_eq!(route_template(None, &long), "/a/a/a/a/a/a/a/a/…");
        let word = "w".repeat(33);
        assert_eq!(route_template(None, &format!("/{word}")), "/{?}");
    }

    #[test]
    fn paths_are_logged_as_templates() {
        let id = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
        assert_eq!(
            logged(&format!("/v1/acme/invoices/{id}")),
            "/v1/{tenant}/invoices/{id}"
        );
        assert_eq!(
            logged(&format!("/internal/residents/{id}")),
            "/internal/residents/{id}"
        );
    }

    #[test]
    fn a_line_carries_ids_codes_and_budget_and_nothing_of_the_body() {
        let start = UnixMillis::from_millis(1_764_428_498_000);
        let ctx = RequestContext::new(
            RequestId::parse("req-1").unwrap(),
            Deadline::after(start, Duration::from_millis(400)),
            start,
            "billing",
        )
        .with_tenant(TenantScope {
            tenant_id: "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01".parse().unwrap(),
            actor_id: "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02".parse().unwrap(),
            role: Role::Admin,
        });
        let response = crate::http::message::problem(
            &ctx,
            Problem::new(ErrorCode::ValidationFailed, "amount_cents: secret detail"),
        );
        let route = logged("/v1/acme/invoices/0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a09");
        let request = Served {
            method: "POST",
            route: &route,
        };
        let now = start.plus(Duration::from_millis(30));
        journal::begin(
            "billing",
            ctx.request_id().as_str(),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        journal::statement(Duration::from_micros(1_250));
        journal::call(CallRecord {
            to: "community".into(),
            method: "GET".into(),
            route: "/internal/residents/{id}".into(),
            attempts: 1,
            status: Some(200),
            took_ms: 4,
        });
        let line: serde_json::Value =
            serde_json::from_str(&RequestLine::new(request, Some(&ctx), &response, now).to_json())
                .unwrap();
        assert_eq!(
            line,
            serde_json::json!({
                "ts": "2025-11-29T15:01:38.030Z", "service": "billing", "request_id": "req-1",
                "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                "tenant_id": "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01",
                "method": "POST", "route": "/v1/{tenant}/invoices/{id}", "status": 422,
                "code": "validation_failed", "budget_ms": 400, "left_ms": 370,
                "statements": 1, "storage_us": 1250,
                "calls": [{"to": "community", "method": "GET",
                    "route": "/internal/residents/{id}", "attempts": 1, "status": 200,
                    "took_ms": 4}],
            })
        );
    }
}
