//! The edge contract against a real `spin up`: probes, the request budget,
//! request ids, header hygiene, and a hung downstream.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use meridian_e2e::{
    ReceivedExt, Reply, SpinApp, SpinOptions, StandIn, StandInReply, INTERNAL_TOKEN,
};

const TENANT_ID: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
const ACTOR_ID: &str = "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02";

/// An identity stand-in that resolves every slug and token to one tenant.
fn identity_stand_in() -> StandIn {
    StandIn::start(|r| {
        if r.url().starts_with("/internal/resolve") {
            StandInReply::Json(
                200,
                format!(
                    r#"{{"tenant_id":"{TENANT_ID}","actor_id":"{ACTOR_ID}","role":"manager"}}"#
                ),
            )
        } else {
            StandInReply::Json(404, "{}".into())
        }
    })
}

/// The app behind the identity stand-in, with one more downstream
/// (`community_url`, `billing_url`) at `url`. Keep the stand-in alive
/// as long as the app.
fn app_behind_identity(downstream: &'static str, url: String) -> (StandIn, SpinApp) {
    let identity = identity_stand_in();
    let app = SpinApp::start_with(
        SpinOptions::default()
            .variable("identity_url", identity.url())
            .variable(downstream, url),
    );
    (identity, app)
}

/// `GET /v1/acme/residents` with a 400 ms budget.
fn residents_within_400ms(app: &SpinApp) -> Reply {
    app.client().send(
        "GET",
        "/v1/acme/residents",
        &[
            ("authorization", "Bearer tok"),
            ("x-meridian-timeout-ms", "400"),
        ],
        None,
    )
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn healthz_answers_with_a_fresh_request_id() {
    let app = SpinApp::start();
    let r = app.client().get("/healthz");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");
    let id = r.header("x-request-id").expect("x-request-id");
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
}

#[test]
fn readyz_reaches_every_private_service_through_service_chaining() {
    let app = SpinApp::start();
    let r = app.client().get("/readyz");
    assert_eq!(r.status, 200, "{}\n{}", r.body, app.logs());
    let checks = &r.json()["checks"];
    for service in ["identity", "community", "billing"] {
        assert_eq!(checks[service], "ok", "{service}: {}", r.body);
    }
    // An anonymous probe is told no hop's time (tests/security.rs).
    assert_eq!(r.header("server-timing"), None);
}

#[test]
fn private_services_are_not_reachable_from_outside() {
    let app = SpinApp::start();
    let client = app.client();
    for path in [
        "/health",
        "/internal/resolve?slug=acme",
        "/internal/outbox/relay",
    ] {
        client.get(path).assert_problem(404, "not_found");
    }
    // A spoofed service-chaining host reaches nothing: Spin drops the
    // connection, or (were it routed) the gateway would not know the path.
    match client.try_send(
        "GET",
        "/health",
        &[("host", "identity.spin.internal")],
        None,
    ) {
        Err(_) => {}
        Ok(r) => {
            r.assert_problem(404, "not_found");
        }
    }
}

/// Split, each internal service listens on its own port; there, nothing
/// without a valid signature gets past its gate, and what it gets is an
/// unknown route's answer (all-in-one, the services have no port of their
/// own: see the test above).
#[test]
fn in_the_split_layout_a_service_on_its_own_port_refuses_a_caller_without_a_signature() {
    let app = SpinApp::start();
    let services = app.service_urls();
    match meridian_e2e::Layout::from_env() {
        meridian_e2e::Layout::AllInOne => assert!(services.is_empty()),
        meridian_e2e::Layout::Split => {
            assert_eq!(services.len(), 3);
            for (_, url) in services {
                for (path, signature) in [
                    ("/health", None),
                    ("/internal/resolve?slug=acme", Some("00".repeat(32))),
                ] {
                    let headers: Vec<(&str, &str)> = signature
                        .as_deref()
                        .map(|s| ("x-meridian-signature", s))
                        .into_iter()
                        .collect();
                    let r = meridian_e2e::Client::new(&url).send("GET", path, &headers, None);
                    let problem = r.assert_problem(404, "not_found");
                    assert_eq!(problem["detail"], "no such route");
                }
            }
        }
    }
}

#[test]
fn a_one_millisecond_budget_is_a_fast_504_from_the_gateway() {
    let app = SpinApp::start();
    let r = app.client().send(
        "GET",
        "/v1/acme/residents",
        &[
            ("authorization", "Bearer t"),
            ("x-meridian-timeout-ms", "1"),
        ],
        None,
    );
    let body = r.assert_problem(504, "deadline_exceeded");
    assert_eq!(body["hop"], "gateway");
    assert_eq!(body["budget_ms"], 1);
    assert_eq!(body["retryable"], true);
    r.assert_within(Duration::from_millis(250), "the refusal took its time");
}

#[test]
fn a_malformed_timeout_is_a_400_problem() {
    let app = SpinApp::start();
    for bad in ["soon", "0", "-5", "1.5"] {
        let r = app.client().send(
            "GET",
            "/v1/acme/residents",
            &[
                ("authorization", "Bearer t"),
                ("x-meridian-timeout-ms", bad),
            ],
            None,
        );
        r.assert_problem(400, "invalid_timeout");
    }
}

#[test]
fn a_sane_request_id_is_echoed_and_an_insane_one_replaced() {
    let app = SpinApp::start();
    let client = app.client();
    let r = client.send("GET", "/healthz", &[("x-request-id", "client-id-42")], None);
    assert_eq!(r.header("x-request-id"), Some("client-id-42"));
    let r = client.send("GET", "/healthz", &[("x-request-id", "<script>")], None);
    let id = r.header("x-request-id").unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    let r = client.send("GET", "/nowhere", &[("x-request-id", "trace-404")], None);
    assert_eq!(
        r.assert_problem(404, "not_found")["request_id"],
        "trace-404"
    );
}

#[test]
fn a_downstream_gets_the_budget_and_the_real_identity_never_the_spoofed_one() {
    let community =
        StandIn::start(|_| StandInReply::Json(200, r#"{"items":[],"next_cursor":null}"#.into()));
    let (identity, app) = app_behind_identity("community_url", community.url());
    let sent_at = now_ms();
    let r = app.client().send(
        "GET",
        "/v1/acme/residents?limit=5",
        &[
            ("authorization", "Bearer tok"),
            ("x-meridian-timeout-ms", "2000"),
            ("x-request-id", "e2e-spoof"),
            ("x-tenant-id", "11111111-1111-4111-8111-111111111111"),
            ("x-actor-id", "11111111-1111-4111-8111-111111111111"),
            ("x-actor-role", "admin"),
            ("x-meridian-internal-token", "guessed"),
            ("x-meridian-deadline", "99999999999999"),
            ("x-meridian-budget-ms", "999999"),
        ],
        None,
    );
    assert_eq!(r.status, 200, "{}\n{}", r.body, app.logs());
    // One resolution and one forward.
    assert_eq!(r.header("x-meridian-attempts"), Some("2"));
    assert!(r
        .header("server-timing")
        .unwrap_or_default()
        .contains("community;dur="));

    let resolution = identity.received();
    assert_eq!(resolution.len(), 1, "tenant resolved once");
    assert_eq!(resolution[0].url(), "/internal/resolve?slug=acme");
    assert_eq!(resolution[0].header("authorization"), Some("Bearer tok"));
    assert_eq!(resolution[0].header("x-tenant-id"), None);

    let calls = community.received();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call.url(), "/v1/acme/residents?limit=5");
    let deadline: u64 = call.header("x-meridian-deadline").unwrap().parse().unwrap();
    let budget: u64 = call
        .header("x-meridian-budget-ms")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        deadline <= sent_at + 2_000,
        "deadline beyond the client's budget"
    );
    assert!(deadline.saturating_sub(call.at_ms()) <= 2_000);
    assert!(budget <= 2_000 && budget > 1_500, "budget {budget}");
    assert_eq!(call.header("x-tenant-id"), Some(TENANT_ID));
    assert_eq!(call.header("x-actor-id"), Some(ACTOR_ID));
    assert_eq!(call.header("x-actor-role"), Some("manager"));
    assert!(
        meridian_e2e::signed_by_meridian(call),
        "the call is signed over what it carries"
    );
    assert!(
        call.header("x-meridian-internal-token").is_none()
            && !call
                .headers()
                .iter()
                .any(|(_, v)| v.as_bytes() == INTERNAL_TOKEN.as_bytes()),
        "the secret itself never travels"
    );
    assert_eq!(call.header("x-request-id"), Some("e2e-spoof"));
    assert_eq!(
        call.header("authorization"),
        None,
        "the bearer token stops at the gateway"
    );
}

#[test]
fn a_hung_downstream_gives_a_504_at_the_budget_not_later() {
    let community = StandIn::start(|_| StandInReply::Hang(Duration::from_secs(5)));
    let (_identity, app) = app_behind_identity("community_url", community.url());
    let r = residents_within_400ms(&app);
    let body = r.assert_problem(504, "deadline_exceeded");
    assert_eq!(body["hop"], "gateway");
    assert_eq!(body["budget_ms"], 400);
    eprintln!(
        "time to 504 with a hung downstream and a 400 ms budget: {:?}",
        r.elapsed
    );
    assert!(
        r.elapsed >= Duration::from_millis(300),
        "gave up early: {:?}",
        r.elapsed
    );
    r.assert_within(Duration::from_millis(500), "answered late");
    assert_eq!(
        community.received().len(),
        1,
        "a timed-out read is not retried past the budget"
    );
    // The operator's answer to "which hop spent it": an event names the hop.
    let id = r.header("x-request-id").unwrap();
    let spent = app
        .log_lines("gateway")
        .into_iter()
        .find(|l| l["request_id"] == id && l["event"] == "budget_spent")
        .expect("a budget_spent event");
    assert_eq!(spent["hop"], "gateway");
    assert_eq!(spent["budget_ms"], 400);
}

#[test]
fn an_unreachable_downstream_is_a_502_after_retrying_a_read() {
    // Nothing listens on port 9 of the loopback.
    let (_identity, app) = app_behind_identity("community_url", "http://127.0.0.1:9".into());
    let r = app.client().send(
        "GET",
        "/v1/acme/residents",
        &[("authorization", "Bearer tok")],
        None,
    );
    r.assert_problem(502, "upstream_unavailable");
    // One resolution and three attempts at community.
    assert_eq!(r.header("x-meridian-attempts"), Some("4"));
    // The log says the same: the call's attempts on the request line, and
    // each repeat as an event naming what the previous attempt got.
    let id = r.header("x-request-id").unwrap();
    let lines: Vec<_> = app
        .log_lines("gateway")
        .into_iter()
        .filter(|l| l["request_id"] == id)
        .collect();
    let retries: Vec<_> = lines.iter().filter(|l| l["event"] == "retry").collect();
    assert_eq!(retries.len(), 2, "{lines:?}");
    // Named by the service, whatever its URL.
    assert_eq!(retries[0]["to"], "community");
    assert_eq!(retries[0]["attempt"], 2);
    assert_eq!(retries[0]["after"], "connect");
    let line = lines.iter().find(|l| l.get("event").is_none()).unwrap();
    let calls = line["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{line}");
    assert_eq!(calls[1]["to"], "community");
    assert_eq!(calls[1]["route"], "/v1/acme/residents");
    assert_eq!(calls[1]["attempts"], 3);
    assert!(calls[1].get("status").is_none(), "{line}");
}

#[test]
fn a_failing_write_without_a_key_is_sent_once() {
    let billing =
        StandIn::start(|_| StandInReply::Json(503, r#"{"code":"upstream_unavailable"}"#.into()));
    let (_identity, app) = app_behind_identity("billing_url", billing.url());
    let r = app.client().send(
        "POST",
        "/v1/acme/invoices",
        &[
            ("authorization", "Bearer tok"),
            ("content-type", "application/json"),
        ],
        Some("{}"),
    );
    r.assert_problem(502, "upstream_unavailable");
    assert_eq!(r.header("x-meridian-attempts"), Some("2"));
    assert_eq!(billing.received().len(), 1);

    let r = app.client().send(
        "POST",
        "/v1/acme/invoices",
        &[
            ("authorization", "Bearer tok"),
            ("idempotency-key", "e2e-key-1"),
        ],
        Some("{}"),
    );
    r.assert_problem(502, "upstream_unavailable");
    assert_eq!(
        r.header("x-meridian-attempts"),
        Some("3"),
        "a keyed write may be replayed (the resolution remembered: no attempt)"
    );
    assert_eq!(billing.received().len(), 4, "1 unkeyed + 3 keyed attempts");
}

#[test]
fn services_refuse_a_caller_signing_with_another_internal_token() {
    let app = SpinApp::start_with(
        SpinOptions::default()
            .gateway_internal_token("not-the-shared-internal-token-0123456789abcdef"),
    );
    let r = app.client().get("/readyz");
    let body = r.assert_problem(503, "upstream_unavailable");
    let detail = body["detail"].as_str().unwrap();
    for service in ["identity", "community", "billing"] {
        assert!(
            detail.contains(&format!("{service} (status 404)")),
            "{detail}"
        );
    }
    // A tenant request stops at identity's gate: nothing is resolved, and
    // the client learns of a fault on the app's side, not a missing route.
    let r = app
        .client()
        .send("GET", "/v1/acme", &[("authorization", "Bearer t")], None);
    r.assert_problem(502, "upstream_unavailable");
}

/// A downstream that sends its response head at once, then stalls midway
/// through the body.
fn stalling_body_server() -> (String, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        // One connection is all the test makes.
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"items\":[");
            let _ = stream.flush();
            std::thread::sleep(Duration::from_secs(2));
        }
    });
    (url, handle)
}

#[test]
fn a_body_that_stalls_midway_still_gets_a_504_at_the_budget() {
    let (community, server) = stalling_body_server();
    let (_identity, app) = app_behind_identity("community_url", community);
    let r = residents_within_400ms(&app);
    r.assert_problem(504, "deadline_exceeded");
    r.assert_within(Duration::from_millis(500), "answered late");
    drop(app); // fails the test if the abandoned body read trapped
    server.join().unwrap();
}

#[test]
fn the_contract_is_served_without_auth_and_revalidated_by_etag() {
    let app = SpinApp::start();
    let client = app.client();
    let full = client.get("/openapi.json");
    assert_eq!(full.status, 200, "{}", full.body);
    assert_eq!(full.header("content-type"), Some("application/json"));
    assert_eq!(full.header("cache-control"), Some("public, max-age=3600"));
    assert!(full.header("x-request-id").is_some());
    let doc = full.json();
    assert_eq!(doc["openapi"], "3.1.0");
    // The document the gateway serves is the repository's, as built.
    let source = std::fs::read_to_string(meridian_e2e::repo_root().join("openapi.yaml")).unwrap();
    for path in doc["paths"].as_object().unwrap().keys() {
        assert!(source.contains(&format!("\n  {path}:\n")), "{path}");
    }
    let etag = full.header("etag").expect("an ETag").to_owned();
    let again = client.send("GET", "/openapi.json", &[("if-none-match", &etag)], None);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let head = client.send("HEAD", "/openapi.json", &[], None);
    assert_eq!(head.status, 200);
    let post = client.send("POST", "/openapi.json", &[], Some("{}"));
    post.assert_problem(405, "method_not_allowed");
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
}

#[test]
fn every_component_writes_one_json_line_per_request_it_answers() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let r = acme
        .get("/residents?limit=5")
        .header("x-request-id", "logged-1")
        .header("traceparent", traceparent)
        .send();
    assert_eq!(r.status, 200, "{}", r.body);
    acme.post("/residents")
        .header("x-request-id", "logged-2")
        .json(&serde_json::json!({"name": "Ada", "unit": ""}))
        .assert_problem(422, "validation_failed");

    // Each component's own stderr, as Spin keeps it: every line is JSON,
    // and each request has exactly one request line (no `event`) there.
    let request_lines = |service: &str, id: &str| -> Vec<serde_json::Value> {
        app.log_lines(service)
            .into_iter()
            .filter(|l| l["request_id"] == id && l.get("event").is_none())
            .collect()
    };
    let one = |service: &str, id: &str| -> serde_json::Value {
        let lines = request_lines(service, id);
        assert_eq!(lines.len(), 1, "{service}, {id}: {lines:?}");
        lines.into_iter().next().unwrap()
    };
    // The read: gateway, identity (resolution) and community, one line each.
    for service in ["gateway", "identity", "community"] {
        assert_eq!(one(service, "logged-1")["service"], service);
    }
    assert!(request_lines("billing", "logged-1").is_empty());
    let gateway = one("gateway", "logged-1");
    assert_eq!(gateway["route"], "/v1/{tenant}/residents", "{gateway}");
    assert_eq!(gateway["method"], "GET");
    assert_eq!(gateway["status"], 200);
    assert_eq!(gateway["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(gateway["tenant_id"], acme.id.as_str());
    assert_eq!(gateway["budget_ms"], 3000);
    assert!(gateway["left_ms"].as_u64().unwrap() < 3000, "{gateway}");
    // Where the gateway's time went: a resolution, then the forward.
    let calls = gateway["calls"].as_array().unwrap();
    let called: Vec<(String, &str, u64, u64)> = calls
        .iter()
        .map(|c| {
            (
                c["to"].as_str().unwrap().to_owned(),
                c["route"].as_str().unwrap(),
                c["attempts"].as_u64().unwrap(),
                c["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        called,
        [
            ("identity".to_owned(), "/internal/resolve", 1, 200),
            ("community".to_owned(), "/v1/acme/residents", 1, 200)
        ],
        "{gateway}"
    );
    assert_eq!(gateway["statements"], 0, "the gateway has no storage");
    let community = one("community", "logged-1");
    assert_eq!(community["route"], "/v1/{tenant}/residents", "{community}");
    assert_eq!(community["tenant_id"], acme.id.as_str());
    assert!(
        community["statements"].as_u64().unwrap() >= 1,
        "{community}"
    );
    assert!(community["storage_us"].as_u64().unwrap() > 0, "{community}");
    assert_eq!(community["calls"], serde_json::json!([]));
    // Downstream hops carry the trace id Spin propagated to them.
    assert_eq!(community["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    let identity = one("identity", "logged-1");
    assert_eq!(identity["route"], "/internal/resolve", "{identity}");
    // The resolution carries the client's trace too: with OpenTelemetry
    // off, only the gateway can hand it on.
    assert_eq!(identity["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    // A refused write: its problem code, on the gateway's line and the
    // owner's (identity's resolution before it succeeded).
    for service in ["gateway", "community"] {
        let line = one(service, "logged-2");
        assert_eq!(line["status"], 422, "{line}");
        assert_eq!(line["code"], "validation_failed", "{line}");
        assert_eq!(line["route"], "/v1/{tenant}/residents", "{line}");
    }
    // Each service's first request applied its migrations, and said so.
    for service in ["identity", "community"] {
        let applied = app
            .log_lines(service)
            .into_iter()
            .find(|l| l["event"] == "migration_applied")
            .unwrap_or_else(|| panic!("{service} logged no migration"));
        assert!(!applied["versions"].as_array().unwrap().is_empty());
        assert!(applied["request_id"].is_string(), "{applied}");
    }
}

/// A header value that is UTF-8 but not ASCII reaches the gateway as text
/// (Spin refuses bytes that are not UTF-8 itself). Sent over a raw
/// connection, so the bytes arrive exactly as written.
#[test]
fn a_non_ascii_content_type_is_a_415_problem_not_a_trap() {
    let app = SpinApp::start();
    let r = app.client().send_early(
        "POST",
        "/v1/acme/residents",
        &[
            ("authorization", "Bearer tok"),
            ("content-type", "application/a€json"),
        ],
        r#"{"name":"A","unit":"1"}"#,
    );
    r.assert_problem(415, "unsupported_media_type");
    for (name, value) in [
        ("x-meridian-timeout-ms", "1€"),
        ("x-request-id", "ü-1"),
        ("idempotency-key", "kéy"),
        ("authorization", "Bearer tök"),
    ] {
        let r = app.client().send_early(
            "POST",
            "/v1/acme/residents",
            &[("authorization", "Bearer tok"), (name, value)],
            r#"{"name":"A","unit":"1"}"#,
        );
        assert!(
            (400..500).contains(&r.status),
            "{name}: {value}: {} {}",
            r.status,
            r.body
        );
        assert!(r.json()["code"].is_string(), "{name}: {}", r.body);
        assert!(r.header("x-request-id").is_some(), "{name}");
    }
    // Dropping the app fails the test if any component trapped.
}

/// Runtime fact (docs/known-limits.md): a header value that is not UTF-8
/// never reaches a component — Spin answers it itself (4.1: an empty 500).
/// What Meridian can promise is that nothing of it traps and the app goes
/// on serving.
#[test]
fn a_header_value_that_is_not_utf8_is_answered_by_spin_and_nothing_traps() {
    use std::io::{Read, Write};
    let app = SpinApp::start();
    let addr = app.url().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!("GET /healthz HTTP/1.1\r\nhost: {addr}\r\nx-bad: ").into_bytes();
    request.extend_from_slice(b"\xff\xfe\r\nconnection: close\r\n\r\n");
    stream.write_all(&request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1).unwrap_or("none");
    println!(
        "a non-UTF-8 header value: {status} ({} bytes)",
        answer.len()
    );
    assert!(
        status == "500" || status.starts_with('4'),
        "unexpected answer: {text:?}"
    );
    // Refused by Spin itself, before the gateway ran: no request line.
    assert!(
        app.logs().contains(meridian_e2e::SPIN_REFUSED_UTF8),
        "{}",
        app.logs()
    );
    let lines = app.log_lines("gateway").len();
    // The app still serves.
    assert_eq!(app.client().get("/healthz").status, 200);
    assert_eq!(app.log_lines("gateway").len(), lines + 1);
}
