//! Each service's request handling over an in-memory SQLite with its real
//! migrations and a few rows, called as the gateway calls it: admitted, for
//! the tenant `acme`, as an admin, a manager or a resident.

use std::time::Duration;

use billing::app::Billing;
use community::app::Community;
use futures::executor::block_on;
use identity::app::Identity;
use meridian_platform::budget::gate::InternalGate;
use meridian_platform::counts::LocalCounters;
use meridian_platform::http::memory::MemoryConfig;
use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::{self, Endpoint};
use meridian_platform::http::upstream::Calls;
use meridian_platform::http::{internal_headers, HttpClient, SendError};
use meridian_platform::secrets::AdminToken;
use meridian_platform::store::db::Store;
use meridian_platform::tenancy::cache::LocalEntries;
use meridian_platform::tenancy::Role;
use meridian_platform::time::ManualClock;
use meridian_platform::wire::signature::CallKey;
use meridian_platform::{Clock, RequestContext};
use meridian_testing::http::{as_received, request, through_gate, Build};
use meridian_testing::{
    migrated_store_on, tenant_context, upstream, ClockSleeper, HostSqlite, NoJitter,
};
use serde_json::json;

use crate::input::Input;
use crate::upstream::clock;

const TENANT: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
const ACTOR: &str = "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02";
const ADMIN_TOKEN: &str = "admin-secret";
const INTERNAL_TOKEN: &str = "internal";
/// The request id of every context here: problems must carry it.
const REQUEST_ID: &str = "test-request";

type HostStore = Store<HostSqlite, &'static ManualClock>;

/// The caller, chosen by the input's first byte: each role sees other
/// answers (a resident may not write most things).
fn ctx(input: &mut Input<'_>, hop: &'static str, caller: (&str, &str)) -> RequestContext {
    let role = match input.byte() % 3 {
        0 => Role::Admin,
        1 => Role::Manager,
        _ => Role::Resident,
    };
    tenant_context(clock().now(), hop, caller.0, caller.1, role)
}

/// Every template of a service's route table, public and internal.
fn templates<Op>(table: &[Endpoint<Op>]) -> Vec<&'static str> {
    routes::templates(table)
        .into_iter()
        .map(|(t, _)| t)
        .collect()
}

/// The input's request, carrying the platform admin's token when the
/// input's next byte is even (the routes that take it check it first).
fn request_as_admin_or_not(input: &mut Input<'_>, templates: &[&str], seeded: &Seeded) -> Request {
    let with_admin_token = input.byte() % 2 == 0;
    let mut request = input.request(templates, &seeded.ids());
    if with_admin_token {
        let token = format!("Bearer {ADMIN_TOKEN}");
        message::set_header(request.headers_mut(), "authorization", &token);
    }
    request
}

fn check(who: &str, request: &Request, response: &Response) {
    crate::assert_clean(
        who,
        request,
        response.status().as_u16(),
        response.header("content-type"),
        response.body(),
        Some(REQUEST_ID),
    );
}

/// The id in a creation's answer.
fn created_id(response: &Response) -> String {
    assert_eq!(
        response.status(),
        201,
        "seeding: {:?}",
        response.json_body()
    );
    response.json_body()["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A migrated, seeded database, and the ids of its rows: made once per
/// thread, copied for every input (migrating per input cost 9 in 10 of a
/// run's time).
struct Seeded {
    db: HostSqlite,
    ids: Vec<String>,
    /// The tenant and the member the requests are made as.
    caller: (String, String),
}

impl Seeded {
    fn new(store: HostStore, ids: Vec<String>) -> Self {
        let db = store.db().copy();
        let caller = (TENANT.to_owned(), ACTOR.to_owned());
        Self { db, ids, caller }
    }

    fn caller(&self) -> (&str, &str) {
        (&self.caller.0, &self.caller.1)
    }

    /// A store on a fresh copy of the database, on the thread's clock.
    fn store(&self) -> HostStore {
        Store::new(self.db.copy(), clock())
    }

    fn ids(&self) -> Vec<&str> {
        self.ids.iter().map(String::as_str).collect()
    }
}

thread_local! {
    static IDENTITY: Seeded = seed_identity();
    static COMMUNITY: Seeded = {
        let app = community_app();
        let ids = seed_community(&app);
        Seeded::new(app.store, ids)
    };
    /// Billing's database, and community's beside it.
    static BILLING: (Seeded, Seeded) = seed_billing();
}

/// Identity with a tenant (made as the platform admin makes one) and a
/// second member of it.
fn seed_identity() -> Seeded {
    let app = Identity {
        store: migrated_store_on(clock(), identity::migrations::ALL),
        admin_token: AdminToken::read_with(|| ADMIN_TOKEN.into()),
        resolutions: Box::<LocalEntries>::default(),
    };
    let platform = meridian_testing::context_at(clock().now(), Duration::from_secs(2), "identity");
    let made = identity::handle(
        &app,
        &platform,
        &request("POST", "/v1/tenants")
            .with_header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .with_body(r#"{"slug":"acme","name":"Acme","admin_email":"a@acme.example.org","admin_name":"Ada"}"#),
    );
    assert_eq!(made.status(), 201, "seeding: {:?}", made.json_body());
    let made = made.json_body();
    let field = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let caller = (
        field(&made["tenant"]["id"]),
        field(&made["admin"]["user_id"]),
    );
    let seed = tenant_context(clock().now(), "identity", &caller.0, &caller.1, Role::Admin);
    let member = identity::handle(
        &app,
        &seed,
        &request("POST", "/v1/acme/members")
            .with_body(r#"{"email":"m@acme.example.org","name":"M","role":"manager"}"#),
    );
    let ids = vec![created_id(&member), field(&made["token_id"])];
    let mut seeded = Seeded::new(app.store, ids);
    seeded.caller = caller;
    seeded
}

/// Identity, with the tenant's second member.
pub fn identity_request(data: &[u8]) {
    IDENTITY.with(|seeded| {
        let mut input = Input::new(data);
        let app = Identity {
            store: seeded.store(),
            admin_token: AdminToken::read_with(|| ADMIN_TOKEN.into()),
            resolutions: Box::<LocalEntries>::default(),
        };
        let ctx = ctx(&mut input, "identity", seeded.caller());
        // The token, half the time: tenant creation is then reached past
        // its credential check.
        let request = request_as_admin_or_not(
            &mut input,
            &templates(meridian_endpoints::identity::ENDPOINTS),
            seeded,
        );
        check(
            "identity",
            &request,
            &identity::handle(&app, &ctx, &request),
        );
    });
}

fn community_app() -> Community<HostSqlite, &'static ManualClock> {
    Community {
        store: migrated_store_on(clock(), community::migrations::ALL),
    }
}

/// Seeds a resident and a complaint; their ids.
fn seed_community(app: &Community<HostSqlite, &'static ManualClock>) -> Vec<String> {
    let seed = tenant_context(clock().now(), "community", TENANT, ACTOR, Role::Admin);
    let resident = created_id(&community::handle(
        app,
        &seed,
        &request("POST", "/v1/acme/residents").with_body(r#"{"name":"Ada","unit":"4B"}"#),
    ));
    let complaint = created_id(&community::handle(
        app,
        &seed,
        &request("POST", "/v1/acme/complaints").with_body(
            json!({"resident_id": resident, "subject": "Leak", "body": "The roof leaks."})
                .to_string(),
        ),
    ));
    vec![resident, complaint]
}

/// Community, with a resident and a complaint.
pub fn community_request(data: &[u8]) {
    COMMUNITY.with(|seeded| {
        let mut input = Input::new(data);
        let app = Community {
            store: seeded.store(),
        };
        let ctx = ctx(&mut input, "community", seeded.caller());
        let request = input.request(
            &templates(meridian_endpoints::community::ENDPOINTS),
            &seeded.ids(),
        );
        check(
            "community",
            &request,
            &community::handle(&app, &ctx, &request),
        );
    });
}

/// Community in-process behind its real internal gate, as billing calls it.
pub struct InProcessCommunity {
    app: Community<HostSqlite, &'static ManualClock>,
    clock: &'static ManualClock,
}

impl HttpClient for InProcessCommunity {
    async fn send(&self, ctx: &RequestContext, request: Request) -> Result<Response, SendError> {
        let key = CallKey::derive(INTERNAL_TOKEN);
        let inbound = as_received(request, internal_headers(ctx, self.clock.now()), &key);
        let gate = InternalGate {
            key: &key,
            hop: "community",
            skew_threshold: Duration::from_millis(250),
        };
        let response = match through_gate(&gate, &inbound, self.clock.now()) {
            Ok(admitted) => community::handle(&self.app, &admitted.ctx, &inbound),
            Err(problem) => message::problem_for(REQUEST_ID, problem),
        };
        self.clock.advance(Duration::from_millis(1));
        Ok(response)
    }
}

/// Billing on host SQLite and the manual clock, calling community in-process.
pub struct BillingEnv;

impl Calls for BillingEnv {
    type Http = InProcessCommunity;
    type Clock = &'static ManualClock;
    type Sleeper = ClockSleeper<'static>;
    type Jitter = NoJitter;
    type Counters = LocalCounters;
}

impl billing::app::Env for BillingEnv {
    type Db = HostSqlite;
}

/// Billing over community in-process.
fn billing_app(billing_db: &Seeded, community_db: &Seeded) -> Billing<BillingEnv> {
    let clock = clock();
    let community = Community {
        store: community_db.store(),
    };
    Billing::<BillingEnv> {
        store: billing_db.store(),
        upstream: upstream(
            InProcessCommunity {
                app: community,
                clock,
            },
            clock,
            MemoryConfig::default(),
        ),
        community_url: "http://community.test".into(),
        admin_token: AdminToken::read_with(|| ADMIN_TOKEN.into()),
        after_answer: Default::default(),
    }
}

/// Billing with an invoice for a resident (at community).
fn seed_billing() -> (Seeded, Seeded) {
    let community = community_app();
    let resident = seed_community(&community).swap_remove(0);
    let community = Seeded::new(community.store, vec![resident.clone()]);
    let empty = Seeded::new(
        migrated_store_on(clock(), billing::migrations::ALL),
        Vec::new(),
    );
    let app = billing_app(&empty, &community);
    let seed = tenant_context(clock().now(), "billing", TENANT, ACTOR, Role::Admin);
    let invoice = created_id(&block_on(billing::handle(
        &app,
        &seed,
        &request("POST", "/v1/acme/invoices").with_body(
            json!({"resident_id": resident, "amount_cents": 10_000, "currency": "EUR",
                   "description": "Service charge", "due_date": "2026-12-31"})
            .to_string(),
        ),
    )));
    // The invoice's event went to the community copy, which is dropped:
    // community's own database stays as seeded.
    (Seeded::new(app.store, vec![invoice, resident]), community)
}

/// Billing, with a resident (at community) and an invoice.
pub fn billing_request(data: &[u8]) {
    BILLING.with(|(seeded, community)| {
        let mut input = Input::new(data);
        let app = billing_app(seeded, community);
        let ctx = ctx(&mut input, "billing", seeded.caller());
        // The relay's own credential, half the time.
        let request = request_as_admin_or_not(
            &mut input,
            &templates(meridian_endpoints::billing::ENDPOINTS),
            seeded,
        );
        check(
            "billing",
            &request,
            &block_on(billing::handle(&app, &ctx, &request)),
        );
    });
}
