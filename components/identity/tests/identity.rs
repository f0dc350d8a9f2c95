//! Identity's handlers over a real (host) SQLite with the real migrations:
//! tenants, members, tokens, resolution, idempotency and bad input.
// Test helpers may do what the production lints forbid: those are for
// code that reads client bytes (Cargo.toml, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::rc::Rc;
use std::time::Duration;

use identity::app::Identity;
use meridian_platform::http::prelude::*;
use meridian_platform::limits::rate::refused_key;
use meridian_platform::secrets::{token_hash, AdminToken};
use meridian_platform::store::db::Store;
use meridian_platform::store::migrate::migrate;
use meridian_platform::tenancy::cache::{
    generation_key, hashed_entry_key, CacheConfig, Entries, LocalEntries, ResolutionCache,
};
use meridian_platform::tenancy::{Role, TenantScope, TenantSlug};
use meridian_platform::time::ManualClock;
use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Clock, Deadline, RequestContext, UnixMillis};
use meridian_testing::http::{code, fields, request, Build};
use meridian_testing::{assert_embeds_every_migration, HostSqlite};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "platform-admin-secret";

struct Harness {
    app: Identity<HostSqlite, &'static ManualClock>,
    /// What the app writes to the key-value store.
    resolutions: Rc<LocalEntries>,
}

/// Who is calling, as the gateway would have resolved it.
#[derive(Clone, Copy)]
struct Caller {
    tenant_id: &'static str,
    user_id: &'static str,
    role: Role,
}

impl Harness {
    fn new() -> Self {
        let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new(
            UnixMillis::from_millis(1_700_000_000_000),
        )));
        let store = Store::new(HostSqlite::in_memory(), clock);
        let resolutions = Rc::new(LocalEntries::default());
        let h = Self {
            app: Identity {
                store,
                admin_token: AdminToken::read_with(|| ADMIN_TOKEN.into()),
                resolutions: Box::new(resolutions.clone()),
            },
            resolutions,
        };
        migrate(&h.app.store, &h.ctx(None), identity::migrations::ALL).unwrap();
        h
    }

    /// The tenant's resolution generation (`None`: never moved).
    fn generation(&self, slug: &str) -> Option<Vec<u8>> {
        self.resolutions
            .get(&generation_key(&TenantSlug::parse(slug).unwrap()))
    }

    /// Remembers `caller`'s resolution of `token` at `slug`, as the
    /// gateway would after identity answered.
    fn remember(&self, slug: &str, token: &str, caller: Caller) {
        let cache = ResolutionCache::new(
            self.resolutions.as_ref(),
            CacheConfig::default().signed_with("the-gateways-internal-token-for-tests"),
        );
        let (slug, now) = (
            TenantSlug::parse(slug).unwrap(),
            self.app.store.clock().now(),
        );
        let scope = TenantScope {
            tenant_id: caller.tenant_id.parse().unwrap(),
            actor_id: caller.user_id.parse().unwrap(),
            role: caller.role,
        };
        cache.remember(cache.look_up(&slug, token, now), &scope, now);
        assert!(self.remembered(slug.as_str(), token));
    }

    /// Whether the store holds an entry for `token` at `slug`, current or not.
    fn remembered(&self, slug: &str, token: &str) -> bool {
        let cache = ResolutionCache::new(
            self.resolutions.as_ref(),
            CacheConfig::default().signed_with("the-gateways-internal-token-for-tests"),
        );
        let keys = cache.read_keys(&TenantSlug::parse(slug).unwrap(), token);
        self.resolutions.get(&keys[0]).is_some()
    }

    fn ctx(&self, caller: Option<Caller>) -> RequestContext {
        let now = self.app.store.clock().now();
        let ctx = RequestContext::new(
            RequestId::parse("t").unwrap(),
            Deadline::after(now, Duration::from_secs(2)),
            now,
            "identity",
        );
        match caller {
            Some(c) => ctx.with_tenant(TenantScope {
                tenant_id: c.tenant_id.parse().unwrap(),
                actor_id: c.user_id.parse().unwrap(),
                role: c.role,
            }),
            None => ctx,
        }
    }

    fn call(&self, caller: Option<Caller>, request: Request) -> Response {
        identity::handle(&self.app, &self.ctx(caller), &request)
    }

    fn create_tenant(&self, slug: &str) -> (Caller, String) {
        let r = self.call(
            None,
            request("POST", "/v1/tenants")
                .with_header("authorization", format!("Bearer {ADMIN_TOKEN}"))
                .with_body(json!({"slug": slug, "name": "Maple Court", "admin_email": format!("admin@{slug}.org"), "admin_name": "Ada"}).to_string()),
        );
        assert_eq!(r.status().as_u16(), 201, "{}", r.json_body());
        let b = r.json_body();
        let caller = Caller {
            tenant_id: leak(b["tenant"]["id"].as_str().unwrap()),
            user_id: leak(b["admin"]["user_id"].as_str().unwrap()),
            role: Role::Admin,
        };
        (caller, b["token"].as_str().unwrap().to_owned())
    }

    /// A new token of acme's for `caller`: `(its id, the token)`.
    fn new_token(&self, caller: Caller) -> (String, String) {
        let r = self.call(Some(caller), request("POST", "/v1/acme/tokens"));
        assert_eq!(r.status().as_u16(), 201, "{}", r.json_body());
        let b = r.json_body();
        let field = |name: &str| b[name].as_str().unwrap().to_owned();
        (field("id"), field("token"))
    }

    fn resolve(&self, slug: &str, token: &str) -> Response {
        self.call(
            None,
            request("GET", &format!("/internal/resolve?slug={slug}"))
                .with_header("authorization", format!("Bearer {token}")),
        )
    }

    fn count(&self, table: &str) -> i64 {
        self.app
            .store
            .query(
                &self.ctx(None),
                &format!("SELECT COUNT(*) AS n FROM {table}"),
                &[],
            )
            .unwrap()[0]
            .integer("n")
            .unwrap()
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

#[test]
fn every_migration_file_is_embedded() {
    assert_embeds_every_migration("identity", identity::migrations::ALL);
}

#[test]
fn creating_a_tenant_needs_the_platform_admin_token() {
    let h = Harness::new();
    let body = json!({"slug": "acme", "name": "A", "admin_email": "a@acme.org", "admin_name": "A"})
        .to_string();
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic platform-admin-secret"),
    ] {
        let mut req = request("POST", "/v1/tenants").with_body(body.clone());
        if let Some(a) = auth {
            req = req.with_header("authorization", a);
        }
        let r = h.call(None, req);
        assert_eq!(
            (r.status().as_u16(), code(&r).as_str()),
            (401, "unauthorized"),
            "{auth:?}"
        );
    }
    assert_eq!(h.count("tenants"), 0);
}

#[test]
fn a_new_tenant_comes_with_an_admin_and_a_working_token() {
    let h = Harness::new();
    let (admin, token) = h.create_tenant("maple-court");
    assert!(token.starts_with("mrd_"));
    let r = h.resolve("maple-court", &token);
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json_body(),
        json!({"tenant_id": admin.tenant_id, "actor_id": admin.user_id, "role": "admin"})
    );
    let r = h.call(Some(admin), request("GET", "/v1/maple-court"));
    assert_eq!(
        (r.status().as_u16(), r.json_body()["slug"].as_str()),
        (200, Some("maple-court"))
    );
    // Only the hash is stored.
    let stored = h
        .app
        .store
        .query(&h.ctx(None), "SELECT token_hash FROM api_tokens", &[])
        .unwrap();
    assert_ne!(stored[0].text("token_hash").unwrap(), token);
}

#[test]
fn resolution_distinguishes_unknown_tenants_bad_tokens_and_foreign_tokens() {
    let h = Harness::new();
    let (_, token_a) = h.create_tenant("alpha");
    h.create_tenant("bravo");
    assert_eq!(code(&h.resolve("nowhere", &token_a)), "tenant_not_found");
    assert_eq!(h.resolve("nowhere", &token_a).status(), 404);
    assert_eq!(
        code(&h.resolve("alpha", "mrd_not-a-real-token")),
        "unauthorized"
    );
    let no_token = h.call(None, request("GET", "/internal/resolve?slug=alpha"));
    assert_eq!(no_token.status(), 401);
    // A valid token of another tenant: not found, as if bravo did not exist.
    let r = h.resolve("bravo", &token_a);
    assert_eq!(
        (r.status().as_u16(), code(&r).as_str()),
        (404, "tenant_not_found")
    );
}

#[test]
fn a_wrong_token_cannot_tell_real_slugs_from_unknown_ones() {
    let h = Harness::new();
    h.create_tenant("alpha");
    let real = h.resolve("alpha", "mrd_not-a-real-token");
    let unknown = h.resolve("nowhere", "mrd_not-a-real-token");
    assert_eq!(
        (real.status().as_u16(), code(&real)),
        (401, "unauthorized".to_owned())
    );
    assert_eq!(
        (unknown.status().as_u16(), code(&unknown)),
        (real.status().as_u16(), code(&real))
    );
    assert_eq!(unknown.json_body()["detail"], real.json_body()["detail"]);
}

#[test]
fn tenant_input_is_validated_field_by_field_and_nothing_is_written() {
    let h = Harness::new();
    let post = |body: &str| {
        h.call(
            None,
            request("POST", "/v1/tenants")
                .with_header("authorization", format!("Bearer {ADMIN_TOKEN}"))
                .with_body(body.to_owned()),
        )
    };
    let r = post(r#"{"slug":"Bad_Slug","name":"","admin_email":"nope","extra":1}"#);
    assert_eq!(
        (r.status().as_u16(), code(&r).as_str()),
        (422, "validation_failed")
    );
    assert_eq!(
        fields(&r),
        ["slug", "name", "admin_email", "admin_name", "extra"]
    );
    let r = post(r#"{"slug":"tenants","name":"x","admin_email":"a@b.org","admin_name":"x"}"#);
    assert_eq!(fields(&r), ["slug"]);
    assert_eq!(post("{not json").status(), 400);
    assert_eq!(post("[]").status(), 400);
    assert_eq!(
        post(&format!(r#"{{"slug":"{}"}}"#, "x".repeat(70_000))).status(),
        413
    );
    assert_eq!(h.count("tenants") + h.count("users"), 0);
}

#[test]
fn a_taken_slug_is_a_conflict() {
    let h = Harness::new();
    h.create_tenant("acme");
    let r = h.call(
        None,
        request("POST", "/v1/tenants")
            .with_header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .with_body(r#"{"slug":"acme","name":"x","admin_email":"b@acme.org","admin_name":"x"}"#),
    );
    assert_eq!((r.status().as_u16(), code(&r).as_str()), (409, "conflict"));
}

fn add_member(h: &Harness, admin: Caller, email: &str, role: &str) -> Response {
    h.call(
        Some(admin),
        request("POST", "/v1/acme/members")
            .with_body(json!({"email": email, "name": "Bo", "role": role}).to_string()),
    )
}

#[test]
fn admins_add_list_and_remove_members() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let r = add_member(&h, admin, "Bo@Example.org", "manager");
    assert_eq!(r.status(), 201);
    let member = r.json_body();
    assert_eq!(
        (member["email"].as_str(), member["role"].as_str()),
        (Some("bo@example.org"), Some("manager"))
    );
    let r = h.call(Some(admin), request("GET", "/v1/acme/members"));
    assert_eq!(r.json_body()["items"].as_array().unwrap().len(), 2);
    assert_eq!(r.json_body()["next_cursor"], Value::Null);
    let r = h.call(
        Some(admin),
        request(
            "DELETE",
            &format!("/v1/acme/members/{}", member["id"].as_str().unwrap()),
        ),
    );
    assert_eq!(r.status(), 204);
    let r = h.call(Some(admin), request("GET", "/v1/acme/members"));
    assert_eq!(r.json_body()["items"].as_array().unwrap().len(), 1);
}

#[test]
fn what_a_tenant_sees_of_a_person_is_its_own() {
    let h = Harness::new();
    let (acme, _) = h.create_tenant("acme");
    let (bravo, _) = h.create_tenant("bravo");
    let in_acme = add_member(&h, acme, "alice@x.org", "manager").json_body();
    let r = h.call(
        Some(bravo),
        request("POST", "/v1/bravo/members").with_body(
            json!({"email": "alice@x.org", "name": "A. Liddell", "role": "resident"}).to_string(),
        ),
    );
    assert_eq!(r.status().as_u16(), 201, "{}", r.json_body());
    let in_bravo = r.json_body();
    assert_eq!(in_bravo["name"], "A. Liddell", "bravo's own name for her");
    assert_ne!(in_bravo["user_id"], in_acme["user_id"], "no shared id");
    let listed = h.call(Some(bravo), request("GET", "/v1/bravo/members"));
    let text = listed.json_body().to_string();
    assert!(!text.contains(in_acme["name"].as_str().unwrap()), "{text}");
    assert!(
        !text.contains(in_acme["user_id"].as_str().unwrap()),
        "{text}"
    );
    // Her bravo token acts as bravo's person, not acme's.
    let token = in_bravo["token"].as_str().unwrap();
    let resolved = h.resolve("bravo", token).json_body();
    assert_eq!(resolved["actor_id"], in_bravo["user_id"]);
    assert_eq!(resolved["role"], "resident");
}

#[test]
fn existing_members_keep_their_names_and_ids_and_shared_users_are_split() {
    let store = Store::new(HostSqlite::in_memory(), meridian_platform::SystemClock);
    let now = meridian_platform::SystemClock.now();
    let ctx = RequestContext::new(
        RequestId::parse("m").unwrap(),
        Deadline::after(now, Duration::from_secs(5)),
        now,
        "identity",
    );
    migrate(&store, &ctx, &identity::migrations::ALL[..2]).unwrap();
    for sql in [
        "INSERT INTO tenants VALUES ('t1', 'acme', 'Acme', 'x'), ('t2', 'bravo', 'Bravo', 'x')",
        "INSERT INTO users VALUES ('u1', 'alice@x.org', 'Alice', 'x')",
        "INSERT INTO memberships (id, tenant_id, user_id, role, created_at)
         VALUES ('m1', 't1', 'u1', 'admin', 'x'), ('m2', 't2', 'u1', 'resident', 'x')",
    ] {
        store.execute(&ctx, sql, &[]).unwrap();
    }
    migrate(&store, &ctx, identity::migrations::ALL).unwrap();
    let rows = store
        .query(
            &ctx,
            "SELECT id, person_id, name FROM memberships ORDER BY id",
            &[],
        )
        .unwrap();
    assert_eq!(
        rows[0].text("person_id").unwrap(),
        "u1",
        "the first keeps its id"
    );
    let split = rows[1].text("person_id").unwrap();
    assert!(meridian_platform::ids::parse_id(split).is_some(), "{split}");
    assert_ne!(split, "u1");
    assert_eq!(rows[0].text("name").unwrap(), "Alice");
    assert_eq!(rows[1].text("name").unwrap(), "Alice");
}

#[test]
fn member_lists_page_without_gaps_or_duplicates() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    for i in 0..7 {
        assert_eq!(
            add_member(&h, admin, &format!("m{i}@acme.org"), "resident").status(),
            201
        );
    }
    let (mut seen, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/acme/members?limit=3&cursor={c}"),
            None => "/v1/acme/members?limit=3".into(),
        };
        let b = h.call(Some(admin), request("GET", &path)).json_body();
        seen.extend(
            b["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned()),
        );
        match b["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (8, 8));
    assert_eq!(seen, unique, "pages come in creation order");
    let r = h.call(Some(admin), request("GET", "/v1/acme/members?limit=0"));
    assert_eq!(r.status(), 400);
}

#[test]
fn only_admins_manage_members() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    for role in [Role::Manager, Role::Resident] {
        let caller = Caller { role, ..admin };
        assert_eq!(
            code(&h.call(Some(caller), request("GET", "/v1/acme/members"))),
            "forbidden"
        );
        assert_eq!(
            add_member(&h, caller, "x@acme.org", "resident").status(),
            403
        );
    }
    assert_eq!(h.count("memberships"), 1);
}

#[test]
fn member_input_errors_and_duplicates_are_refused() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let r = add_member(&h, admin, "not-an-email", "owner");
    assert_eq!(fields(&r), ["email", "role"]);
    assert_eq!(
        add_member(&h, admin, "bo@acme.org", "resident").status(),
        201
    );
    let r = add_member(&h, admin, "BO@acme.org", "manager");
    assert_eq!((r.status().as_u16(), code(&r).as_str()), (409, "conflict"));
}

/// The key of the bin `token`'s remembered resolution is kept in at `slug`.
fn bin(slug: &str, token: &str) -> String {
    hashed_entry_key(&TenantSlug::parse(slug).unwrap(), &token_hash(token))
}

#[test]
fn removing_a_member_stops_their_tokens_and_the_last_admin_stays() {
    let h = Harness::new();
    let (admin, admin_token) = h.create_tenant("acme");
    let member = add_member(&h, admin, "bo@acme.org", "manager").json_body();
    let bo = Caller {
        tenant_id: admin.tenant_id,
        user_id: leak(member["user_id"].as_str().unwrap()),
        role: Role::Manager,
    };
    let (_, token) = h.new_token(bo);
    let first_token = member["token"].as_str().unwrap();
    // An admin's token in none of the member's tokens' bins (whose
    // emptying would take its entry too).
    let admin_token = std::iter::once(admin_token)
        .chain(std::iter::repeat_with(|| h.new_token(admin).1))
        .find(|t| {
            bin("acme", t) != bin("acme", &token) && bin("acme", t) != bin("acme", first_token)
        })
        .unwrap();
    assert_eq!(h.resolve("acme", &token).status(), 200);
    assert_eq!(h.generation("acme"), None);
    for remembered in [&token, first_token, &admin_token] {
        h.remember("acme", remembered, bo);
    }
    let path = format!("/v1/acme/members/{}", member["id"].as_str().unwrap());
    assert_eq!(h.call(Some(admin), request("DELETE", &path)).status(), 204);
    assert_eq!(h.resolve("acme", &token).status(), 401);
    // Both of the member's tokens' entries are gone from the store; the
    // admin's stays (stale by its generation, and overwritten on its next miss).
    assert!(!h.remembered("acme", &token) && !h.remembered("acme", first_token));
    assert!(h.remembered("acme", &admin_token));
    // The gateway's remembered resolutions of acme stop being served.
    let moved = h.generation("acme");
    assert!(moved.is_some());
    assert_eq!(h.call(Some(admin), request("DELETE", &path)).status(), 404);
    assert_eq!(
        h.generation("acme"),
        moved,
        "a refused change moves nothing"
    );
    let admin_membership = h
        .call(Some(admin), request("GET", "/v1/acme/members"))
        .json_body()["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = h.call(
        Some(admin),
        request("DELETE", &format!("/v1/acme/members/{admin_membership}")),
    );
    assert_eq!((r.status().as_u16(), code(&r).as_str()), (409, "conflict"));
    assert_eq!(h.resolve("acme", &admin_token).status(), 200);
    assert_eq!(h.generation("acme"), moved);
}

#[test]
fn tokens_are_made_for_the_caller_and_revocation_takes_effect_at_once() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let (id, token) = h.new_token(admin);
    // Another token in another of the tenant's bins (one in 64 shares the
    // revoked token's, whose emptying would take its entry too).
    let other = std::iter::repeat_with(|| h.new_token(admin).1)
        .find(|other| bin("acme", other) != bin("acme", &token))
        .unwrap();
    assert_eq!(h.resolve("acme", &token).status(), 200);
    assert_eq!(
        h.generation("acme"),
        None,
        "a new token changes no resolution"
    );
    h.remember("acme", &token, admin);
    h.remember("acme", &other, admin);
    // And the token was refused over its tenant's rate: the gateway's mark.
    let mark = refused_key("acme", &token_hash(&token));
    h.resolutions.put(&mark, b"1700000099000").unwrap();
    assert_eq!(
        h.call(
            Some(admin),
            request("DELETE", &format!("/v1/acme/tokens/{id}"))
        )
        .status(),
        204
    );
    assert_eq!(h.resolve("acme", &token).status(), 401);
    assert!(h.generation("acme").is_some());
    // The revoked token's entry and mark are removed from the store; the
    // other token's entry stays.
    assert!(!h.remembered("acme", &token));
    assert_eq!(h.resolutions.get(&mark), None);
    assert!(h.remembered("acme", &other));
    let r = h.call(
        Some(admin),
        request("POST", "/v1/acme/tokens").with_body(r#"{"scope":"all"}"#),
    );
    assert_eq!(fields(&r), ["scope"]);
}

/// A member holds at most 20 live tokens: the 21st mint is a 409 of its
/// own code and writes nothing; revoking one makes room for one.
#[test]
fn a_member_mints_at_most_twenty_live_tokens() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    // The tenant's first token, made with it, is one of the twenty.
    let ids: Vec<String> = (1..20).map(|_| h.new_token(admin).0).collect();
    assert_eq!(h.count("api_tokens"), 20);
    let refused = h.call(Some(admin), request("POST", "/v1/acme/tokens"));
    assert_eq!(refused.status().as_u16(), 409, "{}", refused.json_body());
    assert_eq!(refused.json_body()["code"], "too_many_tokens");
    assert!(
        refused.json_body()["detail"]
            .as_str()
            .unwrap()
            .contains("at most 20"),
        "{}",
        refused.json_body()
    );
    assert_eq!(h.count("api_tokens"), 20, "nothing written");
    let revoked = h.call(
        Some(admin),
        request("DELETE", &format!("/v1/acme/tokens/{}", ids[0])),
    );
    assert_eq!(revoked.status().as_u16(), 204);
    h.new_token(admin);
    let again = h.call(Some(admin), request("POST", "/v1/acme/tokens"));
    assert_eq!(again.status().as_u16(), 409);
}

#[test]
fn a_member_cannot_revoke_someone_elses_token() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let (admins_token_id, _) = h.new_token(admin);
    let member = add_member(&h, admin, "bo@acme.org", "resident").json_body();
    let bo = Caller {
        tenant_id: admin.tenant_id,
        user_id: leak(member["user_id"].as_str().unwrap()),
        role: Role::Resident,
    };
    let r = h.call(
        Some(bo),
        request("DELETE", &format!("/v1/acme/tokens/{admins_token_id}")),
    );
    assert_eq!(r.status(), 404);
}

#[test]
fn keyed_member_creation_happens_once_and_replays() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let post = |body: &str| {
        h.call(
            Some(admin),
            request("POST", "/v1/acme/members")
                .with_header("idempotency-key", "add-bo")
                .with_body(body.to_owned()),
        )
    };
    let body = r#"{"email":"bo@acme.org","name":"Bo","role":"resident"}"#;
    let first = post(body);
    assert_eq!(first.status(), 201);
    let again = post(r#"{"role":"resident", "name":"Bo", "email":"bo@acme.org"}"#);
    assert_eq!(
        (again.status().as_u16(), again.header("idempotent-replayed")),
        (201, Some("true"))
    );
    assert_eq!(again.json_body()["id"], first.json_body()["id"]);
    assert!(first.json_body()["token"].is_string());
    assert_eq!(
        again.json_body()["token"],
        Value::Null,
        "the token is shown once"
    );
    assert_eq!(h.count("memberships"), 2);
    let reused = post(r#"{"email":"cy@acme.org","name":"Cy","role":"resident"}"#);
    assert_eq!(
        (reused.status().as_u16(), code(&reused).as_str()),
        (422, "idempotency_key_reused")
    );
    let bad = h.call(
        Some(admin),
        request("POST", "/v1/acme/members")
            .with_header("idempotency-key", "has space")
            .with_body(body),
    );
    assert_eq!(
        (bad.status().as_u16(), code(&bad).as_str()),
        (400, "invalid_idempotency_key")
    );
}

#[test]
fn a_replayed_token_creation_does_not_reveal_the_token_again() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let post = || {
        h.call(
            Some(admin),
            request("POST", "/v1/acme/tokens").with_header("idempotency-key", "tok-1"),
        )
    };
    let first = post();
    let again = post();
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json_body()["id"], first.json_body()["id"]);
    assert!(first.json_body()["token"].is_string());
    assert_eq!(again.json_body()["token"], Value::Null);
    assert_eq!(h.count("api_tokens"), 2);
}

#[test]
fn an_expired_request_runs_no_statement() {
    let h = Harness::new();
    let (admin, _) = h.create_tenant("acme");
    let now = h.app.store.clock().now();
    let expired = RequestContext::new(
        RequestId::parse("late").unwrap(),
        Deadline::at(now),
        now,
        "identity",
    )
    .with_tenant(TenantScope {
        tenant_id: admin.tenant_id.parse().unwrap(),
        actor_id: admin.user_id.parse().unwrap(),
        role: Role::Admin,
    });
    let r = identity::handle(&h.app, &expired, &request("POST", "/v1/acme/tokens"));
    assert_eq!(
        (r.status().as_u16(), code(&r).as_str()),
        (504, "deadline_exceeded")
    );
    assert_eq!(r.json_body()["hop"], "identity");
    assert_eq!(h.count("api_tokens"), 1);
}

mod hostile_input {
    use super::*;
    use meridian_testing::hostile_body;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the body, the answer is a success or a 4xx problem.
        #[test]
        fn writes_answer_any_body_with_a_4xx_or_success(
            body in hostile_body(&["slug", "name", "admin_email", "admin_name", "email", "role"]),
            path in prop::sample::select(vec!["/v1/tenants", "/v1/acme/members", "/v1/acme/tokens"]),
        ) {
            let h = Harness::new();
            let (admin, _) = h.create_tenant("acme");
            let request = request("POST", path)
                .with_header("authorization", format!("Bearer {ADMIN_TOKEN}"))
                .with_body(body);
            let caller = (path != "/v1/tenants").then_some(admin);
            let r = h.call(caller, request);
            prop_assert!(r.status().as_u16() < 500, "{path} -> {}: {}", r.status(), r.json_body());
            if r.status().as_u16() >= 400 {
                prop_assert_eq!(r.header("content-type"), Some("application/problem+json"));
            }
        }
    }
}
