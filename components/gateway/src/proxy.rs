//! Forwarding a public request to the service that owns it.

use meridian_platform::http::{HttpClient, OutboundRequest, SendError};
use meridian_platform::idempotency::IdempotencyKey;
use meridian_platform::retry::{Jitter, RetryPolicy, Sleeper};
use meridian_platform::{Clock, ErrorCode, Problem, RequestContext};

use crate::app::{EdgeBudget, Gateway, Refusal, Trace};
use crate::edge::{forwardable_headers, is_returnable, EdgeRequest, EdgeResponse};
use crate::routes::Service;

/// The retry policy for a forwarded request: reads, and writes the owning
/// service can deduplicate by `Idempotency-Key`, may be repeated; any
/// other write is sent once.
pub fn forwarding_policy(method: &str, key: Option<&IdempotencyKey>) -> RetryPolicy {
    if matches!(method, "GET" | "HEAD") || key.is_some() {
        RetryPolicy::standard()
    } else {
        RetryPolicy::once()
    }
}

impl<H: HttpClient, C: Clock, S: Sleeper, J: Jitter + Clone> Gateway<H, C, S, J> {
    /// Forwards `request` to `service` with the gateway's headers, under the
    /// budget and the caller's retry policy, and passes the answer back.
    #[allow(clippy::too_many_arguments)]
    pub async fn forward(
        &self,
        ctx: &RequestContext,
        service: Service,
        request: &EdgeRequest,
        policy: &RetryPolicy,
        with_credentials: bool,
        budget: EdgeBudget,
        trace: &mut Trace,
    ) -> Result<EdgeResponse, Refusal> {
        let url = format!(
            "{}{}",
            self.config.base_url(service),
            request.path_and_query()
        );
        let mut outbound =
            OutboundRequest::new(&request.method, url).with_body(request.body.clone());
        outbound.headers = forwardable_headers(request, with_credentials);

        let call = self.upstream.call(ctx, policy, outbound).await;
        trace.timing.record(service.name(), call.took);
        trace.attempts = Some(call.attempts);

        match call.response {
            Ok(upstream) => Ok(EdgeResponse {
                status: upstream.status,
                headers: upstream
                    .headers
                    .into_iter()
                    .filter(|(n, _)| is_returnable(n))
                    .collect(),
                body: upstream.body,
            }),
            Err(SendError::Deadline) => Err(budget.exceeded().into()),
            Err(e) => Err(unavailable(service, &e).into()),
        }
    }
}

/// The 502 for a service that could not be reached; the cause is logged,
/// not sent.
pub fn unavailable(service: Service, cause: &SendError) -> Problem {
    eprintln!("gateway: {} unavailable: {cause}", service.name());
    Problem::new(
        ErrorCode::UpstreamUnavailable,
        format!("the {} service could not be reached", service.name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_retry_safe() {
        assert_eq!(forwarding_policy("GET", None), RetryPolicy::standard());
        assert_eq!(forwarding_policy("HEAD", None), RetryPolicy::standard());
    }

    #[test]
    fn writes_are_retried_only_with_an_idempotency_key() {
        let key = IdempotencyKey::parse("k-1").unwrap();
        for method in ["POST", "PATCH", "DELETE", "PUT"] {
            assert_eq!(
                forwarding_policy(method, None),
                RetryPolicy::once(),
                "{method}"
            );
            assert_eq!(
                forwarding_policy(method, Some(&key)),
                RetryPolicy::standard(),
                "{method}"
            );
        }
    }
}
