//! What tenants and members can learn, on a real `spin up`: a wrong token
//! cannot tell real slugs from unknown ones, a person's name and id are the
//! tenant's own, and a resident-role member sees only their own bills.

use meridian_e2e::api::call;
use meridian_e2e::SpinApp;
use serde_json::{json, Value};

#[test]
fn a_wrong_token_gets_the_same_answer_for_a_real_slug_and_an_unknown_one() {
    let app = SpinApp::start();
    let client = app.client();
    app.tenant("acme");
    let real = call(&client, "mrd_wrong", "GET", "/v1/acme/residents", None);
    let unknown = call(&client, "mrd_wrong", "GET", "/v1/nowhere/residents", None);
    let a = real.assert_problem(401, "unauthorized");
    let b = unknown.assert_problem(401, "unauthorized");
    assert_eq!(a["detail"], b["detail"]);
}

#[test]
fn what_a_tenant_sees_of_a_person_is_its_own() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let bravo = app.tenant("bravo");
    let r = acme
        .post("/members")
        .json(&json!({"email": "alice@x.org", "name": "Alice of Acme", "role": "manager"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let in_acme = r.json();
    let r = bravo
        .post("/members")
        .json(&json!({"email": "alice@x.org", "name": "A. L.", "role": "resident"}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["name"], "A. L.");
    assert_ne!(r.json()["user_id"], in_acme["user_id"]);
    let listed = bravo.get("/members").send().body;
    assert!(!listed.contains("Alice of Acme"), "{listed}");
    assert!(
        !listed.contains(in_acme["user_id"].as_str().unwrap()),
        "{listed}"
    );
}

#[test]
fn a_resident_sees_only_their_own_invoices_payments_and_notifications() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let (member, token) = acme.member("res@acme.org", "resident");
    let mine = acme.resident("Mine");
    let theirs = acme.resident("Theirs");
    let r = acme
        .patch(&format!("/residents/{mine}"))
        .json(&json!({"user_id": member["user_id"]}));
    assert_eq!(r.status, 200, "{}", r.body);
    let bill = |resident: &str| -> String {
        let r = acme.post("/invoices").json(&json!({"resident_id": resident, "amount_cents": 100, "currency": "EUR", "description": "x", "due_date": "2026-12-31"}),);
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().unwrap().to_owned()
    };
    let my_bill = bill(&mine);
    let their_bill = bill(&theirs);

    let ids = |v: Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = acme.get("/invoices").token(&token).send();
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(ids(listed.json()), std::slice::from_ref(&my_bill));
    let staff = acme.get("/invoices").send();
    assert_eq!(ids(staff.json()).len(), 2, "staff see all");
    for path in [
        format!("/invoices/{their_bill}"),
        format!("/invoices/{their_bill}/payments"),
        format!("/residents/{theirs}/notifications"),
    ] {
        let r = acme.get(&path).token(&token).send();
        r.assert_problem(404, "not_found");
    }
    for path in [
        format!("/invoices/{my_bill}"),
        format!("/invoices/{my_bill}/payments"),
        format!("/residents/{mine}/notifications"),
    ] {
        let r = acme.get(&path).token(&token).send();
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
}

#[test]
fn wrong_methods_undeclared_media_and_bad_fields_get_their_own_problems() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let client = app.client();
    let r = call(&client, &acme.token, "PUT", &acme.path("/invoices"), None);
    r.assert_problem(405, "method_not_allowed");
    assert_eq!(r.header("allow"), Some("GET, HEAD, POST"));
    let r = client.send("DELETE", "/healthz", &[], None);
    r.assert_problem(405, "method_not_allowed");
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    let r = client.send(
        "POST",
        &acme.path("/residents"),
        &[
            ("authorization", &format!("Bearer {}", acme.token)),
            ("content-type", "text/plain"),
        ],
        Some(r#"{"name":"Ada","unit":"1"}"#),
    );
    r.assert_problem(415, "unsupported_media_type");
    let r = acme
        .patch(&format!("/residents/{}", acme.resident("Ada")))
        .json(&json!({}));
    let body = r.assert_problem(422, "validation_failed");
    assert!(!body["errors"].as_array().unwrap().is_empty(), "{body}");
}
