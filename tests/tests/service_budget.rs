//! The budget inside each private service, on real Spin: a request that
//! reaches identity, community or billing with its budget (nearly) spent is
//! refused by that service itself — the 504 names it as the `hop` — before
//! any tenant-scoped work, and writes nothing.
//!
//! Each service runs in a second `spin up` on the main app's databases,
//! called directly, signed as Meridian's components sign, with the budget
//! headers a caller that ran late would send.

use std::time::{SystemTime, UNIX_EPOCH};

use meridian_e2e::api::TenantClient;
use meridian_e2e::{signed_headers, SpinApp};
use serde_json::json;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
}

/// Sends a write to `service` directly, with `budget_ms` left.
fn late_write(
    service: &SpinApp,
    tenant: &TenantClient,
    path: &str,
    body: &serde_json::Value,
    budget_ms: u64,
) -> meridian_e2e::Reply {
    let deadline = (now_ms() + budget_ms).to_string();
    let budget = budget_ms.to_string();
    let target = tenant.path(path);
    let headers = signed_headers(
        "POST",
        &target,
        &[
            ("x-meridian-deadline", &deadline),
            ("x-meridian-budget-ms", &budget),
            ("x-tenant-id", &tenant.id),
            ("x-actor-id", &tenant.admin_user_id),
            ("x-actor-role", "admin"),
            ("content-type", "application/json"),
        ],
    );
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    service
        .client()
        .send("POST", &target, &headers, Some(&body.to_string()))
}

#[test]
fn each_service_refuses_spent_work_itself_and_writes_nothing() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let resident = acme.resident("Ada");
    let cases = [
        (
            "identity",
            "/members",
            json!({"email": "late@acme.org", "name": "Late", "role": "resident"}),
        ),
        (
            "community",
            "/residents",
            json!({"name": "Late", "unit": "9Z"}),
        ),
        (
            "billing",
            "/invoices",
            json!({"resident_id": resident, "amount_cents": 100, "currency": "EUR", "description": "late", "due_date": "2026-12-31"}),
        ),
    ];
    for (name, collection, body) in cases {
        let service = SpinApp::service_beside(&app, name);
        let before = acme.list(collection).len();
        // Spent on arrival, and 1 ms left: too little for any statement.
        for budget_ms in [0, 1] {
            let r = late_write(&service, &acme, collection, &body, budget_ms);
            let problem = r.assert_problem(504, "deadline_exceeded");
            assert_eq!(
                problem["hop"], name,
                "{name} with {budget_ms} ms: {problem}"
            );
        }
        assert_eq!(
            acme.list(collection).len(),
            before,
            "{name} wrote spent work"
        );
        // The same write with time to do it is not refused for its budget:
        // identity and community accept it; billing alone here cannot reach
        // community for its resident check, and says so.
        let r = late_write(&service, &acme, collection, &body, 2_000);
        let want = if name == "billing" { 502 } else { 201 };
        assert_eq!(r.status, want, "{name}: {}", r.body);
    }
}
