//! The platform admin's view and overrides of a tenant's limits:
//! `GET`, `PUT` and `DELETE /ops/tenants/{tenant}/limits`.

use meridian_platform::http::prelude::*;
use meridian_platform::http::upstream::Calls;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::limits::RatePolicy;
use meridian_platform::tenancy::TenantSlug;
use meridian_platform::{ErrorCode, Problem};

use crate::exchange::Exchange;
use crate::outcome::Refusal;

impl<E: Calls> Exchange<'_, E> {
    /// `GET`, `PUT` or `DELETE /ops/tenants/{tenant}/limits`: the
    /// platform admin reads, sets or removes a tenant's override.
    pub fn tenant_limits(&mut self, request: &Request) -> Result<Response, Refusal> {
        self.require_admin(request)?;
        let slug = request
            .path()
            .trim_start_matches('/')
            .split('/')
            .nth(2)
            .and_then(|s| TenantSlug::parse(s).ok())
            .ok_or_else(|| Problem::new(ErrorCode::TenantNotFound, "no such tenant"))?;
        let limiter = crate::rate::limiter(self.upstream, self.config, slug.as_str(), None);
        let unavailable = |cause: String| {
            Problem::new(
                ErrorCode::UpstreamUnavailable,
                format!("the limits store could not be used: {cause}"),
            )
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
        };
        match request.method().as_str() {
            "PUT" => {
                let policy = parse_policy(request.body())?;
                limiter.set_override(Some(policy)).map_err(unavailable)?;
            }
            "DELETE" => limiter.set_override(None).map_err(unavailable)?,
            _ => {}
        }
        let stored = limiter.stored_override().map_err(unavailable)?;
        let (policy, source) = match stored {
            Some(policy) => (policy, "override"),
            None => (self.config.rates.default, "default"),
        };
        Ok(message::json(
            StatusCode::OK,
            &serde_json::json!({
                "tenant": slug.as_str(),
                "quota": policy.quota,
                "window_s": policy.window_s,
                "concurrency": policy.concurrency.unwrap_or(self.config.concurrency.default),
                "source": source,
                "enabled": self.config.rates.enabled,
                "concurrency_enabled": self.config.concurrency.enabled,
            }),
        ))
    }
}

/// `{"quota": n, "window_s": s}`, and optionally `"concurrency": c`,
/// validated field by field.
fn parse_policy(body: &[u8]) -> Result<RatePolicy, Problem> {
    use meridian_platform::limits::{concurrency::MAX_CONCURRENCY, policy};
    let mut json = JsonBody::parse(body)?;
    let quota = json.integer("quota", 1, i64::from(policy::MAX_QUOTA));
    let window = json.integer("window_s", 1, i64::from(policy::MAX_WINDOW_S));
    let concurrency = json.optional_integer("concurrency", 1, i64::from(MAX_CONCURRENCY));
    let (quota, window, concurrency) = json.complete((quota, window, concurrency))?;
    let number = |n: i64| u64::try_from(n).unwrap_or(0);
    let policy = RatePolicy::new(number(quota), number(window)).map_err(Problem::validation)?;
    match concurrency {
        Some(c) => policy
            .with_concurrency(number(c))
            .map_err(Problem::validation),
        None => Ok(policy),
    }
}
