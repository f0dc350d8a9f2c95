//! One upstream call under a retry policy the caller chose.

use std::time::Duration;

use meridian_platform::http::{HttpClient, OutboundRequest, OutboundResponse, SendError};
use meridian_platform::retry::{self, Jitter, RetryPolicy, Sleeper};
use meridian_platform::{Clock, RequestContext};

use crate::app::Gateway;

/// The outcome of an upstream call.
#[derive(Debug)]
pub struct Call {
    /// The last attempt's result.
    pub response: Result<OutboundResponse, SendError>,
    /// Attempts made.
    pub attempts: u32,
    /// Wall time spent, backoff included.
    pub took: Duration,
}

impl<H: HttpClient, C: Clock, S: Sleeper, J: Jitter + Clone> Gateway<H, C, S, J> {
    /// Sends `request` under `ctx`'s budget, repeating transient failures
    /// only as far as `policy` allows.
    pub async fn call(
        &self,
        ctx: &RequestContext,
        policy: &RetryPolicy,
        request: OutboundRequest,
    ) -> Call {
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
