//! The tenant's rate, steps 2 and 7 of the tenant path (`tenant.rs`): a
//! credential refused for its rate this window is refused again before
//! resolution; everyone else is judged and counted after it. And the
//! headers that tell a vouched caller its tenant's figures. The platform
//! admin's overrides are `tenant_limits.rs`.

use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::Jitter;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::{RateLimiter, RateVerdict};
use meridian_platform::{Clock, Problem};

use crate::config::GatewayConfig;
use crate::throttle::MAX_HOLD;

/// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers).
pub const RATE_LIMIT_POLICY: &str = "ratelimit-policy";
/// `RateLimit`.
pub const RATE_LIMIT: &str = "ratelimit";

/// The tenant `slug`'s limiter, for the caller's bearer `token`.
pub fn limiter<'u, E: Calls>(
    upstream: &'u Upstream<E>,
    config: &GatewayConfig,
    slug: &str,
    token: Option<&str>,
) -> RateLimiter<'u, E::Counters> {
    RateLimiter::new(&upstream.counters, config.rates, slug, token).sampled(config.count_sample)
}

/// What step 2 found of the caller's rate: the tenant's window (`None`
/// with the limiter off or the store failing), and whether the credential
/// was refused in it already.
#[derive(Debug, Clone, Copy)]
pub struct Checked {
    /// The tenant's window as read.
    pub verdict: Option<RateVerdict>,
}

impl Checked {
    /// Whether the credential was refused for its rate in this window:
    /// marked after identity vouched for it here.
    pub fn marked(&self) -> bool {
        self.verdict.is_some_and(|v| v.marked)
    }

    /// A marked credential's 429, before any call; anyone else goes on.
    pub fn decision(&self) -> Result<(), Problem> {
        match self.verdict {
            Some(v) if v.marked => Err(v.problem()),
            _ => Ok(()),
        }
    }
}

/// Step 2, before resolution, with the caller's `limiter` (made once a
/// request: it hashes the token): the tenant's window (read ahead) and whether
/// the caller's credential is marked in it. A missing or wrong token is
/// still identity's 401, and a slug reveals nothing about its tenant's
/// load: only a credential identity vouched for is ever marked.
pub fn check<E: Calls>(upstream: &Upstream<E>, limiter: &RateLimiter<'_, E::Counters>) -> Checked {
    Checked {
        verdict: limiter.check(upstream.clock.now()),
    }
}

/// Step 7, after resolution: a request over the tenant's rate is refused
/// (its credential marked, so its next requests are refused at step 2);
/// one within it is counted. What it answers is the verdict the answer's
/// headers tell, one fewer left once counted.
pub fn enforce<E: Calls>(
    upstream: &Upstream<E>,
    limiter: &RateLimiter<'_, E::Counters>,
    verdict: Option<RateVerdict>,
) -> Result<Option<RateVerdict>, Problem> {
    let Some(mut v) = verdict else {
        return Ok(None);
    };
    let now = upstream.clock.now();
    if !v.allowed {
        limiter.mark_refused(&v, now, MAX_HOLD);
        return Err(v.problem());
    }
    limiter.count(&v.policy, now, || upstream.jitter.clone().next_u64());
    v.remaining = v.remaining.saturating_sub(1);
    Ok(Some(v))
}

/// Sets the rate headers of a tenant answer.
pub fn set_headers(response: &mut Response, verdict: &RateVerdict) {
    response.set_header(RATE_LIMIT_POLICY, verdict.policy_header());
    response.set_header(RATE_LIMIT, verdict.header());
}
