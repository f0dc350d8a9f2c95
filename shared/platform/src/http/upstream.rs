//! Calls to other services: the HTTP client with the clock, sleeper and
//! jitter its retry loop needs, so that a call site only says which policy.

use std::time::Duration;

use crate::budget::context::RequestContext;
use crate::http::retry::{self, Jitter, RetryPolicy, Sleeper};
use crate::http::{HttpClient, OutboundRequest, OutboundResponse, SendError};
use crate::time::Clock;

/// What calls to other services run on, named once: Spin's client, clock,
/// sleeper and jitter in a component, fakes in tests. A component's types
/// take one parameter bounded by this (or by a trait extending it) instead
/// of four.
pub trait Calls {
    /// Outbound HTTP (raced against the budget).
    type Http: HttpClient;
    /// Wall clock.
    type Clock: Clock;
    /// Backoff sleeper.
    type Sleeper: Sleeper;
    /// Backoff jitter.
    type Jitter: Jitter + Clone;
}

/// Everything needed to call another service under the budget.
pub struct Upstream<E: Calls> {
    /// Outbound HTTP (raced against the budget).
    pub http: E::Http,
    /// Wall clock.
    pub clock: E::Clock,
    /// Backoff sleeper.
    pub sleeper: E::Sleeper,
    /// Backoff jitter.
    pub jitter: E::Jitter,
}

/// The outcome of a call.
#[derive(Debug)]
pub struct Call {
    /// The last attempt's result.
    pub response: Result<OutboundResponse, SendError>,
    /// Attempts made.
    pub attempts: u32,
    /// Wall time spent, backoff included.
    pub took: Duration,
}

impl<E: Calls> Upstream<E> {
    /// Sends `request` under `ctx`'s budget, repeating transient failures
    /// only as far as `policy` allows. The policy is the caller's statement
    /// of whether the call is safe to repeat.
    ///
    /// The call, its retries and the deadline it carries end at the hop's
    /// work deadline: a downstream that runs out answers (or is abandoned)
    /// while this hop still has its answer reserve.
    pub async fn call(
        &self,
        ctx: &RequestContext,
        policy: &RetryPolicy,
        request: OutboundRequest,
    ) -> Call {
        let ctx = &ctx.for_step();
        let started = self.clock.now();
        let mut jitter = self.jitter.clone();
        let outcome = retry::run(
            policy,
            ctx.deadline(),
            &self.clock,
            &self.sleeper,
            &mut jitter,
            |_| {
                let request = request.clone();
                async move {
                    let response = self.http.send(ctx, request).await;
                    let verdict = match &response {
                        Ok(r) => r.verdict(),
                        Err(e) => e.verdict(),
                    };
                    (response, verdict)
                }
            },
        )
        .await;
        Call {
            response: outcome.last,
            attempts: outcome.attempts,
            took: self.clock.now().since(started),
        }
    }
}
