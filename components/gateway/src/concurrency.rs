//! The tenant's requests in progress, steps 4 and 8 of the tenant path
//! (`tenant.rs`): a vouched caller's tenant with no slot free is refused
//! before the throttle; everyone else takes a slot after the rate, and
//! leaves it before the answer is sent.

use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::{ConcurrencyLimiter, RateVerdict, Seen, Slot};
use meridian_platform::{Clock, Problem};

use crate::config::GatewayConfig;
use crate::throttle::MAX_HOLD;

/// The concurrency limiter of the tenant `slug`. Its window outlasts the
/// longest request: the largest budget, and the hold of a refusal.
pub fn limiter<'u, E: Calls>(
    upstream: &'u Upstream<E>,
    config: &GatewayConfig,
    slug: &str,
) -> ConcurrencyLimiter<'u, E::Counters> {
    let longest = config.budget.max_budget() + MAX_HOLD;
    ConcurrencyLimiter::new(&upstream.counters, config.concurrency, slug, longest)
}

/// The tenant's limit of requests in progress: its override's (in the
/// rate's verdict, or read for its limit alone with the rate limiter off),
/// or the default.
fn limit<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    slug: &str,
    rate: Option<&RateVerdict>,
) -> u32 {
    let policy = match rate {
        Some(verdict) => Some(verdict.policy),
        None => crate::rate::limiter(upstream, config, slug, None)
            .stored_override()
            .ok()
            .flatten(),
    };
    policy
        .and_then(|p| p.concurrency)
        .unwrap_or(config.concurrency.default)
}

/// What step 4 saw, handed to step 8: the tenant's limit and what it had
/// in progress then.
#[derive(Debug, Clone, Copy)]
pub struct Looked {
    limit: u32,
    seen: Option<Seen>,
}

/// Step 4, before the throttle, for a caller identity vouched for
/// (`vouched`): a tenant with no slot free is refused at once — the 429
/// [`enter`] would give after resolution, with nothing spent on it (no
/// call, no count, no draw against the route's overload). Anyone else is
/// judged at step 8, so a slug reveals nothing about its tenant's load.
/// `rate` is step 2's verdict, which holds the tenant's override.
pub fn check<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    slug: &str,
    rate: Option<&RateVerdict>,
    vouched: bool,
) -> Result<Option<Looked>, Problem> {
    if !vouched || !config.concurrency.enabled {
        return Ok(None);
    }
    let limit = limit(upstream, config, slug, rate);
    let seen = limiter(upstream, config, slug).look(upstream.clock.now());
    if let Some(seen) = seen {
        seen.check(limit).map_err(|busy| busy.problem())?;
    }
    Ok(Some(Looked { limit, seen }))
}

/// Step 8, after the rate: a request beyond the tenant's limit is refused,
/// a 429 held like the rate's; one within it takes a slot, left by
/// [`leave`]. `looked` is step 4's, when it looked.
pub fn enter<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    slug: &str,
    rate: Option<&RateVerdict>,
    looked: Option<Looked>,
) -> Result<Option<Slot>, Problem> {
    if !config.concurrency.enabled {
        return Ok(None);
    }
    let (limit, seen) = match looked {
        Some(looked) => (looked.limit, looked.seen),
        None => (limit(upstream, config, slug, rate), None),
    };
    limiter(upstream, config, slug)
        .enter(upstream.clock.now(), limit, seen)
        .map_err(|busy| busy.problem())
}

/// Leaves `slot` among the tenant's requests in progress: before the
/// answer is sent, so that a client with as many connections as its
/// limit, sending again as soon as it is answered, is never refused.
pub fn leave<E: Calls>(upstream: &Upstream<E>, config: &GatewayConfig, slug: &str, slot: Slot) {
    limiter(upstream, config, slug).leave(slot, upstream.clock.now());
}
