//! The gateway's route table: the paths it answers itself, and which
//! service owns every other public path.

use http::Method;
use meridian_endpoints as endpoints;
use meridian_platform::http::routes::{self, Endpoint, RouteMatch};
use meridian_platform::ids::parse_id;
use meridian_platform::tenancy::TenantSlug;

/// A service behind the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Service {
    /// Tenants, users, memberships, tokens.
    Identity,
    /// Residents, complaints, announcements, notifications.
    Community,
    /// Invoices and payments.
    Billing,
}

impl Service {
    /// All services, in the order `/readyz` reports them.
    pub const ALL: [Service; 3] = [Service::Identity, Service::Community, Service::Billing];

    /// The component's name, as used in `hop` and `Server-Timing`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Community => "community",
            Self::Billing => "billing",
        }
    }
}

/// What a public request is: answered from its head alone, or served
/// under a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /healthz`: gateway liveness.
    Health,
    /// `GET /openapi.json`: the API contract.
    Contract,
    /// A known path with a method it does not take.
    MethodNotAllowed {
        /// Methods the path takes.
        allow: String,
    },
    /// Nothing lives here.
    NotFound,
    /// Worked on under a budget.
    Work(Work),
}

/// A route the gateway works on under a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// `GET /readyz`: every downstream within the budget.
    Ready,
    /// `POST /v1/tenants`: platform admin creates a tenant.
    CreateTenant,
    /// `POST /ops/outbox/relay`: a scheduler asks billing to deliver pending events.
    Relay,
    /// `POST /ops/migrate`: the platform admin asks each service to bring
    /// its schema up to date.
    Migrate,
    /// `GET /ops/keys`: the platform admin counts the shared store's keys.
    Keys,
    /// `GET, PUT, DELETE /ops/tenants/{tenant}/limits`: the platform admin
    /// reads, sets or removes a tenant's rate override.
    TenantLimits,
    /// `/v1/{slug}/...`: a forwarded row of a service's table ([`forwarded`]).
    Tenant(TenantRoute),
}

/// A tenant request matched against a service's forwarded rows: its row, the slug as
/// the client wrote it (resolution validates it), and the ids of its path
/// in their canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRoute {
    /// The tenant slug as written in the path.
    pub slug: String,
    /// The owning service.
    service: Service,
    /// The row's method (`GET` for a `HEAD`).
    method: &'static Method,
    /// The row's template.
    template: &'static str,
    /// The `{id}` segments, canonical, in order.
    ids: Vec<String>,
}

impl TenantRoute {
    /// The owning service.
    pub fn service(&self) -> Service {
        self.service
    }

    /// The row's template (`/v1/{tenant}/residents/{id}`).
    pub fn template(&self) -> &'static str {
        self.template
    }

    /// The key the throttle and the logs know the route by: the row's method
    /// and template, never the client's words (`HEAD` is `GET`'s).
    pub fn key(&self) -> String {
        route_key(self.method, self.template)
    }

    /// The path forwarded to the service: rebuilt from the template, the
    /// slug identity resolved and the canonical ids, so that nothing of
    /// the client's path but validated values travels (a `..` or an
    /// encoded slash a proxy might normalise has no way through).
    pub fn path(&self, slug: &TenantSlug) -> String {
        let mut ids = self.ids.iter();
        let parts: Vec<&str> = self
            .template
            .trim_start_matches('/')
            .split('/')
            .map(|part| match part {
                "{tenant}" => slug.as_str(),
                "{id}" => ids.next().map_or("", String::as_str),
                literal => literal,
            })
            .collect();
        format!("/{}", parts.join("/"))
    }
}

/// The paths the gateway answers (or forwards as a whole) itself, with
/// what each is. Every other public path is a forwarded row ([`forwarded`]). The
/// gateway checks the credentials of its own routes itself.
pub const OWN: &[Endpoint<Route>] = &[
    own(Method::GET, "/healthz", Route::Health),
    own(Method::GET, "/readyz", Route::Work(Work::Ready)),
    own(Method::GET, "/openapi.json", Route::Contract),
    own(Method::POST, "/v1/tenants", Route::Work(Work::CreateTenant)),
    own(Method::POST, "/ops/outbox/relay", Route::Work(Work::Relay)),
    own(Method::POST, "/ops/migrate", Route::Work(Work::Migrate)),
    own(Method::GET, "/ops/keys", Route::Work(Work::Keys)),
    own(
        Method::GET,
        "/ops/tenants/{tenant}/limits",
        Route::Work(Work::TenantLimits),
    ),
    own(
        Method::PUT,
        "/ops/tenants/{tenant}/limits",
        Route::Work(Work::TenantLimits),
    ),
    own(
        Method::DELETE,
        "/ops/tenants/{tenant}/limits",
        Route::Work(Work::TenantLimits),
    ),
];

/// An own row: `method` on `path`, answered as `route`.
const fn own(method: Method, path: &'static str, route: Route) -> Endpoint<Route> {
    Endpoint::caller(method, path, route)
}

/// The key the throttle and the limits know a row of a route table by: its method and
/// template (`GET /v1/{tenant}/residents`).
pub fn route_key(method: &Method, template: &str) -> String {
    format!("{method} {template}")
}

/// Routes a request by method and path.
pub fn route(method: &Method, path: &str) -> Route {
    let segments = routes::segments(path);
    match routes::lookup(OWN, method, &segments) {
        RouteMatch::Found(endpoint) => return endpoint.op.clone(),
        RouteMatch::MethodNotAllowed(template) => {
            return Route::MethodNotAllowed {
                allow: routes::allow(OWN, template),
            }
        }
        RouteMatch::NoRoute => {}
    }
    forward(
        Service::Identity,
        endpoints::identity::ENDPOINTS,
        method,
        &segments,
    )
    .or_else(|| {
        forward(
            Service::Community,
            endpoints::community::ENDPOINTS,
            method,
            &segments,
        )
    })
    .or_else(|| {
        forward(
            Service::Billing,
            endpoints::billing::ENDPOINTS,
            method,
            &segments,
        )
    })
    .unwrap_or(Route::NotFound)
}

/// The route of `segments` among `service`'s forwarded rows (those under
/// [`endpoints::TENANT_PREFIX`]; its internal rows are no public path),
/// or `None` when none of them is the path's.
fn forward<Op>(
    service: Service,
    table: &'static [Endpoint<Op>],
    method: &Method,
    segments: &[&str],
) -> Option<Route> {
    match routes::lookup(table, method, segments) {
        RouteMatch::Found(row) if endpoints::is_forwarded(row.path) => {
            Some(tenant_route(service, &row.method, row.path, segments).unwrap_or(Route::NotFound))
        }
        RouteMatch::MethodNotAllowed(template) if endpoints::is_forwarded(template) => {
            Some(Route::MethodNotAllowed {
                allow: routes::allow(table, template),
            })
        }
        _ => None,
    }
}

/// Every forwarded row, as the owning service, method and template: the
/// public rows of the services' tables (for the contract test and tools).
pub fn forwarded() -> Vec<(Service, &'static Method, &'static str)> {
    fn rows<Op>(
        service: Service,
        table: &'static [Endpoint<Op>],
    ) -> impl Iterator<Item = (Service, &'static Method, &'static str)> {
        table
            .iter()
            .filter(|row| endpoints::is_forwarded(row.path))
            .map(move |row| (service, &row.method, row.path))
    }
    rows(Service::Identity, endpoints::identity::ENDPOINTS)
        .chain(rows(Service::Community, endpoints::community::ENDPOINTS))
        .chain(rows(Service::Billing, endpoints::billing::ENDPOINTS))
        .collect()
}

/// The tenant route of `segments`, which match `template`: an `{id}` that
/// is no id names nothing (a 404, no call).
fn tenant_route(
    service: Service,
    method: &'static Method,
    template: &'static str,
    segments: &[&str],
) -> Option<Route> {
    let mut slug = None;
    let mut ids = Vec::new();
    for (part, value) in template.trim_start_matches('/').split('/').zip(segments) {
        match part {
            "{tenant}" => slug = Some((*value).to_owned()),
            "{id}" => ids.push(parse_id(value)?),
            _ => {}
        }
    }
    Some(Route::Work(Work::Tenant(TenantRoute {
        slug: slug?,
        service,
        method,
        template,
        ids,
    })))
}

/// The route template a public path is logged as: a row's template of the
/// gateway's own table or a forwarded row's, or `(unrouted)` for anything
/// else (a client's arbitrary path is not worth a log line's text).
pub fn template(path: &str) -> &'static str {
    let segments = routes::segments(path);
    let forwarded =
        |template: Option<&'static str>| template.filter(|t| endpoints::is_forwarded(t));
    routes::template(OWN, &segments)
        .or_else(|| forwarded(routes::template(endpoints::identity::ENDPOINTS, &segments)))
        .or_else(|| forwarded(routes::template(endpoints::community::ENDPOINTS, &segments)))
        .or_else(|| forwarded(routes::template(endpoints::billing::ENDPOINTS, &segments)))
        .unwrap_or("(unrouted)")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";

    fn tenant(method: Method, path: &str) -> TenantRoute {
        match route(&method, path) {
            Route::Work(Work::Tenant(tenant)) => tenant,
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    #[test]
    fn probes_and_tenant_creation_are_gateway_routes() {
        assert_eq!(route(&Method::GET, "/healthz"), Route::Health);
        assert_eq!(route(&Method::GET, "/readyz"), Route::Work(Work::Ready));
        assert_eq!(
            route(&Method::POST, "/v1/tenants"),
            Route::Work(Work::CreateTenant)
        );
        assert_eq!(
            route(&Method::POST, "/ops/outbox/relay"),
            Route::Work(Work::Relay)
        );
        assert_eq!(
            route(&Method::POST, "/ops/migrate"),
            Route::Work(Work::Migrate)
        );
        assert_eq!(route(&Method::GET, "/ops/keys"), Route::Work(Work::Keys));
        assert_eq!(route(&Method::GET, "/openapi.json"), Route::Contract);
        assert_eq!(route(&Method::HEAD, "/openapi.json"), Route::Contract);
        assert_eq!(
            route(&Method::GET, "/v1/tenants"),
            Route::MethodNotAllowed {
                allow: "POST".into()
            }
        );
        assert_eq!(
            route(&Method::POST, "/healthz"),
            Route::MethodNotAllowed {
                allow: "GET, HEAD".into()
            }
        );
    }

    #[test]
    fn each_resource_goes_to_its_owner() {
        let cases = [
            ("/v1/acme".to_owned(), Service::Identity),
            ("/v1/acme/members".to_owned(), Service::Identity),
            ("/v1/acme/residents".to_owned(), Service::Community),
            (
                format!("/v1/acme/residents/{ID}/notifications"),
                Service::Community,
            ),
            (format!("/v1/acme/complaints/{ID}"), Service::Community),
            ("/v1/acme/announcements".to_owned(), Service::Community),
            (format!("/v1/acme/invoices/{ID}/payments"), Service::Billing),
        ];
        for (path, service) in cases {
            let routed = tenant(Method::GET, &path);
            assert_eq!((routed.service(), routed.slug.as_str()), (service, "acme"));
        }
        for path in [
            format!("/v1/acme/tokens/{ID}"),
            format!("/v1/acme/members/{ID}"),
        ] {
            assert_eq!(tenant(Method::DELETE, &path).service(), Service::Identity);
        }
    }

    #[test]
    fn a_tenant_route_is_keyed_by_its_template_never_by_the_clients_words() {
        let route = tenant(
            Method::HEAD,
            &format!("/v1/acme/residents/{}", ID.to_uppercase()),
        );
        assert_eq!(route.key(), "GET /v1/{tenant}/residents/{id}");
        assert_eq!(route.template(), "/v1/{tenant}/residents/{id}");
        // The forwarded path is rebuilt: the resolved slug, the id canonical.
        let slug = TenantSlug::parse("acme").unwrap();
        assert_eq!(route.path(&slug), format!("/v1/acme/residents/{ID}"));
    }

    #[test]
    fn a_known_path_with_another_method_is_refused_here_with_its_allow() {
        assert_eq!(
            route(&Method::PUT, "/v1/acme/residents"),
            Route::MethodNotAllowed {
                allow: "GET, HEAD, POST".into()
            }
        );
        assert_eq!(
            route(&"BREW".parse().unwrap(), "/v1/acme/invoices"),
            Route::MethodNotAllowed {
                allow: "GET, HEAD, POST".into()
            }
        );
    }

    #[test]
    fn paths_are_logged_as_templates_and_unknown_ones_not_at_all() {
        for (path, logged) in [
            ("/healthz".to_owned(), "/healthz"),
            ("/v1/tenants".to_owned(), "/v1/tenants"),
            ("/v1/acme".to_owned(), "/v1/{tenant}"),
            (
                format!("/v1/acme/invoices/{ID}/payments"),
                "/v1/{tenant}/invoices/{id}/payments",
            ),
            ("/v1/acme/secrets".to_owned(), "(unrouted)"),
            ("/v1/acme/residents/tenant/acme".to_owned(), "(unrouted)"),
            ("/wp-admin/setup.php".to_owned(), "(unrouted)"),
        ] {
            assert_eq!(template(&path), logged, "{path}");
        }
    }

    #[test]
    fn unknown_paths_and_malformed_ids_are_not_found_without_touching_a_service() {
        for path in [
            "/",
            "/v1",
            "/v1/",
            "/v1/acme/",
            "/v1/acme/secrets",
            "/v1/acme/residents/tenant/acme",
            "/v1/acme/residents/..",
            "/v1/acme/residents/not-an-id",
            "/v1/acme/residents/%2e%2e",
            "/internal/resolve",
            "/internal/events",
            "/internal/linked-residents",
            "/internal/outbox/relay",
            "/v2/acme",
        ] {
            assert_eq!(route(&Method::GET, path), Route::NotFound, "{path}");
        }
    }
}
