//! One public request on its way through the gateway, once admitted: the
//! context it is served in (request id, the edge budget as a deadline, the
//! tenant once resolved), what its calls run on, and what it learned for
//! the answer's headers. The steps it takes are its methods: resolving the
//! tenant (`resolve.rs`), forwarding (`proxy.rs`), probing (`ready.rs`).

use std::time::Duration;

use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::CallOutcome;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::{RateVerdict, Seen, Slot};
use meridian_platform::tenancy::cache::Lookup;
use meridian_platform::{Problem, RequestContext};

use crate::config::GatewayConfig;
use crate::edge::{Caller, Credentials};
use crate::routes::{Route, Service, Work};
use crate::timing::ServerTiming;

/// What one request learned on the way, reported in headers.
#[derive(Debug, Default)]
pub struct Trace {
    /// Per-hop timings.
    pub timing: ServerTiming,
    /// Upstream attempts made for this request (resolution and forwarding
    /// together), when any call was made.
    pub attempts: Option<u32>,
    /// Retries the shared retry budget refused.
    pub retries_refused: u32,
    /// What the tenant's rate limiter said, for the answer's headers.
    pub rate: Option<RateVerdict>,
    /// The route the throttle let this request through under, and the
    /// tenant slug it named (if it named one), to learn how it ended.
    pub let_through: Option<(String, Option<String>)>,
    /// Whether identity vouched for the caller (it resolved, or its
    /// resolution or a refusal of its credential is remembered): only
    /// then does the answer carry the tenant's rate figures.
    pub vouched: bool,
    /// Whether the caller showed the platform admin token.
    pub admin: bool,
    /// The longest the throttle's refusal is held: what a served request of
    /// the route recently took.
    pub hold: Option<Duration>,
    /// The slot the request holds among its tenant's (the slug's)
    /// requests in progress, left before it is answered.
    pub slot: Option<(String, Slot)>,
    /// The tenant's limit of requests in progress, once decided.
    pub concurrency_limit: Option<u32>,
    /// What the tenant had in progress when the request looked, before
    /// the throttle.
    pub seen: Option<Seen>,
}

impl Trace {
    /// Whether someone vouched for the caller — identity, or the admin
    /// token: only such a caller is told what the request's calls cost
    /// (attempts, refused retries, each hop's time). A stranger's answers
    /// tell nothing of the services' retry budget, breakers or timings.
    pub fn caller_known(&self) -> bool {
        self.vouched || self.admin
    }

    /// Adds one call's attempts (none when its breaker refused it) and
    /// refused retry to the request's totals.
    pub fn count(&mut self, call: &CallOutcome) {
        if call.attempts > 0 {
            self.attempts = Some(self.attempts.unwrap_or(0) + call.attempts);
        }
        self.retries_refused += u32::from(call.retry_refused);
    }
}

/// An answer that is not a success from the gateway's own flow.
#[derive(Debug)]
pub enum Refusal {
    /// The gateway's own problem.
    Problem(Problem),
    /// A downstream's answer, passed on as it came.
    Upstream(Box<Response>),
}

impl From<Problem> for Refusal {
    fn from(p: Problem) -> Self {
        Self::Problem(p)
    }
}

/// An admitted public request being served.
pub struct Exchange<'g, E: Calls> {
    /// Calls to the services.
    pub upstream: &'g Upstream<E>,
    /// Where the services live.
    pub config: &'g GatewayConfig,
    /// The request's context: the whole edge budget is the gateway's (its
    /// calls work to it less the answer reserve, see `Upstream::call`).
    pub ctx: RequestContext,
    /// Timings and attempts, for the answer's headers.
    pub trace: Trace,
    /// What the resolution cache said about the caller, once looked up.
    pub lookup: Option<Lookup>,
}

impl<'g, E: Calls> Exchange<'g, E> {
    /// Starts serving a request admitted with `ctx`.
    pub fn new(upstream: &'g Upstream<E>, config: &'g GatewayConfig, ctx: RequestContext) -> Self {
        Self {
            upstream,
            config,
            ctx,
            trace: Trace::default(),
            lookup: None,
        }
    }

    /// Serves `route`; `policy` says whether forwarding it may be repeated.
    pub async fn serve(
        &mut self,
        route: Work,
        request: &Request,
        policy: &RetryPolicy,
    ) -> Result<Response, Refusal> {
        match route {
            // The anonymous routes: a cheap deployment-wide limit and
            // the throttle before any call; the admin's routes check the
            // admin token first, so a stranger's flood reaches no service.
            Work::Ready => {
                self.throttle_open(own_key(Work::Ready))?;
                self.ready().await
            }
            Work::CreateTenant => {
                self.require_admin(request)?;
                self.throttle_open(own_key(Work::CreateTenant))?;
                self.forward(
                    Service::Identity,
                    "/v1/tenants",
                    request,
                    policy,
                    Credentials::Keep,
                )
                .await
            }
            Work::Relay => {
                self.require_admin(request)?;
                self.throttle_open(own_key(Work::Relay))?;
                // Delivery is keyed by event id, so a relay run is safe to repeat.
                let policy = RetryPolicy::standard();
                let path = "/internal/outbox/relay";
                self.forward(Service::Billing, path, request, &policy, Credentials::Keep)
                    .await
            }
            Work::Migrate => {
                self.require_admin(request)?;
                self.throttle_open(own_key(Work::Migrate))?;
                self.migrate().await
            }
            Work::TenantLimits => self.tenant_limits(request),
            Work::Keys => self.store_keys(request),
            Work::Tenant(tenant) => {
                // The tenant's path, step by step; the first refusal is
                // the answer. The tenant's rate is judged once identity
                // vouched for the caller (naming a slug spends nobody's
                // quota and learns nothing); a credential already refused
                // in this window is refused again before any call.
                let (key, service) = (tenant.key(), tenant.service());
                let caller = Caller::of(&tenant.slug, request);
                // 1. Every count the steps below read, in one batch read.
                self.read_ahead(&caller, &key, service);
                // 2. A credential refused for its rate this window: 429.
                self.check_rate(&caller)?;
                // 3. Whether identity's answer for the caller is remembered.
                let vouched = self.look_up_cached(&caller);
                self.trace.vouched |= vouched;
                // 4. A vouched caller's tenant with no slot free: 429.
                self.check_concurrency(caller.slug, vouched)?;
                // 5. The overload throttle: 503, or 504 for too little budget.
                self.throttle_route(key, Some(caller.slug), vouched)?;
                // 6. Resolution: tenant, actor, role (remembered, or identity's).
                let (resolved, scope) = self.resolve(&caller, request).await?;
                self.trace.vouched = true;
                // 7. The tenant's rate, judged and counted: 429.
                self.enforce_rate(&caller)?;
                // 8. A slot among the tenant's requests in progress: 429.
                self.enter(caller.slug)?;
                // 9. Forwarded under the tenant's scope, on the rebuilt path.
                self.ctx = self.ctx.clone().with_tenant(scope);
                let path = tenant.path(&resolved);
                self.forward(service, &path, request, policy, Credentials::Strip)
                    .await
            }
        }
    }
}

/// The key of one of the gateway's own routes
/// ([`crate::routes::route_key`] of its row in [`crate::routes::OWN`]).
fn own_key(work: Work) -> String {
    let route = Route::Work(work);
    crate::routes::OWN
        .iter()
        .find(|e| e.op == route)
        .map(|e| crate::routes::route_key(&e.method, e.path))
        .unwrap_or_default()
}
