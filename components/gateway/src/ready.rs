//! `/readyz`: every downstream's `/health`, concurrently, within the budget.

use std::time::Duration;

use futures::future::join_all;
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{Call, Calls};
use meridian_platform::http::SendError;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::{Clock, ErrorCode, Problem};

use crate::exchange::{Exchange, Refusal};
use crate::routes::Service;

/// What `/readyz` says of a probe that got no answer: a word, not the
/// transport's error text (which names hosts and the runtime's words).
pub(crate) fn probe_failure(error: &SendError) -> &'static str {
    match error {
        SendError::Deadline(_) => "timed out",
        SendError::CircuitOpen(_) => "failing",
        SendError::Connect(_) | SendError::Transport(_) | SendError::Refused(_) => "unreachable",
    }
}

impl<E: Calls> Exchange<'_, E> {
    /// 200 when every service answers its health probe in time, else 503
    /// naming the ones that did not (504 when the budget ran out first).
    pub async fn ready(&mut self) -> Result<Response, Refusal> {
        let (upstream, config, ctx) = (self.upstream, self.config, &self.ctx);
        let probes = Service::ALL.map(|service| async move {
            let url = format!("{}/health", config.base_url(service));
            // Health probes are reads: safe to repeat.
            let call = match outbound::request(Method::GET, &url, Vec::new()) {
                Ok(probe) => {
                    upstream
                        .call(ctx, service.name(), &RetryPolicy::standard(), probe)
                        .await
                }
                Err(refused) => Call::refused(refused),
            };
            (service, call)
        });
        let mut failing = Vec::new();
        let mut checks = serde_json::Map::new();
        for (service, call) in join_all(probes).await {
            self.trace.timing.record(service.name(), call.took);
            let status = match &call.response {
                Ok(r) if r.status() == 200 => "ok".to_owned(),
                Ok(r) => format!("status {}", r.status().as_u16()),
                Err(e) => {
                    // The transport's own words go to the log, never to an
                    // anonymous caller.
                    journal::event(Event::Failure {
                        what: "probing a service",
                        cause: format!("{}: {e}", service.name()),
                    });
                    probe_failure(e).to_owned()
                }
            };
            if status != "ok" {
                failing.push(format!("{} ({status})", service.name()));
            }
            checks.insert(service.name().into(), status.into());
        }
        if failing.is_empty() {
            return Ok(message::json(
                StatusCode::OK,
                &serde_json::json!({"status": "ready", "checks": checks}),
            ));
        }
        if let Err(spent) = self
            .ctx
            .for_step()
            .ensure(self.upstream.clock.now(), Duration::ZERO)
        {
            return Err(Problem::from(spent).into());
        }
        Err(Problem::new(
            ErrorCode::UpstreamUnavailable,
            format!("not ready: {}", failing.join(", ")),
        )
        .with_status(StatusCode::SERVICE_UNAVAILABLE)
        .into())
    }
}
