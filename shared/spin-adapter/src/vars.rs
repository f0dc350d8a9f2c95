//! Spin variables, with the defaults of DESIGN.md's configuration table.

use meridian_platform::budget::BudgetConfig;
use meridian_platform::http::memory::MemoryConfig;
use meridian_platform::limits::{AdmissionConfig, RateSettings};
use meridian_platform::log::journal::{self, Event};

/// A variable's value, or `None` when it is undefined or empty.
pub fn get(name: &str) -> Option<String> {
    spin_sdk::variables::get(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// A variable's value, or `default`.
pub fn get_or(name: &str, default: &str) -> String {
    get(name).unwrap_or_else(|| default.to_owned())
}

/// The shared internal token; empty when unset (the gate then refuses every call).
pub fn internal_token() -> String {
    get("internal_token").unwrap_or_default()
}

/// A downstream's base URL without a trailing slash.
pub fn service_url(variable: &str, default: &str) -> String {
    get_or(variable, default).trim_end_matches('/').to_owned()
}

/// The failure memory's settings (retry budget and breaker); malformed
/// values fall back to the defaults and say so in the log.
pub fn memory_config() -> MemoryConfig {
    MemoryConfig::parse(get).unwrap_or_else(|cause| {
        journal::event(Event::Failure {
            what: "reading the failure memory configuration (defaults used)",
            cause,
        });
        MemoryConfig::default()
    })
}

/// The gateway's budget settings; malformed values fall back to the defaults
/// (and say so in the log) rather than refusing all traffic.
pub fn budget_config() -> BudgetConfig {
    let default = get_or("request_budget_ms", "3000");
    let max = get_or("max_request_budget_ms", "10000");
    BudgetConfig::parse(&default, &max).unwrap_or_else(|e| {
        journal::event(Event::Failure {
            what: "reading the budget configuration (defaults used)",
            cause: e.to_string(),
        });
        BudgetConfig::default()
    })
}

/// Tenant rate limits (`tenant_rate_limit`, one variable); a malformed
/// value falls back to the default and says so in the log.
pub fn rate_settings() -> RateSettings {
    RateSettings::parse(get("tenant_rate_limit").as_deref()).unwrap_or_else(|cause| {
        journal::event(Event::Failure {
            what: "reading the tenant rate limit (default used)",
            cause,
        });
        RateSettings::default()
    })
}

/// Admission under overload (`admission`: `on`, `off`); a malformed value
/// keeps it on and says so in the log.
pub fn admission_config() -> AdmissionConfig {
    AdmissionConfig::parse(get("admission").as_deref()).unwrap_or_else(|cause| {
        journal::event(Event::Failure {
            what: "reading the admission setting (on)",
            cause,
        });
        AdmissionConfig::default()
    })
}
