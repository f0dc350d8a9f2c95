//! The contract and the code name the same routes. Every path and method
//! in `openapi.yaml` (as the gateway serves it) is one the gateway routes
//! and the owning service serves; every route the gateway and the services
//! declare is in the document; and each service's handler takes exactly the
//! methods its table declares, answering 405 with that `Allow` otherwise.
// Test helpers may do what the production lints forbid: those are for
// code that reads client bytes (Cargo.toml, [workspace.lints]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use meridian_platform::counts::LocalCounters;
use meridian_platform::http::memory::MemoryConfig;
use meridian_platform::secrets::AdminToken;
use meridian_platform::tenancy::cache::LocalEntries;
use std::collections::{BTreeMap, BTreeSet};

use billing::app::{Billing, Env};
use community::app::Community;
use futures::executor::block_on;
use gateway::contract::DOCUMENT;
use gateway::routes::{self, Route, Service, Work, OWN};
use identity::app::Identity;
use meridian_platform::http::prelude::*;
use meridian_platform::http::routes::{templates, Endpoint};
use meridian_platform::http::upstream::Calls;
use meridian_platform::http::{HttpClient, SendError};
use meridian_platform::tenancy::Role;
use meridian_platform::time::ManualClock;
use meridian_platform::{Clock, RequestContext};
use meridian_testing::http::request;
use meridian_testing::{
    manual_clock, migrated_store_on, tenant_context, upstream, ClockSleeper, HostSqlite, NoJitter,
};

/// Every method a client might send.
const METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
];

const TENANT: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
const ADMIN: &str = "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02";

/// Each path template of the document with the methods it lists.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let doc: serde_json::Value = serde_json::from_str(DOCUMENT).expect("the contract is JSON");
    doc["paths"]
        .as_object()
        .expect("the contract has paths")
        .iter()
        .map(|(path, item)| {
            let methods = METHODS
                .iter()
                .filter(|m| item.get(m.to_ascii_lowercase()).is_some())
                .map(|m| (*m).to_owned())
                .collect();
            (path.clone(), methods)
        })
        .collect()
}

/// A table's public templates, each with its `Allow`.
fn public<Op>(table: &[Endpoint<Op>]) -> Vec<(&'static str, String)> {
    templates(table)
        .into_iter()
        .filter(|(path, _)| path.starts_with("/v1/"))
        .collect()
}

fn services() -> [(Service, Vec<(&'static str, String)>); 3] {
    [
        (
            Service::Identity,
            public(meridian_endpoints::identity::ENDPOINTS),
        ),
        (
            Service::Community,
            public(meridian_endpoints::community::ENDPOINTS),
        ),
        (
            Service::Billing,
            public(meridian_endpoints::billing::ENDPOINTS),
        ),
    ]
}

fn methods(allow: &str) -> BTreeSet<String> {
    allow.split(", ").map(str::to_owned).collect()
}

/// Each path template the gateway and the services declare, with its methods.
fn declared() -> BTreeMap<String, BTreeSet<String>> {
    let own = templates(OWN);
    let owned = services().into_iter().flat_map(|(_, table)| table);
    let mut all = BTreeMap::new();
    for (path, allow) in own.into_iter().chain(owned) {
        let methods = methods(&allow);
        // `/v1/tenants` is the gateway's route to identity's handler: both
        // list it, and must agree.
        if let Some(previous) = all.insert(path.to_owned(), methods.clone()) {
            assert_eq!(previous, methods, "{path} is declared twice, differently");
        }
    }
    all
}

/// A concrete path for a template.
fn instance(template: &str) -> String {
    template
        .replace("{tenant}", "acme")
        .replace("{id}", "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6aff")
}

#[test]
fn the_document_and_the_route_tables_list_the_same_routes() {
    let documented = documented();
    let declared = declared();
    assert!(documented.len() >= 19, "{documented:?}");
    for (path, methods) in &documented {
        assert_eq!(
            declared.get(path),
            Some(methods),
            "{path}: the contract lists {methods:?}"
        );
    }
    for (path, methods) in &declared {
        assert_eq!(
            documented.get(path),
            Some(methods),
            "{path}: the code serves {methods:?}"
        );
    }
}

#[test]
fn the_gateway_sends_each_route_to_the_service_that_declares_it() {
    for (template, allow) in templates(OWN) {
        let path = instance(template);
        for method in METHODS {
            let wanted = if method == "HEAD" { "GET" } else { method };
            let expected = OWN
                .iter()
                .find(|e| e.path == template && e.method == wanted)
                .map_or_else(
                    || Route::MethodNotAllowed {
                        allow: allow.clone(),
                    },
                    |e| e.op.clone(),
                );
            assert_eq!(
                routes::route(&method.parse().unwrap(), &path),
                expected,
                "{method} {path}"
            );
        }
    }
    for (service, table) in services() {
        for (template, allow) in table.iter().filter(|(t, _)| *t != "/v1/tenants") {
            let path = instance(template);
            for method in METHODS {
                let routed = routes::route(&method.parse().unwrap(), &path);
                match routed {
                    Route::Work(Work::Tenant(tenant)) => {
                        assert!(methods(allow).contains(method), "{method} {path}");
                        assert_eq!(
                            (tenant.service(), tenant.template(), tenant.slug.as_str()),
                            (service, *template, "acme"),
                            "{method} {path}"
                        );
                    }
                    Route::MethodNotAllowed { allow: refused } => {
                        assert!(!methods(allow).contains(method), "{method} {path}");
                        assert_eq!(&refused, allow, "{method} {path}");
                    }
                    other => panic!("{method} {path}: {other:?}"),
                }
            }
        }
    }
}

/// A community nobody can reach: billing's routes are matched before any call.
struct Unreachable;

struct TestEnv;

impl Calls for TestEnv {
    type Http = Unreachable;
    type Clock = &'static ManualClock;
    type Sleeper = ClockSleeper<'static>;
    type Jitter = NoJitter;
    type Counters = LocalCounters;
}

impl Env for TestEnv {
    type Db = HostSqlite;
}

impl HttpClient for Unreachable {
    async fn send(&self, _ctx: &RequestContext, _request: Request) -> Result<Response, SendError> {
        Err(SendError::Connect("unreachable in this test".into()))
    }
}

/// Whether an answer came from a route (any status but 405 and the 404 of
/// a path no route serves).
fn routed(response: &Response) -> bool {
    let body = response.json_body();
    response.status() != 405 && !(response.status() == 404 && body["detail"] == "no such route")
}

#[test]
fn each_service_takes_exactly_the_methods_it_declares() {
    let clock = manual_clock();
    let identity = Identity {
        store: migrated_store_on(clock, identity::migrations::ALL),
        admin_token: AdminToken::read_with(|| "admin-secret".into()),
        resolutions: Box::<LocalEntries>::default(),
    };
    let community = Community {
        store: migrated_store_on(clock, community::migrations::ALL),
    };
    let billing: Billing<TestEnv> = Billing {
        store: migrated_store_on(clock, billing::migrations::ALL),
        upstream: upstream(Unreachable, clock, MemoryConfig::default()),
        community_url: "http://community.test".into(),
        admin_token: AdminToken::read_with(|| "admin-secret".into()),
        after_answer: Default::default(),
    };
    for (service, table) in services() {
        for (template, allow) in table {
            let path = instance(template);
            for method in METHODS {
                let ctx = tenant_context(clock.now(), service.name(), TENANT, ADMIN, Role::Admin);
                let request = request(method, &path);
                let response = match service {
                    Service::Identity => identity::handle(&identity, &ctx, &request),
                    Service::Community => community::handle(&community, &ctx, &request),
                    Service::Billing => block_on(billing::handle(&billing, &ctx, &request)),
                };
                if methods(&allow).contains(method) {
                    assert!(
                        routed(&response),
                        "{method} {path}: {} {:?}",
                        response.status(),
                        response.json_body()
                    );
                } else {
                    assert_eq!(response.status().as_u16(), 405, "{method} {path}");
                    assert_eq!(
                        response.header("allow"),
                        Some(allow.as_str()),
                        "{method} {path}"
                    );
                }
            }
        }
    }
}

/// The document's `ErrorCode` enum is exactly the codes the platform sends.
#[test]
fn the_document_lists_every_problem_code_the_platform_sends() {
    let doc: serde_json::Value = serde_json::from_str(DOCUMENT).expect("the contract is JSON");
    let documented: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode is an enum")
        .iter()
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    let sent: BTreeSet<String> = meridian_platform::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    assert_eq!(documented, sent);
}

/// A stored idempotency key is found again only under the operation it was
/// recorded with, so the names the tables derive are the ones earlier
/// releases wrote: a change here would run a replayed write twice.
#[test]
fn keyed_writes_keep_the_operation_names_their_keys_were_recorded_under() {
    let clock = manual_clock();
    let id = "0B6F1E3C-7C1E-4A55-9D3C-2F0C3B1F6AFF";
    let canonical = id.to_ascii_lowercase();
    let ctx = tenant_context(clock.now(), "test", TENANT, ADMIN, Role::Admin);
    fn operation<Op>(
        table: &[Endpoint<Op>],
        ctx: &RequestContext,
        method: &str,
        path: &str,
    ) -> String {
        let segments = meridian_platform::http::routes::segments(path);
        meridian_platform::http::routes::dispatch(table, &method.parse().unwrap(), &segments, ctx)
            .expect("routed")
            .operation()
    }
    let cases = [
        (
            operation(
                meridian_endpoints::identity::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/tenants",
            ),
            "POST /v1/tenants".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::identity::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/acme/members",
            ),
            "POST /members".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::identity::ENDPOINTS,
                &ctx,
                "DELETE",
                &format!("/v1/acme/members/{id}"),
            ),
            format!("DELETE /members/{canonical}"),
        ),
        (
            operation(
                meridian_endpoints::identity::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/acme/tokens",
            ),
            "POST /tokens".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::identity::ENDPOINTS,
                &ctx,
                "DELETE",
                &format!("/v1/acme/tokens/{id}"),
            ),
            format!("DELETE /tokens/{canonical}"),
        ),
        (
            operation(
                meridian_endpoints::community::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/acme/residents",
            ),
            "POST /residents".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::community::ENDPOINTS,
                &ctx,
                "PATCH",
                &format!("/v1/acme/residents/{id}"),
            ),
            format!("PATCH /residents/{canonical}"),
        ),
        (
            operation(
                meridian_endpoints::community::ENDPOINTS,
                &ctx,
                "DELETE",
                &format!("/v1/acme/residents/{id}"),
            ),
            format!("DELETE /residents/{canonical}"),
        ),
        (
            operation(
                meridian_endpoints::community::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/acme/complaints",
            ),
            "POST /complaints".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::community::ENDPOINTS,
                &ctx,
                "PATCH",
                &format!("/v1/acme/complaints/{id}"),
            ),
            format!("PATCH /complaints/{canonical}"),
        ),
        (
            operation(
                meridian_endpoints::community::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/acme/announcements",
            ),
            "POST /announcements".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::billing::ENDPOINTS,
                &ctx,
                "POST",
                "/v1/acme/invoices",
            ),
            "POST /invoices".to_owned(),
        ),
        (
            operation(
                meridian_endpoints::billing::ENDPOINTS,
                &ctx,
                "PATCH",
                &format!("/v1/acme/invoices/{id}"),
            ),
            format!("PATCH /invoices/{canonical}"),
        ),
        (
            operation(
                meridian_endpoints::billing::ENDPOINTS,
                &ctx,
                "POST",
                &format!("/v1/acme/invoices/{id}/payments"),
            ),
            format!("POST /invoices/{canonical}/payments"),
        ),
    ];
    for (derived, recorded) in cases {
        assert_eq!(derived, recorded);
    }
}
