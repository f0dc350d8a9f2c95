//! The cloud deployment (`deploy/cloud/spin.toml`), where the platform has
//! no service chaining: the gateway reaches each service through the app's
//! own public origin (`public_origin`), under `/_meridian/<service>`, and
//! signs every call; a stranger who calls those routes meets an unknown
//! route's answer. Run by `scripts/hosted.sh cloud` (ignored elsewhere:
//! they need the cloud build and its manifest), which the test command
//! runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use meridian_e2e::api::TenantClient;
use meridian_e2e::edge::Edge;
use meridian_e2e::loopback::LoopbackReply;
use meridian_e2e::{
    profile, settled, signed_headers, Profile, Reply, SpinApp, SpinOptions, ADMIN_TOKEN,
};
use serde_json::json;

const CLOUD_ONLY: &str = "the cloud deployment's: scripts/hosted.sh cloud runs them";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
}

/// The cloud deployment behind `edge`, its public origin.
#[track_caller]
fn behind(edge: &Edge, options: SpinOptions) -> SpinApp {
    assert_eq!(
        profile(),
        Some(Profile::Cloud),
        "run with MERIDIAN_PROFILE=cloud (scripts/hosted.sh cloud)"
    );
    // The edge forwards to an app not yet started: readiness is probed
    // through the gateway alone (`/healthz`).
    let app = SpinApp::start_with(options.variable("public_origin", edge.url()));
    edge.forward_to(app.url());
    app
}

/// A keyed invoice for `resident`, as `tenant`'s admin: its status.
fn keyed_invoice(tenant: &TenantClient, resident: &str, key: &str, cents: u32) -> u16 {
    tenant
        .post("/invoices")
        .key(key)
        .json(&json!({
            "resident_id": resident, "amount_cents": cents, "currency": "EUR",
            "description": key, "due_date": "2026-12-31"
        }))
        .status
}

/// What crossed `edge` for `run` and the work after its answer, by service.
#[track_caller]
fn crossing(edge: &Edge, what: &str, run: &dyn Fn() -> u16) -> BTreeMap<String, usize> {
    edge.take();
    let status = run();
    assert!(status < 500, "{what}: {status}");
    // Work after the answer (an event's delivery) crosses the edge too.
    settled(what, 0, || edge.carried());
    edge.take_counts()
}

/// An answer with what varies between two requests taken out: the
/// request id (body and header), the date, and `connection` (the
/// transport's: Spin closes a connection whose request body was not read,
/// which depends on whether it had arrived when the answer went); header
/// names sorted.
fn shape(r: &Reply) -> (u16, Vec<String>, serde_json::Value) {
    let mut body = r.json();
    if let Some(fields) = body.as_object_mut() {
        fields.remove("request_id");
    }
    let mut names: Vec<String> = r
        .headers
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| n != "date" && n != "connection")
        .collect();
    names.sort();
    (r.status, names, body)
}

#[test]
#[ignore = "the cloud deployment's: scripts/hosted.sh cloud runs them"]
fn strangers_meet_the_internal_routes_as_an_unknown_route() {
    let _ = CLOUD_ONLY;
    let edge = Edge::start();
    let app = behind(&edge, SpinOptions::default());
    let client = app.client();
    let tenant = app.tenant("acme");
    let unknown = shape(&client.get("/no/such/route"));
    assert_eq!(unknown.0, 404, "{unknown:?}");

    let fresh = || (now_ms() + 2_000).to_string();
    let expired = (now_ms() - 120_000).to_string();
    for service in ["identity", "community", "billing"] {
        let health = format!("/_meridian/{service}/health");
        let resolve = format!("/_meridian/{service}/internal/resolve?slug=acme");
        // The control: Meridian's own signature, fresh, is let in.
        let deadline = fresh();
        let signed = signed_headers(
            "GET",
            &health,
            &[
                ("x-meridian-deadline", &deadline),
                ("x-meridian-budget-ms", "2000"),
            ],
        );
        let signed: Vec<(&str, &str)> = signed
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let ok = client.send("GET", &health, &signed, None);
        assert_eq!(ok.status, 200, "{service}: {}", ok.body);
        // A replay of that signature on another path.
        let replayed = client.send("GET", &resolve, &signed, None);
        // Signed, but long expired.
        let old = signed_headers(
            "GET",
            &health,
            &[
                ("x-meridian-deadline", &expired),
                ("x-meridian-budget-ms", "2000"),
            ],
        );
        let old: Vec<(&str, &str)> = old.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let expired_answer = client.send("GET", &health, &old, None);
        let zeros = "00".repeat(32);
        let wrong = client.send(
            "GET",
            &health,
            &[
                ("x-meridian-signature", &zeros),
                ("x-meridian-deadline", &deadline),
                ("x-meridian-budget-ms", "2000"),
            ],
            None,
        );
        let none = client.send(
            "GET",
            &resolve,
            &[("authorization", &format!("Bearer {}", tenant.token))],
            None,
        );
        let post = client.send(
            "POST",
            &format!("/_meridian/{service}/v1/acme/residents"),
            &[("content-type", "application/json")],
            Some(r#"{"name":"Eve","unit":"1A"}"#),
        );
        for (what, answer) in [
            ("no signature", &none),
            ("no signature, a write", &post),
            ("a wrong signature", &wrong),
            ("an expired signature", &expired_answer),
            ("a signature replayed on another path", &replayed),
        ] {
            assert_eq!(
                shape(answer),
                unknown,
                "{service}, {what}: {}\n{:?}",
                answer.body,
                answer.headers
            );
        }
    }
    // Nothing a stranger sent was written.
    assert!(tenant.list("/residents").is_empty());
}

#[test]
#[ignore = "the cloud deployment's: scripts/hosted.sh cloud runs them"]
fn a_deployment_that_chains_its_calls_is_refused_by_spin_itself() {
    // The cloud manifest with the gateway's settings pointed at chained
    // URLs again, as a manifest edited by hand might be: Spin refuses the
    // calls (no `*.spin.internal` host is granted), so nothing can pass
    // without the public origin.
    assert_eq!(profile(), Some(Profile::Cloud), "{CLOUD_ONLY}");
    let target = meridian_e2e::repo_root().join("target");
    let spin_toml = std::fs::read_to_string(meridian_e2e::repo_root().join("spin.toml")).unwrap();
    let cloud = meridian_e2e::hosted::deployed(
        &spin_toml,
        Profile::Cloud,
        "target/wasm32-wasip2/release",
        &target.join("platforms/cloud").display().to_string(),
    );
    let chained = "identity_url=http://identity.spin.internal\n\
                   community_url=http://community.spin.internal\n\
                   billing_url=http://billing.spin.internal";
    let planted = cloud.replacen("public_origin={{ public_origin }}", chained, 1);
    assert_ne!(planted, cloud);
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("spin.toml");
    std::fs::write(&manifest, planted).unwrap();
    let app = SpinApp::start_manifest(&manifest, &["default"], "/healthz");
    let r = app.client().get("/readyz");
    let body = r.assert_problem(503, "upstream_unavailable");
    for service in ["identity", "community", "billing"] {
        assert!(
            body["detail"]
                .as_str()
                .unwrap_or_default()
                .contains(service),
            "{body}"
        );
    }
    assert!(
        app.logs().contains("HttpRequestDenied"),
        "Spin refused the chained calls: {}",
        app.logs()
    );
}

#[test]
#[ignore = "the cloud deployment's: scripts/hosted.sh cloud runs them"]
fn an_error_answered_by_the_platforms_edge_reaches_the_client_as_a_retryable_problem() {
    let edge = Edge::answering(|request| {
        let path = request.uri().path();
        let page = (
            502,
            "text/html",
            &b"<html><h1>502 Bad Gateway</h1></html>"[..],
        );
        let empty = (503, "text/plain", &b""[..]);
        let (status, content_type, body) = match path {
            p if p.starts_with("/_meridian/community/") => page,
            p if p.starts_with("/_meridian/billing/") => empty,
            _ => return None,
        };
        Some(LoopbackReply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.to_vec(),
        })
    });
    let app = behind(&edge, SpinOptions::default());
    let tenant = app.tenant("acme");
    for collection in ["/residents", "/invoices"] {
        let r = tenant.get(collection).send();
        let body = r.assert_problem(502, "upstream_unavailable");
        assert_eq!(body["retryable"], true, "{collection}: {body}");
    }
    // A read is safe to repeat: each service was tried three times.
    let counts = edge.take_counts();
    assert_eq!(counts.get("community"), Some(&3), "{counts:?}");
    assert_eq!(counts.get("billing"), Some(&3), "{counts:?}");
}

/// The outbound requests one public request of each kind makes in the
/// cloud deployment — each is an execution and an outbound request of the
/// plan's quota (docs/deploy.md, "Fermyon Cloud's quota") — counted at the
/// edge, and the most each may make.
#[test]
#[ignore = "the cloud deployment's: scripts/hosted.sh cloud runs them"]
fn each_public_request_makes_the_outbound_requests_docs_deploy_states() {
    // The edge fails community's event deliveries while `failing` is set,
    // as an edge in trouble would: what a failed delivery and the relay
    // after it cost is counted too.
    let failing = Arc::new(AtomicBool::new(false));
    let edge = {
        let failing = failing.clone();
        Edge::answering(move |request| {
            let events = request.uri().path() == "/_meridian/community/internal/events";
            (events && failing.load(Ordering::SeqCst)).then(|| LoopbackReply {
                status: 503,
                headers: Vec::new(),
                body: Vec::new(),
            })
        })
    };
    let app = behind(&edge, SpinOptions::default());
    let client = app.client();
    let mut table: Vec<(&str, BTreeMap<String, usize>, usize)> = Vec::new();
    let mut count = |what: &'static str, most: usize, run: &dyn Fn() -> u16| {
        let counts = crossing(&edge, what, run);
        let total = counts.values().sum();
        table.push((what, counts, total));
        assert!(
            total <= most,
            "{what}: {total} outbound requests, at most {most}"
        );
    };
    let tenant = std::cell::RefCell::new(None);
    count("POST /v1/tenants (platform admin)", 1, &|| {
        *tenant.borrow_mut() = Some(app.tenant("acme"));
        201
    });
    let acme = tenant.borrow().clone().expect("the tenant");
    let resident = acme.resident("Ada");
    count("GET a page, the caller remembered", 1, &|| {
        acme.get("/residents?limit=20").send().status
    });
    count("GET a page, a caller not yet remembered", 2, &|| {
        let (_, token) = acme.member("new@acme.org", "manager");
        edge.take();
        acme.get("/residents?limit=20").token(&token).send().status
    });
    count("POST a resident (unkeyed)", 1, &|| {
        // The new member's token falls in the admin's resolution bin one
        // time in 64 and takes it: the admin is remembered again first.
        acme.get("/residents?limit=20").send();
        edge.take();
        acme.post("/residents")
            .json(&json!({"name": "Bo", "unit": "2B"}))
            .status
    });
    let invoice = || keyed_invoice(&acme, &resident, "inv-1", 1_000);
    count(
        "POST an invoice with a key, its event delivered",
        3,
        &invoice,
    );
    count("the same POST replayed", 1, &invoice);
    failing.store(true, Ordering::SeqCst);
    let another = || keyed_invoice(&acme, &resident, "inv-2", 500);
    count(
        "POST an invoice with a key, its delivery failing (retried)",
        5,
        &another,
    );
    failing.store(false, Ordering::SeqCst);
    // The failed event is due again after its backoff: the relay is asked
    // until a run delivers it, and that run is the one counted.
    count("POST /ops/outbox/relay, delivering that event", 2, &|| {
        let due = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            edge.take();
            let admin = format!("Bearer {ADMIN_TOKEN}");
            let r = client.send(
                "POST",
                "/ops/outbox/relay",
                &[("authorization", &admin)],
                None,
            );
            if r.json()["delivered"] != 0 || std::time::Instant::now() > due {
                assert_eq!(r.json()["delivered"], 1, "{}", r.body);
                return r.status;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    });
    count("a 401 (unknown token)", 1, &|| {
        acme.get("/residents")
            .token("mrd_not-a-token")
            .send()
            .status
    });
    count("GET /readyz", 3, &|| client.get("/readyz").status);
    count("GET /healthz", 0, &|| client.get("/healthz").status);
    eprintln!("outbound requests per public request, cloud deployment:");
    for (what, counts, total) in &table {
        eprintln!("  {what:<60} {total}  {counts:?}");
    }
}

/// The same with the resolution cache off, as a deployment that must fit
/// Cloud's 1,024 keys runs (docs/storage.md): every tenant request asks
/// identity once more.
#[test]
#[ignore = "the cloud deployment's: scripts/hosted.sh cloud runs them"]
fn without_the_resolution_cache_each_tenant_request_asks_identity_once_more() {
    let edge = Edge::start();
    let app = behind(
        &edge,
        SpinOptions::default().variable("resolution_cache", "off"),
    );
    let acme = app.tenant("acme");
    let resident = acme.resident("Ada");
    let measured = [
        (
            "GET a page",
            crossing(&edge, "a page", &|| {
                acme.get("/residents?limit=20").send().status
            }),
        ),
        (
            "POST an invoice with a key, its event delivered",
            crossing(&edge, "an invoice", &|| {
                keyed_invoice(&acme, &resident, "inv-nocache", 1_000)
            }),
        ),
    ];
    let measured: Vec<(&str, usize, BTreeMap<String, usize>)> = measured
        .into_iter()
        .map(|(what, counts)| (what, counts.values().sum(), counts))
        .collect();
    eprintln!("outbound requests per public request, resolution_cache=off:");
    for (what, total, counts) in &measured {
        eprintln!("  {what:<60} {total}  {counts:?}");
    }
    let totals: Vec<(&str, usize)> = measured.iter().map(|(w, t, _)| (*w, *t)).collect();
    assert_eq!(
        totals,
        [
            ("GET a page", 2),
            ("POST an invoice with a key, its event delivered", 4)
        ]
    );
}
