//! Spin variables, with the defaults of DESIGN.md's configuration table.

use std::sync::OnceLock;

use meridian_platform::budget::BudgetConfig;
use meridian_platform::http::memory::{AfterFailure, FailureSettings, MemoryConfig};
use meridian_platform::http::origin::{OriginError, PublicOrigin};
use meridian_platform::limits::{ConcurrencySettings, RateSettings, ThrottleConfig};
use meridian_platform::log::journal::{self, Event};
use meridian_platform::secrets::judge_secret;
use meridian_platform::settings::Settings;
use meridian_platform::tenancy::cache::CacheConfig;
use meridian_platform::wire::signature::CallKey;

/// A variable's value, or `None` when it is undefined or empty: from the
/// composed variable that holds its name when it holds it
/// (`settings`, or `after_failure` for the retry budget and the breaker),
/// else read on its own (`admin_token` where a
/// service reads it only where it is checked; a manifest without composed
/// settings).
pub fn get(name: &str) -> Option<String> {
    let value = match Composed::holding(name).read().lookup(name) {
        Some(value) => Some(value.to_owned()),
        None => spin_sdk::variables::get(name).ok(),
    };
    value.filter(|v| !v.trim().is_empty())
}

/// The component variables a component's settings are composed into
/// (meridian_platform::settings), by when a request needs them: each is
/// read at most once per instance (an instance serves one request), and
/// only once a value it holds is asked for. Spin expands a variable's whole
/// template at each read, one lookup per expression (docs/configuration.md,
/// "What a variable costs the host"), so what only a failure needs is
/// kept out of what every request reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Composed {
    /// `settings`: what the component's requests need.
    Settings,
    /// `after_failure`: the failure memory's retry budget and breaker
    /// (`FailureSettings`), read once a call failed.
    AfterFailure,
}

impl Composed {
    /// The composed variable that holds `name` in Meridian's manifests.
    fn holding(name: &str) -> Self {
        match FailureSettings::VARIABLES.contains(&name) {
            true => Self::AfterFailure,
            false => Self::Settings,
        }
    }

    /// Its value, parsed (empty when the manifest does not define it).
    fn read(self) -> &'static Settings {
        static SETTINGS: OnceLock<Settings> = OnceLock::new();
        static AFTER_FAILURE: OnceLock<Settings> = OnceLock::new();
        let (read, variable) = match self {
            Self::Settings => (&SETTINGS, "settings"),
            Self::AfterFailure => (&AFTER_FAILURE, "after_failure"),
        };
        read.get_or_init(|| {
            spin_sdk::variables::get(variable)
                .map(|raw| Settings::parse(&raw))
                .unwrap_or_default()
        })
    }
}

/// A variable's value, or `default`.
pub fn get_or(name: &str, default: &str) -> String {
    get(name).unwrap_or_else(|| default.to_owned())
}

/// The shared internal token; empty when unset (the gate then refuses every call).
/// Read once per instance (an instance serves one request): the secrets
/// check and the gate or the client share the one host call.
pub fn internal_token() -> String {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN
        .get_or_init(|| get("internal_token").unwrap_or_default())
        .clone()
}

/// The key internal calls are signed and checked with, derived from the
/// internal token ([`meridian_platform::wire::signature`]).
pub fn call_key() -> CallKey {
    CallKey::derive(&internal_token())
}

/// Whether the development switch (`allow_dev_secrets = "on"`, set by
/// the development scripts only) accepts weak deployment secrets. A
/// component variable of its own, outside `settings`: it is read only
/// when a secret is weak, so a sound deployment never pays for it.
fn dev_secrets_allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| get("allow_dev_secrets").as_deref() == Some("on"))
}

/// Why this component must not serve, when it must not: its internal
/// token, or the admin token where its settings hold it (the gateway's),
/// is missing, short or a published value
/// ([`meridian_platform::secrets::judge_secret`]) and the development
/// switch is off. The switch is read only when a secret is weak.
pub fn weak_secrets() -> Option<String> {
    let mut weak = Vec::new();
    if let Err(why) = judge_secret(Some(&internal_token())) {
        weak.push(format!("internal_token {why}"));
    }
    if Composed::Settings.read().lookup("admin_token").is_some() {
        if let Err(why) = judge_secret(get("admin_token").as_deref()) {
            weak.push(format!("admin_token {why}"));
        }
    }
    (!weak.is_empty() && !dev_secrets_allowed()).then(|| weak.join("; "))
}

/// The platform admin's token, where a service reads it: empty (which
/// refuses every request that presents one) when it is weak and the
/// development switch is off, with a log line saying why.
pub fn admin_token() -> String {
    let token = get("admin_token").unwrap_or_default();
    match judge_secret(Some(&token)) {
        Err(why) if !dev_secrets_allowed() => {
            journal::event(Event::Failure {
                what: "reading admin_token (refused: requests that need it are refused)",
                cause: format!("admin_token {why}"),
            });
            String::new()
        }
        _ => token,
    }
}

/// The app's public origin where the settings name one (a platform
/// without service chaining), parsed once per instance: the check that
/// refuses to serve and each service's URL read the same.
fn public_origin() -> Option<&'static Result<PublicOrigin, OriginError>> {
    static ORIGIN: OnceLock<Option<Result<PublicOrigin, OriginError>>> = OnceLock::new();
    ORIGIN
        .get_or_init(|| {
            Composed::Settings
                .read()
                .lookup("public_origin")
                .map(PublicOrigin::parse)
        })
        .as_ref()
}

/// The base URL of `service` without a trailing slash: behind the app's
/// public origin where the settings name one (empty when it is unusable,
/// which [`unusable_origin`] refuses to serve with), else its own variable
/// (`identity_url`, …), else `default`.
pub fn service_url(service: &str, variable: &str, default: &str) -> String {
    match public_origin() {
        Some(origin) => origin
            .as_ref()
            .map(|origin| origin.service_url(service))
            .unwrap_or_default(),
        None => get_or(variable, default).trim_end_matches('/').to_owned(),
    }
}

/// Why this component must not serve, when its settings name a public
/// origin it cannot call through (unset, or plain HTTP beyond loopback:
/// [`PublicOrigin::parse`]). Read from the settings alone: a component
/// without a public origin makes no host call for it.
pub fn unusable_origin() -> Option<String> {
    match public_origin()? {
        Ok(_) => None,
        Err(why) => Some(format!("public_origin {why}")),
    }
}

/// A setting, or its default when the variables that make it are
/// malformed: logged as a failure naming `what`, rather than refusing all
/// traffic over a typo.
fn or_default<T: Default, E: ToString>(what: &'static str, parsed: Result<T, E>) -> T {
    parsed.unwrap_or_else(|e| {
        journal::event(Event::Failure {
            what,
            cause: e.to_string(),
        });
        T::default()
    })
}

/// The failure memory's settings: those of its healthy path now, the
/// retry budget's and the breaker's once a call needs them
/// (`after_failure`, read by `failure_settings`).
pub fn memory_config() -> MemoryConfig {
    or_default(
        "reading the failure memory configuration (defaults used)",
        MemoryConfig::parse_healthy(get, AfterFailure::ReadBy(failure_settings)),
    )
}

/// The retry budget's and the breaker's settings, read once per instance
/// and only by one whose call failed (or found the breaker open).
fn failure_settings() -> FailureSettings {
    static SETTINGS: OnceLock<FailureSettings> = OnceLock::new();
    *SETTINGS.get_or_init(|| {
        or_default(
            "reading the retry budget and breaker settings (defaults used)",
            FailureSettings::parse(get),
        )
    })
}

/// The gateway's budget settings.
pub fn budget_config() -> BudgetConfig {
    let default = get_or("request_budget_ms", "3000");
    let max = get_or("max_request_budget_ms", "10000");
    or_default(
        "reading the budget configuration (defaults used)",
        BudgetConfig::parse(&default, &max),
    )
}

/// Tenant rate limits (`tenant_rate_limit`, one variable).
pub fn rate_settings() -> RateSettings {
    or_default(
        "reading the tenant rate limit (default used)",
        RateSettings::parse(get("tenant_rate_limit").as_deref()),
    )
}

/// Tenant concurrency limits (`tenant_concurrency_limit`, one variable).
pub fn concurrency_settings() -> ConcurrencySettings {
    or_default(
        "reading the tenant concurrency limit (default used)",
        ConcurrencySettings::parse(get("tenant_concurrency_limit").as_deref()),
    )
}

/// The resolution cache (`resolution_cache`: `on`, `off`).
pub fn resolution_cache() -> CacheConfig {
    or_default(
        "reading the resolution cache setting (on)",
        CacheConfig::parse(get("resolution_cache").as_deref()),
    )
}

/// How many requests one write of a tenant's counts stands for
/// (`count_sample`: 1 to 1,024, default 1: every request is counted).
pub fn count_sample() -> u32 {
    static SAMPLE: OnceLock<u32> = OnceLock::new();
    *SAMPLE.get_or_init(|| {
        or_default(
            "reading count_sample (1 used)",
            parse_count_sample(get("count_sample").as_deref()),
        )
        .max(1)
    })
}

/// `count_sample`'s value: unset is 1.
fn parse_count_sample(raw: Option<&str>) -> Result<u32, String> {
    match raw.map(str::trim) {
        None => Ok(1),
        Some(raw) => match raw.parse::<u32>() {
            Ok(n @ 1..=1_024) => Ok(n),
            _ => Err(format!("count_sample must be 1 to 1024, not {raw:?}")),
        },
    }
}

/// The overload throttle (variable `admission`: `on`, `off`, `proxy`).
pub fn throttle_config() -> ThrottleConfig {
    or_default(
        "reading the admission setting, the overload throttle (on)",
        ThrottleConfig::parse(get("admission").as_deref()),
    )
}

#[cfg(test)]
mod tests {
    use super::parse_count_sample;

    #[test]
    fn count_sample_is_one_unless_set_to_a_number_up_to_1024() {
        assert_eq!(parse_count_sample(None), Ok(1));
        assert_eq!(parse_count_sample(Some(" 64 ")), Ok(64));
        assert_eq!(parse_count_sample(Some("1024")), Ok(1_024));
        for bad in ["0", "1025", "-3", "lots", ""] {
            assert!(parse_count_sample(Some(bad)).is_err(), "{bad}");
        }
    }
}
