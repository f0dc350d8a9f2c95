//! The gateway's request flow: budget first, then routing, resolution and
//! forwarding, and the headers every answer carries.

use meridian_platform::budget::context::HopBudget;
use meridian_platform::budget::{request_start, steps};
use meridian_platform::http::body::BodyError;
use meridian_platform::http::idempotency;
use meridian_platform::http::pipeline::{self, Hop, InHand};
use meridian_platform::http::prelude::*;
use meridian_platform::http::request_line::{RequestLine, Served};
use meridian_platform::http::retry::Jitter;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::log::journal;
use meridian_platform::service::Answer;
use meridian_platform::wire::headers;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Clock, Deadline, ErrorCode, Problem, RequestContext, UnixMillis};

use crate::config::GatewayConfig;
use crate::contract;
use crate::edge::declares_json;
use crate::exchange::{Exchange, Trace};
use crate::forward::forwarding_policy;
use crate::outcome::Refusal;
use crate::routes::{self, route, Route, Work};

use meridian_platform::http::body::MAX_REQUEST_BODY_BYTES;

/// The gateway with its settings and what its calls run on: Spin's in the
/// component, fakes in tests.
pub struct Gateway<E: Calls> {
    /// Settings.
    pub config: GatewayConfig,
    /// Calls to the services.
    pub upstream: Upstream<E>,
}

/// When a request arrived and the budget it gets: decided once from its
/// head, before its body is read ([`Gateway::arrive`]), and handed on.
#[derive(Debug, Clone)]
pub struct Arrival {
    /// When it arrived.
    pub at: UnixMillis,
    /// The gateway's budget from then (its timeout header's, capped, or
    /// the default); or why the header is refused.
    budget: Result<HopBudget, Problem>,
}

/// The gateway as a hop of the one pipeline, for a request that arrived
/// `at` (in the component, the clock read before the configuration, so
/// reading it spends the budget too): its arrival decided on the head,
/// the body read by its budget's work deadline, then answered.
pub struct EdgeHop<'g, E: Calls> {
    /// The gateway.
    pub gateway: &'g Gateway<E>,
    /// When the request arrived.
    pub at: UnixMillis,
}

impl<E: Calls> Hop for EdgeHop<'_, E> {
    type Admitted = Arrival;

    /// Every request goes on: the gateway answers even a refusal with
    /// its headers and log line, once the body is in or given up.
    fn admit(&self, head: &Request) -> pipeline::Admission<Arrival> {
        let arrival = self.gateway.arrive(head, self.at);
        pipeline::Admission::Admitted {
            read_until: self.gateway.read_deadline(&arrival),
            admitted: arrival,
        }
    }

    async fn serve(
        &self,
        arrival: Arrival,
        request: Request,
        unread: Option<BodyError>,
    ) -> Answer<'_> {
        let (response, ended) = self.gateway.handle_since(request, arrival, unread).await;
        match ended {
            // What the throttle learns is written once the answer has gone:
            // the client does not wait for the key-value writes.
            Some(ended) => Answer::then(response, async move { self.gateway.learn(ended) }),
            None => Answer::from(response),
        }
    }
}

/// How a request the throttle let through ended, for the throttle to
/// learn from after the answer has gone.
#[derive(Debug)]
pub struct Ended {
    /// The route's key ([`crate::routes::route_key`]).
    route: String,
    /// The tenant's slug, when identity vouched for the caller there: only
    /// then is the tenant's own window written.
    tenant: Option<String>,
    /// When it was answered, and how long it took.
    at: UnixMillis,
    took: std::time::Duration,
    /// Whether it finished in time.
    finished: bool,
    /// The sampling draw for the route's window.
    roll: u64,
}

/// What the gateway made of a request before any call.
enum Prepared {
    /// Answered by the gateway alone, before any budget was made.
    Answered(Response),
    /// To be served under `ctx`, forwarded (if it is) with `policy`.
    Serve {
        route: Work,
        ctx: RequestContext,
        policy: RetryPolicy,
    },
}

impl<E: Calls> Gateway<E> {
    /// Answers one public request whose body is already in hand (tests,
    /// and callers that read it elsewhere), through the same pipeline as
    /// the component's entry.
    pub async fn handle(&self, mut request: Request) -> Response {
        let hop = EdgeHop {
            gateway: self,
            at: self.upstream.clock.now(),
        };
        let body = InHand(std::mem::take(request.body_mut()));
        pipeline::run(&hop, request, body).await.finish().await
    }

    /// The request's arrival, decided once from its head: when it arrived
    /// (`now`, or a trusted front proxy's earlier `X-Request-Start` when
    /// the gateway is configured to trust one: time queued before the
    /// gateway ran then counts), and the budget its timeout header asks
    /// for.
    pub fn arrive(&self, head: &Request, now: UnixMillis) -> Arrival {
        let at = match self.config.trust_request_start {
            false => now,
            true => head
                .header(request_start::X_REQUEST_START)
                .and_then(|raw| request_start::parse(raw, now, self.config.budget.max_budget()))
                .unwrap_or(now),
        };
        let budget = self
            .config
            .budget
            .budget_for(head.header(headers::TIMEOUT_MS))
            .map(|granted| edge_budget(at, granted))
            .map_err(|e| Problem::new(ErrorCode::InvalidTimeout, e.to_string()));
        Arrival { at, budget }
    }

    /// The instant by which the body must be in: its budget's work
    /// deadline (the default budget's when the timeout header is
    /// malformed, which is refused once the body is in).
    pub fn read_deadline(&self, arrival: &Arrival) -> Deadline {
        match &arrival.budget {
            Ok(budget) => budget.work_deadline(),
            Err(_) => edge_budget(arrival.at, self.config.budget.default_budget()).work_deadline(),
        }
    }

    /// Answers one public request as of its `arrival`: the budget runs
    /// from then, so time spent reading the body is spent budget.
    /// `body` is why the body could not be read, if it could not.
    pub async fn handle_since(
        &self,
        request: Request,
        arrival: Arrival,
        body: Option<BodyError>,
    ) -> (Response, Option<Ended>) {
        let arrived = arrival.at;
        let request_id = RequestId::from_header_or_new(request.header(headers::REQUEST_ID));
        journal::begin(
            "gateway",
            request_id.as_str(),
            request.header("traceparent"),
        );
        let mut trace = Trace::default();
        let mut served_ctx = None;
        let outcome = match self.prepare(&request, &request_id, arrival, body) {
            Ok(Prepared::Answered(response)) => Ok(response),
            Ok(Prepared::Serve { route, ctx, policy }) => {
                let mut exchange = Exchange::new(&self.upstream, &self.config, ctx);
                let outcome = exchange.serve(route, &request, &policy).await;
                // Its work is done: a client that sends again as soon as
                // it is answered finds the slot free.
                exchange.leave();
                if matches!(&outcome, Err(Refusal::Problem(p)) if crate::throttle::is_shed(p)) {
                    exchange.hold().await;
                }
                trace = exchange.trace;
                served_ctx = Some(exchange.ctx);
                outcome
            }
            Err(refusal) => Err(refusal),
        };
        let mut response = match outcome {
            Ok(response) => response,
            Err(Refusal::Upstream(response)) => *response,
            Err(Refusal::Problem(problem)) => message::problem_for(request_id.as_str(), problem),
        };
        response.set_header(headers::REQUEST_ID, request_id.as_str());
        let known = trace.caller_known();
        if let Some(attempts) = trace.attempts.filter(|_| known) {
            response.set_header(headers::ATTEMPTS, attempts.to_string());
        }
        if trace.retries_refused > 0 && known {
            response.set_header(headers::RETRIES_REFUSED, trace.retries_refused.to_string());
        }
        // A tenant's rate figures are told only to a caller identity
        // vouched for: a stranger naming a slug learns nothing of its load.
        if let Some(rate) = trace.rate.as_ref().filter(|_| trace.vouched) {
            crate::rate::set_headers(&mut response, rate);
        }
        let now = self.upstream.clock.now();
        let budget = served_ctx
            .as_ref()
            .map(|ctx| (ctx.budget_at_arrival(), ctx.remaining(now)));
        // Nor the hops' time (a stranger's answer, an unknown route's
        // included: where the services' routes are public, the cloud
        // deployment, a service answers a stranger with exactly that 404,
        // and the two must not be told apart).
        if known {
            let timing = trace.timing.header_value(now.since(arrived), budget);
            response.set_header(headers::SERVER_TIMING, timing);
        }
        let ended = trace.let_through.and_then(|(route, slug)| {
            let ctx = served_ctx.as_ref()?;
            self.ended(ctx, &response, route, slug, now.since(arrived), now)
        });
        request_line(&request, served_ctx.as_ref(), &response, now).emit();
        (response, ended)
    }

    /// What the throttle learns of a request it let through on `route`
    /// (of the tenant `slug` names), answered `response` at `now` after
    /// `took`: whether it finished in time — not out of budget, and within
    /// its in-time share of it by our clock (the rest is the margin for
    /// queueing we cannot see) — and its cost. Only what the server's
    /// budget says of the server, so `None` for a 4xx (the client's), for
    /// a request late on a budget too short to keep the answer reserve,
    /// and for a caller nobody vouched for who ran out of a budget shorter
    /// than the default (its own choosing). The tenant's own window only
    /// once identity vouched for the caller there: a name nobody resolves
    /// writes no key, and a tenant's flood is judged as the tenant's.
    fn ended(
        &self,
        ctx: &RequestContext,
        response: &Response,
        route: String,
        slug: Option<String>,
        took: std::time::Duration,
        now: UnixMillis,
    ) -> Option<Ended> {
        if response.status().is_client_error() {
            return None;
        }
        let budget = ctx.budget_at_arrival();
        let finished = response.status() != 504 && took <= self.config.throttle.in_time(budget);
        let vouched = ctx.tenant().is_some();
        let own_choosing = budget < steps::FULL_RESERVE_BUDGET
            || (!vouched && budget < self.config.budget.default_budget());
        if !finished && own_choosing {
            return None;
        }
        Some(Ended {
            route,
            tenant: slug.filter(|_| vouched),
            at: now,
            took,
            finished,
            roll: self.upstream.jitter.clone().next_u64(),
        })
    }

    /// Records in the throttle's windows how a request it let through ended.
    pub fn learn(&self, ended: Ended) {
        let throttle = crate::throttle::throttle(&self.upstream, &self.config, &ended.route);
        match &ended.tenant {
            Some(slug) => throttle.for_tenant(slug),
            None => throttle,
        }
        .record(ended.at, ended.finished, ended.took, ended.roll);
    }

    /// Everything decided before any call: the route, the budget, the body,
    /// and whether forwarding may be repeated.
    fn prepare(
        &self,
        request: &Request,
        request_id: &RequestId,
        arrival: Arrival,
        body: Option<BodyError>,
    ) -> Result<Prepared, Refusal> {
        let route = match route(request.method(), request.path()) {
            Route::Health => {
                let ok = message::json(StatusCode::OK, &serde_json::json!({"status": "ok"}));
                return Ok(Prepared::Answered(ok));
            }
            Route::Contract => {
                let document = contract::response(request.header("if-none-match"));
                return Ok(Prepared::Answered(document));
            }
            Route::NotFound => return Err(Problem::no_route().into()),
            Route::MethodNotAllowed { allow } => {
                return Err(Problem::method_not_allowed(request.method().as_str(), allow).into());
            }
            Route::Work(served) => served,
        };

        // The budget made on arrival, before any routing work that costs time.
        let ctx = RequestContext::of(request_id.clone(), arrival.budget?);
        let body = body.or_else(|| {
            (request.body().len() > MAX_REQUEST_BODY_BYTES)
                .then_some(BodyError::TooLarge(MAX_REQUEST_BODY_BYTES))
        });
        if let Some(problem) = body.as_ref().and_then(BodyError::to_problem) {
            return Err(problem.into());
        }
        let now = self.upstream.clock.now();
        if body == Some(BodyError::Deadline) {
            return Err(Problem::from(ctx.spent()).into());
        }
        ctx.for_step()
            .ensure(now, steps::CALL)
            .map_err(Problem::from)?;
        if !request.body().is_empty() && !declares_json(request.header("content-type")) {
            return Err(Problem::new(
                ErrorCode::UnsupportedMediaType,
                "request bodies must be JSON (content-type: application/json)",
            )
            .into());
        }
        // Reads, and writes the owner can deduplicate by key, may be repeated.
        let policy = forwarding_policy(request.method(), idempotency::key_of(request)?.as_ref());
        Ok(Prepared::Serve { route, ctx, policy })
    }
}

/// The gateway's budget for a request that arrived `at` and was granted
/// `granted`.
fn edge_budget(at: UnixMillis, granted: std::time::Duration) -> HopBudget {
    HopBudget::new(Deadline::after(at, granted), at, "gateway")
}

/// The log line of one public request (`ctx` is `None` for one answered
/// before it had a budget: a probe, a refusal at the edge).
pub fn request_line(
    request: &Request,
    ctx: Option<&RequestContext>,
    response: &Response,
    now: UnixMillis,
) -> RequestLine {
    let served = Served {
        method: request.method().as_str(),
        route: routes::template(request.path()),
    };
    RequestLine::new(served, ctx, response, now)
}
