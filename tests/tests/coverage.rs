//! What was host-only before, on a real `spin up`: pagination and filters
//! of every list, keyed payments, idempotency-key scoping by tenant and by
//! route, cross-tenant access by id, `"token": null` on replay, and the
//! relay running out of budget part-way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use meridian_e2e::api::{call, TenantClient};
use meridian_e2e::{
    eventually, settled, ReceivedExt, SpinApp, SpinOptions, StandIn, StandInReply, ADMIN_TOKEN,
};
use serde_json::{json, Value};

fn invoice(resident: &str, amount: i64) -> Value {
    json!({"resident_id": resident, "amount_cents": amount, "currency": "EUR", "description": "charge", "due_date": "2026-12-31"})
}

/// Every item of `path` (with its query), two at a time through the cursors.
fn paged(t: &TenantClient, path: &str) -> Vec<Value> {
    let join = if path.contains('?') { '&' } else { '?' };
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let url = match &cursor {
            Some(c) => format!("{path}{join}limit=2&cursor={c}"),
            None => format!("{path}{join}limit=2"),
        };
        let r = t.get(&url).send();
        assert_eq!(r.status, 200, "{url}: {}", r.body);
        let page = r.json();
        let got = page["items"].as_array().unwrap();
        assert!(got.len() <= 2);
        items.extend(got.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return items,
        }
    }
    panic!("{path}: more than 100 pages");
}

fn ids(items: &[Value], key: &str) -> Vec<String> {
    items
        .iter()
        .map(|i| i[key].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_list_pages_without_gaps_or_duplicates_and_its_filters_hold() {
    let (_app, t) = SpinApp::with_tenant("acme");
    let ada = t.resident("Ada");
    let bo = t.resident("Bo");
    let mut invoices = Vec::new();
    for (i, who) in [&ada, &ada, &ada, &bo, &bo].iter().enumerate() {
        invoices.push(t.created("/invoices", &invoice(who, 1_000 + i as i64)));
    }
    let void = t
        .patch(&format!("/invoices/{}", invoices[4]))
        .json(&json!({"status": "void"}));
    assert_eq!(void.status, 200, "{}", void.body);
    for amount in [100, 200, 300] {
        let r = t
            .post(&format!("/invoices/{}/payments", invoices[0]))
            .json(&json!({"amount_cents": amount, "method": "card"}));
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let mut complaints = Vec::new();
    for i in 0..5 {
        complaints.push(t.created(
            "/complaints",
            &json!({"resident_id": ada, "subject": format!("c{i}"), "body": "x"}),
        ));
    }
    for id in &complaints[..2] {
        let r = t
            .patch(&format!("/complaints/{id}"))
            .json(&json!({"status": "in_progress"}));
        assert_eq!(r.status, 200, "{}", r.body);
    }
    for i in 0..5 {
        t.created(
            "/announcements",
            &json!({"title": format!("a{i}"), "body": "x"}),
        );
    }

    // Ada's events are delivered after each answer: all six in before the
    // lists are paged.
    let notifications = format!("/residents/{ada}/notifications");
    eventually("six notifications", || {
        (t.list(&notifications).len() == 6).then_some(())
    });

    // Every list: paging two at a time sees each row once, in order.
    for (path, key) in [
        ("/residents", "id"),
        ("/invoices", "id"),
        (&*format!("/invoices/{}/payments", invoices[0]), "id"),
        ("/complaints", "id"),
        ("/announcements", "id"),
        (&*format!("/residents/{ada}/notifications"), "event_id"),
    ] {
        let all = t.list(path);
        let pages = paged(&t, path);
        assert_eq!(ids(&pages, key), ids(&all, key), "{path}");
    }
    assert_eq!(ids(&t.list("/invoices"), "id"), invoices, "creation order");
    // Ada: three invoices and three payments, each an event.
    assert_eq!(t.list(&format!("/residents/{ada}/notifications")).len(), 6);

    // Filters, paged too.
    assert_eq!(
        ids(&paged(&t, "/invoices?status=void"), "id"),
        [invoices[4].clone()]
    );
    assert_eq!(
        ids(&paged(&t, &format!("/invoices?resident_id={bo}")), "id"),
        invoices[3..].to_vec()
    );
    assert_eq!(paged(&t, "/invoices?status=open").len(), 4);
    assert_eq!(
        ids(&paged(&t, "/complaints?status=in_progress"), "id"),
        complaints[..2].to_vec()
    );
    assert_eq!(paged(&t, "/complaints?status=open").len(), 3);
}

/// Tenants acme and bravo, acme's resident Ada, and an invoice of 10.00
/// to her: `(acme, bravo, ada, invoice)`.
fn two_tenants_and_an_invoice(app: &SpinApp) -> (TenantClient, TenantClient, String, String) {
    let acme = app.tenant("acme");
    let bravo = app.tenant("bravo");
    let ada = acme.resident("Ada");
    let inv = acme.created("/invoices", &invoice(&ada, 1_000));
    (acme, bravo, ada, inv)
}

#[test]
fn keyed_payments_are_made_once_and_keys_are_scoped_by_tenant_and_route() {
    let app = SpinApp::start();
    let (acme, bravo, _, inv) = two_tenants_and_an_invoice(&app);
    let pay = |key: &str| {
        acme.post(&format!("/invoices/{inv}/payments"))
            .key(key)
            .json(&json!({"amount_cents": 300, "method": "card"}))
    };
    let first = pay("pay-1");
    assert_eq!(first.status, 201, "{}", first.body);
    let again = pay("pay-1");
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json()["id"], first.json()["id"]);
    let invoice_now = acme.get(&format!("/invoices/{inv}")).send().json();
    assert_eq!(invoice_now["balance_cents"], 700, "paid once");
    // The same key with another body is refused, not applied.
    let other = acme
        .post(&format!("/invoices/{inv}/payments"))
        .key("pay-1")
        .json(&json!({"amount_cents": 5, "method": "card"}));
    other.assert_problem(422, "idempotency_key_reused");
    // The same key on another route is another operation.
    let r = acme
        .post("/residents")
        .key("pay-1")
        .json(&json!({"name": "Cy", "unit": "2"}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.header("idempotent-replayed"), None);
    // ... and in another tenant, another key altogether.
    let r = bravo
        .post("/residents")
        .key("pay-1")
        .json(&json!({"name": "Cy", "unit": "2"}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.header("idempotent-replayed"), None);
}

#[test]
fn another_tenants_rows_are_not_found_by_id() {
    let app = SpinApp::start();
    let (acme, bravo, ada, inv) = two_tenants_and_an_invoice(&app);
    let complaint = acme.created(
        "/complaints",
        &json!({"resident_id": ada, "subject": "s", "body": "b"}),
    );
    for path in [
        format!("/invoices/{inv}"),
        format!("/invoices/{inv}/payments"),
        format!("/complaints/{complaint}"),
        format!("/residents/{ada}/notifications"),
        format!("/residents/{ada}"),
    ] {
        let r = bravo.get(&path).send();
        r.assert_problem(404, "not_found");
        // Asking for acme's path with bravo's token is not acme's either.
        let r = call(&app.client(), &bravo.token, "GET", &acme.path(&path), None);
        r.assert_problem(404, "tenant_not_found");
    }
    let r = bravo
        .post(&format!("/invoices/{inv}/payments"))
        .json(&json!({"amount_cents": 1, "method": "card"}));
    r.assert_problem(404, "not_found");
}

#[test]
fn a_replayed_creation_never_shows_a_token_again() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let client = app.client();
    let admin = format!("Bearer {ADMIN_TOKEN}");
    let tenant = |key: &str| {
        client.send(
            "POST",
            "/v1/tenants",
            &[
                ("authorization", &admin),
                ("content-type", "application/json"),
                ("idempotency-key", key),
            ],
            Some(
                &json!({"slug": "bravo", "name": "B", "admin_email": "b@b.org", "admin_name": "B"})
                    .to_string(),
            ),
        )
    };
    let member = |key: &str| {
        acme.post("/members")
            .key(key)
            .json(&json!({"email": "m@acme.org", "name": "M", "role": "manager"}))
    };
    let token = |key: &str| acme.post("/tokens").key(key).send();
    for (what, send) in [
        ("tenant", &tenant as &dyn Fn(&str) -> meridian_e2e::Reply),
        ("member", &member),
        ("token", &token),
    ] {
        let first = send("once-1");
        assert_eq!(first.status, 201, "{what}: {}", first.body);
        assert!(first.json()["token"].is_string(), "{what}");
        let again = send("once-1");
        assert_eq!(again.status, 201, "{what}");
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{what}");
        assert_eq!(again.json()["token"], Value::Null, "{what}: {}", again.body);
    }
}

#[test]
fn the_relay_stops_within_its_budget_part_way_and_finishes_later() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let ada = acme.resident("Ada");
    // Community as seen by billing: residents exist; events are refused at
    // first (so they wait in the outbox), then take 100 ms each.
    let slow = Arc::new(AtomicBool::new(false));
    let community = {
        let slow = slow.clone();
        StandIn::start(move |r| {
            if r.url().starts_with("/internal/events") {
                if slow.load(Ordering::SeqCst) {
                    StandInReply::Delayed {
                        delay: Duration::from_millis(100),
                        status: 200,
                        headers: Vec::new(),
                        body: r#"{"stored":true}"#.into(),
                    }
                } else {
                    StandInReply::Json(503, "{}".into())
                }
            } else {
                StandInReply::Json(200, "{}".into())
            }
        })
    };
    // Only community's event endpoint fails here; the failure memory keeps
    // one breaker per downstream, which would refuse the resident checks
    // too, so it is off (tests/tests/memory.rs covers it).
    let app = app.restart_with(
        SpinOptions::default()
            .variable("community_url", community.url())
            .variable("failure_memory", "off"),
    );
    for i in 0..8 {
        acme.created("/invoices", &invoice(&ada, 100 + i));
    }
    // Every event's delivery after its answer refused before they turn
    // slow: all eight wait in the outbox.
    settled("the deliveries after the answers", 8, || {
        community
            .received()
            .iter()
            .filter(|r| r.url().starts_with("/internal/events"))
            .count()
    });
    slow.store(true, Ordering::SeqCst);
    let relay = |timeout: &str| {
        app.client().send(
            "POST",
            "/ops/outbox/relay",
            &[
                ("authorization", &format!("Bearer {ADMIN_TOKEN}")),
                ("x-meridian-timeout-ms", timeout),
            ],
            None,
        )
    };
    // Failed inline deliveries are due again after 1 s: poll until they are.
    let started = Instant::now();
    let first = loop {
        let r = relay("450");
        // Billing's and the gateway's lines say where a late answer's time went.
        assert_eq!(r.status, 200, "{}\n{}", r.body, app.logs());
        assert!(
            r.elapsed <= Duration::from_millis(460),
            "relay answered after {:?}",
            r.elapsed
        );
        if r.json()["delivered"].as_u64() > Some(0) || started.elapsed() > Duration::from_secs(10) {
            break r.json();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let delivered = first["delivered"].as_u64().unwrap();
    assert!((1..8).contains(&delivered), "part-way: {first}");
    assert_eq!(first["pending"].as_u64().unwrap(), 8 - delivered, "{first}");
    // Later runs with time enough deliver the rest, each as it comes due
    // (polled: failed deliveries back off for a second).
    let mut rest = 0;
    let started = Instant::now();
    loop {
        let r = relay("5000").json();
        rest += r["delivered"].as_u64().unwrap();
        if r["pending"] == 0 || started.elapsed() > Duration::from_secs(15) {
            assert_eq!(r["pending"], 0, "{r}");
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(delivered + rest, 8, "every event delivered once");
}
