//! The gateway over a scripted upstream in which every service is healthy:
//! identity resolves any credential to a manager of the tenant, and every
//! other call is answered with an empty JSON object at once.

use std::time::Duration;

use gateway::app::Gateway;
use gateway::config::GatewayConfig;
use meridian_platform::budget::BudgetConfig;
use meridian_platform::http::memory::MemoryConfig;
use meridian_platform::http::prelude::*;
use meridian_platform::http::{HttpClient, SendError};
use meridian_platform::limits::{ConcurrencySettings, RateSettings, ThrottleConfig};
use meridian_platform::tenancy::cache::CacheConfig;
use meridian_platform::time::ManualClock;
use meridian_platform::{RequestContext, UnixMillis};
use meridian_testing::{upstream, ManualEnv};

/// Where every fuzz input starts: the clock is set back here for each.
pub const START: UnixMillis = UnixMillis::from_millis(1_700_000_000_000);

const RESOLUTION: &str = r#"{"tenant_id":"0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01","actor_id":"9a1c2f4e-1111-4a55-9d3c-2f0c3b1f6a02","role":"manager"}"#;

thread_local! {
    /// One clock per thread, set back to [`START`] for every input (a new
    /// one per input would be memory a leak checker reports).
    static CLOCK: &'static ManualClock = Box::leak(Box::new(ManualClock::new(START)));
}

/// The thread's manual clock, set to [`START`].
pub fn clock() -> &'static ManualClock {
    let clock = CLOCK.with(|c| *c);
    clock.set(START);
    clock
}

/// Answers every call at once and well.
pub struct Healthy {
    clock: &'static ManualClock,
}

impl HttpClient for Healthy {
    async fn send(&self, _ctx: &RequestContext, request: Request) -> Result<Response, SendError> {
        self.clock.advance(Duration::from_millis(1));
        let body = if request.path() == "/internal/resolve" {
            RESOLUTION
        } else {
            "{}"
        };
        Ok(message::raw_json(StatusCode::OK, body.as_bytes().to_vec()))
    }
}

/// The gateway's environment over the healthy upstream and a manual clock.
pub type GatewayEnv = ManualEnv<Healthy>;

/// The gateway with its default limits, over [`Healthy`].
pub fn gateway() -> Gateway<GatewayEnv> {
    let clock = clock();
    Gateway {
        config: GatewayConfig {
            budget: BudgetConfig::new(Duration::from_millis(3_000), Duration::from_millis(10_000)),
            identity_url: "http://identity.test".into(),
            community_url: "http://community.test".into(),
            billing_url: "http://billing.test".into(),
            rates: RateSettings::default(),
            concurrency: ConcurrencySettings::default(),
            throttle: ThrottleConfig::default(),
            count_sample: 1,
            resolution_cache: CacheConfig::default(),
            trust_request_start: false,
            admin_token: Some("admin-secret".into()),
        },
        upstream: upstream(Healthy { clock }, clock, MemoryConfig::default()),
    }
}
