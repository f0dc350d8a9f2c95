//! Forwarding a public request to the service that owns it: the last step
//! of the tenant path (`tenant.rs`), and how a service's answer reaches
//! the client.

use meridian_platform::http::idempotency::IdempotencyKey;
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::http::SendError;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::{ErrorCode, Problem, RequestContext};

use crate::config::GatewayConfig;
use crate::edge::{declares_json, forwardable_headers, is_returnable, Credentials};
use crate::outcome::{CallSpent, Refusal};
use crate::routes::Service;

/// The retry policy for a forwarded request: reads, and writes the owning
/// service can deduplicate by `Idempotency-Key`, may be repeated; any
/// other write is sent once.
pub fn forwarding_policy(method: &Method, key: Option<&IdempotencyKey>) -> RetryPolicy {
    if *method == Method::GET || *method == Method::HEAD || key.is_some() {
        RetryPolicy::standard()
    } else {
        RetryPolicy::once()
    }
}

/// What forwarding came to: the answer for the client, and what the call
/// spent (none when its request could not be built).
pub struct Forwarded {
    /// The service's answer as the client may see it, or the refusal.
    pub result: Result<Response, Refusal>,
    /// What the call spent.
    pub call: Option<CallSpent>,
}

/// Step 9 of the tenant path (and the admin's forwarded routes): `request`
/// sent to `service` at `path` (rebuilt by the gateway, never the client's
/// own) with its query and the headers that may travel, under `ctx`'s
/// budget and the caller's retry `policy`, and the answer passed back.
#[allow(clippy::too_many_arguments)]
pub async fn forward<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    ctx: &RequestContext,
    service: Service,
    path: &str,
    request: &Request,
    policy: &RetryPolicy,
    credentials: Credentials,
) -> Forwarded {
    let base = config.base_url(service);
    let url = match request.query() {
        "" => format!("{base}{path}"),
        query => format!("{base}{path}?{query}"),
    };
    let mut outbound =
        match outbound::request(request.method().clone(), &url, request.body().clone()) {
            Ok(outbound) => outbound,
            Err(e) => {
                return Forwarded {
                    result: Err(call_failed(service, e).into()),
                    call: None,
                }
            }
        };
    *outbound.headers_mut() = forwardable_headers(request, credentials);
    let call = upstream.call(ctx, service.name(), policy, outbound).await;
    let spent = CallSpent::of(&call);
    let result = match call.response {
        Ok(answer) => pass_on(service, answer).map_err(Refusal::from),
        Err(e) => Err(call_failed(service, e).into()),
    };
    Forwarded {
        result,
        call: Some(spent),
    }
}

/// A downstream's answer as the client may see it. Meridian's services
/// answer JSON, and problem+json for every failure; anything else (Spin's
/// plain-text 500 for a trap, a proxy's HTML 502) becomes the gateway's own
/// problem, so no raw body ever reaches a client. A success is judged by
/// its declared type, not parsed again: the services write every body with
/// serde_json, so one declared JSON is JSON.
pub fn pass_on(service: Service, upstream: Response) -> Result<Response, Problem> {
    let is_problem = upstream.problem_code().is_some();
    let success = upstream.status().is_success();
    let body_is_json = upstream.body().is_empty()
        || upstream
            .header("content-type")
            .is_some_and(|declared| declares_json(Some(declared)));
    if !(is_problem || (success && body_is_json)) {
        journal::event(Event::Failure {
            what: "reading a service's answer",
            cause: format!(
                "{} answered {} with an unexpected body ({} bytes)",
                service.name(),
                upstream.status(),
                upstream.body().len()
            ),
        });
        return Err(match upstream.status().as_u16() {
            // A proxy or runtime between us and the service gave up: the
            // service could not be reached, and the retry loop is done.
            502..=504 => unreachable(service),
            // A trap or a broken answer: a fault on our side.
            _ => Problem::new(
                ErrorCode::Internal,
                format!("the {} service failed to answer", service.name()),
            ),
        });
    }
    let (mut head, body) = upstream.into_parts();
    head.headers = message::headers_where(&head.headers, is_returnable);
    Ok(Response::from_parts(head, body))
}

/// The problem for a call that got no answer: the budget's 504 when it ran
/// out, a 503 with `Retry-After` when the service's recent calls mostly
/// failed and it was not called, else a 502 whose cause is logged, not sent.
pub fn call_failed(service: Service, error: SendError) -> Problem {
    match error {
        SendError::Deadline(spent) => spent.into(),
        SendError::CircuitOpen(wait) => Problem::downstream_failing(service.name(), wait),
        cause => {
            journal::event(Event::Failure {
                what: "calling a service",
                cause: format!("{} unavailable: {cause}", service.name()),
            });
            unreachable(service)
        }
    }
}

/// The problem for a service the gateway could not get an answer from.
fn unreachable(service: Service) -> Problem {
    Problem::new(
        ErrorCode::UpstreamUnavailable,
        format!("the {} service could not be reached", service.name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, content_type: &str, body: &str) -> Response {
        meridian_testing::http::response(status, &[("content-type", content_type)], body)
    }

    #[test]
    fn json_successes_and_problems_pass_on_unchanged() {
        let ok = pass_on(
            Service::Billing,
            answer(201, "application/json", r#"{"id":1}"#),
        );
        assert_eq!(ok.unwrap().status().as_u16(), 201);
        let problem = answer(
            409,
            "application/problem+json",
            r#"{"code":"conflict","status":409}"#,
        );
        assert_eq!(pass_on(Service::Billing, problem).unwrap().status(), 409);
        let head = pass_on(Service::Billing, answer(200, "application/json", ""));
        assert_eq!(head.unwrap().status().as_u16(), 200);
    }

    #[test]
    fn a_trap_becomes_an_internal_problem() {
        let trap = answer(500, "text/plain", "Internal Server Error");
        let p = pass_on(Service::Community, trap).unwrap_err();
        assert_eq!((p.status().as_u16(), p.code()), (500, ErrorCode::Internal));
    }

    #[test]
    fn a_bare_gateway_failure_becomes_upstream_unavailable() {
        for status in [502, 503, 504] {
            let p =
                pass_on(Service::Identity, answer(status, "text/html", "<h1>x</h1>")).unwrap_err();
            assert_eq!(p.code(), ErrorCode::UpstreamUnavailable, "{status}");
        }
    }

    #[test]
    fn a_success_that_is_not_json_is_not_passed_on() {
        let p = pass_on(Service::Billing, answer(200, "text/plain", "hello")).unwrap_err();
        assert_eq!(p.code(), ErrorCode::Internal);
        // JSON without a problem content type, on a failure, is not ours either.
        let p = pass_on(Service::Billing, answer(404, "application/json", "{}")).unwrap_err();
        assert_eq!(p.code(), ErrorCode::Internal);
    }

    #[test]
    fn reads_are_retry_safe() {
        assert_eq!(
            forwarding_policy(&Method::GET, None),
            RetryPolicy::standard()
        );
        assert_eq!(
            forwarding_policy(&Method::HEAD, None),
            RetryPolicy::standard()
        );
    }

    #[test]
    fn writes_are_retried_only_with_an_idempotency_key() {
        let key = IdempotencyKey::parse("k-1").unwrap();
        for method in [Method::POST, Method::PATCH, Method::DELETE, Method::PUT] {
            assert_eq!(
                forwarding_policy(&method, None),
                RetryPolicy::once(),
                "{method}"
            );
            assert_eq!(
                forwarding_policy(&method, Some(&key)),
                RetryPolicy::standard(),
                "{method}"
            );
        }
    }
}
