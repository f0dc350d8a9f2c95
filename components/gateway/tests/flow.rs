//! The gateway's flow over in-memory fakes: a scripted upstream, a manual
//! clock and a sleeper that moves it. Exact and fast; the same rules are
//! checked against a real `spin up` in the end-to-end suite.
// Test helpers may do what the production lints forbid: those are for
// code that reads client bytes (Cargo.toml, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use meridian_platform::http::memory::MemoryConfig;
use std::cell::RefCell;
use std::time::Duration;

use futures::executor::block_on;
use gateway::app::Gateway;
use gateway::config::GatewayConfig;
use meridian_platform::budget::BudgetConfig;
use meridian_platform::http::body::BodyError;
use meridian_platform::http::prelude::*;
use meridian_platform::http::{internal_headers, HttpClient, SendError};
use meridian_platform::limits::{ConcurrencySettings, RateSettings, ThrottleConfig};
use meridian_platform::tenancy::cache::{invalidate, CacheConfig};
use meridian_platform::tenancy::TenantSlug;
use meridian_platform::time::ManualClock;
use meridian_platform::{Clock, RequestContext, UnixMillis};
use meridian_testing::http::{request, target, Build};
use meridian_testing::{upstream, ManualEnv};
use serde_json::Value;

const START: u64 = 1_700_000_000_000;
const TENANT: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
const ACTOR: &str = "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02";
/// The gateway's internal token in these tests: the resolution cache signs with it.
const INTERNAL_TOKEN: &str = "the-gateways-internal-token-for-tests";

/// What the fake upstream does with one request: answer after a delay, or fail.
#[derive(Clone, Debug)]
enum Reply {
    Answer {
        after_ms: u64,
        status: u16,
        body: &'static str,
        problem: bool,
    },
    Fail(SendError),
    Hang,
}

fn ok(body: &'static str) -> Reply {
    Reply::Answer {
        after_ms: 1,
        status: 200,
        body,
        problem: false,
    }
}

fn status(status: u16) -> Reply {
    Reply::Answer {
        after_ms: 1,
        status,
        body: "{}",
        problem: false,
    }
}

fn problem(status: u16, code: &'static str) -> Reply {
    let body: &'static str =
        Box::leak(format!(r#"{{"code":"{code}","status":{status}}}"#).into_boxed_str());
    Reply::Answer {
        after_ms: 1,
        status,
        body,
        problem: true,
    }
}

fn resolved(role: &str) -> Reply {
    let body: &'static str = Box::leak(
        format!(r#"{{"tenant_id":"{TENANT}","actor_id":"{ACTOR}","role":"{role}"}}"#)
            .into_boxed_str(),
    );
    ok(body)
}

/// A request as the upstream saw it, with the headers the real client adds.
#[derive(Debug, Clone)]
struct Seen {
    at: UnixMillis,
    url: String,
    request: Request,
    internal: Vec<(&'static str, String)>,
}

impl Seen {
    fn internal(&self, name: &str) -> Option<&str> {
        self.internal
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct FakeUpstream<'c> {
    clock: &'c ManualClock,
    /// Replies by URL prefix, consumed in order; the last one repeats.
    script: RefCell<Vec<(&'static str, Vec<Reply>)>>,
    seen: RefCell<Vec<Seen>>,
}

impl HttpClient for FakeUpstream<'_> {
    async fn send(&self, ctx: &RequestContext, request: Request) -> Result<Response, SendError> {
        let now = self.clock.now();
        let url = request.uri().to_string();
        self.seen.borrow_mut().push(Seen {
            at: now,
            url: url.clone(),
            internal: internal_headers(ctx, now),
            request: request.clone(),
        });
        let reply = {
            let mut script = self.script.borrow_mut();
            let (_, replies) = script
                .iter_mut()
                .find(|(prefix, _)| url.starts_with(prefix))
                .unwrap_or_else(|| panic!("no script for {url}"));
            if replies.len() > 1 {
                replies.remove(0)
            } else {
                replies[0].clone()
            }
        };
        // Like the real client, the call is raced against the remaining budget.
        let remaining = ctx.remaining(now);
        match reply {
            Reply::Answer { after_ms, .. } if Duration::from_millis(after_ms) > remaining => {
                self.clock.advance(remaining);
                Err(ctx.spent().into())
            }
            Reply::Answer {
                after_ms,
                status,
                body,
                problem,
            } => {
                self.clock.advance(Duration::from_millis(after_ms));
                let content_type = if problem {
                    "application/problem+json"
                } else {
                    "application/json"
                };
                Ok(meridian_testing::http::response(
                    status,
                    &[
                        ("content-type", content_type),
                        ("x-meridian-signature", "leak"),
                        ("connection", "keep-alive"),
                    ],
                    body,
                ))
            }
            Reply::Fail(e) => {
                self.clock.advance(Duration::from_millis(1));
                Err(e)
            }
            Reply::Hang => {
                self.clock.advance(remaining);
                Err(ctx.spent().into())
            }
        }
    }
}

/// The gateway on a manual clock, calling the scripted upstream.
type TestEnv = ManualEnv<FakeUpstream<'static>>;

struct Harness {
    clock: &'static ManualClock,
    gateway: Gateway<TestEnv>,
}

impl Harness {
    fn new(script: Vec<(&'static str, Vec<Reply>)>) -> Self {
        let clock: &'static ManualClock =
            Box::leak(Box::new(ManualClock::new(UnixMillis::from_millis(START))));
        let gateway = Gateway {
            config: GatewayConfig {
                budget: BudgetConfig::new(
                    Duration::from_millis(3_000),
                    Duration::from_millis(10_000),
                ),
                identity_url: "http://identity.test".into(),
                community_url: "http://community.test".into(),
                billing_url: "http://billing.test".into(),
                rates: RateSettings::default(),
                concurrency: ConcurrencySettings::default(),
                throttle: ThrottleConfig::default(),
                count_sample: 1,
                resolution_cache: CacheConfig::default().signed_with(INTERNAL_TOKEN),
                trust_request_start: false,
                admin_token: Some("admin-secret".into()),
            },
            upstream: upstream(
                FakeUpstream {
                    clock,
                    script: RefCell::new(script),
                    seen: RefCell::default(),
                },
                clock,
                MemoryConfig::default(),
            ),
        };
        Self { clock, gateway }
    }

    /// A tenant-scoped setup: identity resolves, the service answers `replies`.
    fn tenant(service_url: &'static str, replies: Vec<Reply>) -> Self {
        Self::new(vec![
            (
                "http://identity.test/internal/resolve",
                vec![resolved("manager")],
            ),
            (service_url, replies),
        ])
    }

    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let mut request = request(method, target(path, query).to_string().as_str());
        for (name, value) in headers {
            request = request.with_header(name, value);
        }
        block_on(self.gateway.handle(request))
    }

    fn seen(&self) -> Vec<Seen> {
        self.gateway.upstream.http.seen.borrow().clone()
    }

    /// Requests the service at `base` received (not what the gateway says).
    fn received_by(&self, base: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.url.starts_with(base))
            .count()
    }

    fn elapsed(&self) -> Duration {
        self.clock.now().since(UnixMillis::from_millis(START))
    }
}

fn body(r: &Response) -> Value {
    serde_json::from_slice(r.body()).unwrap_or(Value::Null)
}

const AUTH: (&str, &str) = ("authorization", "Bearer tok");

#[test]
fn healthz_answers_without_touching_a_service() {
    let h = Harness::new(vec![]);
    let r = h.send("GET", "/healthz", &[]);
    assert_eq!(r.status(), 200);
    assert_eq!(body(&r)["status"], "ok");
    assert!(uuid::Uuid::parse_str(r.header("x-request-id").unwrap()).is_ok());
    assert!(h.seen().is_empty());
}

#[test]
fn a_one_millisecond_budget_is_refused_before_any_call() {
    let h = Harness::tenant("http://community.test", vec![ok("{}")]);
    let r = h.send(
        "GET",
        "/v1/acme/residents",
        &[AUTH, ("x-meridian-timeout-ms", "1")],
    );
    assert_eq!(r.status(), 504);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    let b = body(&r);
    assert_eq!(
        (
            b["code"].as_str(),
            b["hop"].as_str(),
            b["budget_ms"].as_u64()
        ),
        (Some("deadline_exceeded"), Some("gateway"), Some(1))
    );
    assert!(h.seen().is_empty());
}

#[test]
fn a_malformed_timeout_is_a_400_problem() {
    let h = Harness::tenant("http://community.test", vec![ok("{}")]);
    for bad in ["abc", "0", "-1", "1.5"] {
        let r = h.send(
            "GET",
            "/v1/acme/residents",
            &[AUTH, ("x-meridian-timeout-ms", bad)],
        );
        assert_eq!(r.status().as_u16(), 400, "{bad}");
        assert_eq!(body(&r)["code"], "invalid_timeout");
    }
    assert!(h.seen().is_empty());
}

#[test]
fn a_sane_request_id_is_echoed_and_an_insane_one_replaced() {
    let h = Harness::new(vec![]);
    assert_eq!(
        h.send("GET", "/healthz", &[("x-request-id", "abc-123")])
            .header("x-request-id"),
        Some("abc-123")
    );
    let r = h.send("GET", "/healthz", &[("x-request-id", "bad id with spaces")]);
    assert_ne!(r.header("x-request-id"), Some("bad id with spaces"));
}

#[test]
fn the_forwarded_call_carries_the_budget_and_the_real_identity_not_the_spoofed_one() {
    let h = Harness::tenant("http://community.test", vec![ok(r#"{"items":[]}"#)]);
    let r = h.send(
        "GET",
        "/v1/acme/residents?limit=5",
        &[
            AUTH,
            ("x-meridian-timeout-ms", "800"),
            ("x-request-id", "trace-me"),
            ("x-tenant-id", "11111111-1111-4111-8111-111111111111"),
            ("x-actor-role", "admin"),
            ("x-meridian-signature", "guess"),
            ("x-meridian-deadline", "99999999999999"),
        ],
    );
    assert_eq!(r.status(), 200);
    let seen = h.seen();
    assert_eq!(seen.len(), 2, "one resolution and one forwarded call");
    let call = &seen[1];
    assert_eq!(call.url, "http://community.test/v1/acme/residents?limit=5");
    assert!(call.request.headers().keys().all(|n| {
        let n = n.as_str();
        !n.starts_with("x-meridian-")
            && !n.starts_with("x-tenant")
            && !n.starts_with("x-actor")
            && n != "authorization"
    }));
    let deadline: u64 = call
        .internal("x-meridian-deadline")
        .unwrap()
        .parse()
        .unwrap();
    let budget: u64 = call
        .internal("x-meridian-budget-ms")
        .unwrap()
        .parse()
        .unwrap();
    assert!(deadline - call.at.as_millis() <= 800);
    assert!(budget <= 800 && budget > 700, "budget {budget}");
    assert_eq!(call.internal("x-tenant-id"), Some(TENANT));
    assert_eq!(call.internal("x-actor-id"), Some(ACTOR));
    assert_eq!(call.internal("x-actor-role"), Some("manager"));
    assert_eq!(call.internal("x-request-id"), Some("trace-me"));
    // The resolution forwarded the bearer token; nothing else did.
    assert!(seen[0].request.header("authorization") == Some("Bearer tok"));
    // Internal and connection headers from upstream do not reach the client.
    assert_eq!(r.header("x-meridian-signature"), None);
    assert_eq!(r.header("connection"), None);
    assert_eq!(r.header("x-meridian-attempts"), Some("2"));
    let timing = r.header("server-timing").unwrap();
    assert!(
        timing.contains("resolve;dur=")
            && timing.contains("community;dur=")
            && timing.contains("gateway;dur="),
        "{timing}"
    );
    // The budget granted, and what was left of it at the answer: the
    // budget less the gateway's total, on the manual clock.
    let entry = |name: &str| -> u64 {
        timing
            .split(", ")
            .find_map(|e| e.strip_prefix(&format!("{name};dur=")))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {timing}"))
    };
    assert_eq!(entry("budget"), 800, "{timing}");
    assert_eq!(entry("left"), 800 - entry("gateway"), "{timing}");
}

#[test]
fn a_hung_service_gets_a_504_before_the_clients_budget_ends() {
    let h = Harness::tenant("http://community.test", vec![Reply::Hang]);
    let r = h.send(
        "GET",
        "/v1/acme/residents",
        &[AUTH, ("x-meridian-timeout-ms", "400")],
    );
    assert_eq!(r.status(), 504);
    let b = body(&r);
    assert_eq!(
        (b["hop"].as_str(), b["budget_ms"].as_u64()),
        (Some("gateway"), Some(400))
    );
    assert!(
        h.elapsed() < Duration::from_millis(400),
        "answered after {:?}",
        h.elapsed()
    );
    assert!(
        h.elapsed() >= Duration::from_millis(370),
        "gave up early at {:?}",
        h.elapsed()
    );
}

#[test]
fn a_read_is_retried_after_a_transient_failure() {
    let h = Harness::tenant("http://community.test", vec![status(503), ok("{}")]);
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 200);
    assert_eq!(h.received_by("http://community.test"), 2);
    assert_eq!(r.header("x-meridian-attempts"), Some("3"));
}

/// A write billing was sent once (after the resolution: two attempts) and
/// that ended in the gateway's 502.
#[track_caller]
fn assert_forwarded_once_and_failed(h: &Harness, r: &Response) {
    assert_eq!(r.status(), 502);
    assert_eq!(body(r)["code"], "upstream_unavailable");
    assert_eq!(r.header("x-meridian-attempts"), Some("2"));
    assert_eq!(h.received_by("http://billing.test"), 1);
}

#[test]
fn a_write_without_a_key_is_sent_once_and_fails_once() {
    let h = Harness::tenant("http://billing.test", vec![status(503), ok("{}")]);
    let r = h.send("POST", "/v1/acme/invoices", &[AUTH]);
    // A bare 503 is not a Meridian answer: the gateway's own problem.
    assert_forwarded_once_and_failed(&h, &r);
}

#[test]
fn a_service_that_already_retried_below_is_not_retried_again() {
    let h = Harness::tenant(
        "http://billing.test",
        vec![problem(502, "upstream_unavailable"), status(201)],
    );
    let key = ("idempotency-key", "k-1");
    let r = h.send("POST", "/v1/acme/invoices", &[AUTH, key]);
    // One forward: the keyed write was not sent again.
    assert_forwarded_once_and_failed(&h, &r);
}

#[test]
fn a_write_with_an_idempotency_key_may_be_replayed() {
    let h = Harness::tenant(
        "http://billing.test",
        vec![
            Reply::Fail(SendError::Connect("refused".into())),
            status(201),
        ],
    );
    let r = h.send(
        "POST",
        "/v1/acme/invoices",
        &[AUTH, ("idempotency-key", "k-1")],
    );
    assert_eq!(r.status(), 201);
    assert_eq!(h.received_by("http://billing.test"), 2);
    assert_eq!(r.header("x-meridian-attempts"), Some("3"));
    let forwarded = &h.seen()[2].request;
    assert!(forwarded.header("idempotency-key") == Some("k-1"));
}

#[test]
fn a_downstream_deadline_is_passed_on_and_never_retried() {
    let h = Harness::tenant(
        "http://community.test",
        vec![problem(504, "deadline_exceeded"), ok("{}")],
    );
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 504);
    assert_eq!(h.received_by("http://community.test"), 1);
    assert_eq!(r.header("x-meridian-attempts"), Some("2"));
}

#[test]
fn an_unreachable_service_is_a_502_after_three_attempts() {
    let h = Harness::tenant(
        "http://community.test",
        vec![Reply::Fail(SendError::Connect("refused".into()))],
    );
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 502);
    assert_eq!(body(&r)["code"], "upstream_unavailable");
    assert_eq!(body(&r)["retryable"], true);
    assert_eq!(h.received_by("http://community.test"), 3);
    assert_eq!(r.header("x-meridian-attempts"), Some("4"));
}

#[test]
fn identity_refusals_are_passed_on_and_nothing_is_forwarded() {
    let h = Harness::new(vec![(
        "http://identity.test/internal/resolve",
        vec![problem(401, "unauthorized")],
    )]);
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 401);
    assert_eq!(h.seen().len(), 1);
    // A caller identity refused is told nothing of what the call cost.
    for name in [
        "x-meridian-attempts",
        "x-meridian-retries-refused",
        "server-timing",
    ] {
        assert_eq!(r.header(name), None, "{name}");
    }
}

#[test]
fn identity_refusing_the_gateways_signature_is_a_502_not_a_missing_route() {
    // Identity answers a call it cannot verify as an unknown route: for a
    // resolution, that says the deployment's secrets disagree, nothing
    // about the client's tenant or path.
    let h = Harness::new(vec![(
        "http://identity.test/internal/resolve",
        vec![problem(404, "not_found")],
    )]);
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 502);
    assert_eq!(body(&r)["code"], "upstream_unavailable");
    assert_eq!(h.seen().len(), 1, "not retried, nothing forwarded");
    // identity's own 404 for a tenant it does not know is passed on.
    let h = Harness::new(vec![(
        "http://identity.test/internal/resolve",
        vec![problem(404, "tenant_not_found")],
    )]);
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 404);
}

#[test]
fn a_missing_token_or_impossible_slug_is_answered_without_a_call() {
    let h = Harness::new(vec![]);
    assert_eq!(
        body(&h.send("GET", "/v1/acme/residents", &[]))
            .get("code")
            .unwrap(),
        "unauthorized"
    );
    let r = h.send("GET", "/v1/Not_A_Slug/residents", &[AUTH]);
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (404, Some("tenant_not_found"))
    );
    assert!(h.seen().is_empty());
}

#[test]
fn malformed_idempotency_keys_and_unknown_routes_are_refused() {
    let h = Harness::new(vec![]);
    let r = h.send(
        "POST",
        "/v1/acme/invoices",
        &[AUTH, ("idempotency-key", "has space")],
    );
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (400, Some("invalid_idempotency_key"))
    );
    let r = h.send("GET", "/v1/acme/secrets", &[AUTH]);
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (404, Some("not_found"))
    );
    // Nothing of the gateway in it: a service refusing a stranger on the
    // internal prefix answers exactly so (tests/one_origin.rs).
    let names: Vec<&str> = r.headers().keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["content-type", "x-request-id"]);
    let r = h.send("DELETE", "/v1/tenants", &[AUTH]);
    assert_eq!(
        (r.status().as_u16(), r.header("allow")),
        (405, Some("POST"))
    );
    assert!(h.seen().is_empty());
}

#[test]
fn an_oversized_body_is_a_413() {
    let h = Harness::new(vec![]);
    let request = edge_request(
        "POST",
        "/v1/acme/invoices",
        &[("authorization", "Bearer t")],
    )
    .with_body(vec![b'x'; 2 * 1024 * 1024]);
    let r = block_on(h.gateway.handle(request));
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (413, Some("payload_too_large"))
    );
}

#[test]
fn tenant_creation_goes_to_identity_with_the_admin_credentials() {
    let h = Harness::new(vec![("http://identity.test/v1/tenants", vec![status(201)])]);
    // Without the admin token: refused here, no call.
    for token in ["Bearer admin", "Bearer ", "Basic admin-secret"] {
        let r = h.send("POST", "/v1/tenants", &[("authorization", token)]);
        assert_eq!(r.status(), 401, "{token}");
    }
    assert!(h.seen().is_empty());
    let r = h.send(
        "POST",
        "/v1/tenants",
        &[("authorization", "Bearer admin-secret")],
    );
    assert_eq!(r.status(), 201);
    let seen = h.seen();
    assert!(seen[0].request.header("authorization") == Some("Bearer admin-secret"));
    assert_eq!(seen[0].internal("x-tenant-id"), None);
}

#[test]
fn readyz_reports_every_service() {
    let h = Harness::new(vec![
        ("http://identity.test/health", vec![ok("{}")]),
        ("http://community.test/health", vec![ok("{}")]),
        ("http://billing.test/health", vec![ok("{}")]),
    ]);
    let r = h.send("GET", "/readyz", &[]);
    assert_eq!(r.status(), 200);
    assert_eq!(body(&r)["checks"]["billing"], "ok");
}

#[test]
fn readyz_names_a_failing_service() {
    let h = Harness::new(vec![
        ("http://identity.test/health", vec![ok("{}")]),
        (
            "http://community.test/health",
            vec![Reply::Fail(SendError::Connect("refused".into()))],
        ),
        ("http://billing.test/health", vec![ok("{}")]),
    ]);
    let r = h.send("GET", "/readyz", &[]);
    assert_eq!(r.status(), 503);
    assert!(body(&r)["detail"].as_str().unwrap().contains("community"));
}

#[test]
fn migrate_takes_the_admin_token_and_asks_every_service() {
    let h = Harness::new(vec![
        (
            "http://identity.test/migrate",
            vec![ok(r#"{"service":"identity","applied":[1,3]}"#)],
        ),
        (
            "http://community.test/migrate",
            vec![
                problem(500, "internal"),
                ok(r#"{"service":"community","applied":[]}"#),
            ],
        ),
        (
            "http://billing.test/migrate",
            vec![ok(r#"{"service":"billing","applied":[7]}"#)],
        ),
    ]);
    // Without the admin token: refused here, no call.
    for token in [None, Some("Bearer admin"), Some("Bearer tok")] {
        let headers: Vec<(&str, &str)> = token.map(|t| ("authorization", t)).into_iter().collect();
        let r = h.send("POST", "/ops/migrate", &headers);
        assert_eq!(r.status(), 401, "{token:?}");
    }
    assert!(h.seen().is_empty());
    let admin = [("authorization", "Bearer admin-secret")];
    let r = h.send("POST", "/ops/migrate", &admin);
    assert_eq!(r.status(), 503, "{}", body(&r));
    assert!(
        body(&r)["detail"]
            .as_str()
            .unwrap()
            .contains("community (status 500)"),
        "{}",
        body(&r)
    );
    let r = h.send("POST", "/ops/migrate", &admin);
    assert_eq!(r.status(), 200, "{}", body(&r));
    assert_eq!(
        body(&r),
        serde_json::json!({"status": "current", "services": {
            "identity": {"applied": [1, 3]},
            "community": {"applied": []},
            "billing": {"applied": [7]},
        }})
    );
    let mut calls: Vec<String> = h
        .seen()
        .iter()
        .map(|s| format!("{} {}", s.request.method(), s.url))
        .collect();
    calls.sort();
    assert_eq!(
        calls,
        [
            "POST http://billing.test/migrate",
            "POST http://billing.test/migrate",
            "POST http://community.test/migrate",
            "POST http://community.test/migrate",
            "POST http://identity.test/migrate",
            "POST http://identity.test/migrate",
        ],
        "each service once a call; a 500 is not retried"
    );
    assert_eq!(h.send("GET", "/ops/migrate", &admin).status(), 405);
}

#[test]
fn tenant_resolution_is_retried_within_the_same_budget() {
    let h = Harness::new(vec![
        (
            "http://identity.test/internal/resolve",
            vec![status(503), resolved("admin")],
        ),
        ("http://community.test", vec![ok("{}")]),
    ]);
    let r = h.send(
        "GET",
        "/v1/acme/residents",
        &[AUTH, ("x-meridian-timeout-ms", "500")],
    );
    assert_eq!(r.status(), 200);
    let seen = h.seen();
    assert_eq!(seen.len(), 3, "two resolution attempts, one forwarded call");
    // The forwarded call spends what the resolution left, not a fresh budget.
    let first_deadline = seen[0].internal("x-meridian-deadline").unwrap();
    assert_eq!(
        seen[2].internal("x-meridian-deadline"),
        Some(first_deadline)
    );
    let left: u64 = seen[2]
        .internal("x-meridian-budget-ms")
        .unwrap()
        .parse()
        .unwrap();
    // Less than a first call would get: the retry spent some of it.
    let first = 500 - meridian_platform::budget::steps::ANSWER_COST.as_millis() as u64;
    assert!(left < first, "budget left {left}");
}

fn edge_request(method: &str, path: &str, headers: &[(&str, &str)]) -> Request {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    headers.iter().fold(
        request(method, target(path, query).to_string().as_str()),
        |r, (n, v)| r.with_header(n, v),
    )
}

#[test]
fn the_budget_runs_from_arrival_so_a_slow_upload_spends_it() {
    let h = Harness::tenant("http://billing.test", vec![status(201)]);
    let arrived = h.clock.now();
    // The body took 393 of the 400 ms to arrive: too little is left to
    // forward once the answer reserve is kept.
    h.clock.advance(Duration::from_millis(393));
    let request = edge_request(
        "POST",
        "/v1/acme/invoices",
        &[AUTH, ("x-meridian-timeout-ms", "400")],
    );
    let arrival = h.gateway.arrive(&request, arrived);
    let (r, _) = block_on(h.gateway.handle_since(request, arrival, None));
    assert_eq!(r.status(), 504);
    assert_eq!(body(&r)["hop"], "gateway");
    assert_eq!(body(&r)["budget_ms"], 400);
    assert!(h.seen().is_empty(), "nothing was forwarded");
}

#[test]
fn a_body_that_could_not_be_read_in_time_or_in_size_is_refused_before_any_call() {
    let h = Harness::tenant("http://billing.test", vec![status(201)]);
    let now = h.clock.now();
    let post = || edge_request("POST", "/v1/acme/invoices", &[AUTH]);
    let now = h.gateway.arrive(&post(), now);
    let (r, _) = block_on(
        h.gateway
            .handle_since(post(), now.clone(), Some(BodyError::Deadline)),
    );
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (504, Some("deadline_exceeded"))
    );
    let too_large = BodyError::TooLarge(meridian_platform::http::body::MAX_REQUEST_BODY_BYTES);
    let (r, _) = block_on(h.gateway.handle_since(post(), now.clone(), Some(too_large)));
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (413, Some("payload_too_large"))
    );
    let broken = BodyError::Broken("reset".into());
    let (r, _) = block_on(h.gateway.handle_since(post(), now, Some(broken)));
    assert_eq!(r.status(), 400);
    assert!(r.header("x-request-id").is_some());
    assert!(h.seen().is_empty());
}

#[test]
fn the_body_must_be_in_by_the_work_deadline_of_the_asked_budget() {
    let h = Harness::new(vec![]);
    let at = UnixMillis::from_millis(START);
    let asked = edge_request(
        "POST",
        "/v1/acme/invoices",
        &[("x-meridian-timeout-ms", "400")],
    );
    let reserve = meridian_platform::budget::steps::ANSWER_COST.as_millis() as u64;
    assert_eq!(
        h.gateway.read_deadline(&h.gateway.arrive(&asked, at)),
        meridian_platform::Deadline::at(UnixMillis::from_millis(START + 400 - reserve))
    );
    // A malformed budget is refused later; the body is read on the default.
    let malformed = edge_request(
        "POST",
        "/v1/acme/invoices",
        &[("x-meridian-timeout-ms", "soon")],
    );
    assert_eq!(
        h.gateway.read_deadline(&h.gateway.arrive(&malformed, at)),
        meridian_platform::Deadline::at(UnixMillis::from_millis(START + 3_000 - reserve))
    );
}

/// Any one answer (or failure) a service may give.
fn any_reply(resolution: bool) -> impl proptest::strategy::Strategy<Value = Reply> {
    use proptest::prelude::*;
    let success = if resolution {
        resolved("manager")
    } else {
        ok("{}")
    };
    prop_oneof![
        Just(success),
        Just(status(503)),
        Just(status(502)),
        Just(status(504)),
        Just(problem(502, "upstream_unavailable")),
        Just(problem(503, "upstream_unavailable")),
        Just(problem(504, "deadline_exceeded")),
        Just(problem(500, "internal")),
        Just(Reply::Fail(SendError::Connect("refused".into()))),
        Just(Reply::Fail(SendError::Transport("reset".into()))),
        Just(Reply::Hang),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// DESIGN's one-layer rule as a property: whatever each service does,
    /// per public request each receives at most 3 attempts, an unkeyed
    /// write at most 1, and `x-meridian-attempts` counts exactly what was
    /// sent, for a caller identity vouched for.
    #[test]
    fn whatever_the_faults_each_service_receives_at_most_three_attempts(
        resolution in proptest::collection::vec(any_reply(true), 1..5),
        service in proptest::collection::vec(any_reply(false), 1..5),
        method in proptest::sample::select(vec!["GET", "POST", "PATCH"]),
        keyed in proptest::bool::ANY,
    ) {
        // A service that answers `upstream_unavailable` has retried below.
        let already_retried = matches!(
            &service[0],
            Reply::Answer { problem: true, body, .. } if body.contains("upstream_unavailable")
        );
        let h = Harness::new(vec![
            ("http://identity.test/internal/resolve", resolution),
            ("http://billing.test", service),
        ]);
        let mut headers = vec![AUTH];
        if keyed {
            headers.push(("idempotency-key", "prop-1"));
        }
        let r = h.send(method, "/v1/acme/invoices", &headers);
        let seen = h.seen();
        let at = |prefix: &str| seen.iter().filter(|s| s.url.starts_with(prefix)).count();
        let (identity, billing) = (at("http://identity.test"), at("http://billing.test"));
        proptest::prop_assert!(identity <= 3, "identity got {identity}");
        proptest::prop_assert!(billing <= 3, "billing got {billing}");
        if method != "GET" && !keyed {
            proptest::prop_assert!(billing <= 1, "an unkeyed write was repeated: {billing}");
        }
        if already_retried {
            proptest::prop_assert!(billing <= 1, "retried a final upstream_unavailable: {billing}");
        }
        // Told exactly, to a caller identity vouched for (billing was
        // reached only then); a caller it never resolved is told nothing.
        let told = r.header("x-meridian-attempts").map(|a| a.parse::<usize>().unwrap());
        proptest::prop_assert!(told.is_none() || told == Some(seen.len()), "{told:?}");
        if billing > 0 {
            proptest::prop_assert_eq!(told, Some(seen.len()));
        }
        // Never past the budget (3 s by default), and every failure is a problem.
        proptest::prop_assert!(h.elapsed() <= Duration::from_millis(3_000));
        if r.status().as_u16() >= 400 {
            proptest::prop_assert_eq!(r.header("content-type"), Some("application/problem+json"));
        }
    }
}

/// Header values a client may send that are valid UTF-8 but not ASCII
/// (Spin hands those to the guest; bytes that are not UTF-8 it refuses
/// itself, see the README's limits).
const NON_ASCII: [&str; 6] = [
    "application/a€json",
    "€",
    "application/json; charset=€",
    "Bearer tök",
    "ü+json/x",
    "日本語",
];

#[test]
fn a_non_ascii_header_value_is_a_clean_answer_never_a_panic() {
    for name in [
        "content-type",
        "authorization",
        "x-meridian-timeout-ms",
        "x-request-id",
        "idempotency-key",
        "if-none-match",
        "traceparent",
        "x-forwarded-for",
    ] {
        for value in NON_ASCII {
            let h = Harness::tenant("http://community.test/", vec![status(201)]);
            let mut request = edge_request("POST", "/v1/acme/residents", &[AUTH]);
            if name == "authorization" {
                request.headers_mut().remove("authorization");
            }
            let request = request
                .with_header(name, value)
                .with_body(br#"{"name":"A","unit":"1"}"#.to_vec());
            let r = block_on(h.gateway.handle(request));
            let id = r.header("x-request-id").map(str::to_owned);
            assert!(id.is_some(), "{name}: {value}: no request id");
            if r.status().as_u16() >= 400 {
                assert!(r.status().as_u16() < 500, "{name}: {value}: {}", r.status());
                let problem = body(&r);
                assert_eq!(problem["request_id"].as_str(), id.as_deref(), "{name}");
                assert!(problem["code"].is_string(), "{name}: {value}");
            }
        }
    }
}

#[test]
fn a_body_declared_as_a_non_ascii_media_type_is_a_415() {
    let h = Harness::new(vec![(
        "http://identity.test/internal/resolve",
        vec![resolved("manager")],
    )]);
    let request = edge_request(
        "POST",
        "/v1/acme/residents",
        &[AUTH, ("content-type", "application/a€json")],
    )
    .with_body(br#"{"name":"A","unit":"1"}"#.to_vec());
    let r = block_on(h.gateway.handle(request));
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    assert!(h.seen().is_empty(), "refused before any call");
}

/// A tenant's 429: `rate_limited`, retryable, try again in a second.
#[track_caller]
fn assert_rate_limited(r: &Response) {
    assert_eq!(
        (r.status().as_u16(), body(r)["code"].as_str()),
        (429, Some("rate_limited"))
    );
    assert_eq!(body(r)["retryable"], true);
    assert_eq!(r.header("retry-after"), Some("1"));
}

/// A harness whose tenants may make `quota` requests in any second.
fn limited(quota: u64, replies: Vec<Reply>) -> Harness {
    let mut h = Harness::new(vec![
        (
            "http://identity.test/internal/resolve",
            vec![resolved("manager")],
        ),
        ("http://community.test/", replies),
    ]);
    h.gateway.config.rates = RateSettings::parse(Some(&format!("{quota}/1s"))).unwrap();
    h
}

#[test]
fn a_tenant_over_its_rate_gets_a_429_and_its_credential_no_further_call() {
    let h = limited(2, vec![ok("{}")]);
    for left in [1, 0] {
        let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
        assert_eq!(r.status(), 200);
        assert_eq!(r.header("ratelimit-policy"), Some("\"tenant\";q=2;w=1"));
        assert_eq!(
            r.header("ratelimit"),
            Some(format!("\"tenant\";r={left};t=1").as_str())
        );
    }
    // Over the rate: judged once identity vouched for the caller (here
    // from the resolution cache, nothing forwarded), and held before it is sent, so a
    // client that ignores Retry-After cannot turn refusals into a flood.
    let calls = h.seen().len();
    let before = h.elapsed();
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_rate_limited(&r);
    assert_eq!(r.header("ratelimit"), Some("\"tenant\";r=0;t=1"));
    assert_eq!(h.seen().len(), calls, "its resolution remembered: no call");
    let held = h.elapsed() - before;
    assert!(held >= Duration::from_secs(1), "held {held:?}");
    // The same credential within the window: refused before any call.
    let before = h.elapsed();
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 429);
    assert_eq!(h.seen().len(), calls, "no call at all");
    assert!(h.elapsed() - before <= Duration::from_secs(1));
    // Another tenant has its own quota.
    assert_eq!(h.send("GET", "/v1/other/residents", &[AUTH]).status(), 200);
}

/// Stripe's second limiter: past the tenant's limit of requests in
/// progress (here two, held by other instances), a request is refused
/// before its forward, held like a rate 429; one ending lets the next in,
/// and another tenant is not touched.
#[test]
fn a_tenant_at_its_limit_of_requests_in_progress_gets_a_429_before_any_forward() {
    let mut h = limited(1_000, vec![ok("{}")]);
    h.gateway.config.concurrency = ConcurrencySettings::parse(Some("2")).unwrap();
    let in_progress =
        || gateway::concurrency::limiter(&h.gateway.upstream, &h.gateway.config, "acme");
    let now = || h.gateway.upstream.clock.now();
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    // Its slot was left after the answer: two more fit, and no third.
    let mut elsewhere: Vec<_> = (0..2)
        .map(|_| in_progress().enter(now(), 2, None).unwrap().unwrap())
        .collect();
    assert!(in_progress().enter(now(), 2, None).is_err());
    let forwards = h.received_by("http://community.test/");
    let before = h.elapsed();
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_rate_limited(&r);
    let detail = body(&r)["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.contains("2 requests in progress"), "{detail}");
    assert_eq!(
        h.received_by("http://community.test/"),
        forwards,
        "no forward"
    );
    assert!(h.elapsed() - before >= Duration::from_secs(1), "held");
    assert_eq!(h.send("GET", "/v1/other/residents", &[AUTH]).status(), 200);
    // One ended: the next is let in.
    in_progress().leave(elsewhere.pop().unwrap(), now());
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
}

/// A caller identity vouched for (its resolution remembered) whose tenant
/// has no slot free is refused before the throttle with nothing written: no
/// count of its rate spent, no slot taken and given back. A caller nobody
/// vouched for is judged after its resolution, as before, so a slug says
/// nothing about its tenant's load.
#[test]
fn a_vouched_caller_whose_tenant_has_no_slot_free_is_refused_with_nothing_written() {
    use meridian_platform::counts::Counters;
    let mut h = limited(1_000, vec![ok("{}")]);
    h.gateway.config.concurrency = ConcurrencySettings::parse(Some("1")).unwrap();
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    let (upstream, now) = (&h.gateway.upstream, h.gateway.upstream.clock.now());
    let elsewhere = gateway::concurrency::limiter(upstream, &h.gateway.config, "acme")
        .enter(now, 1, None)
        .unwrap()
        .unwrap();
    let values = |h: &Harness| {
        let counters = &h.gateway.upstream.counters;
        let keys = counters.keys();
        (keys.clone(), counters.read(&keys).unwrap())
    };
    let before = values(&h);
    let calls = h.seen().len();
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_rate_limited(&r);
    assert_eq!(h.seen().len(), calls, "no call: resolved from the cache");
    assert_eq!(values(&h), before, "nothing written");
    assert_eq!(
        r.header("ratelimit").map(str::to_owned),
        Some("\"tenant\";r=999;t=1".to_owned()),
        "the rate's count is not spent"
    );
    // Not vouched for (nothing remembered): resolved, then refused.
    h.gateway.config.resolution_cache = CacheConfig::parse(Some("off")).unwrap();
    let resolutions = h.received_by(RESOLVE);
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_rate_limited(&r);
    assert_eq!(h.received_by(RESOLVE), resolutions + 1);
    let (upstream, now) = (&h.gateway.upstream, h.gateway.upstream.clock.now());
    gateway::concurrency::limiter(upstream, &h.gateway.config, "acme").leave(elsewhere, now);
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
}

/// An override's concurrency is in force on the tenant's next request,
/// read in the request's one batch read even with the rate limiter off.
#[test]
fn an_overrides_concurrency_applies_and_is_read_ahead_with_the_rate_limiter_off() {
    let mut h = limited(1_000, vec![ok("{}")]);
    h.gateway.config.rates = RateSettings::parse(Some("off")).unwrap();
    // (The throttle off: its windows opened after a held answer read their
    // markers, which is not what is counted here.)
    h.gateway.config.throttle = ThrottleConfig::parse(Some("off")).unwrap();
    let admin = ("authorization", "Bearer admin-secret");
    let put = |body: &str| {
        let request =
            edge_request("PUT", "/ops/tenants/acme/limits", &[admin]).with_body(body.as_bytes());
        block_on(h.gateway.handle(request))
    };
    let r = put(r#"{"quota":5,"window_s":1,"concurrency":0}"#);
    assert_eq!(r.status(), 422);
    assert_eq!(body(&r)["errors"][0]["field"], "concurrency");
    let r = put(r#"{"quota":5,"window_s":1,"concurrency":null}"#);
    assert_eq!(
        (r.status().as_u16(), body(&r)["concurrency"].as_u64()),
        (200, Some(8)),
        "null: the default"
    );
    let r = put(r#"{"quota":5,"window_s":1,"concurrency":1.0}"#);
    assert_eq!(
        (r.status().as_u16(), body(&r)["concurrency"].as_u64()),
        (200, Some(1))
    );
    assert_eq!(body(&r)["concurrency_enabled"], true);
    // Warm: the resolution remembered, the windows open.
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    let in_progress =
        || gateway::concurrency::limiter(&h.gateway.upstream, &h.gateway.config, "acme");
    let now = || h.gateway.upstream.clock.now();
    let elsewhere = in_progress().enter(now(), 5, None).unwrap().unwrap();
    let reads = h.gateway.upstream.counters.reads();
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 429);
    assert_eq!(
        h.gateway.upstream.counters.reads(),
        reads + 1,
        "one batch read"
    );
    in_progress().leave(elsewhere, now());
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
}

#[test]
fn a_caller_without_a_valid_token_is_a_401_whatever_the_tenants_rate() {
    let h = limited(1, vec![ok("{}")]);
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 429);
    // No token: the 401 comes before any look at the tenant's window.
    let r = h.send("GET", "/v1/acme/residents", &[]);
    assert_eq!(r.status(), 401);
}

#[test]
fn a_caller_identity_refuses_spends_no_quota() {
    let mut h = Harness::new(vec![(
        "http://identity.test/internal/resolve",
        vec![problem(401, "unauthorized")],
    )]);
    h.gateway.config.rates = RateSettings::parse(Some("1/1s")).unwrap();
    for _ in 0..5 {
        let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
        assert_eq!(r.status().as_u16(), 401, "never 429: nothing was counted");
    }
}

#[test]
fn the_platform_admin_sets_reads_and_removes_a_tenant_override() {
    let h = limited(1, vec![ok("{}")]);
    let admin = ("authorization", "Bearer admin-secret");
    let send = |method: &str, headers: &[(&str, &str)], body: &str| {
        let request =
            edge_request(method, "/ops/tenants/acme/limits", headers).with_body(body.as_bytes());
        block_on(h.gateway.handle(request))
    };
    assert_eq!(send("GET", &[AUTH], "").status(), 401, "a tenant token");
    assert_eq!(send("GET", &[], "").status(), 401);
    let r = send("GET", &[admin], "");
    assert_eq!(r.status(), 200);
    assert_eq!(body(&r)["source"], "default");
    assert_eq!(body(&r)["quota"], 1);
    let r = send("PUT", &[admin], r#"{"quota":0,"window_s":99999}"#);
    assert_eq!(r.status(), 422);
    let problem = body(&r);
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert_eq!(fields, ["quota", "window_s"]);
    let r = send("PUT", &[admin], r#"{"quota":3,"window_s":1}"#);
    assert_eq!(
        (r.status().as_u16(), body(&r)["source"].as_str()),
        (200, Some("override"))
    );
    // The override is in force: three requests pass where one did.
    for _ in 0..3 {
        assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    }
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 429);
    let r = send("DELETE", &[admin], "");
    assert_eq!(
        (r.status().as_u16(), body(&r)["source"].as_str()),
        (200, Some("default"))
    );
    assert_eq!(
        h.seen().iter().filter(|s| s.url.contains("/ops/")).count(),
        0
    );
}

#[test]
fn a_trusted_front_proxys_arrival_stamp_starts_the_budget() {
    let mut h = Harness::tenant("http://community.test/", vec![ok("{}")]);
    // Queued 200 ms before the gateway ran, with a 100 ms budget.
    let stamp = format!("t={}", START - 200);
    let headers = [
        AUTH,
        ("x-meridian-timeout-ms", "100"),
        ("x-request-start", &stamp),
    ];
    let r = h.send("GET", "/v1/acme/residents", &headers);
    assert_eq!(
        r.status().as_u16(),
        200,
        "not trusted: the gateway's clock starts it"
    );
    h.gateway.config.trust_request_start = true;
    let r = h.send("GET", "/v1/acme/residents", &headers);
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (504, Some("deadline_exceeded"))
    );
    let calls = h.seen().len();
    assert_eq!(h.send("GET", "/v1/acme/residents", &headers).status(), 504);
    assert_eq!(h.seen().len(), calls, "refused before any call");
}

/// A tenant harness whose community answers after `ms`, the throttle over
/// one long window with every request written: the sequential harness's
/// requests all count, as a flood's concurrent ones would.
fn answered_after(ms: u64) -> Harness {
    let reply = Reply::Answer {
        after_ms: ms,
        status: 200,
        body: "{}",
        problem: false,
    };
    let mut h = Harness::tenant("http://community.test/", vec![reply]);
    h.gateway.config.throttle = ThrottleConfig {
        window: Duration::from_secs(60),
        sample: 1,
        ..ThrottleConfig::default()
    };
    h
}

/// A caller's own short budget is its bet, not the server's lateness: a
/// late request on a budget too short to keep the whole answer reserve
/// (`FULL_RESERVE_BUDGET`, 48 ms) moves neither its tenant's window nor
/// the route's, though identity vouched for the caller; one on a longer
/// budget does.
#[test]
fn a_late_request_on_a_budget_too_short_for_the_answer_reserve_moves_no_throttle() {
    let h = answered_after(30);
    let late_keys = |h: &Harness| {
        let keys = h.gateway.upstream.counters.keys();
        keys.into_iter().filter(|k| k.ends_with("/late")).count()
    };
    let with_budget = |ms: &'static str| [AUTH, ("x-meridian-timeout-ms", ms)];
    // Each takes 30 ms or more: past half its 40 ms (answered, or its 504).
    for _ in 0..5 {
        let r = h.send("GET", "/v1/acme/residents", &with_budget("40"));
        assert!(matches!(r.status().as_u16(), 200 | 504), "{}", r.status());
    }
    assert_eq!(late_keys(&h), 0, "the short budgets' lateness was counted");
    let r = h.send("GET", "/v1/acme/residents", &with_budget("50"));
    assert_eq!(r.status(), 200, "answered, past half its budget");
    assert_eq!(late_keys(&h), 2, "the route's window and the tenant's");
}

/// Every read in time, but each near half its budget: a request with less
/// budget left cannot finish within half of it at this concurrency (Little's
/// law), so it meets a refusal chance before any call, although nothing ran
/// out of budget and the proportional throttle alone gives none (the
/// harness draws zero, so any chance above zero refuses).
#[test]
fn past_the_concurrency_that_finishes_in_time_the_excess_is_refused_before_any_call() {
    let h = answered_after(45);
    let within = |ms: &'static str| [AUTH, ("x-meridian-timeout-ms", ms)];
    // 46 ms each (the resolution and the read), in time within 50 ms.
    for _ in 0..31 {
        let r = h.send("GET", "/v1/acme/residents", &within("100"));
        assert_eq!(
            r.status().as_u16(),
            200,
            "in time at this concurrency: admitted"
        );
    }
    // With 50 ms left a request is in time within 25 ms: refused at once.
    for _ in 0..5 {
        let calls = h.seen().len();
        let r = h.send("GET", "/v1/acme/residents", &within("50"));
        assert_eq!(
            (r.status().as_u16(), body(&r)["code"].as_str()),
            (503, Some("overloaded"))
        );
        assert_eq!(h.seen().len(), calls, "refused before any call");
    }
}

/// Another tenant's flood made the route late, so a slug with nothing in
/// its own window meets the route's throttle — unless identity's answer
/// for its caller is remembered (here by another replica): a tenant's
/// first request after a pause is a tenant's caller, not a name nobody
/// resolves, and is not shed for the flood.
#[test]
fn a_vouched_callers_first_request_is_not_shed_for_another_tenants_flood() {
    use meridian_platform::tenancy::cache::ResolutionCache;
    use meridian_platform::tenancy::{Role, TenantScope};
    let mut h = answered_after(80);
    h.gateway.config.rates = RateSettings::parse(Some("off")).unwrap();
    let budget = |token: &'static str| [("authorization", token), ("x-meridian-timeout-ms", "100")];
    // The flood: every request late (80 ms of a 100 ms budget, in time
    // within 50).
    for _ in 0..30 {
        let _ = h.send("GET", "/v1/flood/residents", &budget("Bearer tok"));
    }
    let calls = h.seen().len();
    let r = h.send("GET", "/v1/stranger/residents", &budget("Bearer tok"));
    assert_eq!(
        (r.status().as_u16(), body(&r)["code"].as_str()),
        (503, Some("overloaded")),
        "a slug nobody vouched for meets the route's throttle"
    );
    assert_eq!(h.seen().len(), calls, "refused before any call");
    // Another replica resolved the quiet tenant's caller a moment ago.
    let counters = &h.gateway.upstream.counters;
    let cache = ResolutionCache::new(counters, h.gateway.config.resolution_cache);
    let quiet = TenantSlug::parse("quiet").unwrap();
    let now = h.gateway.upstream.clock.now();
    let scope = TenantScope {
        tenant_id: TENANT.parse().unwrap(),
        actor_id: ACTOR.parse().unwrap(),
        role: Role::Manager,
    };
    cache.remember(cache.look_up(&quiet, "quiet-token", now), &scope, now);
    let r = h.send("GET", "/v1/quiet/residents", &budget("Bearer quiet-token"));
    assert_eq!(r.status(), 200, "{:?}", body(&r));
    assert!(
        r.header("server-timing")
            .unwrap_or_default()
            .contains("resolve-cached"),
        "resolved from the cache, read once before the throttle"
    );
}

/// What the throttle learns from a served request (its tenant's and its
/// route's windows) is written after the answer: the answer is ready with
/// no throttle write made, and the write happens once the work left for
/// after it runs.
#[test]
fn the_throttle_learns_from_a_request_after_its_answer_has_gone() {
    use gateway::app::EdgeHop;
    use meridian_platform::http::pipeline::{self, InHand};
    let mut h = Harness::tenant("http://community.test/", vec![status(200)]);
    h.gateway.config.throttle = ThrottleConfig {
        sample: 1,
        ..ThrottleConfig::default()
    };
    let admitted_keys = |h: &Harness| {
        let keys = h.gateway.upstream.counters.keys();
        keys.into_iter().filter(|k| k.contains("admitted")).count()
    };
    let hop = EdgeHop {
        gateway: &h.gateway,
        at: h.clock.now(),
    };
    let get = request("GET", "/v1/acme/residents").with_header(AUTH.0, AUTH.1);
    let answer = block_on(pipeline::run(&hop, get, InHand(Vec::new())));
    assert_eq!(answer.response.status(), 200);
    assert_eq!(admitted_keys(&h), 0, "nothing written before the answer");
    let after = answer
        .after
        .expect("the throttle's writes are left for after");
    block_on(after);
    assert_eq!(admitted_keys(&h), 2, "the route's window and the tenant's");
}

/// Any text a client controls: ASCII, controls, and characters of one to
/// four bytes (so a cut by byte count would fall inside one).
fn client_text(max: usize) -> impl proptest::strategy::Strategy<Value = String> {
    proptest::collection::vec(
        proptest::prop_oneof![
            proptest::char::range(' ', '~'),
            proptest::sample::select(vec!['/', '?', '%', ';', '+', '=', '\t', '\u{7f}']),
            proptest::sample::select(vec!['é', '€', '日', '🦀', '\u{feff}', '\u{202e}']),
        ],
        0..max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// The whole request path, not only its parsers: whatever method, path,
    /// query, headers (any names the gateway reads, any UTF-8 values) and
    /// body a client sends, with every service healthy, the answer is a
    /// success or a 4xx problem+json carrying the request id — never a
    /// panic, never a 5xx for input alone.
    #[test]
    fn any_client_request_is_a_success_or_a_4xx_problem_never_a_5xx(
        method in proptest::sample::select(vec!["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "BREW"]),
        prefix in proptest::sample::select(vec!["/v1/acme/", "/v1/", "/", "/ops/tenants/acme/", "/v1/tenants"]),
        rest in client_text(40),
        query in client_text(30),
        headers in proptest::collection::vec(
            (
                proptest::sample::select(vec![
                    "content-type", "authorization", "x-meridian-timeout-ms", "x-request-id",
                    "idempotency-key", "if-none-match", "traceparent", "x-meridian-deadline",
                    "x-tenant-id", "x-request-start", "content-length", "x-anything",
                ]),
                client_text(60),
            ),
            0..6,
        ),
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
    ) {
        let h = Harness::new(vec![
            ("http://identity.test/internal/resolve", vec![resolved("manager")]),
            ("http://identity.test", vec![ok("{}")]),
            ("http://community.test", vec![ok("{}")]),
            ("http://billing.test", vec![ok("{}")]),
        ]);
        let mut request = edge_request(method, "/", &[AUTH]);
        *request.uri_mut() = target(&format!("{prefix}{rest}"), &query);
        // A value the runtime's parser refuses (a control character)
        // never reaches the gateway.
        let request = headers
            .into_iter()
            .filter(|(_, v)| http::HeaderValue::from_bytes(v.as_bytes()).is_ok())
            .fold(request, |r, (n, v)| r.with_header(n, v))
            .with_body(bytes);
        let r = block_on(h.gateway.handle(request));
        proptest::prop_assert!(r.status().as_u16() < 500, "{}: {:?}", r.status(), body_text(&r));
        let id = r.header("x-request-id").map(str::to_owned);
        proptest::prop_assert!(id.is_some());
        if r.status().as_u16() >= 400 {
            proptest::prop_assert_eq!(r.header("content-type"), Some("application/problem+json"));
            let problem = body(&r);
            proptest::prop_assert_eq!(problem["request_id"].as_str(), id.as_deref());
        }
    }
}

fn body_text(r: &Response) -> String {
    String::from_utf8_lossy(r.body()).into_owned()
}

const RESOLVE: &str = "http://identity.test/internal/resolve";

#[test]
fn a_resolution_is_remembered_until_the_tenant_changes_or_it_expires() {
    let h = Harness::tenant("http://community.test/", vec![ok("{}")]);
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 1);
    // Remembered: no call to identity, and the timing says so.
    let r = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(r.status(), 200);
    assert_eq!(h.received_by(RESOLVE), 1);
    let timing = r.header("server-timing").unwrap();
    assert!(timing.starts_with("resolve-cached;dur="), "{timing}");
    // Another token is its own entry.
    let other = ("authorization", "Bearer other");
    assert_eq!(h.send("GET", "/v1/acme/residents", &[other]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 2);
    // Identity moved the tenant's generation on (a member removed, a token
    // revoked): the next request asks again, and is remembered again.
    let acme = TenantSlug::parse("acme").unwrap();
    invalidate(&h.gateway.upstream.counters, &acme).unwrap();
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 3);
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 3);
    // Trusted for 30 s after it was written.
    h.clock.advance(Duration::from_secs(30));
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 4);
}

#[test]
fn a_refused_resolution_is_never_remembered() {
    let h = Harness::new(vec![
        (RESOLVE, vec![problem(401, "unauthorized")]),
        ("http://community.test/", vec![ok("{}")]),
    ]);
    for asked in 1..=3 {
        assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 401);
        assert_eq!(h.received_by(RESOLVE), asked);
    }
}

#[test]
fn without_the_cache_or_its_store_every_request_asks_identity() {
    let mut h = Harness::tenant("http://community.test/", vec![ok("{}")]);
    h.gateway.upstream.counters.entries.failing.set(true);
    for asked in 1..=2 {
        assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
        assert_eq!(h.received_by(RESOLVE), asked);
    }
    h.gateway.upstream.counters.entries.failing.set(false);
    h.gateway.config.resolution_cache = CacheConfig::parse(Some("off")).unwrap();
    for asked in 3..=4 {
        assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
        assert_eq!(h.received_by(RESOLVE), asked);
    }
}

#[test]
fn the_resolution_carries_the_clients_trace_as_the_forward_does() {
    let h = Harness::tenant("http://community.test/", vec![ok("{}")]);
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let r = h.send(
        "GET",
        "/v1/acme/residents",
        &[AUTH, ("traceparent", traceparent), ("tracestate", "k=v")],
    );
    assert_eq!(r.status(), 200);
    for seen in h.seen() {
        let header = |name: &str| seen.request.header(name);
        assert_eq!(header("traceparent"), Some(traceparent), "{}", seen.url);
        assert_eq!(header("tracestate"), Some("k=v"), "{}", seen.url);
    }
    assert_eq!(h.seen().len(), 2, "the resolution and the forward");
}

#[test]
fn a_tenant_request_reads_the_shared_store_once_remembered_or_not() {
    let h = Harness::tenant("http://community.test/", vec![ok("{}")]);
    let counters = &h.gateway.upstream.counters;
    // Asked of identity: its rate, its requests in progress, the throttle's
    // windows, the cache and both breakers in one batch read; the answer
    // then remembered. A count that opens a window reads the marker of the
    // last one opened (once per window, most after the answer): the
    // rate's and the concurrency's were read ahead, the others' cost a
    // read each.
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 1);
    let markers = counters
        .keys()
        .iter()
        .filter(|k| k.ends_with("/last"))
        .count();
    assert!(
        markers >= 3,
        "the rate's, the concurrency's and the tenant's: {:?}",
        counters.keys()
    );
    assert_eq!(counters.reads(), 1 + (markers - 2));
    // Remembered, in the same windows: one batch read, no call to identity.
    let before = counters.reads();
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.received_by(RESOLVE), 1);
    assert_eq!(counters.reads(), before + 1);
    // A route identity owns calls it twice: what was read ahead answers
    // one read, so its breaker is read again (and fresh) for the second.
    // (The cache off, so that each request resolves; the second's windows
    // are open.)
    let mut h = Harness::tenant("http://identity.test/", vec![ok("{}"), ok("{}")]);
    h.gateway.config.resolution_cache = CacheConfig::parse(Some("off")).unwrap();
    assert_eq!(h.send("GET", "/v1/acme/members", &[AUTH]).status(), 200);
    let before = h.gateway.upstream.counters.reads();
    assert_eq!(h.send("GET", "/v1/acme/members", &[AUTH]).status(), 200);
    assert_eq!(h.gateway.upstream.counters.reads(), before + 2);
}

#[test]
fn with_every_stateful_feature_off_a_request_never_touches_the_shared_store() {
    // Where the store cannot be reached (deploy/runtime-config/libsql.toml
    // names a cluster's Redis), a request must not so much as open it.
    let mut h = Harness::tenant("http://community.test/", vec![ok("{}")]);
    let config = &mut h.gateway.config;
    config.rates = RateSettings::parse(Some("off")).unwrap();
    config.concurrency = ConcurrencySettings::parse(Some("off")).unwrap();
    config.throttle = ThrottleConfig::parse(Some("off")).unwrap();
    config.resolution_cache = CacheConfig::parse(Some("off")).unwrap();
    h.gateway.upstream.memory =
        MemoryConfig::parse(|name| (name == "failure_memory").then(|| "off".to_owned())).unwrap();
    assert_eq!(h.send("GET", "/v1/acme/residents", &[AUTH]).status(), 200);
    assert_eq!(h.gateway.upstream.counters.reads(), 0);
    assert!(h.gateway.upstream.counters.is_empty());
}

/// Strangers — credentials identity refuses, path words, methods and slugs
/// of their choosing, budgets too short to be served — write no key to the
/// shared store: their 4xx and their lateness move no throttle, and a path
/// that is no route is answered here without a call.
#[test]
fn strangers_write_nothing_to_the_shared_store() {
    let slow_refusal = Reply::Answer {
        after_ms: 40,
        status: 401,
        body: r#"{"code":"unauthorized","status":401}"#,
        problem: true,
    };
    let h = Harness::new(vec![(RESOLVE, vec![slow_refusal])]);
    for i in 0..30 {
        let (word, slug) = (format!("word{i}"), format!("slug{i}"));
        let tiny = [AUTH, ("x-meridian-timeout-ms", "30")];
        for (method, path, headers) in [
            ("GET", format!("/v1/{slug}/residents"), &tiny[..]),
            ("GET", format!("/v1/{slug}/residents"), &[AUTH][..]),
            ("GET", format!("/v1/acme/residents/{word}"), &[AUTH][..]),
            ("GET", format!("/v1/acme/{word}/tenant/acme"), &[AUTH][..]),
            ("PURGE", "/v1/acme/residents".to_owned(), &[AUTH][..]),
        ] {
            let r = h.send(method, &path, headers);
            assert!(
                matches!(r.status().as_u16(), 401 | 404 | 405 | 504),
                "{method} {path}: {}",
                r.status()
            );
        }
    }
    let keys = h.gateway.upstream.counters.keys();
    assert!(
        keys.iter()
            .all(|k| !k.contains("word") && !k.contains("slug")),
        "{keys:?}"
    );
    assert!(
        keys.iter().all(|k| !k.starts_with("meridian/admit/")),
        "{keys:?}"
    );
}

/// The tenant's rate figures go to a caller identity vouched for, and to
/// nobody else.
#[test]
fn only_a_vouched_caller_sees_its_tenants_rate_figures() {
    let mut h = Harness::new(vec![
        (
            RESOLVE,
            vec![resolved("manager"), problem(401, "unauthorized")],
        ),
        ("http://community.test", vec![ok("{}")]),
    ]);
    h.gateway.config.rates = RateSettings::parse(Some("100/2s")).unwrap();
    let own = h.send("GET", "/v1/acme/residents", &[AUTH]);
    assert_eq!(own.status(), 200);
    assert!(own.header("ratelimit").is_some());
    let stranger = h.send(
        "GET",
        "/v1/acme/residents",
        &[("authorization", "Bearer other")],
    );
    assert_eq!(stranger.status(), 401);
    assert_eq!(stranger.header("ratelimit"), None);
    assert_eq!(stranger.header("ratelimit-policy"), None);
}

/// The forwarded path is the route's template filled with what was
/// validated: the resolved slug, the id in its canonical form.
#[test]
fn the_forwarded_path_is_rebuilt_from_the_template() {
    let h = Harness::tenant("http://community.test", vec![ok("{}")]);
    let id = "0B6F1E3C-7C1E-4A55-9D3C-2F0C3B1F6AFF";
    let r = h.send("GET", &format!("/v1/acme/residents/{id}?x=1"), &[AUTH]);
    assert_eq!(r.status(), 200);
    let seen = h.seen();
    assert_eq!(
        seen.last().map(|s| s.url.as_str()),
        Some("http://community.test/v1/acme/residents/0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6aff?x=1")
    );
}
