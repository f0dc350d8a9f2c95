//! `/readyz`: every downstream's `/health`, concurrently, within the budget.

use futures::future::join_all;
use meridian_platform::http::retry::{Jitter, RetryPolicy, Sleeper};
use meridian_platform::http::{HttpClient, OutboundRequest};
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};

use crate::app::{json, EdgeBudget, Gateway, Refusal, Trace};
use crate::edge::EdgeResponse;
use crate::routes::Service;

impl<H: HttpClient, C: Clock, S: Sleeper, J: Jitter + Clone> Gateway<H, C, S, J> {
    /// 200 when every service answers its health probe in time, else 503
    /// naming the ones that did not (504 when the budget ran out first).
    pub async fn ready(
        &self,
        ctx: &RequestContext,
        budget: EdgeBudget,
        trace: &mut Trace,
    ) -> Result<EdgeResponse, Refusal> {
        let probes = Service::ALL.map(|service| async move {
            let url = format!("{}/health", self.config.base_url(service));
            // Health probes are reads: safe to repeat.
            let call = self
                .upstream
                .call(
                    ctx,
                    &RetryPolicy::standard(),
                    OutboundRequest::new("GET", url),
                )
                .await;
            (service, call)
        });
        let mut failing = Vec::new();
        let mut checks = serde_json::Map::new();
        for (service, call) in join_all(probes).await {
            trace.timing.record(service.name(), call.took);
            let status = match &call.response {
                Ok(r) if r.status == 200 => "ok".to_owned(),
                Ok(r) => format!("status {}", r.status),
                Err(e) => e.to_string(),
            };
            if status != "ok" {
                failing.push(format!("{} ({status})", service.name()));
            }
            checks.insert(service.name().into(), status.into());
        }
        if failing.is_empty() {
            return Ok(json(
                200,
                &serde_json::json!({"status": "ready", "checks": checks}),
            ));
        }
        if ctx
            .for_step()
            .ensure(self.upstream.clock.now(), std::time::Duration::ZERO)
            .is_err()
        {
            return Err(budget.exceeded().into());
        }
        Err(Problem::new(
            ErrorCode::UpstreamUnavailable,
            format!("not ready: {}", failing.join(", ")),
        )
        .with_status(503)
        .into())
    }
}
