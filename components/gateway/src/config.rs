//! The gateway's settings, read once per request from Spin variables.

use meridian_platform::budget::BudgetConfig;
use meridian_platform::limits::{ConcurrencySettings, RateSettings, ThrottleConfig};
use meridian_platform::tenancy::cache::CacheConfig;

use crate::routes::Service;

/// Budget settings and where each downstream lives.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Default and maximum request budget.
    pub budget: BudgetConfig,
    /// Base URL of identity, without a trailing slash.
    pub identity_url: String,
    /// Base URL of community.
    pub community_url: String,
    /// Base URL of billing.
    pub billing_url: String,
    /// Tenant rate limits: the default policy, or off.
    pub rates: RateSettings,
    /// Tenant concurrency limits: the default limit, or off.
    pub concurrency: ConcurrencySettings,
    /// The overload throttle (Spin variable `admission`).
    pub throttle: ThrottleConfig,
    /// One request in this many writes a tenant's counts (its rate
    /// window, its throttle window), each for this many: 1 (the default)
    /// counts every request; more bounds the key-value writes a request
    /// rate makes, for a store with a write quota (Akamai Functions).
    pub count_sample: u32,
    /// Resolutions remembered in the shared store, or not.
    pub resolution_cache: CacheConfig,
    /// Whether a front proxy's `X-Request-Start` starts the budget.
    pub trust_request_start: bool,
    /// The platform admin's token (`None` when unset): the gateway checks
    /// it for every route that takes it before any call.
    pub admin_token: Option<String>,
}

impl GatewayConfig {
    /// The base URL of `service`.
    pub fn base_url(&self, service: Service) -> &str {
        match service {
            Service::Identity => &self.identity_url,
            Service::Community => &self.community_url,
            Service::Billing => &self.billing_url,
        }
    }
}
