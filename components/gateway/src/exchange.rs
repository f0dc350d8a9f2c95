//! One public request on its way through the gateway, once prepared: the
//! context it is served in (request id, the edge budget as a deadline, the
//! tenant once resolved), what its calls run on, and what its steps
//! decided, which the answer's headers report ([`Trace`]). Each route's
//! work is composed here from the steps, each a function of its own module
//! that returns what it decided (a refusal and what a call spent are
//! `outcome.rs`'s): the tenant path in `tenant.rs`, the
//! throttle in `throttle.rs`, forwarding in `forward.rs`, probing in
//! `ready.rs`.

use std::time::Duration;

use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{Calls, Upstream};
use meridian_platform::limits::{RateVerdict, Slot};
use meridian_platform::secrets::constant_time_eq;
use meridian_platform::wire::headers;
use meridian_platform::{ErrorCode, Problem, RequestContext};

use crate::config::GatewayConfig;
use crate::edge::Credentials;
use crate::outcome::{CallSpent, Refusal};
use crate::routes::{Route, Service, Work};
use crate::throttle::{self, LetThrough, Throttled};
use crate::timing::ServerTiming;

/// What one request's steps decided, as the answer's headers report it
/// and the throttle learns from it.
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
    pub let_through: Option<LetThrough>,
    /// Whether identity vouched for the caller (it resolved, or its
    /// resolution or a refusal of its credential is remembered): only
    /// then does the answer carry the tenant's rate figures.
    pub vouched: bool,
    /// Whether the caller showed the platform admin token.
    pub admin: bool,
}

impl Trace {
    /// Whether someone vouched for the caller — identity, or the admin
    /// token: only such a caller is told what the request's calls cost
    /// (attempts, refused retries, each hop's time). A stranger's answers
    /// tell nothing of the services' retry budget, breakers or timings.
    pub fn caller_known(&self) -> bool {
        self.vouched || self.admin
    }

    /// Adds what the call to `to` spent: its time, its attempts (none when
    /// its breaker refused it) and a refused retry.
    pub fn record(&mut self, to: &'static str, spent: CallSpent) {
        self.timing.record(to, spent.took);
        if spent.attempts > 0 {
            self.attempts = Some(self.attempts.unwrap_or(0) + spent.attempts);
        }
        self.retries_refused += u32::from(spent.retry_refused);
    }
}

/// A prepared public request being served.
pub struct Exchange<'g, E: Calls> {
    /// Calls to the services.
    pub upstream: &'g Upstream<E>,
    /// Where the services live.
    pub config: &'g GatewayConfig,
    /// The request's context: the whole edge budget is the gateway's (its
    /// calls work to it less the answer reserve, see `Upstream::call`).
    pub ctx: RequestContext,
    /// What the steps decided, for the answer's headers.
    pub trace: Trace,
    /// The slot the request holds among its tenant's (the slug's)
    /// requests in progress, left before it is answered ([`Self::leave`]).
    pub slot: Option<(String, Slot)>,
    /// How long a shed answer is held at most: what a served request of
    /// the route recently took, when the throttle refused it.
    pub hold: Option<Duration>,
}

impl<'g, E: Calls> Exchange<'g, E> {
    /// Starts serving a request prepared with `ctx`.
    pub fn new(upstream: &'g Upstream<E>, config: &'g GatewayConfig, ctx: RequestContext) -> Self {
        Self {
            upstream,
            config,
            ctx,
            trace: Trace::default(),
            slot: None,
            hold: None,
        }
    }

    /// Serves `work`; `policy` says whether forwarding it may be repeated.
    pub async fn serve(
        &mut self,
        work: Work,
        request: &Request,
        policy: &RetryPolicy,
    ) -> Result<Response, Refusal> {
        match work {
            // The anonymous routes: a cheap deployment-wide limit and
            // the throttle before any call; the admin's routes check the
            // admin token first, so a stranger's flood reaches no service.
            Work::Ready => {
                self.throttle_open(Work::Ready)?;
                self.ready().await
            }
            Work::CreateTenant => {
                self.require_admin(request)?;
                self.throttle_open(Work::CreateTenant)?;
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
                self.throttle_open(Work::Relay)?;
                // Delivery is keyed by event id, so a relay run is safe to repeat.
                let policy = RetryPolicy::standard();
                let path = "/internal/outbox/relay";
                self.forward(Service::Billing, path, request, &policy, Credentials::Keep)
                    .await
            }
            Work::Migrate => {
                self.require_admin(request)?;
                self.throttle_open(Work::Migrate)?;
                self.migrate().await
            }
            Work::TenantLimits => self.tenant_limits(request),
            Work::Keys => self.store_keys(request),
            Work::Tenant(tenant) => self.tenant(tenant, request, policy).await,
        }
    }

    /// Forwards `request` ([`crate::forward::forward`]), its call recorded.
    pub async fn forward(
        &mut self,
        service: Service,
        path: &str,
        request: &Request,
        policy: &RetryPolicy,
        credentials: Credentials,
    ) -> Result<Response, Refusal> {
        let (upstream, config, ctx) = (self.upstream, self.config, &self.ctx);
        let forwarded = crate::forward::forward(
            upstream,
            config,
            ctx,
            service,
            path,
            request,
            policy,
            credentials,
        )
        .await;
        if let Some(spent) = forwarded.call {
            self.trace.record(service.name(), spent);
        }
        forwarded.result
    }

    /// Refuses (401, no call) a request to a platform admin's route
    /// without the admin token.
    pub fn require_admin(&mut self, request: &Request) -> Result<(), Refusal> {
        self.trace.admin = request
            .header("authorization")
            .and_then(headers::bearer_token)
            .zip(self.config.admin_token.as_deref())
            .is_some_and(|(sent, expected)| {
                !expected.is_empty() && constant_time_eq(sent, expected)
            });
        match self.trace.admin {
            true => Ok(()),
            false => Err(Problem::new(
                ErrorCode::Unauthorized,
                "this route takes the platform admin token",
            )
            .into()),
        }
    }

    /// An anonymous route's cap and throttle ([`throttle::open`]), what it
    /// decided recorded.
    fn throttle_open(&mut self, work: Work) -> Result<(), Refusal> {
        let (upstream, config, ctx) = (self.upstream, self.config, &self.ctx);
        let judged = throttle::open(upstream, config, ctx, own_key(work));
        self.throttled(judged)
    }

    /// Records what the throttle decided: a request let through is learned
    /// from once it ends; a refused one is held.
    pub(crate) fn throttled(
        &mut self,
        judged: Result<Option<LetThrough>, Throttled>,
    ) -> Result<(), Refusal> {
        match judged {
            Ok(let_through) => {
                self.trace.let_through = let_through;
                Ok(())
            }
            Err(Throttled { problem, hold }) => {
                self.hold = hold;
                Err((*problem).into())
            }
        }
    }

    /// Leaves the request's slot among its tenant's requests in progress,
    /// if it took one: its work is done, so a client that sends again as
    /// soon as it is answered finds the slot free.
    pub fn leave(&mut self) {
        if let Some((slug, slot)) = self.slot.take() {
            crate::concurrency::leave(self.upstream, self.config, &slug, slot);
        }
    }

    /// Holds a shed answer ([`throttle::hold`]).
    pub async fn hold(&self) {
        throttle::hold(self.upstream, &self.ctx, self.hold).await;
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
