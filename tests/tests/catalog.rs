//! The bad-input catalog: every case goes through the public API of a real
//! `spin up` and must get its precise 4xx problem+json — never a 5xx, never
//! a trap (the harness fails a test whose components trapped) — and
//! nothing may be written by any of them.

use meridian_e2e::api::{list, TenantClient};
use meridian_e2e::{Client, SpinApp, ADMIN_TOKEN};
use serde_json::json;

/// One bad request and the answer it must get.
struct Case {
    name: &'static str,
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Option<String>,
    status: u16,
    code: &'static str,
    /// The answer comes before the body is all sent.
    early: bool,
}

fn case(name: &'static str, method: &'static str, path: impl Into<String>) -> Case {
    Case {
        name,
        method,
        path: path.into(),
        headers: Vec::new(),
        body: None,
        status: 0,
        code: "",
        early: false,
    }
}

impl Case {
    fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
    fn json(self, body: impl Into<String>) -> Self {
        let mut c = self.header("content-type", "application/json");
        c.body = Some(body.into());
        c
    }
    fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }
    fn early(mut self) -> Self {
        self.early = true;
        self
    }
    fn expect(mut self, status: u16, code: &'static str) -> Self {
        self.status = status;
        self.code = code;
        self
    }
}

/// Rows that a bad request must not add to.
fn written(client: &Client, t: &TenantClient) -> Vec<usize> {
    [
        "/residents",
        "/invoices",
        "/complaints",
        "/announcements",
        "/members",
    ]
    .iter()
    .map(|p| list(client, t, p).len())
    .collect()
}

#[test]
fn every_bad_request_gets_its_precise_4xx_and_writes_nothing() {
    let (app, t) = SpinApp::with_tenant("acme");
    let client = app.client();
    let resident = t.resident("Ada");
    let invoice = t.post("/invoices").json(&json!({"resident_id": resident, "amount_cents": 500, "currency": "EUR", "description": "Rent", "due_date": "2026-12-31"}),);
    assert_eq!(invoice.status, 201, "{}", invoice.body);
    let invoice = invoice.json()["id"].as_str().unwrap().to_owned();
    let complaint = t
        .post("/complaints")
        .json(&json!({"resident_id": resident, "subject": "Leak", "body": "Kitchen"}));
    assert_eq!(complaint.status, 201, "{}", complaint.body);
    let complaint = complaint.json()["id"].as_str().unwrap().to_owned();
    let before = written(&client, &t);

    let bearer = format!("Bearer {}", t.token);
    let residents = t.path("/residents");
    let invoices = t.path("/invoices");
    let payments = t.path(&format!("/invoices/{invoice}/payments"));
    let resident_path = t.path(&format!("/residents/{resident}"));
    let complaint_path = t.path(&format!("/complaints/{complaint}"));
    let inv = |fields: serde_json::Value| {
        let mut body = json!({"resident_id": resident, "amount_cents": 100, "currency": "EUR", "description": "x", "due_date": "2026-12-31"});
        for (k, v) in fields.as_object().unwrap() {
            body[k] = v.clone();
        }
        body.to_string()
    };
    let cases = vec![
        // Headers: the budget.
        case("timeout not a number", "GET", &residents)
            .header("x-meridian-timeout-ms", "soon")
            .expect(400, "invalid_timeout"),
        case("timeout zero", "GET", &residents)
            .header("x-meridian-timeout-ms", "0")
            .expect(400, "invalid_timeout"),
        case("timeout negative", "GET", &residents)
            .header("x-meridian-timeout-ms", "-5")
            .expect(400, "invalid_timeout"),
        case("timeout fractional", "GET", &residents)
            .header("x-meridian-timeout-ms", "1.5")
            .expect(400, "invalid_timeout"),
        case("timeout with unit", "GET", &residents)
            .header("x-meridian-timeout-ms", "10ms")
            .expect(400, "invalid_timeout"),
        case("timeout with sign", "GET", &residents)
            .header("x-meridian-timeout-ms", "+5")
            .expect(400, "invalid_timeout"),
        // Headers: idempotency keys.
        case("key with a space", "POST", &residents)
            .header("idempotency-key", "a b")
            .json(r#"{"name":"N","unit":"1"}"#)
            .expect(400, "invalid_idempotency_key"),
        case("key too long", "POST", &residents)
            .header("idempotency-key", "k".repeat(256))
            .json(r#"{"name":"N","unit":"1"}"#)
            .expect(400, "invalid_idempotency_key"),
        case("key with a tab", "POST", &residents)
            .header("idempotency-key", "a\tb")
            .json(r#"{"name":"N","unit":"1"}"#)
            .expect(400, "invalid_idempotency_key"),
        // Headers: credentials.
        case("no authorization", "GET", &residents).expect(401, "unauthorized"),
        case("basic auth", "GET", &residents)
            .header("authorization", "Basic YTpi")
            .expect(401, "unauthorized"),
        case("empty bearer", "GET", &residents)
            .header("authorization", "Bearer ")
            .expect(401, "unauthorized"),
        case("unknown token", "GET", &residents)
            .header("authorization", "Bearer mrd_nope")
            .expect(401, "unauthorized"),
        case(
            "tenant creation without the admin token",
            "POST",
            "/v1/tenants",
        )
        .header("authorization", bearer.clone())
        .json(r#"{"slug":"x","name":"x","admin_email":"a@b.org","admin_name":"x"}"#)
        .expect(401, "unauthorized"),
        // Content types: a body declared as anything but JSON.
        case("text/plain body", "POST", &residents)
            .header("content-type", "text/plain")
            .body(r#"{"name":"N","unit":"1"}"#)
            .expect(415, "unsupported_media_type"),
        case("form body", "POST", &residents)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("name=N&unit=1")
            .expect(415, "unsupported_media_type"),
        case("multipart body", "POST", &residents)
            .header("content-type", "multipart/form-data; boundary=x")
            .body("--x--")
            .expect(415, "unsupported_media_type"),
        case("xml body", "POST", &invoices)
            .header("content-type", "application/xml")
            .body("<invoice/>")
            .expect(415, "unsupported_media_type"),
        // JSON shapes.
        case("truncated JSON", "POST", &residents)
            .json("{")
            .expect(400, "invalid_request"),
        case("JSON array", "POST", &residents)
            .json("[]")
            .expect(400, "invalid_request"),
        case("JSON null", "POST", &residents)
            .json("null")
            .expect(400, "invalid_request"),
        case("JSON string", "POST", &residents)
            .json(r#""Ada""#)
            .expect(400, "invalid_request"),
        case("JSON number", "POST", &residents)
            .json("42")
            .expect(400, "invalid_request"),
        case("not UTF-8 JSON", "POST", &residents)
            .json("{\"name\":\"\u{FFFD}")
            .expect(400, "invalid_request"),
        case("duplicate trailing data", "POST", &residents)
            .json(r#"{"name":"N","unit":"1"} {}"#)
            .expect(400, "invalid_request"),
        // Resident fields.
        case("resident empty object", "POST", &residents)
            .json("{}")
            .expect(422, "validation_failed"),
        case("resident name a number", "POST", &residents)
            .json(r#"{"name":1,"unit":"1"}"#)
            .expect(422, "validation_failed"),
        case("resident name empty", "POST", &residents)
            .json(r#"{"name":"","unit":"1"}"#)
            .expect(422, "validation_failed"),
        case("resident name too long", "POST", &residents)
            .json(json!({"name": "x".repeat(201), "unit": "1"}).to_string())
            .expect(422, "validation_failed"),
        case("resident unknown field", "POST", &residents)
            .json(r#"{"name":"N","unit":"1","floor":3}"#)
            .expect(422, "validation_failed"),
        case("resident unit null", "POST", &residents)
            .json(r#"{"name":"N","unit":null}"#)
            .expect(422, "validation_failed"),
        case("resident bad email", "POST", &residents)
            .json(r#"{"name":"N","unit":"1","email":"nope"}"#)
            .expect(422, "validation_failed"),
        case("resident bad user id", "POST", &residents)
            .json(r#"{"name":"N","unit":"1","user_id":"not-a-uuid"}"#)
            .expect(422, "validation_failed"),
        case("resident unicode name too long", "POST", &residents)
            .json(json!({"name": "é".repeat(201), "unit": "1"}).to_string())
            .expect(422, "validation_failed"),
        case("resident patch changes nothing", "PATCH", &resident_path)
            .json("{}")
            .expect(422, "validation_failed"),
        case("resident patch name null", "PATCH", &resident_path)
            .json(r#"{"name":null}"#)
            .expect(422, "validation_failed"),
        // Invoice fields.
        case("invoice amount zero", "POST", &invoices)
            .json(inv(json!({"amount_cents": 0})))
            .expect(422, "validation_failed"),
        case("invoice amount negative", "POST", &invoices)
            .json(inv(json!({"amount_cents": -1})))
            .expect(422, "validation_failed"),
        case("invoice amount fractional", "POST", &invoices)
            .json(inv(json!({"amount_cents": 1.5})))
            .expect(422, "validation_failed"),
        case("invoice amount a string", "POST", &invoices)
            .json(inv(json!({"amount_cents": "100"})))
            .expect(422, "validation_failed"),
        case("invoice amount huge", "POST", &invoices)
            .json(inv(json!({"amount_cents": 1e20})))
            .expect(422, "validation_failed"),
        case("invoice currency lower case", "POST", &invoices)
            .json(inv(json!({"currency": "eur"})))
            .expect(422, "validation_failed"),
        case("invoice currency unknown", "POST", &invoices)
            .json(inv(json!({"currency": "EURO"})))
            .expect(422, "validation_failed"),
        case("invoice month 13", "POST", &invoices)
            .json(inv(json!({"due_date": "2026-13-01"})))
            .expect(422, "validation_failed"),
        case("invoice date in words", "POST", &invoices)
            .json(inv(json!({"due_date": "tomorrow"})))
            .expect(422, "validation_failed"),
        case("invoice resident not a UUID", "POST", &invoices)
            .json(inv(json!({"resident_id": "x"})))
            .expect(422, "validation_failed"),
        case("invoice unknown resident", "POST", &invoices)
            .json(inv(
                json!({"resident_id": "01890a5d-ac96-774b-bcce-b302099a8057"}),
            ))
            .expect(422, "validation_failed"),
        case("invoice empty description", "POST", &invoices)
            .json(inv(json!({"description": ""})))
            .expect(422, "validation_failed"),
        case("invoice nothing at all", "POST", &invoices)
            .json("{}")
            .expect(422, "validation_failed"),
        case(
            "void to another status",
            "PATCH",
            t.path(&format!("/invoices/{invoice}")),
        )
        .json(r#"{"status":"paid"}"#)
        .expect(422, "validation_failed"),
        // Payments.
        case("payment amount zero", "POST", &payments)
            .json(r#"{"amount_cents":0,"method":"card"}"#)
            .expect(422, "validation_failed"),
        case("payment unknown method", "POST", &payments)
            .json(r#"{"amount_cents":1,"method":"bitcoin"}"#)
            .expect(422, "validation_failed"),
        case("payment over the balance", "POST", &payments)
            .json(r#"{"amount_cents":501,"method":"card"}"#)
            .expect(422, "validation_failed"),
        case(
            "payment on a malformed invoice id",
            "POST",
            t.path("/invoices/nope/payments"),
        )
        .json(r#"{"amount_cents":1,"method":"card"}"#)
        .expect(404, "not_found"),
        // Complaints.
        case("complaint without a subject", "POST", t.path("/complaints"))
            .json(json!({"resident_id": resident, "body": "x"}).to_string())
            .expect(422, "validation_failed"),
        case("complaint to an unknown status", "PATCH", &complaint_path)
            .json(r#"{"status":"reopened"}"#)
            .expect(422, "validation_failed"),
        case("complaint skipping a step", "PATCH", &complaint_path)
            .json(r#"{"status":"closed"}"#)
            .expect(409, "conflict"),
        // Members and tenants.
        case("member with an unknown role", "POST", t.path("/members"))
            .json(r#"{"email":"m@x.org","name":"M","role":"owner"}"#)
            .expect(422, "validation_failed"),
        case("member with a bad email", "POST", t.path("/members"))
            .json(r#"{"email":"m","name":"M","role":"manager"}"#)
            .expect(422, "validation_failed"),
        case("tenant with a bad slug", "POST", "/v1/tenants")
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .json(r#"{"slug":"Bad_Slug","name":"x","admin_email":"a@b.org","admin_name":"x"}"#)
            .expect(422, "validation_failed"),
        case("tenant with a reserved slug", "POST", "/v1/tenants")
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .json(r#"{"slug":"tenants","name":"x","admin_email":"a@b.org","admin_name":"x"}"#)
            .expect(422, "validation_failed"),
        // Paths.
        case("unknown resource", "GET", t.path("/unknown")).expect(404, "not_found"),
        case("unknown version", "GET", "/v2/acme").expect(404, "not_found"),
        case(
            "resident id not a UUID",
            "GET",
            t.path("/residents/not-a-uuid"),
        )
        .expect(404, "not_found"),
        case(
            "invoice that does not exist",
            "GET",
            t.path("/invoices/01890a5d-ac96-774b-bcce-b302099a8057"),
        )
        .expect(404, "not_found"),
        case(
            "too deep a path",
            "GET",
            t.path(&format!("/invoices/{invoice}/payments/x")),
        )
        .expect(404, "not_found"),
        case("unknown tenant", "GET", "/v1/nowhere/residents").expect(404, "tenant_not_found"),
        case("malformed slug", "GET", "/v1/ACME!/residents").expect(404, "tenant_not_found"),
        // Methods.
        case("PUT on a collection", "PUT", &residents)
            .json(r#"{"name":"N","unit":"1"}"#)
            .expect(405, "method_not_allowed"),
        case("DELETE on invoices", "DELETE", &invoices).expect(405, "method_not_allowed"),
        case("POST on healthz", "POST", "/healthz").expect(405, "method_not_allowed"),
        case("PATCH on tenants", "PATCH", "/v1/tenants")
            .json("{}")
            .expect(405, "method_not_allowed"),
        case(
            "DELETE an invoice",
            "DELETE",
            t.path(&format!("/invoices/{invoice}")),
        )
        .expect(405, "method_not_allowed"),
        // Query parameters.
        case("limit zero", "GET", format!("{residents}?limit=0")).expect(400, "invalid_request"),
        case("limit too large", "GET", format!("{residents}?limit=101"))
            .expect(400, "invalid_request"),
        case(
            "limit not a number",
            "GET",
            format!("{residents}?limit=ten"),
        )
        .expect(400, "invalid_request"),
        case("cursor not hex", "GET", format!("{residents}?cursor=zz"))
            .expect(400, "invalid_request"),
        case(
            "cursor of another kind",
            "GET",
            format!("{residents}?cursor=6331"),
        )
        .expect(400, "invalid_request"),
        case(
            "invoice status filter unknown",
            "GET",
            format!("{invoices}?status=late"),
        )
        .expect(400, "invalid_request"),
        case(
            "invoice resident filter malformed",
            "GET",
            format!("{invoices}?resident_id=x"),
        )
        .expect(400, "invalid_request"),
        case(
            "complaint status filter unknown",
            "GET",
            format!("{}?status=late", t.path("/complaints")),
        )
        .expect(400, "invalid_request"),
        // Sizes.
        case("service body over 64 KiB", "POST", &residents)
            .json(json!({"name": "x".repeat(70_000), "unit": "1"}).to_string())
            .expect(413, "payload_too_large"),
        case("gateway body over 1 MiB", "POST", &residents)
            .json(json!({"name": "x".repeat(1_100_000), "unit": "1"}).to_string())
            .early()
            .expect(413, "payload_too_large"),
    ];
    assert!(cases.len() >= 60, "the catalog holds {} cases", cases.len());

    let mut failures = Vec::new();
    let mut server_errors = 0;
    for c in &cases {
        let mut headers: Vec<(&str, &str)> =
            c.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        if !headers.iter().any(|(n, _)| *n == "authorization") {
            headers.push(("authorization", &bearer));
        }
        if c.name == "no authorization" {
            headers.retain(|(n, _)| *n != "authorization");
        }
        let r = if c.early {
            client.send_early(c.method, &c.path, &headers, c.body.as_deref().unwrap_or(""))
        } else {
            client.send(c.method, &c.path, &headers, c.body.as_deref())
        };
        if r.status >= 500 {
            server_errors += 1;
        }
        let body = r.json();
        let ok = r.status == c.status
            && r.header("content-type") == Some("application/problem+json")
            && body["code"] == c.code
            && body["request_id"].as_str() == r.header("x-request-id")
            && (c.code != "validation_failed"
                || body["errors"].as_array().is_some_and(|e| !e.is_empty()))
            && (c.code != "method_not_allowed" || r.header("allow").is_some());
        if !ok {
            failures.push(format!(
                "{}: want {} {}, got {} {}",
                c.name, c.status, c.code, r.status, r.body
            ));
        }
    }
    println!(
        "catalog: {} cases, {} as expected, {} 5xx",
        cases.len(),
        cases.len() - failures.len(),
        server_errors
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(server_errors, 0);
    assert_eq!(
        written(&client, &t),
        before,
        "a bad request wrote something"
    );
}
