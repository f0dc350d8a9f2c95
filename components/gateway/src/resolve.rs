//! Tenant resolution, steps 3 and 6 of the tenant path (`tenant.rs`): slug
//! and bearer token to tenant, actor and role, from the resolution cache
//! when identity's answer is remembered and still current
//! ([`meridian_platform::tenancy::cache`]), or in one retry-safe call to
//! identity.

use std::time::Duration;

use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::http::SendError;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::tenancy::cache::{Lookup, ResolutionCache};
use meridian_platform::tenancy::{Role, TenantScope, TenantSlug};
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};

use crate::config::GatewayConfig;
use crate::edge::Caller;
use crate::forward::{call_failed, pass_on};
use crate::outcome::{CallSpent, Refusal};
use crate::routes::Service;

/// What step 3 found in the resolution cache: identity's answer for the
/// caller if it is remembered and still current (`Lookup::Hit`), or what
/// resolution remembers its answer under; `None` for a caller with no
/// token or a malformed slug, which resolution refuses without a call.
#[derive(Debug)]
pub struct Cached {
    /// The cache's answer.
    pub lookup: Option<Lookup>,
    /// How long a hit took to read, for `Server-Timing`.
    pub took: Option<Duration>,
}

impl Cached {
    /// Whether identity vouched for the credential (a current entry), so
    /// the throttle can tell a tenant's caller from a name nobody resolves.
    pub fn vouched(&self) -> bool {
        matches!(self.lookup, Some(Lookup::Hit(_)))
    }
}

/// Step 3, before the throttle: the caller's resolution looked up in the
/// resolution cache (read ahead at step 1), handed to [`resolve`]: the
/// store is read once.
pub fn look_up<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    caller: &Caller<'_>,
) -> Cached {
    let (Some(token), Some(tenant)) = (caller.token, &caller.tenant) else {
        return Cached {
            lookup: None,
            took: None,
        };
    };
    let cache = ResolutionCache::new(&upstream.counters, config.resolution_cache);
    let started = upstream.clock.now();
    let lookup = cache.look_up(tenant, token, started);
    let took = matches!(lookup, Lookup::Hit(_)).then(|| upstream.clock.now().since(started));
    Cached {
        lookup: Some(lookup),
        took,
    }
}

/// What step 6 came to: the tenant, as identity resolved it (the slug
/// parsed), and the call it took, if any.
pub struct Resolved {
    /// The slug and the caller's scope in its tenant, or the refusal.
    pub result: Result<(TenantSlug, TenantScope), Refusal>,
    /// What the call to identity spent, when the cache had no current entry.
    pub call: Option<CallSpent>,
}

/// Step 6: the caller's slug and bearer token resolved once for the whole
/// request — remembered (`cached`, step 3's), or asked of identity in one
/// retry-safe call and remembered (`request` lends identity the client's
/// trace headers).
pub async fn resolve<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    ctx: &RequestContext,
    caller: &Caller<'_>,
    request: &Request,
    cached: Option<Lookup>,
) -> Resolved {
    let (Some(authorization), Some(token)) = (caller.authorization, caller.token) else {
        let problem = Problem::new(ErrorCode::Unauthorized, "a bearer token is required");
        return refused(problem.into(), None);
    };
    // A malformed slug names no tenant; saying so costs no call.
    let Some(slug) = caller.tenant.clone() else {
        let problem = Problem::new(ErrorCode::TenantNotFound, "no such tenant");
        return refused(problem.into(), None);
    };
    let cache = ResolutionCache::new(&upstream.counters, config.resolution_cache);
    // Remembered and still current (its tenant's generation unmoved): no
    // call. Otherwise the generation read then is what the answer is
    // remembered under.
    let lookup = cached.unwrap_or_else(|| cache.look_up(&slug, token, upstream.clock.now()));
    if let Lookup::Hit(scope) = lookup {
        return Resolved {
            result: Ok((slug, scope)),
            call: None,
        };
    }
    let url = format!(
        "{}/internal/resolve?slug={}",
        config.identity_url,
        slug.as_str()
    );
    let mut resolution = match outbound::request(Method::GET, &url, Vec::new()) {
        Ok(resolution) => resolution,
        Err(e) => return refused(call_failed(Service::Identity, e).into(), None),
    };
    let headers = resolution.headers_mut();
    message::set_header(headers, "authorization", authorization);
    // The client's trace, as the forward carries it: identity's log line
    // names it too (Spin adds its own only with OpenTelemetry on).
    for name in ["traceparent", "tracestate"] {
        if let Some(value) = request.header(name) {
            message::set_header(headers, name, value);
        }
    }
    // Resolution is a read: safe to repeat within the budget.
    let call = upstream
        .call(
            ctx,
            Service::Identity.name(),
            &RetryPolicy::standard(),
            resolution,
        )
        .await;
    let spent = CallSpent::of(&call);
    let result = answered(call.response).map(|scope| {
        cache.remember(lookup, &scope, upstream.clock.now());
        (slug, scope)
    });
    Resolved {
        result,
        call: Some(spent),
    }
}

/// A resolution refused before any call.
fn refused(refusal: Refusal, call: Option<CallSpent>) -> Resolved {
    Resolved {
        result: Err(refusal),
        call,
    }
}

/// The caller's scope from identity's answer, or why there is none.
fn answered(answer: Result<Response, SendError>) -> Result<TenantScope, Refusal> {
    let response = answer.map_err(|e| Refusal::from(call_failed(Service::Identity, e)))?;
    if response.problem_code().as_deref() == Some(ErrorCode::NotFound.as_str()) {
        // Resolution answers 401 or tenant_not_found, never a bare
        // not_found: this is identity's answer to a call whose signature
        // it refused (another internal secret), which says nothing to the
        // client about its tenant.
        journal::event(Event::Failure {
            what: "resolving a tenant",
            cause: "identity refused the gateway's signature: do both use one internal_token?"
                .into(),
        });
        return Err(Refusal::from(Problem::new(
            ErrorCode::UpstreamUnavailable,
            "the identity service refused the gateway's call",
        )));
    }
    if response.status() != 200 {
        // identity's own 401/404/504 problem, passed on unchanged; any
        // other answer becomes the gateway's problem.
        return Err(match pass_on(Service::Identity, response) {
            Ok(problem) => Refusal::Upstream(Box::new(problem)),
            Err(problem) => problem.into(),
        });
    }
    parse_resolution(response.body()).ok_or_else(|| {
        journal::event(Event::Failure {
            what: "reading identity's resolution",
            cause: "not a resolution".into(),
        });
        Refusal::from(Problem::new(
            ErrorCode::UpstreamUnavailable,
            "the identity service answered unexpectedly",
        ))
    })
}

/// Identity's answer to a resolution: `{tenant_id, actor_id, role}`. Read
/// from a JSON value rather than a derived struct: a typed deserializer's
/// error messages would bring float formatting into the component.
fn parse_resolution(body: &[u8]) -> Option<TenantScope> {
    let r: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(TenantScope {
        tenant_id: r.get("tenant_id")?.as_str()?.parse().ok()?,
        actor_id: r.get("actor_id")?.as_str()?.parse().ok()?,
        role: r.get("role")?.as_str()?.parse::<Role>().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolution_needs_all_three_fields_well_formed() {
        let ok = br#"{"tenant_id":"0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01","actor_id":"9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02","role":"manager"}"#;
        assert_eq!(parse_resolution(ok).unwrap().role, Role::Manager);
        assert!(parse_resolution(br#"{"tenant_id":"x","actor_id":"y","role":"admin"}"#).is_none());
        assert!(parse_resolution(b"not json").is_none());
    }
}
