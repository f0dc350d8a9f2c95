//! The tenant path: a request under `/v1/{slug}/...`, step by step in the
//! order it meets them, the first refusal its answer. Each step is a
//! function of its own module that returns what it decided (`rate`,
//! `concurrency`, `throttle`, `resolve`, `forward`); this file composes
//! them and records what the answer reports. The tenant's rate is judged
//! once identity vouched for the caller (naming a slug spends nobody's
//! quota and learns nothing); a credential already refused in this window
//! is refused again before any call.

use meridian_platform::counts::Counters;
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::RateLimiter;
use meridian_platform::tenancy::cache::ResolutionCache;
use meridian_platform::{Clock, RequestContext};

use crate::config::GatewayConfig;
use crate::edge::{Caller, Credentials};
use crate::exchange::Exchange;
use crate::outcome::Refusal;
use crate::routes::{Service, TenantRoute};
use crate::{concurrency, rate, resolve, throttle};

impl<E: Calls> Exchange<'_, E> {
    /// Serves a tenant route.
    pub async fn tenant(
        &mut self,
        route: TenantRoute,
        request: &Request,
        policy: &RetryPolicy,
    ) -> Result<Response, Refusal> {
        let (upstream, config) = (self.upstream, self.config);
        let (key, service) = (route.key(), route.service());
        let caller = Caller::of(&route.slug, request);
        let slug = caller.slug;
        // The caller's rate limiter, made once: it hashes the token.
        let limiter = rate::limiter(upstream, config, slug, caller.token);

        // 1. Every count the steps below read, in one batch read.
        read_ahead(
            upstream, config, &self.ctx, &caller, &limiter, &key, service,
        );

        // 2. A credential refused for its rate this window: 429.
        let rate = rate::check(upstream, &limiter);
        self.trace.rate = rate.verdict;
        self.trace.vouched |= rate.marked();
        rate.decision()?;

        // 3. Whether identity's answer for the caller is remembered.
        let cached = resolve::look_up(upstream, config, &caller);
        if let Some(took) = cached.took {
            self.trace.timing.record("resolve-cached", took);
        }
        let vouched = cached.vouched();
        self.trace.vouched |= vouched;

        // 4. A vouched caller's tenant with no slot free: 429.
        let looked = concurrency::check(upstream, config, slug, rate.verdict.as_ref(), vouched)?;

        // 5. The overload throttle: 503, or 504 for too little budget.
        let judged = throttle::judge(upstream, config, &self.ctx, key, Some(slug), vouched);
        self.throttled(judged.map(Some))?;

        // 6. Resolution: tenant, actor, role (remembered, or identity's).
        let resolved =
            resolve::resolve(upstream, config, &self.ctx, &caller, request, cached.lookup).await;
        if let Some(spent) = resolved.call {
            self.trace.record("resolve", spent);
        }
        let (tenant, scope) = resolved.result?;
        self.trace.vouched = true;

        // 7. The tenant's rate, judged and counted: 429.
        self.trace.rate = rate::enforce(upstream, &limiter, rate.verdict)?;

        // 8. A slot among the tenant's requests in progress: 429.
        let slot = concurrency::enter(upstream, config, slug, rate.verdict.as_ref(), looked)?;
        self.slot = slot.map(|slot| (slug.to_owned(), slot));

        // 9. Forwarded under the tenant's scope, on the rebuilt path.
        self.ctx = self.ctx.clone().with_tenant(scope);
        let path = route.path(&tenant);
        self.forward(service, &path, request, policy, Credentials::Strip)
            .await
    }
}

/// Step 1: reads in one batch everything the steps after it read from the
/// shared store before the forward, each step's keys as its limiter
/// declares them. Each read is a host call, and the store is one lock
/// every request waits on (docs/benchmarks.md); the steps then find their
/// values held.
pub fn read_ahead<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    ctx: &RequestContext,
    caller: &Caller<'_>,
    limiter: &RateLimiter<'_, E::Counters>,
    route: &str,
    service: Service,
) {
    let now = upstream.clock.now();
    let slug = caller.slug;
    // Steps 2 and 7, the tenant's rate: its window and its override
    // (which also holds the tenant's concurrency limit, so it is read for
    // that alone when the rate limiter is off).
    let mut keys = limiter.read_keys(now);
    if config.concurrency.enabled && !config.rates.enabled {
        keys.push(limiter.override_key().to_owned());
    }
    // Step 3, the remembered resolution.
    if let (Some(token), Some(tenant)) = (caller.token, &caller.tenant) {
        let cache = ResolutionCache::new(&upstream.counters, config.resolution_cache);
        keys.extend(cache.read_keys(tenant, token));
    }
    // Steps 4 and 8, the tenant's requests in progress.
    keys.extend(concurrency::limiter(upstream, config, slug).read_keys(now));
    // Step 5, the route's and the tenant's throttle windows.
    keys.extend(
        throttle::throttle(upstream, config, route)
            .for_tenant(slug)
            .read_keys(now),
    );
    // Steps 6 and 9, the breakers of identity and of the service.
    let calls = match service {
        Service::Identity => vec![Service::Identity],
        other => vec![Service::Identity, other],
    };
    for to in calls {
        keys.extend(upstream.read_keys(ctx, to.name()));
    }
    upstream.counters.read_ahead(&keys);
}
