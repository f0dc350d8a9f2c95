//! The gateway's request flow: budget first, then routing, resolution and
//! forwarding, and the headers every answer carries.

use std::time::Duration;

use meridian_platform::budget::answer_reserve;
use meridian_platform::http::body::BodyError;
use meridian_platform::http::retry::{Jitter, RetryPolicy, Sleeper};
use meridian_platform::http::upstream::Upstream;
use meridian_platform::http::HttpClient;
use meridian_platform::store::idempotency::IdempotencyKey;
use meridian_platform::time::duration_ms;
use meridian_platform::wire::headers;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Clock, Deadline, ErrorCode, Problem, RequestContext, UnixMillis};

use crate::config::GatewayConfig;
use crate::contract;
use crate::edge::{EdgeRequest, EdgeResponse};
use crate::proxy::forwarding_policy;
use crate::routes::{route, Route, Service};
use crate::timing::ServerTiming;

pub use meridian_platform::http::body::MAX_BODY_BYTES;

/// The least budget worth forwarding a request with.
pub const MIN_UPSTREAM_BUDGET: Duration = Duration::from_millis(2);

/// The gateway with its collaborators: the upstream caller (HTTP client,
/// clock, backoff sleeper and jitter). Spin supplies real ones; tests fakes.
pub struct Gateway<H, C, S, J> {
    /// Settings.
    pub config: GatewayConfig,
    /// Calls to the services.
    pub upstream: Upstream<H, C, S, J>,
}

/// What one request learned on the way, reported in headers.
#[derive(Debug, Default)]
pub struct Trace {
    /// Per-hop timings.
    pub timing: ServerTiming,
    /// Upstream attempts made for this request (resolution and forwarding
    /// together), when any call was made.
    pub attempts: Option<u32>,
}

impl Trace {
    /// Adds one call's attempts to the request's total.
    pub fn count_attempts(&mut self, attempts: u32) {
        self.attempts = Some(self.attempts.unwrap_or(0) + attempts);
    }
}

/// An answer that is not a success from the gateway's own flow.
#[derive(Debug)]
pub enum Refusal {
    /// The gateway's own problem.
    Problem(Problem),
    /// A downstream's answer, passed on as it came.
    Upstream(EdgeResponse),
}

impl From<Problem> for Refusal {
    fn from(p: Problem) -> Self {
        Self::Problem(p)
    }
}

/// The budget of one public request.
#[derive(Debug, Clone, Copy)]
pub struct EdgeBudget {
    /// What the client was granted.
    pub granted: Duration,
}

impl EdgeBudget {
    /// The gateway's own 504.
    pub fn exceeded(self) -> Problem {
        Problem::deadline_exceeded("gateway", duration_ms(self.granted))
    }
}

impl<H: HttpClient, C: Clock, S: Sleeper, J: Jitter + Clone> Gateway<H, C, S, J> {
    /// Answers one public request whose body is already in hand (tests,
    /// and callers that read it elsewhere).
    pub async fn handle(&self, request: EdgeRequest) -> EdgeResponse {
        let now = self.upstream.clock.now();
        self.handle_since(request, now, None).await
    }

    /// The instant by which the body of a request that arrived at
    /// `arrived` must be in: its budget's work deadline (the default
    /// budget's when the timeout header is malformed, which is refused once
    /// the body is in).
    pub fn read_deadline(&self, head: &EdgeRequest, arrived: UnixMillis) -> Deadline {
        let budget = &self.config.budget;
        let granted = budget
            .budget_for(head.header(headers::TIMEOUT_MS))
            .unwrap_or_else(|_| budget.default_budget());
        Deadline::after(arrived, granted).child(answer_reserve(granted))
    }

    /// Answers one public request that arrived at `arrived`: the budget
    /// runs from then, so time spent reading the body is spent budget.
    /// `body` is why the body could not be read, if it could not.
    pub async fn handle_since(
        &self,
        request: EdgeRequest,
        arrived: UnixMillis,
        body: Option<BodyError>,
    ) -> EdgeResponse {
        let started = arrived;
        let request_id = RequestId::from_header_or_new(request.header(headers::REQUEST_ID));
        let mut trace = Trace::default();
        let mut response = match self
            .dispatch(&request, &request_id, started, body, &mut trace)
            .await
        {
            Ok(response) | Err(Refusal::Upstream(response)) => response,
            Err(Refusal::Problem(problem)) => problem_response(problem, &request_id),
        };
        response.set_header(headers::REQUEST_ID, request_id.as_str());
        if let Some(attempts) = trace.attempts {
            response.set_header(headers::ATTEMPTS, attempts.to_string());
        }
        let total = self.upstream.clock.now().since(started);
        response.set_header(headers::SERVER_TIMING, trace.timing.header_value(total));
        response
    }

    async fn dispatch(
        &self,
        request: &EdgeRequest,
        request_id: &RequestId,
        started: UnixMillis,
        body: Option<BodyError>,
        trace: &mut Trace,
    ) -> Result<EdgeResponse, Refusal> {
        let route = route(&request.method, &request.path);
        match route {
            Route::Health => return Ok(json(200, &serde_json::json!({"status": "ok"}))),
            Route::Contract => return Ok(contract::response(request.header("if-none-match"))),
            Route::NotFound => return Err(Problem::no_route().into()),
            Route::MethodNotAllowed { allow } => {
                return Err(Problem::method_not_allowed(&request.method, allow).into());
            }
            Route::Ready | Route::CreateTenant | Route::Relay | Route::Tenant { .. } => {}
        }

        // The budget starts before any routing work that costs time.
        let granted = self
            .config
            .budget
            .budget_for(request.header(headers::TIMEOUT_MS))
            .map_err(|e| Problem::new(ErrorCode::InvalidTimeout, e.to_string()))?;
        let budget = EdgeBudget { granted };
        // The whole budget is the gateway's; its calls (see `Upstream::call`)
        // work to the budget less the answer reserve, so the gateway can
        // still answer with its own 504 before the client's budget ends.
        let ctx = RequestContext::new(
            request_id.clone(),
            Deadline::after(started, granted),
            started,
            "gateway",
        );
        let body = body.or_else(|| {
            (request.body.len() > MAX_BODY_BYTES).then_some(BodyError::TooLarge(MAX_BODY_BYTES))
        });
        if let Some(problem) = body.as_ref().and_then(BodyError::to_problem) {
            return Err(problem.into());
        }
        if body == Some(BodyError::Deadline)
            || ctx
                .for_step()
                .ensure(self.upstream.clock.now(), MIN_UPSTREAM_BUDGET)
                .is_err()
        {
            return Err(budget.exceeded().into());
        }
        if !request.body.is_empty() && !declares_json(request.header("content-type")) {
            return Err(Problem::new(
                ErrorCode::UnsupportedMediaType,
                "request bodies must be JSON (content-type: application/json)",
            )
            .into());
        }
        // Reads, and writes the owner can deduplicate by key, may be repeated.
        let policy = forwarding_policy(&request.method, IdempotencyKey::of(request)?.as_ref());

        match route {
            Route::Ready => self.ready(&ctx, budget, trace).await,
            Route::CreateTenant => {
                self.forward(
                    &ctx,
                    Service::Identity,
                    request,
                    &policy,
                    true,
                    budget,
                    trace,
                )
                .await
            }
            Route::Relay => {
                let relay = EdgeRequest {
                    path: "/internal/outbox/relay".into(),
                    query: String::new(),
                    ..request.clone()
                };
                // Delivery is keyed by event id, so a relay run is safe to repeat.
                let policy = RetryPolicy::standard();
                self.forward(&ctx, Service::Billing, &relay, &policy, true, budget, trace)
                    .await
            }
            Route::Tenant { slug, service } => {
                let scope = self
                    .resolve(&ctx, &slug, request.header("authorization"), budget, trace)
                    .await?;
                let ctx = ctx.with_tenant(scope);
                self.forward(&ctx, service, request, &policy, false, budget, trace)
                    .await
            }
            // Answered before the budget was made.
            Route::Health | Route::Contract | Route::NotFound | Route::MethodNotAllowed { .. } => {
                Err(Problem::no_route().into())
            }
        }
    }
}

/// Whether a body with this `content-type` may be JSON: undeclared, or
/// `application/json` or a `+json` type, with any parameters.
pub fn declares_json(content_type: Option<&str>) -> bool {
    let Some(value) = content_type else {
        return true;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case("json")
            || subtype.len() > 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case("+json"))
}

/// A JSON answer.
pub fn json(status: u16, body: &serde_json::Value) -> EdgeResponse {
    EdgeResponse::json(status, body)
}

/// A problem+json answer carrying the request id.
pub fn problem_response(problem: Problem, request_id: &RequestId) -> EdgeResponse {
    EdgeResponse::problem_for(request_id.as_str(), problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_are_declared_as_json_or_not_at_all() {
        for ok in [
            None,
            Some("application/json"),
            Some("Application/JSON; charset=utf-8"),
            Some("application/merge-patch+json"),
        ] {
            assert!(declares_json(ok), "{ok:?}");
        }
        for refused in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonp"),
            Some("application/+json"),
            Some("json"),
            Some(""),
        ] {
            assert!(!declares_json(refused), "{refused:?}");
        }
    }
}
