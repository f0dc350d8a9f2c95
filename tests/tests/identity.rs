//! Identity through the gateway on a real `spin up`: tenants, members,
//! tokens, one resolution per request, and no leaks across tenants.

use meridian_e2e::api::call;
use meridian_e2e::{SpinApp, SpinOptions, ADMIN_TOKEN};
use serde_json::json;

#[test]
fn a_tenant_is_created_with_an_admin_whose_token_works() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let r = acme.get("").send();
    assert_eq!(r.status, 200, "{}\n{}", r.body, app.logs());
    assert_eq!(r.json()["slug"], "acme");
    assert_eq!(r.json()["id"], acme.id.as_str());
    let timing = r.header("server-timing").unwrap_or_default();
    assert!(
        timing.contains("resolve;dur=") && timing.contains("identity;dur="),
        "{timing}"
    );
}

#[test]
fn tenant_creation_needs_the_admin_token_and_valid_input() {
    let app = SpinApp::start();
    let client = app.client();
    let body =
        json!({"slug": "acme", "name": "Acme", "admin_email": "a@acme.org", "admin_name": "A"});
    call(&client, "not-the-admin", "POST", "/v1/tenants", Some(&body))
        .assert_problem(401, "unauthorized");
    let bad = json!({"slug": "No Way", "name": "", "admin_email": "nope", "admin_name": "A", "plan": "gold"});
    let r = call(&client, ADMIN_TOKEN, "POST", "/v1/tenants", Some(&bad));
    let problem = r.assert_problem(422, "validation_failed");
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["slug", "name", "admin_email", "plan"]);
    let r = client.send(
        "POST",
        "/v1/tenants",
        &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        Some("{not json"),
    );
    r.assert_problem(400, "invalid_request");
    app.tenant("acme");
    call(&client, ADMIN_TOKEN, "POST", "/v1/tenants", Some(&body)).assert_problem(409, "conflict");
}

#[test]
fn unknown_tenants_bad_tokens_and_missing_tokens_are_refused() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let client = app.client();
    call(&client, &acme.token, "GET", "/v1/nowhere", None).assert_problem(404, "tenant_not_found");
    acme.get("")
        .token("mrd_0000")
        .send()
        .assert_problem(401, "unauthorized");
    client
        .get(&acme.path(""))
        .assert_problem(401, "unauthorized");
}

#[test]
fn a_token_of_one_tenant_finds_nothing_in_another() {
    let (app, a) = SpinApp::with_tenant("alpha");
    let client = app.client();
    let b = app.tenant("bravo");
    let some_id = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
    // Every public tenant route, from the services' own tables.
    let tables = [
        meridian_endpoints::identity::ENDPOINTS
            .iter()
            .map(|row| (&row.method, row.path))
            .collect::<Vec<_>>(),
        meridian_endpoints::community::ENDPOINTS
            .iter()
            .map(|row| (&row.method, row.path))
            .collect(),
        meridian_endpoints::billing::ENDPOINTS
            .iter()
            .map(|row| (&row.method, row.path))
            .collect(),
    ];
    let routes: Vec<(String, String)> = tables
        .concat()
        .into_iter()
        .filter(|(_, template)| meridian_endpoints::is_forwarded(template))
        .map(|(method, template)| {
            let rest = template.trim_start_matches(meridian_endpoints::TENANT_PREFIX);
            (method.to_string(), rest.replace("{id}", some_id))
        })
        .collect();
    assert!(routes.len() >= 24, "{routes:?}");
    for (method, rest) in routes {
        let r = call(&client, &a.token, &method, &b.path(&rest), Some(&json!({})));
        assert_eq!(r.status, 404, "{method} {rest}: {}", r.body);
        assert_eq!(r.json()["code"], "tenant_not_found", "{method} {rest}");
    }
    // And b's own admin still sees b.
    assert_eq!(b.get("").send().status, 200);
}

#[test]
fn admins_manage_members_and_others_may_not() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let (member, member_token) = acme.member("bo@acme.org", "resident");
    assert_eq!(member["role"], "resident");
    let r = acme.get("/members?limit=1").send();
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 1);
    let cursor = r.json()["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let r = acme
        .get(&format!("/members?limit=1&cursor={cursor}"))
        .send();
    assert_eq!(r.json()["items"][0]["email"], "bo@acme.org");
    acme.get("/members")
        .token(&member_token)
        .send()
        .assert_problem(403, "forbidden");
    let bad = json!({"email": "x", "name": "", "role": "owner", "age": 1});
    let r = acme.post("/members").json(&bad);
    assert_eq!(
        r.assert_problem(422, "validation_failed")["errors"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let dup = json!({"email": "BO@acme.org", "name": "Bo", "role": "manager"});
    acme.post("/members")
        .json(&dup)
        .assert_problem(409, "conflict");
}

#[test]
fn removing_a_member_or_revoking_a_token_takes_effect_on_the_next_request() {
    let app = SpinApp::start_with(SpinOptions::default().key_value_file());
    // The remembered resolutions the store holds for acme.
    let entries = || {
        app.key_value_keys()
            .iter()
            .filter(|key| key.starts_with("resolution:acme:"))
            .count()
    };
    let client = app.client();
    let acme = app.tenant("acme");
    let (member, member_token) = acme.member("bo@acme.org", "manager");
    // Both tokens remembered by the gateway first: the cache is on here,
    // and a change must still be seen on the very next request.
    assert_remembered(&acme, &member_token);

    // Revocation: a second token of the member's, revoked, stops at once.
    // One in another bin than the member's first token and the admin's
    // (a bin emptied for one token takes what else it holds).
    let bin = |token: &str| {
        let slug = meridian_platform::tenancy::TenantSlug::parse("acme").unwrap();
        meridian_platform::tenancy::cache::hashed_entry_key(
            &slug,
            &meridian_platform::secrets::token_hash(token),
        )
    };
    let (id, second) = std::iter::repeat_with(|| {
        let r = acme.post("/tokens").token(&member_token).send();
        assert_eq!(r.status, 201, "{}", r.body);
        (
            r.json()["id"].as_str().unwrap().to_owned(),
            r.json()["token"].as_str().unwrap().to_owned(),
        )
    })
    .find(|(_, second)| bin(second) != bin(&member_token) && bin(second) != bin(&acme.token))
    .unwrap();
    assert_remembered(&acme, &second);
    let before = entries();
    assert_eq!(
        acme.delete(&format!("/tokens/{id}"))
            .token(&member_token)
            .send()
            .status,
        204
    );
    // Its entry is removed from the store, not only no longer served.
    assert_eq!(entries(), before - 1, "the revoked token's entry");
    acme.get("")
        .token(&second)
        .send()
        .assert_problem(401, "unauthorized");

    // Removal: every token of the membership stops.
    let path = acme.path(&format!("/members/{}", member["id"].as_str().unwrap()));
    let before = entries();
    assert_eq!(
        call(&client, &acme.token, "DELETE", &path, None).status,
        204
    );
    assert_eq!(entries(), before - 1, "the removed member's token's entry");
    acme.get("")
        .token(&member_token)
        .send()
        .assert_problem(401, "unauthorized");
}

/// Reads with `token` until the gateway answers from its resolution cache
/// (the second read, unless the first ran into an entry's end).
fn assert_remembered(tenant: &meridian_e2e::api::TenantClient, token: &str) {
    let cached = (0..3).any(|_| {
        let r = tenant.get("").token(token).send();
        assert_eq!(r.status, 200, "{}", r.body);
        r.header("server-timing")
            .is_some_and(|t| t.contains("resolve-cached;dur="))
    });
    assert!(cached, "the resolution was never remembered");
}

/// Readers hammer the gateway with a remembered token while it is revoked
/// (and, in a second round, while its member is removed): no read that
/// started after the change was answered may succeed, whichever process
/// or instance remembered it.
#[test]
fn a_remembered_resolution_is_never_served_after_identity_changed_its_answer() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    // No rate limit: a credential over it is refused before resolution,
    // with a 429 that would hide what this looks for.
    let app = SpinApp::start_with(SpinOptions::default().variable("tenant_rate_limit", "off"));
    let acme = app.tenant("acme");
    for round in 0..6 {
        let removal = round % 2 == 1;
        let (member, member_token) = acme.member(&format!("m{round}@acme.org"), "manager");
        let r = acme.post("/tokens").token(&member_token).send();
        assert_eq!(r.status, 201, "{}", r.body);
        let (id, token) = (
            r.json()["id"].as_str().unwrap().to_owned(),
            r.json()["token"].as_str().unwrap().to_owned(),
        );
        assert_remembered(&acme, &token);
        let stop = AtomicBool::new(false);
        let changed_at = std::sync::Mutex::new(None::<Instant>);
        let served_after: Vec<String> = std::thread::scope(|s| {
            let readers: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        let mut late = Vec::new();
                        while !stop.load(Ordering::SeqCst) {
                            let started = Instant::now();
                            let r = acme.get("/residents").token(&token).send();
                            let after_change = changed_at
                                .lock()
                                .unwrap()
                                .is_some_and(|changed| started > changed);
                            if after_change && r.status != 401 {
                                late.push(format!("{} {}", r.status, r.body));
                            }
                        }
                        late
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(100));
            let status = if removal {
                let path = format!("/members/{}", member["id"].as_str().unwrap());
                acme.delete(&path).send().status
            } else {
                acme.delete(&format!("/tokens/{id}"))
                    .token(&member_token)
                    .send()
                    .status
            };
            *changed_at.lock().unwrap() = Some(Instant::now());
            std::thread::sleep(std::time::Duration::from_millis(300));
            // The readers stop before anything is asserted: a failed
            // assertion inside the scope would leave them reading forever.
            stop.store(true, Ordering::SeqCst);
            let late = readers
                .into_iter()
                .flat_map(|r| r.join().unwrap())
                .collect();
            assert_eq!(status, 204, "round {round}");
            late
        });
        assert!(
            served_after.is_empty(),
            "round {round} (removal: {removal}): answered after the change: {served_after:?}"
        );
        acme.get("")
            .token(&token)
            .send()
            .assert_problem(401, "unauthorized");
    }
}

#[test]
fn keyed_member_creation_replays_and_refuses_a_different_body() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let body = json!({"email": "cy@acme.org", "name": "Cy", "role": "resident"});
    let first = acme.post("/members").key("member-cy").json(&body);
    let again = acme.post("/members").key("member-cy").json(&body);
    assert_eq!((first.status, again.status), (201, 201));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.json()["id"], again.json()["id"]);
    let other = json!({"email": "dee@acme.org", "name": "Dee", "role": "resident"});
    acme.post("/members")
        .key("member-cy")
        .json(&other)
        .assert_problem(422, "idempotency_key_reused");
    acme.post("/members")
        .key("bad key")
        .json(&other)
        .assert_problem(400, "invalid_idempotency_key");
    let members = acme.get("/members").send();
    assert_eq!(members.json()["items"].as_array().unwrap().len(), 2);
}

#[test]
fn an_oversized_body_is_refused_by_the_service_and_nothing_is_written() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    // Under the gateway's 1 MiB, over the service's 64 KiB.
    let body = json!({"email": "big@acme.org", "name": "x".repeat(100 * 1024), "role": "resident"});
    acme.post("/members")
        .json(&body)
        .assert_problem(413, "payload_too_large");
    let members = acme.get("/members").send();
    assert_eq!(members.json()["items"].as_array().unwrap().len(), 1);
}

#[test]
fn a_read_on_a_fresh_database_brings_its_schema_up_to_date_and_reads_again() {
    // Reads skip the migration ledger; the first request these databases
    // ever see is a read, which finds no tables at all.
    let app = SpinApp::start();
    // A read with an unknown token, and identity's lines for it.
    let read = || {
        let r = call(
            &app.client(),
            "mrd_unknown",
            "GET",
            "/v1/acme/residents",
            None,
        );
        r.assert_problem(401, "unauthorized");
        let id = r.header("x-request-id").unwrap().to_owned();
        let lines: Vec<_> = app
            .log_lines("identity")
            .into_iter()
            .filter(|l| l["request_id"] == id)
            .collect();
        lines
    };
    let first = read();
    assert!(
        first.iter().any(|l| l["event"] == "migration_applied"),
        "{first:?}"
    );
    // Its answer: the 401 of the second reading, not a storage failure,
    // and the first reading's missing tables are not logged as one.
    assert!(first.iter().any(|l| l["status"] == 401), "{first:?}");
    assert!(!first.iter().any(|l| l["event"] == "failure"), "{first:?}");
    // Later reads find the schema in place and read once.
    let lines = read();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["statements"], 1, "{lines:?}");
}
