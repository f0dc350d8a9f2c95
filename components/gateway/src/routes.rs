//! The gateway's route table: the paths it answers itself, and which
//! service owns every other public path.

use http::Method;
use meridian_platform::http::routes::{self, Access, Endpoint, Lookup};
use meridian_platform::log::route_template;

/// A service behind the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// What a public request is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /healthz`: gateway liveness.
    Health,
    /// `GET /readyz`: every downstream within the budget.
    Ready,
    /// `GET /openapi.json`: the API contract.
    Contract,
    /// `POST /v1/tenants`: platform admin creates a tenant.
    CreateTenant,
    /// `POST /ops/outbox/relay`: a scheduler asks billing to deliver pending events.
    Relay,
    /// `GET, PUT, DELETE /ops/tenants/{tenant}/limits`: the platform admin
    /// reads, sets or removes a tenant's rate override.
    TenantLimits,
    /// `/v1/{slug}/...`: tenant-scoped, owned by `service`.
    Tenant {
        /// The tenant slug as written in the path.
        slug: String,
        /// The owning service.
        service: Service,
    },
    /// A known path with a method it does not take.
    MethodNotAllowed {
        /// Methods the path takes.
        allow: String,
    },
    /// Nothing lives here.
    NotFound,
}

/// The paths the gateway answers (or forwards as a whole) itself, with
/// what each is. Every other public path is `/v1/{tenant}/...`, whose
/// methods the owning service's own table lists. The gateway checks the
/// credentials of its own routes itself.
pub const OWN: &[Endpoint<Route>] = &[
    Endpoint::new(Method::GET, "/healthz", Route::Health, Access::Caller),
    Endpoint::new(Method::GET, "/readyz", Route::Ready, Access::Caller),
    Endpoint::new(
        Method::GET,
        "/openapi.json",
        Route::Contract,
        Access::Caller,
    ),
    Endpoint::new(
        Method::POST,
        "/v1/tenants",
        Route::CreateTenant,
        Access::Caller,
    ),
    Endpoint::new(
        Method::POST,
        "/ops/outbox/relay",
        Route::Relay,
        Access::Caller,
    ),
    Endpoint::new(
        Method::GET,
        "/ops/tenants/{tenant}/limits",
        Route::TenantLimits,
        Access::Caller,
    ),
    Endpoint::new(
        Method::PUT,
        "/ops/tenants/{tenant}/limits",
        Route::TenantLimits,
        Access::Caller,
    ),
    Endpoint::new(
        Method::DELETE,
        "/ops/tenants/{tenant}/limits",
        Route::TenantLimits,
        Access::Caller,
    ),
];

/// Routes a request by method and path.
pub fn route(method: &Method, path: &str) -> Route {
    let segments = routes::segments(path);
    match routes::lookup(OWN, method, &segments) {
        Lookup::Found(endpoint) => return endpoint.op.clone(),
        Lookup::MethodNotAllowed(template) => {
            return Route::MethodNotAllowed {
                allow: routes::allow(OWN, template),
            }
        }
        Lookup::NoRoute => {}
    }
    match segments.as_slice() {
        ["v1", slug, rest @ ..] if !slug.is_empty() => match owner(rest) {
            Some(service) => Route::Tenant {
                slug: (*slug).to_owned(),
                service,
            },
            None => Route::NotFound,
        },
        _ => Route::NotFound,
    }
}

/// The route template a public path is logged as: the gateway's own path,
/// `/v1/{tenant}/…` with ids as `{id}`, or `(unrouted)` for anything else
/// (a client's arbitrary path is not worth a log line's text).
pub fn template(path: &str) -> String {
    let segments = routes::segments(path);
    if let Some(template) = routes::template(OWN, &segments) {
        return template.to_owned();
    }
    match segments.as_slice() {
        ["v1", slug, rest @ ..] if !slug.is_empty() && owner(rest).is_some() => {
            // The slug is the tenant; the services' templating writes the ids.
            let path: Vec<&str> = ["v1", "{tenant}"]
                .into_iter()
                .chain(rest.iter().copied())
                .collect();
            route_template(None, &path.join("/"))
        }
        _ => "(unrouted)".to_owned(),
    }
}

/// The service that owns the path after `/v1/{slug}`.
fn owner(rest: &[&str]) -> Option<Service> {
    match rest {
        [] | [""] => Some(Service::Identity),
        ["members" | "tokens", ..] => Some(Service::Identity),
        ["residents" | "complaints" | "announcements", ..] => Some(Service::Community),
        ["invoices", ..] => Some(Service::Billing),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(service: Service) -> Route {
        Route::Tenant {
            slug: "acme".into(),
            service,
        }
    }

    #[test]
    fn probes_and_tenant_creation_are_gateway_routes() {
        assert_eq!(route(&Method::GET, "/healthz"), Route::Health);
        assert_eq!(route(&Method::GET, "/readyz"), Route::Ready);
        assert_eq!(route(&Method::POST, "/v1/tenants"), Route::CreateTenant);
        assert_eq!(route(&Method::POST, "/ops/outbox/relay"), Route::Relay);
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
            ("/v1/acme", Service::Identity),
            ("/v1/acme/", Service::Identity),
            ("/v1/acme/members", Service::Identity),
            ("/v1/acme/members/5", Service::Identity),
            ("/v1/acme/tokens/5", Service::Identity),
            ("/v1/acme/residents", Service::Community),
            ("/v1/acme/residents/1/notifications", Service::Community),
            ("/v1/acme/complaints/1", Service::Community),
            ("/v1/acme/announcements", Service::Community),
            ("/v1/acme/invoices/1/payments", Service::Billing),
        ];
        for (path, service) in cases {
            assert_eq!(route(&Method::GET, path), tenant(service), "{path}");
        }
    }

    #[test]
    fn paths_are_logged_as_templates_and_unknown_ones_not_at_all() {
        let id = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01";
        for (path, logged) in [
            ("/healthz".to_owned(), "/healthz"),
            ("/v1/tenants".to_owned(), "/v1/tenants"),
            ("/v1/acme".to_owned(), "/v1/{tenant}"),
            (
                format!("/v1/acme/invoices/{id}/payments"),
                "/v1/{tenant}/invoices/{id}/payments",
            ),
            ("/v1/acme/secrets".to_owned(), "(unrouted)"),
            ("/wp-admin/setup.php".to_owned(), "(unrouted)"),
        ] {
            assert_eq!(template(&path), logged, "{path}");
        }
    }

    #[test]
    fn unknown_paths_are_not_found_without_touching_a_service() {
        for path in [
            "/",
            "/v1",
            "/v1/",
            "/v1/acme/secrets",
            "/internal/resolve",
            "/v2/acme",
        ] {
            assert_eq!(route(&Method::GET, path), Route::NotFound, "{path}");
        }
    }
}
