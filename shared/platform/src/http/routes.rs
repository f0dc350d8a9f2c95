//! Routes as data: one table per component, a row per method and path
//! template, naming the operation that serves it and who may call it.
//! Dispatch, a 405's `Allow`, the route templates of the log lines, the
//! idempotency operation a keyed write is recorded under and the API
//! contract's consistency test (`openapi.yaml`) all derive from it; the
//! component's own code only says, in one exhaustive `match` on the
//! operation, which function serves each.

use http::Method;

use crate::http::message::{Request, RequestExt};

use crate::tenancy::Role;
use crate::wire::problem::Problem;
use crate::RequestContext;

/// Who may call an endpoint, checked before its handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Whoever reached the component: the gateway's own routes, and a
    /// service's internal routes and tenant creation, whose handlers check
    /// the credential they take themselves.
    Caller,
    /// Any member of the tenant (a handler may narrow what a resident
    /// sees).
    Member,
    /// The tenant's admins and managers.
    Staff,
    /// The tenant's admins.
    Admin,
}

impl Access {
    /// A 403 (or the 400 of a request without the gateway's tenant
    /// headers) when the caller in `ctx` may not call the endpoint.
    pub fn check(self, ctx: &RequestContext) -> Result<(), Problem> {
        match self {
            Self::Caller => Ok(()),
            Self::Member => ctx.scope().map(drop),
            Self::Staff => ctx.require(Role::is_staff, "admins and managers").map(drop),
            Self::Admin => ctx.require(|r| r == Role::Admin, "admins").map(drop),
        }
    }
}

/// One method on one path template, served by the operation `op`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint<Op> {
    /// The method (`HEAD` is served wherever `GET` is).
    pub method: Method,
    /// The template as the contract writes it: `/v1/{tenant}/residents/{id}`.
    /// A `{name}` segment matches any one non-empty segment.
    pub path: &'static str,
    /// What serves it.
    pub op: Op,
    /// Who may call it.
    pub access: Access,
}

impl<Op> Endpoint<Op> {
    /// A row of a table.
    pub const fn new(method: Method, path: &'static str, op: Op, access: Access) -> Self {
        Self {
            method,
            path,
            op,
            access,
        }
    }

    /// A row whoever reaches the component may call ([`Access::Caller`]).
    pub const fn caller(method: Method, path: &'static str, op: Op) -> Self {
        Self::new(method, path, op, Access::Caller)
    }

    /// A row for any member of the tenant ([`Access::Member`]).
    pub const fn member(method: Method, path: &'static str, op: Op) -> Self {
        Self::new(method, path, op, Access::Member)
    }

    /// A row for the tenant's admins and managers ([`Access::Staff`]).
    pub const fn staff(method: Method, path: &'static str, op: Op) -> Self {
        Self::new(method, path, op, Access::Staff)
    }

    /// A row for the tenant's admins ([`Access::Admin`]).
    pub const fn admin(method: Method, path: &'static str, op: Op) -> Self {
        Self::new(method, path, op, Access::Admin)
    }

    /// Whether a path, split into segments, is an instance of the template.
    pub fn matches(&self, segments: &[&str]) -> bool {
        template_matches(self.path, segments)
    }

    /// Whether the endpoint's path is one the gateway forwards from the
    /// public API (an internal route is not in the contract).
    pub fn is_public(&self) -> bool {
        self.path.starts_with("/v1/")
    }
}

/// Whether `segments` is an instance of `template`.
fn template_matches(template: &str, segments: &[&str]) -> bool {
    let parts = template.trim_start_matches('/').split('/');
    parts.clone().count() == segments.len()
        && parts.zip(segments).all(|(t, s)| match placeholder(t) {
            Some(_) => !s.is_empty(),
            None => t == *s,
        })
}

/// The name of a `{name}` template segment.
fn placeholder(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

/// The endpoint a request was dispatched to, and its path's values.
#[derive(Debug)]
pub struct Matched<'r, 'p, Op> {
    /// The row.
    pub endpoint: &'r Endpoint<Op>,
    segments: Vec<&'p str>,
}

impl<'p, Op> Matched<'_, 'p, Op> {
    /// What serves it.
    pub fn op(&self) -> &Op {
        &self.endpoint.op
    }

    /// The value of the template's `{name}` segment (empty if it has none,
    /// which a table's test rules out for the names its handlers take).
    pub fn param(&self, name: &str) -> &'p str {
        let parts = self.endpoint.path.trim_start_matches('/').split('/');
        parts
            .zip(&self.segments)
            .find(|(t, _)| placeholder(t) == Some(name))
            .map_or("", |(_, s)| s)
    }

    /// The `{id}` segment's value.
    pub fn id(&self) -> &'p str {
        self.param("id")
    }

    /// The operation a keyed write is recorded under, so that one key
    /// names one write: the method and the path below the tenant, each id
    /// in its canonical form (`PATCH /residents/0b6f…`); a path outside a
    /// tenant is written whole (`POST /v1/tenants`).
    pub fn operation(&self) -> String {
        let parts = self.endpoint.path.trim_start_matches('/').split('/');
        let below_tenant = self.endpoint.path.starts_with("/v1/{tenant}/");
        let path: Vec<String> = parts
            .zip(&self.segments)
            .skip(if below_tenant { 2 } else { 0 })
            .map(|(t, s)| match placeholder(t) {
                Some(_) => crate::ids::parse_id(s).unwrap_or_else(|| (*s).to_owned()),
                None => t.to_owned(),
            })
            .collect();
        format!("{} /{}", self.endpoint.method, path.join("/"))
    }
}

/// What a table has for a method on a path.
#[derive(Debug)]
pub enum RouteMatch<'r, Op> {
    /// The row that serves it.
    Found(&'r Endpoint<Op>),
    /// The path's template, which does not take the method.
    MethodNotAllowed(&'static str),
    /// No row has the path.
    NoRoute,
}

/// The row of `table` that serves `method` on the path `segments`; `HEAD`
/// is looked up as `GET`. The first template the path matches is the
/// path's, so a literal row listed first (`/v1/tenants`) shadows a
/// placeholder one (`/v1/{tenant}`) for every method.
pub fn lookup<'r, Op>(
    table: &'r [Endpoint<Op>],
    method: &Method,
    segments: &[&str],
) -> RouteMatch<'r, Op> {
    let wanted = match *method == Method::HEAD {
        true => &Method::GET,
        false => method,
    };
    let Some(template) = template(table, segments) else {
        return RouteMatch::NoRoute;
    };
    match table
        .iter()
        .find(|e| e.path == template && e.method == *wanted)
    {
        Some(endpoint) => RouteMatch::Found(endpoint),
        None => RouteMatch::MethodNotAllowed(template),
    }
}

/// The endpoint of `table` that serves `method` on the path `segments`
/// ([`lookup`]), once its access check passed: a 404 for a path no row
/// has, a 405 with the path's `Allow` for a method it does not take, a 403
/// for a caller it does not admit.
pub fn dispatch<'r, 'p, Op>(
    table: &'r [Endpoint<Op>],
    method: &Method,
    segments: &[&'p str],
    ctx: &RequestContext,
) -> Result<Matched<'r, 'p, Op>, Problem> {
    let endpoint = match lookup(table, method, segments) {
        RouteMatch::Found(endpoint) => endpoint,
        RouteMatch::MethodNotAllowed(template) => {
            return Err(Problem::method_not_allowed(
                method.as_str(),
                allow(table, template),
            ))
        }
        RouteMatch::NoRoute => return Err(Problem::no_route()),
    };
    endpoint.access.check(ctx)?;
    Ok(Matched {
        endpoint,
        segments: segments.to_vec(),
    })
}

/// A request dispatched to its endpoint: what a handler is handed — the
/// request, its context, and the route with its path's values.
#[derive(Debug)]
pub struct Incoming<'a, Op> {
    /// The request's budget, tenant scope and log.
    pub ctx: &'a RequestContext,
    /// The request.
    pub request: &'a Request,
    /// The endpoint it matched, and its path's values.
    pub route: Matched<'a, 'a, Op>,
}

impl<'a, Op> Incoming<'a, Op> {
    /// `request` dispatched by `table` ([`dispatch`]): a 404, 405 or 403
    /// problem when no endpoint takes it.
    pub fn dispatch(
        table: &'a [Endpoint<Op>],
        ctx: &'a RequestContext,
        request: &'a Request,
    ) -> Result<Self, Problem> {
        let route = dispatch(table, request.method(), &request.segments(), ctx)?;
        Ok(Self {
            ctx,
            request,
            route,
        })
    }

    /// What serves it.
    pub fn op(&self) -> &Op {
        self.route.op()
    }

    /// The value of the template's `{name}` segment ([`Matched::param`]).
    pub fn param(&self, name: &str) -> &'a str {
        self.route.param(name)
    }

    /// The `{id}` segment's value.
    pub fn id(&self) -> &'a str {
        self.route.id()
    }

    /// The operation a keyed write is recorded under ([`Matched::operation`]).
    pub fn operation(&self) -> String {
        self.route.operation()
    }

    /// The request's body.
    pub fn body(&self) -> &'a [u8] {
        self.request.body()
    }

    /// The request's query string (empty when it has none).
    pub fn query(&self) -> &'a str {
        self.request.query()
    }
}

/// The methods `template` takes, as an `Allow` header lists them, in the
/// table's order with `HEAD` after `GET`: `GET, HEAD, POST`.
pub fn allow<Op>(table: &[Endpoint<Op>], template: &str) -> String {
    let mut methods = Vec::new();
    for e in table.iter().filter(|e| e.path == template) {
        methods.push(e.method.as_str());
        if e.method == Method::GET {
            methods.push(Method::HEAD.as_str());
        }
    }
    methods.join(", ")
}

pub use crate::http::message::segments;

/// The template of the row the path `segments` matches, if any.
pub fn template<Op>(table: &[Endpoint<Op>], segments: &[&str]) -> Option<&'static str> {
    table.iter().find(|e| e.matches(segments)).map(|e| e.path)
}

/// Each template of `table` once, in order, with its `Allow`: what the
/// contract test compares with `openapi.yaml`.
pub fn templates<Op>(table: &[Endpoint<Op>]) -> Vec<(&'static str, String)> {
    let mut seen: Vec<&'static str> = Vec::new();
    for e in table {
        if !seen.contains(&e.path) {
            seen.push(e.path);
        }
    }
    seen.into_iter().map(|t| (t, allow(table, t))).collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::budget::deadline::Deadline;
    use crate::tenancy::TenantScope;
    use crate::wire::request_id::RequestId;
    use crate::UnixMillis;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Op {
        CreateTenant,
        Tenant,
        Things,
        Thing,
        DeleteThing,
        Resolve,
    }

    const TABLE: &[Endpoint<Op>] = &[
        Endpoint::caller(Method::POST, "/v1/tenants", Op::CreateTenant),
        Endpoint::member(Method::GET, "/v1/{tenant}", Op::Tenant),
        Endpoint::staff(Method::POST, "/v1/{tenant}/things", Op::Things),
        Endpoint::member(Method::GET, "/v1/{tenant}/things/{id}", Op::Thing),
        Endpoint::admin(Method::DELETE, "/v1/{tenant}/things/{id}", Op::DeleteThing),
        Endpoint::caller(Method::GET, "/internal/resolve", Op::Resolve),
    ];

    const ID: &str = "0B6F1E3C-7C1E-4A55-9D3C-2F0C3B1F6A01";

    fn ctx(role: Option<Role>) -> RequestContext {
        let now = UnixMillis::from_millis(1_000);
        let ctx = RequestContext::new(
            RequestId::parse("req-1").unwrap(),
            Deadline::after(now, Duration::from_secs(1)),
            now,
            "test",
        );
        match role {
            None => ctx,
            Some(role) => ctx.with_tenant(TenantScope {
                tenant_id: "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01".parse().unwrap(),
                actor_id: "9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02".parse().unwrap(),
                role,
            }),
        }
    }

    fn op(method: &str, path: &str, role: Option<Role>) -> Result<Op, Problem> {
        dispatch(TABLE, &method.parse().unwrap(), &segments(path), &ctx(role)).map(|m| *m.op())
    }

    #[test]
    fn literal_segments_match_exactly_and_parameters_any_non_empty_one() {
        let admin = Some(Role::Admin);
        assert_eq!(op("POST", "/v1/tenants", None), Ok(Op::CreateTenant));
        assert_eq!(op("GET", "/v1/acme", admin), Ok(Op::Tenant));
        assert_eq!(op("HEAD", "/v1/acme", admin), Ok(Op::Tenant));
        assert_eq!(op("GET", "/v1/acme/things/7", admin), Ok(Op::Thing));
        for unknown in [
            "/v1/",
            "/v1/acme/things/",
            "/v1/acme/others/7",
            "/v1/acme/things/7/more",
            "/v2/acme",
        ] {
            let refused = op("GET", unknown, admin).unwrap_err();
            assert_eq!(refused.status().as_u16(), 404, "{unknown}");
        }
    }

    #[test]
    fn a_method_the_path_does_not_take_is_a_405_listing_those_it_takes() {
        let refused = op("PATCH", "/v1/acme/things/7", Some(Role::Admin)).unwrap_err();
        assert_eq!(refused.status().as_u16(), 405);
        assert_eq!(refused.allow(), Some("GET, HEAD, DELETE"));
        assert_eq!(allow(TABLE, "/v1/tenants"), "POST");
        // A literal template listed first is the path's for every method.
        let tenants = op("GET", "/v1/tenants", Some(Role::Admin)).unwrap_err();
        assert_eq!(
            (tenants.status().as_u16(), tenants.allow()),
            (405, Some("POST"))
        );
        assert_eq!(
            templates(TABLE).iter().map(|(t, _)| *t).collect::<Vec<_>>(),
            [
                "/v1/tenants",
                "/v1/{tenant}",
                "/v1/{tenant}/things",
                "/v1/{tenant}/things/{id}",
                "/internal/resolve"
            ]
        );
    }

    #[test]
    fn access_is_checked_before_the_handler_after_the_method() {
        let thing = "/v1/acme/things/7";
        assert_eq!(op("GET", thing, Some(Role::Resident)), Ok(Op::Thing));
        let forbidden = op("DELETE", thing, Some(Role::Manager)).unwrap_err();
        assert_eq!(forbidden.status().as_u16(), 403);
        assert_eq!(op("DELETE", thing, Some(Role::Admin)), Ok(Op::DeleteThing));
        let staff = op("POST", "/v1/acme/things", Some(Role::Resident)).unwrap_err();
        assert_eq!(staff.status().as_u16(), 403);
        // Without the gateway's tenant headers no tenant route runs.
        assert_eq!(op("GET", thing, None).unwrap_err().status(), 400);
        assert_eq!(op("GET", "/internal/resolve", None), Ok(Op::Resolve));
        // The method is judged before the caller.
        assert_eq!(op("PUT", thing, None).unwrap_err().status(), 405);
    }

    #[test]
    fn parameters_and_operations_come_from_the_template() {
        let path = format!("/v1/acme/things/{ID}");
        let segs = segments(&path);
        let admin = ctx(Some(Role::Admin));
        let matched = dispatch(TABLE, &Method::DELETE, &segs, &admin).unwrap();
        assert_eq!((matched.id(), matched.param("tenant")), (ID, "acme"));
        assert_eq!(matched.param("missing"), "");
        assert_eq!(
            matched.operation(),
            format!("DELETE /things/{}", ID.to_ascii_lowercase())
        );
        let create = dispatch(TABLE, &Method::POST, &segments("/v1/acme/things"), &admin).unwrap();
        assert_eq!(create.operation(), "POST /things");
        let tenant = dispatch(TABLE, &Method::POST, &segments("/v1/tenants"), &admin).unwrap();
        assert_eq!(tenant.operation(), "POST /v1/tenants");
        assert!(TABLE[0].is_public() && !TABLE[5].is_public());
    }
}
