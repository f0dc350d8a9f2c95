//! Community's handlers over a real (host) SQLite with the real migrations.
// Test helpers may do what the production lints forbid: those are for
// code that reads client bytes (Cargo.toml, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use community::app::Community;
use meridian_platform::http::prelude::*;
use meridian_platform::tenancy::Role;
use meridian_platform::time::ManualClock;
use meridian_platform::{Clock, Deadline, RequestContext};
use meridian_testing::http::{code, fields, get, patch, post, request, Build};
use meridian_testing::{assert_embeds_every_migration, migrated_store, tenant_context, HostSqlite};
use serde_json::{json, Value};

const TENANT_A: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
const TENANT_B: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6b02";
const ADMIN: &str = "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02";
const RESIDENT_USER: &str = "9a1c2f4e-2222-4a55-9d3c-2f0c3b1f6a03";
const OTHER_RESIDENT_USER: &str = "9a1c2f4e-3333-4a55-9d3c-2f0c3b1f6a04";

struct Harness {
    app: Community<HostSqlite, &'static ManualClock>,
}

impl Harness {
    fn new() -> Self {
        Self {
            app: Community {
                store: migrated_store(community::migrations::ALL),
            },
        }
    }

    fn ctx(&self, tenant: &str, actor: &str, role: Role) -> RequestContext {
        tenant_context(
            self.app.store.clock().now(),
            "community",
            tenant,
            actor,
            role,
        )
    }

    fn as_(&self, tenant: &str, actor: &str, role: Role, request: Request) -> Response {
        community::handle(&self.app, &self.ctx(tenant, actor, role), &request)
    }

    fn admin(&self, request: Request) -> Response {
        self.as_(TENANT_A, ADMIN, Role::Admin, request)
    }

    fn resident(&self, request: Request) -> Response {
        self.as_(TENANT_A, RESIDENT_USER, Role::Resident, request)
    }

    fn new_resident(&self, name: &str) -> String {
        let r = self.admin(post(
            "/v1/a/residents",
            json!({"name": name, "unit": "4B", "email": "Ada@Example.org"}),
        ));
        assert_eq!(r.status().as_u16(), 201, "{}", r.json_body());
        r.json_body()["id"].as_str().unwrap().to_owned()
    }

    fn count(&self, table: &str) -> i64 {
        let ctx = self.ctx(TENANT_A, ADMIN, Role::Admin);
        self.app
            .store
            .query(&ctx, &format!("SELECT COUNT(*) AS n FROM {table}"), &[])
            .unwrap()[0]
            .integer("n")
            .unwrap()
    }
}

#[test]
fn every_migration_file_is_embedded() {
    assert_embeds_every_migration("community", community::migrations::ALL);
}

#[test]
fn staff_manage_residents_and_members_read_them() {
    let h = Harness::new();
    let id = h.new_resident("Ada");
    let r = h.resident(get(&format!("/v1/a/residents/{id}")));
    assert_eq!(r.status(), 200);
    let b = r.json_body();
    assert_eq!(
        (b["name"].as_str(), b["unit"].as_str(), b["email"].as_str()),
        (Some("Ada"), Some("4B"), Some("ada@example.org"))
    );
    let r = h.admin(patch(
        &format!("/v1/a/residents/{id}"),
        json!({"unit": "5C", "email": null}),
    ));
    assert_eq!(r.status().as_u16(), 200, "{}", r.json_body());
    assert_eq!(
        (
            r.json_body()["unit"].as_str(),
            r.json_body()["email"].clone()
        ),
        (Some("5C"), Value::Null)
    );
    assert_eq!(
        h.admin(request("DELETE", &format!("/v1/a/residents/{id}")))
            .status(),
        204
    );
    assert_eq!(
        h.resident(get(&format!("/v1/a/residents/{id}"))).status(),
        404
    );
    assert_eq!(
        h.admin(request("DELETE", &format!("/v1/a/residents/{id}")))
            .status(),
        404
    );
}

#[test]
fn residents_may_not_change_residents() {
    let h = Harness::new();
    let id = h.new_resident("Ada");
    let r = h.resident(post("/v1/a/residents", json!({"name": "X", "unit": "1"})));
    assert_eq!((r.status().as_u16(), code(&r).as_str()), (403, "forbidden"));
    assert_eq!(
        h.resident(patch(
            &format!("/v1/a/residents/{id}"),
            json!({"unit": "9"})
        ))
        .status(),
        403
    );
    assert_eq!(
        h.resident(request("DELETE", &format!("/v1/a/residents/{id}")))
            .status(),
        403
    );
    assert_eq!(h.count("residents"), 1);
}

#[test]
fn another_tenants_rows_are_not_found() {
    let h = Harness::new();
    let id = h.new_resident("Ada");
    let other = |req| h.as_(TENANT_B, ADMIN, Role::Admin, req);
    assert_eq!(other(get(&format!("/v1/b/residents/{id}"))).status(), 404);
    assert_eq!(
        other(patch(
            &format!("/v1/b/residents/{id}"),
            json!({"unit": "1"})
        ))
        .status(),
        404
    );
    assert_eq!(
        other(request("DELETE", &format!("/v1/b/residents/{id}"))).status(),
        404
    );
    assert_eq!(
        other(get("/v1/b/residents")).json_body()["items"],
        json!([])
    );
    let r = other(post(
        "/v1/b/complaints",
        json!({"resident_id": id, "subject": "s", "body": "b"}),
    ));
    assert_eq!(fields(&r), ["resident_id"]);
}

#[test]
fn resident_input_is_validated() {
    let h = Harness::new();
    let r = h.admin(post(
        "/v1/a/residents",
        json!({"name": "", "unit": "x".repeat(51), "email": "nope", "user_id": "42", "age": 3}),
    ));
    assert_eq!(
        (r.status().as_u16(), code(&r).as_str()),
        (422, "validation_failed")
    );
    assert_eq!(fields(&r), ["name", "unit", "email", "user_id", "age"]);
    let id = h.new_resident("Ada");
    let r = h.admin(patch(
        &format!("/v1/a/residents/{id}"),
        json!({"name": null}),
    ));
    assert_eq!(fields(&r), ["name"]);
    assert_eq!(
        h.admin(patch(&format!("/v1/a/residents/{id}"), json!({})))
            .status(),
        422
    );
    assert_eq!(
        h.admin(request("POST", "/v1/a/residents").with_body("{oops"))
            .status(),
        400
    );
    assert_eq!(h.count("residents"), 1);
}

#[test]
fn resident_pages_are_stable_while_rows_are_added() {
    let h = Harness::new();
    for i in 0..25 {
        h.new_resident(&format!("R{i:02}"));
    }
    let first = h.resident(get("/v1/a/residents?limit=10")).json_body();
    assert_eq!(first["items"].as_array().unwrap().len(), 10);
    // Rows added between pages land after the cursor: no duplicates, no gaps.
    h.new_resident("Late");
    let mut seen: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    let mut cursor = first["next_cursor"].as_str().map(str::to_owned);
    while let Some(c) = cursor {
        let page = h
            .resident(get(&format!("/v1/a/residents?limit=10&cursor={c}")))
            .json_body();
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["name"].as_str().unwrap().to_owned()),
        );
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    let mut expected: Vec<String> = (0..25).map(|i| format!("R{i:02}")).collect();
    expected.push("Late".into());
    assert_eq!(seen, expected);
    assert_eq!(h.resident(get("/v1/a/residents?limit=101")).status(), 400);
    assert_eq!(
        h.resident(get("/v1/a/residents?cursor=nonsense")).status(),
        400
    );
}

#[test]
fn a_row_whose_id_sorts_before_the_cursor_is_still_on_a_later_page() {
    // Ids are UUIDv7 made by separate invocations: two made in the same
    // millisecond order at random. A row created while a client pages may
    // have an id below the cursor's; paging by sequence still shows it.
    let h = Harness::new();
    for i in 0..3 {
        h.new_resident(&format!("R{i}"));
    }
    let first = h.resident(get("/v1/a/residents?limit=2")).json_body();
    let ctx = meridian_testing::context_at(
        h.app.store.clock().now(),
        std::time::Duration::from_secs(1),
        "community",
    );
    h.app
        .store
        .execute(
            &ctx,
            "INSERT INTO residents (id, tenant_id, name, unit, created_at, updated_at)
             VALUES ('00000000-0000-7000-8000-000000000000', ?, 'Same ms', '1A', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
            &[TENANT_A.into()],
        )
        .unwrap();
    let cursor = first["next_cursor"].as_str().unwrap();
    let rest = h
        .resident(get(&format!("/v1/a/residents?limit=10&cursor={cursor}")))
        .json_body();
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["R2", "Same ms"]);
}

#[test]
fn complaints_move_forward_one_step_at_a_time() {
    let h = Harness::new();
    let resident = h.new_resident("Ada");
    let r = h.resident(post(
        "/v1/a/complaints",
        json!({"resident_id": resident, "subject": "Leak", "body": "Water in 4B"}),
    ));
    assert_eq!(r.status(), 201);
    assert_eq!(r.json_body()["status"], "open");
    let path = format!("/v1/a/complaints/{}", r.json_body()["id"].as_str().unwrap());
    let r = h.admin(patch(&path, json!({"status": "resolved"})));
    assert_eq!((r.status().as_u16(), code(&r).as_str()), (409, "conflict"));
    assert_eq!(
        h.resident(patch(&path, json!({"status": "in_progress"})))
            .status(),
        403
    );
    for status in ["in_progress", "resolved", "closed"] {
        let r = h.admin(patch(&path, json!({"status": status})));
        assert_eq!(
            (r.status().as_u16(), r.json_body()["status"].as_str()),
            (200, Some(status))
        );
    }
    assert_eq!(
        h.admin(patch(&path, json!({"status": "open"}))).status(),
        409
    );
    assert_eq!(
        fields(&h.admin(patch(&path, json!({"status": "done"})))),
        ["status"]
    );
}

#[test]
fn residents_see_only_the_complaints_they_filed() {
    let h = Harness::new();
    let resident = h.new_resident("Ada");
    let mine = h
        .resident(post(
            "/v1/a/complaints",
            json!({"resident_id": resident, "subject": "Mine", "body": "b"}),
        ))
        .json_body();
    let theirs = h
        .as_(
            TENANT_A,
            OTHER_RESIDENT_USER,
            Role::Resident,
            post(
                "/v1/a/complaints",
                json!({"resident_id": resident, "subject": "Theirs", "body": "b"}),
            ),
        )
        .json_body();
    let listed = h.resident(get("/v1/a/complaints")).json_body();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed["items"][0]["id"], mine["id"]);
    assert_eq!(
        h.resident(get(&format!(
            "/v1/a/complaints/{}",
            theirs["id"].as_str().unwrap()
        )))
        .status(),
        404
    );
    assert_eq!(
        h.admin(get("/v1/a/complaints")).json_body()["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        h.admin(get("/v1/a/complaints?status=closed")).json_body()["items"],
        json!([])
    );
    assert_eq!(h.admin(get("/v1/a/complaints?status=nope")).status(), 400);
}

#[test]
fn announcements_are_published_by_staff_and_read_by_members() {
    let h = Harness::new();
    let r = h.admin(post(
        "/v1/a/announcements",
        json!({"title": "Pool", "body": "Opens Monday"}),
    ));
    assert_eq!(r.status(), 201);
    assert_eq!(r.json_body()["author_id"], ADMIN);
    assert!(r.json_body()["published_at"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    assert_eq!(
        h.resident(post(
            "/v1/a/announcements",
            json!({"title": "x", "body": "y"})
        ))
        .status(),
        403
    );
    assert_eq!(
        h.resident(get("/v1/a/announcements")).json_body()["items"][0]["title"],
        "Pool"
    );
}

#[test]
fn a_repeated_event_delivery_creates_one_notification() {
    let h = Harness::new();
    let resident = h.new_resident("Ada");
    let event = json!({
        "event_id": "01890a5d-ac96-774b-bcce-b302099a8057",
        "tenant_id": TENANT_A,
        "resident_id": resident,
        "type": "invoice.created",
        "payload": {"invoice_id": "x", "amount_cents": 1200},
        "created_at": "2026-11-29T10:00:00.000Z"
    });
    let internal = |req| {
        community::handle(
            &h.app,
            &meridian_testing::context_at(
                h.app.store.clock().now(),
                std::time::Duration::from_secs(1),
                "community",
            ),
            &req,
        )
    };
    let delivered = |tenant: &str, body: &serde_json::Value| {
        post("/internal/events", body).with_header("x-meridian-event-tenant", tenant)
    };
    // Bound to the outbox row's tenant, which billing names apart from the
    // body: without it, or with a body naming another tenant, nothing is stored.
    let unbound = internal(post("/internal/events", event.clone()));
    assert_eq!(unbound.status().as_u16(), 400, "{}", unbound.json_body());
    let elsewhere = internal(delivered(TENANT_B, &event));
    assert_eq!(
        elsewhere.status().as_u16(),
        422,
        "{}",
        elsewhere.json_body()
    );
    assert_eq!(elsewhere.json_body()["errors"][0]["field"], "tenant_id");
    let first = internal(delivered(TENANT_A, &event));
    assert_eq!(
        (first.status().as_u16(), first.json_body()["stored"].clone()),
        (200, json!(true))
    );
    let again = internal(delivered(TENANT_A, &event));
    assert_eq!(
        (again.status().as_u16(), again.json_body()["stored"].clone()),
        (200, json!(false))
    );
    let notifications = format!("/v1/a/residents/{resident}/notifications");
    // A resident-role member not linked to this resident cannot see them.
    let r = h.resident(get(&notifications));
    assert_eq!(r.status().as_u16(), 404, "{}", r.json_body());
    let linked = h.admin(
        request("PATCH", &format!("/v1/a/residents/{resident}"))
            .with_body(json!({ "user_id": RESIDENT_USER }).to_string()),
    );
    assert_eq!(linked.status(), 200);
    let listed = h.resident(get(&notifications)).json_body();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    // Staff see any resident's.
    assert_eq!(h.admin(get(&notifications)).status(), 200);
    assert_eq!(listed["items"][0]["type"], "invoice.created");
    assert_eq!(listed["items"][0]["payload"]["amount_cents"], 1200);
    let bad = internal(delivered(TENANT_A, &json!({"event_id": "x"})));
    assert_eq!(bad.status(), 422);
    // Another tenant cannot read them.
    assert_eq!(
        h.as_(
            TENANT_B,
            ADMIN,
            Role::Admin,
            get(&format!("/v1/b/residents/{resident}/notifications"))
        )
        .status(),
        404
    );
}

#[test]
fn keyed_creation_replays_instead_of_duplicating() {
    let h = Harness::new();
    let req = || {
        post(
            "/v1/a/announcements",
            json!({"title": "Pool", "body": "Opens"}),
        )
        .with_header("idempotency-key", "ann-1")
    };
    let first = h.admin(req());
    let again = h.admin(req());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.json_body(), again.json_body());
    assert_eq!(h.count("announcements"), 1);
}

#[test]
fn an_expired_request_touches_nothing() {
    let h = Harness::new();
    let now = h.app.store.clock().now();
    let expired = RequestContext::new(
        meridian_platform::wire::request_id::RequestId::parse("late").unwrap(),
        Deadline::at(now),
        now,
        "community",
    )
    .with_tenant(*h.ctx(TENANT_A, ADMIN, Role::Admin).tenant().unwrap());
    let r = community::handle(
        &h.app,
        &expired,
        &post("/v1/a/residents", json!({"name": "Ada", "unit": "1"})),
    );
    assert_eq!(
        (r.status().as_u16(), code(&r).as_str()),
        (504, "deadline_exceeded")
    );
    assert_eq!(h.count("residents"), 0);
}

mod hostile_input {
    use super::*;
    use meridian_testing::hostile_body;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the body, the answer is a success or a 4xx problem:
        /// never a 5xx, never a panic.
        #[test]
        fn writes_answer_any_body_with_a_4xx_or_success(
            body in hostile_body(&["name", "unit", "email", "user_id", "resident_id", "subject", "body", "status", "title"]),
            route in prop::sample::select(vec![
                ("POST", "/v1/a/residents"), ("PATCH", "/v1/a/residents/{id}"), ("POST", "/v1/a/complaints"),
                ("PATCH", "/v1/a/complaints/{id}"), ("POST", "/v1/a/announcements"), ("POST", "/internal/events"),
            ]),
        ) {
            let h = Harness::new();
            let resident = h.new_resident("Ada");
            let r = h.admin(request(route.0, &route.1.replace("{id}", &resident)).with_body(body));
            prop_assert!(r.status().as_u16() < 500, "{} {} -> {}: {}", route.0, route.1, r.status(), r.json_body());
            if r.status().as_u16() >= 400 {
                prop_assert_eq!(r.header("content-type"), Some("application/problem+json"));
            }
        }
    }
}

mod same_millisecond {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Rows made by different invocations in the same millisecond carry
        /// ids in any order. Whatever the ids, and wherever a page ends,
        /// paging returns every row once, in the order they were created —
        /// including rows created between two pages.
        #[test]
        fn pages_follow_creation_order_whatever_the_ids(
            ids in proptest::collection::hash_set("[0-9a-f]{8}", 2..12),
            limit in 1u32..5,
            late in 0usize..12,
        ) {
            let h = Harness::new();
            let ctx = meridian_testing::context_at(h.app.store.clock().now(), std::time::Duration::from_secs(5), "community");
            let insert = |suffix: &str, name: &str| {
                // Same millisecond prefix, arbitrary tail: UUIDv7 made apart.
                let id = format!("01a22ee8-e773-7000-8000-0000{suffix}");
                h.app.store.execute(
                    &ctx,
                    "INSERT INTO residents (id, tenant_id, name, unit, created_at, updated_at) VALUES (?, ?, ?, '1', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                    &[id.as_str().into(), TENANT_A.into(), name.into()],
                ).unwrap();
            };
            let ids: Vec<String> = ids.into_iter().collect();
            let (first, rest) = ids.split_at(ids.len() / 2);
            for (i, id) in first.iter().enumerate() {
                insert(id, &format!("r{i:02}"));
            }
            let mut seen: Vec<String> = Vec::new();
            let mut cursor: Option<String> = None;
            let mut created = first.len();
            let mut pages = 0;
            loop {
                let path = match &cursor {
                    Some(c) => format!("/v1/a/residents?limit={limit}&cursor={c}"),
                    None => format!("/v1/a/residents?limit={limit}"),
                };
                let page = h.resident(get(&path)).json_body();
                seen.extend(page["items"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_owned()));
                let Some(next) = page["next_cursor"].as_str() else { break };
                cursor = Some(next.to_owned());
                // Between two pages, the rest arrive (after `late` pages).
                if pages == late.min(3) {
                    for id in rest {
                        insert(id, &format!("r{created:02}"));
                        created += 1;
                    }
                }
                pages += 1;
                prop_assert!(pages < 100);
            }
            let expected: Vec<String> = (0..created).map(|i| format!("r{i:02}")).collect();
            prop_assert_eq!(seen, expected);
        }
    }
}

#[test]
fn head_is_served_like_get() {
    let h = Harness::new();
    h.new_resident("Ada");
    let r = h.resident(request("HEAD", "/v1/a/residents"));
    assert_eq!(r.status(), 200);
}
