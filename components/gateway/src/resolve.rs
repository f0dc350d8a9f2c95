//! Tenant resolution: slug and bearer token to tenant, actor and role, in
//! one retry-safe call to identity, or from the resolution cache when
//! identity's answer is remembered and still current
//! ([`meridian_platform::tenancy::cache`]).

use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::Calls;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::tenancy::cache::{Lookup, ResolutionCache};
use meridian_platform::tenancy::{Role, TenantScope, TenantSlug};
use meridian_platform::{Clock, ErrorCode, Problem};

use crate::edge::Caller;
use crate::exchange::{Exchange, Refusal};
use crate::proxy::{call_failed, pass_on};
use crate::routes::Service;

impl<E: Calls> Exchange<'_, E> {
    /// Looks the caller's resolution up in the resolution cache, before
    /// the throttle: whether identity vouched for the credential (a current
    /// entry), so the throttle can tell a tenant's caller from a name nobody
    /// resolves. What it found is kept for [`Self::resolve`]: the store is
    /// read once.
    pub fn look_up_cached(&mut self, caller: &Caller<'_>) -> bool {
        let (Some(token), Some(tenant)) = (caller.token, &caller.tenant) else {
            return false;
        };
        let lookup = self.look_up(tenant, token);
        let vouched = matches!(lookup, Lookup::Hit(_));
        self.lookup = Some(lookup);
        vouched
    }

    /// The cache's look-up, timed when it found a current entry.
    fn look_up(&mut self, slug: &TenantSlug, token: &str) -> Lookup {
        let cache = ResolutionCache::new(&self.upstream.counters, self.config.resolution_cache);
        let started = self.upstream.clock.now();
        let lookup = cache.look_up(slug, token, started);
        if let Lookup::Hit(_) = lookup {
            let took = self.upstream.clock.now().since(started);
            self.trace.timing.record("resolve-cached", took);
        }
        lookup
    }

    /// Resolves the caller's slug and bearer token once for the whole
    /// request (`request` lends identity the client's trace headers).
    /// The slug comes back parsed, as identity resolved it.
    pub async fn resolve(
        &mut self,
        caller: &Caller<'_>,
        request: &Request,
    ) -> Result<(TenantSlug, TenantScope), Refusal> {
        let (Some(authorization), Some(token)) = (caller.authorization, caller.token) else {
            return Err(Problem::new(ErrorCode::Unauthorized, "a bearer token is required").into());
        };
        // A malformed slug names no tenant; saying so costs no call.
        let slug = caller
            .tenant
            .clone()
            .ok_or_else(|| Problem::new(ErrorCode::TenantNotFound, "no such tenant"))?;
        // Remembered and still current (its tenant's generation unmoved):
        // no call. Otherwise the generation read then is what the answer
        // is remembered under.
        let lookup = match self.lookup.take() {
            Some(lookup) => lookup,
            None => self.look_up(&slug, token),
        };
        if let Lookup::Hit(scope) = lookup {
            return Ok((slug, scope));
        }
        let cache = ResolutionCache::new(&self.upstream.counters, self.config.resolution_cache);

        let url = format!(
            "{}/internal/resolve?slug={}",
            self.config.identity_url,
            slug.as_str()
        );
        let mut resolution = outbound::request(Method::GET, &url, Vec::new())
            .map_err(|e| Refusal::from(call_failed(Service::Identity, e)))?;
        let headers = resolution.headers_mut();
        message::set_header(headers, "authorization", authorization);
        // The client's trace, as the forward carries it: identity's log
        // line names it too (Spin adds its own only with OpenTelemetry on).
        for name in ["traceparent", "tracestate"] {
            if let Some(value) = request.header(name) {
                message::set_header(headers, name, value);
            }
        }
        // Resolution is a read: safe to repeat within the budget.
        let call = self
            .upstream
            .call(
                &self.ctx,
                Service::Identity.name(),
                &RetryPolicy::standard(),
                resolution,
            )
            .await;
        self.trace.timing.record("resolve", call.took);
        self.trace.count(&call);

        let response = match call.response {
            Ok(r) => r,
            Err(e) => return Err(call_failed(Service::Identity, e).into()),
        };
        if response.problem_code().as_deref() == Some(ErrorCode::NotFound.as_str()) {
            // Resolution answers 401 or tenant_not_found, never a bare
            // not_found: this is identity's answer to a call whose
            // signature it refused (another internal secret), which says
            // nothing to the client about its tenant.
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
        let scope = parse_resolution(response.body()).ok_or_else(|| {
            journal::event(Event::Failure {
                what: "reading identity's resolution",
                cause: "not a resolution".into(),
            });
            Refusal::from(Problem::new(
                ErrorCode::UpstreamUnavailable,
                "the identity service answered unexpectedly",
            ))
        })?;
        cache.remember(lookup, &scope, self.upstream.clock.now());
        Ok((slug, scope))
    }
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
