//! The gateway's limits, in the order a tenant request meets them: the
//! tenant's rate (a refused credential refused again before resolution,
//! everyone else judged and counted after it), the overload
//! throttle, and the headers every tenant answer carries. The
//! platform admin's overrides are `tenant_limits.rs`.

use meridian_platform::counts::{opened_window, Counters};
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::{Jitter, Sleeper};
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::{
    ConcurrencyLimiter, RateLimiter, RateVerdict, Throttle, ThrottleVerdict,
};
use meridian_platform::secrets::constant_time_eq;
use meridian_platform::tenancy::cache::ResolutionCache;
use meridian_platform::time::duration_ms;
use meridian_platform::wire::headers;
use meridian_platform::{Clock, ErrorCode, Problem};

use crate::config::GatewayConfig;
use crate::edge::Caller;
use crate::exchange::{Exchange, Refusal};
use crate::routes::Service;

/// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers).
pub const RATE_LIMIT_POLICY: &str = "ratelimit-policy";
/// `RateLimit`.
pub const RATE_LIMIT: &str = "ratelimit";

/// The longest a refusal is held before it is sent.
pub const MAX_HOLD: std::time::Duration = std::time::Duration::from_secs(1);

/// The overload throttle of the route `key` (method and template).
pub fn throttle<'u, E: Calls>(
    upstream: &'u Upstream<E>,
    config: &GatewayConfig,
    key: &str,
) -> Throttle<'u, E::Counters> {
    Throttle::new(&upstream.counters, config.throttle, key)
}

/// The concurrency limiter of the tenant `slug`. Its window outlasts the
/// longest request: the largest budget, and the hold of a refusal.
pub fn concurrency<'u, E: Calls>(
    upstream: &'u Upstream<E>,
    config: &GatewayConfig,
    slug: &str,
) -> ConcurrencyLimiter<'u, E::Counters> {
    let longest = config.budget.max_budget() + MAX_HOLD;
    ConcurrencyLimiter::new(&upstream.counters, config.concurrency, slug, longest)
}

/// The most requests a second each anonymous route (`/readyz`, tenant
/// creation, the relay) takes across the deployment: far above what a
/// probe or a scheduler sends, far below what would load the services.
pub const OPEN_ROUTE_PER_SECOND: i64 = 50;

/// Whether `problem` is load the gateway shed (a tenant over its rate, or
/// the overload throttle), whose answer is held.
pub fn is_shed(problem: &Problem) -> bool {
    matches!(
        problem.code(),
        ErrorCode::RateLimited | ErrorCode::Overloaded
    )
}

impl<E: Calls> Exchange<'_, E> {
    /// Holds a shed request's answer on a timer (an instance waiting costs
    /// no CPU). A client that ignores `Retry-After` and sends again at
    /// once — a closed-loop flood — would otherwise spend the capacity it
    /// was refused to protect on refusals. NGINX's `limit_req` delays
    /// excess requests for the same reason. A tenant over its rate is held
    /// for what is left of its work budget, at most [`MAX_HOLD`]: each of
    /// its connections sends at most one request per budget. The throttle's
    /// refusal is held no longer than a served request of the route
    /// recently took: the connection then sends no faster than if it had
    /// been served, and is not kept from the requests behind it (an
    /// arrival stream that does not wait — users, a proxy's connection
    /// pool — queues behind a held answer). The answer still comes within
    /// the budget, its reserve untouched.
    pub async fn hold(&self) {
        let now = self.upstream.clock.now();
        let left = self
            .ctx
            .for_step()
            .remaining(now)
            .min(self.trace.hold.unwrap_or(MAX_HOLD))
            .min(MAX_HOLD);
        if !left.is_zero() {
            self.upstream.sleeper.sleep(left).await;
        }
    }

    /// Reads in one batch everything the tenant path's steps
    /// (`Exchange::serve`) read from the shared store before the forward,
    /// each step's keys as its limiter declares them. Each read is a host
    /// call, and the store is one lock every request waits on
    /// (docs/benchmarks.md); the steps then find their values held.
    pub fn read_ahead(&self, caller: &Caller<'_>, route: &str, service: Service) {
        let now = self.upstream.clock.now();
        let slug = caller.slug;
        let limiter = self.limiter(slug, caller.token);
        // Steps 2 and 7, the tenant's rate: its window and its override
        // (which also holds the tenant's concurrency limit, so it is read
        // for that alone when the rate limiter is off).
        let mut keys = limiter.read_keys(now);
        if self.config.concurrency.enabled && !self.config.rates.enabled {
            keys.push(limiter.override_key().to_owned());
        }
        // Step 3, the remembered resolution.
        if let (Some(token), Some(tenant)) = (caller.token, &caller.tenant) {
            let cache = ResolutionCache::new(&self.upstream.counters, self.config.resolution_cache);
            keys.extend(cache.read_keys(tenant, token));
        }
        // Steps 4 and 8, the tenant's requests in progress.
        keys.extend(concurrency(self.upstream, self.config, slug).read_keys(now));
        // Step 5, the route's and the tenant's throttle windows.
        keys.extend(
            throttle(self.upstream, self.config, route)
                .for_tenant(slug)
                .read_keys(now),
        );
        // Steps 6 and 9, the breakers of identity and of the service.
        let calls = match service {
            Service::Identity => vec![Service::Identity],
            other => vec![Service::Identity, other],
        };
        for to in calls {
            keys.extend(self.upstream.read_keys(&self.ctx, to.name()));
        }
        self.upstream.counters.read_ahead(&keys);
    }

    /// The tenant `slug`'s limiter, for the caller's bearer `token`.
    pub(crate) fn limiter(&self, slug: &str, token: Option<&str>) -> RateLimiter<'_, E::Counters> {
        RateLimiter::new(&self.upstream.counters, self.config.rates, slug, token)
            .sampled(self.config.count_sample)
    }

    /// Before resolution: reads the tenant's window (one batch) and
    /// refuses at once — a 429, no call — a credential identity already
    /// vouched for and that was refused in this window. Anyone else goes
    /// on to identity, so a missing or wrong token is still a 401 and a
    /// slug reveals nothing about its tenant's load.
    pub fn check_rate(&mut self, caller: &Caller<'_>) -> Result<(), Refusal> {
        let verdict = self
            .limiter(caller.slug, caller.token)
            .check(self.upstream.clock.now());
        self.trace.rate = verdict;
        match verdict {
            Some(v) if v.marked => {
                // Marked after identity vouched for this credential here.
                self.trace.vouched = true;
                Err(v.problem().into())
            }
            _ => Ok(()),
        }
    }

    /// After resolution: a request over the tenant's rate is refused (and
    /// its credential marked, so its next requests are refused before
    /// resolution); one within it is counted.
    pub fn enforce_rate(&mut self, caller: &Caller<'_>) -> Result<(), Refusal> {
        let Some(mut v) = self.trace.rate else {
            return Ok(());
        };
        let limiter = self.limiter(caller.slug, caller.token);
        let now = self.upstream.clock.now();
        if !v.allowed {
            limiter.mark_refused(&v, now, MAX_HOLD);
            return Err(v.problem().into());
        }
        limiter.count(&v.policy, now, || self.upstream.jitter.clone().next_u64());
        v.remaining = v.remaining.saturating_sub(1);
        self.trace.rate = Some(v);
        Ok(())
    }

    /// The tenant's limit of requests in progress: its override's, or the
    /// default. Decided once per request: with the rate limiter off, an
    /// override is read for its limit alone.
    fn concurrency_limit(&mut self, slug: &str) -> u32 {
        if let Some(limit) = self.trace.concurrency_limit {
            return limit;
        }
        let policy = match &self.trace.rate {
            Some(verdict) => Some(verdict.policy),
            None => self.limiter(slug, None).stored_override().ok().flatten(),
        };
        let limit = policy
            .and_then(|p| p.concurrency)
            .unwrap_or(self.config.concurrency.default);
        self.trace.concurrency_limit = Some(limit);
        limit
    }

    /// Before the throttle, for a caller identity vouched for: a tenant
    /// with no slot free is refused at once — the 429 [`Self::enter`]
    /// would give after resolution, with nothing spent on it (no call,
    /// no count, no draw against the route's overload). A flood's excess
    /// is then cheap, and its refusals are the tenant's 429s rather than
    /// the route's 503s. Anyone else is judged after resolution, so a
    /// slug reveals nothing about its tenant's load.
    pub fn check_concurrency(&mut self, slug: &str, vouched: bool) -> Result<(), Refusal> {
        if !vouched || !self.config.concurrency.enabled {
            return Ok(());
        }
        let limit = self.concurrency_limit(slug);
        let now = self.upstream.clock.now();
        let Some(seen) = concurrency(self.upstream, self.config, slug).look(now) else {
            return Ok(());
        };
        self.trace.seen = Some(seen);
        seen.check(limit).map_err(|busy| busy.problem().into())
    }

    /// After the rate: a request beyond the tenant's limit of requests in
    /// progress is refused, a 429 held like the rate's; one within it
    /// takes a slot ([`Self::leave`]).
    pub fn enter(&mut self, slug: &str) -> Result<(), Refusal> {
        if !self.config.concurrency.enabled {
            return Ok(());
        }
        let limit = self.concurrency_limit(slug);
        let now = self.upstream.clock.now();
        let seen = self.trace.seen.take();
        match concurrency(self.upstream, self.config, slug).enter(now, limit, seen) {
            Ok(slot) => {
                self.trace.slot = slot.map(|slot| (slug.to_owned(), slot));
                Ok(())
            }
            Err(busy) => Err(busy.problem().into()),
        }
    }

    /// Leaves the request's slot among its tenant's requests in progress,
    /// if it took one: before its answer is sent, so that a client with
    /// as many connections as its limit, sending again as soon as it is
    /// answered, is never refused.
    pub fn leave(&mut self) {
        if let Some((slug, slot)) = self.trace.slot.take() {
            concurrency(self.upstream, self.config, &slug).leave(slot, self.upstream.clock.now());
        }
    }

    /// An anonymous route's request: refused past
    /// [`OPEN_ROUTE_PER_SECOND`] (one increment of a one-second window,
    /// the route's own: the store holds its last two and a marker), then
    /// throttled like any route. The store failing lets it through; with
    /// the throttle off, so does this.
    pub fn throttle_open(&mut self, key: String) -> Result<(), Refusal> {
        if !self.config.throttle.enabled {
            return Ok(());
        }
        let now = self.upstream.clock.now();
        let epoch = now.as_millis() / 1_000;
        let family = format!("meridian/open/{key}");
        let counters = &self.upstream.counters;
        match counters.add(&format!("{family}/{epoch}"), 1) {
            Ok(1) => opened_window(counters, &family, epoch, |e| vec![format!("{family}/{e}")]),
            Ok(n) if n > OPEN_ROUTE_PER_SECOND => {
                return Err(Problem::rate_limited(
                    format!("this route takes at most {OPEN_ROUTE_PER_SECOND} requests a second"),
                    1,
                )
                .into())
            }
            _ => {}
        }
        self.throttle_route(key, None, false)
    }

    /// Refuses (401, no call) a request to a platform admin's route
    /// without the admin token.
    pub fn require_admin(&mut self, request: &Request) -> Result<(), Refusal> {
        let authorized = request
            .header("authorization")
            .and_then(headers::bearer_token)
            .zip(self.config.admin_token.as_deref())
            .is_some_and(|(sent, expected)| {
                !expected.is_empty() && constant_time_eq(sent, expected)
            });
        self.trace.admin = authorized;
        match authorized {
            true => Ok(()),
            false => Err(Problem::new(
                ErrorCode::Unauthorized,
                "this route takes the platform admin token",
            )
            .into()),
        }
    }

    /// Overload is refused here, before any call: in proportion to how
    /// many of the route's (and the tenant `slug`'s) recent requests ran
    /// out of budget, or at once when the budget left is below what the
    /// route recently cost. `key` is the route's row's method and
    /// template; `vouched`, whether identity's answer for the caller is
    /// remembered (only then is the tenant's window read: a stranger meets
    /// the route's figures, whatever slug it names).
    pub fn throttle_route(
        &mut self,
        key: String,
        slug: Option<&str>,
        vouched: bool,
    ) -> Result<(), Refusal> {
        let now = self.upstream.clock.now();
        let roll = self.upstream.jitter.clone().next_u64();
        let throttle = throttle(self.upstream, self.config, &key);
        let throttle = match slug {
            Some(slug) => throttle.for_tenant(slug).vouched(vouched),
            None => throttle,
        };
        match throttle.judge(now, self.ctx.remaining(now), roll) {
            ThrottleVerdict::Yes => {
                self.trace.let_through = Some((key, slug.map(str::to_owned)));
                Ok(())
            }
            ThrottleVerdict::Throttled { chance, cost } => {
                self.trace.hold = cost;
                Err(Problem::overloaded(chance).into())
            }
            ThrottleVerdict::TooLittleBudget(cost) => Err(Problem::new(
                ErrorCode::DeadlineExceeded,
                format!(
                    "this route recently took {} ms, more than the budget left; refused before any work",
                    duration_ms(cost)
                ),
            )
            .with_hop("gateway")
            .with_budget_ms(duration_ms(self.ctx.budget_at_arrival()))
            .into()),
        }
    }
}

/// Sets the rate headers of a tenant answer.
pub fn set_rate_headers(response: &mut Response, verdict: &RateVerdict) {
    response.set_header(RATE_LIMIT_POLICY, verdict.policy_header());
    response.set_header(RATE_LIMIT, verdict.header());
}
