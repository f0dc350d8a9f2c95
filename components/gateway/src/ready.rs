//! `/readyz`: every downstream's `/health`, concurrently, within the budget.

use std::time::Duration;

use futures::future::join_all;
use meridian_platform::http::prelude::*;
use meridian_platform::http::retry::RetryPolicy;
use meridian_platform::http::upstream::{CallOutcome, Calls};
use meridian_platform::http::SendError;
use meridian_platform::log::journal::{self, Event};
use meridian_platform::{Clock, ErrorCode, Problem};

use crate::exchange::Exchange;
use crate::outcome::Refusal;
use crate::routes::Service;

/// What `/readyz` says of a probe that got no answer: a word, not the
/// transport's error text (which names hosts and the runtime's words).
fn probe_failure(error: &SendError) -> &'static str {
    match error {
        SendError::Deadline(_) => "timed out",
        SendError::CircuitOpen(_) => "failing",
        SendError::Connect(_) | SendError::Transport(_) | SendError::Refused(_) => "unreachable",
    }
}

/// The word for a call to `service` that got no answer ([`probe_failure`]);
/// the transport's own text goes to the log as `what` failing, never to an
/// anonymous caller.
pub(crate) fn unanswered(what: &'static str, service: Service, error: &SendError) -> &'static str {
    journal::event(Event::Failure {
        what,
        cause: format!("{}: {error}", service.name()),
    });
    probe_failure(error)
}

impl<E: Calls> Exchange<'_, E> {
    /// `method` on `path` of every service at once (no body), within the
    /// request's budget, each timed in the trace: each service's call, in
    /// [`Service::ALL`]'s order. Only for calls safe to repeat (a probe, a
    /// migration): each is retried as a read.
    pub(crate) async fn on_every_service(
        &mut self,
        method: Method,
        path: &str,
    ) -> Vec<(Service, CallOutcome)> {
        let (upstream, config, ctx) = (self.upstream, self.config, &self.ctx);
        let calls = Service::ALL.map(|service| {
            let method = method.clone();
            async move {
                let url = format!("{}{path}", config.base_url(service));
                let call = match outbound::request(method, &url, Vec::new()) {
                    Ok(request) => {
                        upstream
                            .call(ctx, service.name(), &RetryPolicy::standard(), request)
                            .await
                    }
                    Err(refused) => CallOutcome::refused(refused),
                };
                (service, call)
            }
        });
        let calls = join_all(calls).await;
        for (service, call) in &calls {
            self.trace.timing.record(service.name(), call.took);
        }
        calls
    }

    /// 200 when every service answers its health probe in time, else 503
    /// naming the ones that did not (504 when the budget ran out first).
    pub async fn ready(&mut self) -> Result<Response, Refusal> {
        let probes = self.on_every_service(Method::GET, "/health").await;
        let mut failing = Vec::new();
        let mut checks = serde_json::Map::new();
        for (service, call) in probes {
            let status = match &call.response {
                Ok(r) if r.status() == 200 => "ok".to_owned(),
                Ok(r) => format!("status {}", r.status().as_u16()),
                Err(e) => unanswered("probing a service", service, e).to_owned(),
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
