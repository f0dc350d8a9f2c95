//! The overload throttle, step 5 of the tenant path (`tenant.rs`) and the
//! anonymous routes' cap, and how long a shed request's answer is held.

use std::time::Duration;

use meridian_platform::counts::{opened_window, Counters};
use meridian_platform::http::retry::{Jitter, Sleeper};
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::{Throttle, ThrottleVerdict};
use meridian_platform::time::duration_ms;
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};

use crate::config::GatewayConfig;

/// The longest a refusal is held before it is sent.
pub const MAX_HOLD: Duration = Duration::from_secs(1);

/// The most requests a second each anonymous route (`/readyz`, tenant
/// creation, the relay) takes across the deployment: far above what a
/// probe or a scheduler sends, far below what would load the services.
pub const OPEN_ROUTE_PER_SECOND: i64 = 50;

/// The overload throttle of the route `key` (method and template).
pub fn throttle<'u, E: Calls>(
    upstream: &'u Upstream<E>,
    config: &GatewayConfig,
    key: &str,
) -> Throttle<'u, E::Counters> {
    Throttle::new(&upstream.counters, config.throttle, key)
}

/// A request the throttle let through: its route's key and the tenant
/// slug it named (if any), for the throttle to learn how it ended.
pub type LetThrough = (String, Option<String>);

/// A request the throttle refused: its problem, and how long its answer is
/// held (what a served request of the route recently took).
#[derive(Debug)]
pub struct Throttled {
    /// The 503 `overloaded`, or the 504 of too little budget (boxed: the
    /// refusal is the rare path).
    pub problem: Box<Problem>,
    /// At most this long.
    pub hold: Option<Duration>,
}

/// Step 5: overload is refused here, before any call, in proportion to
/// how many of the route's (and the tenant `slug`'s) recent requests ran
/// out of budget, or at once when the budget left is below what the route
/// recently cost. `key` is the route's row's method and template;
/// `vouched`, whether identity's answer for the caller is remembered (only
/// then is the tenant's window read: a stranger meets the route's figures,
/// whatever slug it names).
pub fn judge<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    ctx: &RequestContext,
    key: String,
    slug: Option<&str>,
    vouched: bool,
) -> Result<LetThrough, Throttled> {
    let now = upstream.clock.now();
    let roll = upstream.jitter.clone().next_u64();
    let route = throttle(upstream, config, &key);
    let route = match slug {
        Some(slug) => route.for_tenant(slug).vouched(vouched),
        None => route,
    };
    match route.judge(now, ctx.remaining(now), roll) {
        ThrottleVerdict::Yes => Ok((key, slug.map(str::to_owned))),
        ThrottleVerdict::Throttled { chance, cost } => Err(Throttled {
            problem: Box::new(Problem::overloaded(chance)),
            hold: cost,
        }),
        ThrottleVerdict::TooLittleBudget(cost) => Err(Throttled {
            problem: Box::new(
                Problem::new(
                ErrorCode::DeadlineExceeded,
                format!(
                    "this route recently took {} ms, more than the budget left; refused before any work",
                    duration_ms(cost)
                ),
            )
            .with_hop("gateway")
            .with_budget_ms(duration_ms(ctx.budget_at_arrival())),
            ),
            hold: None,
        }),
    }
}

/// An anonymous route's request: refused past [`OPEN_ROUTE_PER_SECOND`]
/// (one increment of a one-second window, the route's own: the store holds
/// its last two and a marker), then judged like any route. The store
/// failing lets it through; with the throttle off, so does this.
pub fn open<E: Calls>(
    upstream: &Upstream<E>,
    config: &GatewayConfig,
    ctx: &RequestContext,
    key: String,
) -> Result<Option<LetThrough>, Throttled> {
    if !config.throttle.enabled {
        return Ok(None);
    }
    let epoch = upstream.clock.now().as_millis() / 1_000;
    let family = format!("meridian/open/{key}");
    let counters = &upstream.counters;
    match counters.add(&format!("{family}/{epoch}"), 1) {
        Ok(1) => opened_window(counters, &family, epoch, |e| vec![format!("{family}/{e}")]),
        Ok(n) if n > OPEN_ROUTE_PER_SECOND => {
            return Err(Throttled {
                problem: Box::new(Problem::rate_limited(
                    format!("this route takes at most {OPEN_ROUTE_PER_SECOND} requests a second"),
                    1,
                )),
                hold: None,
            })
        }
        _ => {}
    }
    judge(upstream, config, ctx, key, None, false).map(Some)
}

/// Whether `problem` is load the gateway shed (a tenant over its rate, or
/// refused by the throttle), whose answer is held.
pub fn is_shed(problem: &Problem) -> bool {
    matches!(
        problem.code(),
        ErrorCode::RateLimited | ErrorCode::Overloaded
    )
}

/// Holds a shed request's answer on a timer (an instance waiting costs no
/// CPU), so a closed-loop flood that ignores `Retry-After` does not spend
/// the capacity it was refused to protect on refusals (NGINX's
/// `limit_req` delays excess requests likewise): at most what is left of
/// its work budget, [`MAX_HOLD`], and `hold` (what a served request of the
/// route recently took, for the throttle's refusals: the connection sends
/// no faster than if it had been served). docs/overload.md says why.
pub async fn hold<E: Calls>(upstream: &Upstream<E>, ctx: &RequestContext, hold: Option<Duration>) {
    let left = ctx
        .for_step()
        .remaining(upstream.clock.now())
        .min(hold.unwrap_or(MAX_HOLD))
        .min(MAX_HOLD);
    if !left.is_zero() {
        upstream.sleeper.sleep(left).await;
    }
}
