//! A tenant's limits: the defaults (Spin variables) and the platform
//! admin's per-tenant overrides (kept in the key-value store, one value
//! for both limits).

use std::time::Duration;

use crate::wire::problem::FieldError;

/// The largest concurrency limit a setting or an override may give.
pub const MAX_CONCURRENCY: u32 = 10_000;

/// `n` as a limit of requests in progress, if it is one (1–10,000): the
/// one range the variable and an override are both held to.
pub fn limit_in_range(n: u64) -> Option<u32> {
    u32::try_from(n)
        .ok()
        .filter(|limit| (1..=MAX_CONCURRENCY).contains(limit))
}

/// At most `quota` requests in any `window`; and, when an override sets
/// it, at most `concurrency` in progress at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatePolicy {
    /// Requests allowed in one window (the burst).
    pub quota: u32,
    /// The window, whole seconds.
    pub window_s: u32,
    /// The tenant's limit of requests in progress (`None`: the
    /// deployment's default, `tenant_concurrency_limit`).
    pub concurrency: Option<u32>,
}

/// The largest quota a policy may set.
pub const MAX_QUOTA: u32 = 1_000_000;
/// The longest window, in seconds (an hour).
pub const MAX_WINDOW_S: u32 = 3_600;

impl Default for RatePolicy {
    /// Stripe's default of 100 requests a second on average, with a burst
    /// of twice that: 200 in any 2 s. A quiet tenant never meets it; one
    /// tenant flooding a 2-core node is held to about a quarter of what
    /// the node serves.
    fn default() -> Self {
        Self {
            quota: 200,
            window_s: 2,
            concurrency: None,
        }
    }
}

impl RatePolicy {
    /// A policy, if both numbers are in range (quota 1–1,000,000, window
    /// 1–3,600 s); the errors name the field.
    pub fn new(quota: u64, window_s: u64) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let quota = u32::try_from(quota)
            .ok()
            .filter(|q| (1..=MAX_QUOTA).contains(q));
        if quota.is_none() {
            errors.push(FieldError::new(
                "quota",
                format!("must be a whole number from 1 to {MAX_QUOTA}"),
            ));
        }
        let window_s = u32::try_from(window_s)
            .ok()
            .filter(|w| (1..=MAX_WINDOW_S).contains(w));
        if window_s.is_none() {
            errors.push(FieldError::new(
                "window_s",
                format!("must be a whole number of seconds from 1 to {MAX_WINDOW_S}"),
            ));
        }
        match (quota, window_s) {
            (Some(quota), Some(window_s)) => Ok(Self {
                quota,
                window_s,
                concurrency: None,
            }),
            _ => Err(errors),
        }
    }

    /// The same, with its own limit of requests in progress (1–10,000).
    pub fn with_concurrency(self, concurrency: u64) -> Result<Self, Vec<FieldError>> {
        match limit_in_range(concurrency) {
            Some(c) => Ok(Self {
                concurrency: Some(c),
                ..self
            }),
            None => Err(vec![FieldError::new(
                "concurrency",
                format!("must be a whole number from 1 to {MAX_CONCURRENCY}"),
            )]),
        }
    }

    /// The window as a duration.
    pub fn window(&self) -> Duration {
        Duration::from_secs(u64::from(self.window_s))
    }

    /// The numbers in one stored value (concurrency × 2⁴⁰, plus quota ×
    /// 2¹⁶, plus the window; concurrency 0 when the default applies), so
    /// an override is one key, read with the window's counts in one
    /// batch. A value stored before overrides had a concurrency reads the
    /// same.
    pub fn encode(&self) -> i64 {
        (i64::from(self.concurrency.unwrap_or(0)) << 40)
            | (i64::from(self.quota) << 16)
            | i64::from(self.window_s)
    }

    /// A stored override; `None` for an absent (0) or damaged value.
    pub fn decode(stored: i64) -> Option<Self> {
        let concurrency = u64::try_from(stored >> 40).ok()?;
        let quota = u64::try_from((stored >> 16) & 0xff_ffff).ok()?;
        let window_s = u64::try_from(stored & 0xffff).ok()?;
        let policy = Self::new(quota, window_s).ok()?;
        match concurrency {
            0 => Some(policy),
            c => policy.with_concurrency(c).ok(),
        }
    }
}

/// A tenant limit's setting, one Spin variable each: off, or on with the
/// value a tenant without an override gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSetting<T> {
    /// Off: no tenant is limited (and nothing is read or written).
    pub enabled: bool,
    /// What a tenant without an override gets.
    pub default: T,
}

impl<T> LimitSetting<T>
where
    Self: Default,
{
    /// The setting from its variable's value: unset (`None`) is the
    /// default, `off` turns it off, anything else is read by `on`.
    pub fn parse_with(
        raw: Option<&str>,
        on: fn(&str) -> Result<T, String>,
    ) -> Result<Self, String> {
        match raw.map(str::trim) {
            None => Ok(Self::default()),
            Some("off") => Ok(Self {
                enabled: false,
                ..Self::default()
            }),
            Some(raw) => Ok(Self {
                enabled: true,
                default: on(raw)?,
            }),
        }
    }
}

/// The rate limiter's settings: the Spin variable `tenant_rate_limit`,
/// one value so the gateway reads one variable: `<quota>/<seconds>s` (the
/// default, `200/2s`) or `off`.
pub type RateSettings = LimitSetting<RatePolicy>;

impl Default for RateSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            default: RatePolicy::default(),
        }
    }
}

impl RateSettings {
    /// The settings from the variable's value (`None`: unset, the default).
    pub fn parse(raw: Option<&str>) -> Result<Self, String> {
        Self::parse_with(raw, Self::policy)
    }

    fn policy(raw: &str) -> Result<RatePolicy, String> {
        let malformed = || {
            format!(
                "tenant_rate_limit must be <quota>/<seconds>s (such as 200/2s) or off, not {raw:?}"
            )
        };
        let (quota, window) = raw.split_once('/').ok_or_else(malformed)?;
        let window = window.strip_suffix('s').ok_or_else(malformed)?;
        let quota = quota.trim().parse::<u64>().map_err(|_| malformed())?;
        let window_s = window.trim().parse::<u64>().map_err(|_| malformed())?;
        RatePolicy::new(quota, window_s).map_err(|errors| {
            let why: Vec<String> = errors
                .iter()
                .map(|e| format!("{} {}", e.field, e.message))
                .collect();
            format!("tenant_rate_limit {raw:?}: {}", why.join("; "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_round_trips_through_its_stored_value() {
        for policy in [
            RatePolicy::default(),
            RatePolicy::new(1, 1).unwrap(),
            RatePolicy::new(1_000_000, 3_600).unwrap(),
            RatePolicy::new(1_000_000, 3_600)
                .unwrap()
                .with_concurrency(10_000)
                .unwrap(),
            RatePolicy::new(5, 1).unwrap().with_concurrency(1).unwrap(),
        ] {
            assert_eq!(RatePolicy::decode(policy.encode()), Some(policy));
        }
        assert_eq!(RatePolicy::decode(0), None, "absent");
        assert_eq!(RatePolicy::decode(-5), None, "damaged");
        let too_many = (20_000_i64 << 40) | RatePolicy::default().encode();
        assert_eq!(RatePolicy::decode(too_many), None, "damaged");
        // A value stored before overrides carried a concurrency.
        assert_eq!(
            RatePolicy::decode((200 << 16) | 2),
            Some(RatePolicy::default())
        );
    }

    #[test]
    fn a_concurrency_out_of_range_is_named() {
        for bad in [0, 10_001, u64::MAX] {
            let errors = RatePolicy::default().with_concurrency(bad).unwrap_err();
            assert_eq!(errors[0].field, "concurrency", "{bad}");
        }
    }

    #[test]
    fn out_of_range_numbers_are_named_by_field() {
        let errors = RatePolicy::new(0, 0).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["quota", "window_s"]);
        assert!(RatePolicy::new(1_000_001, 1).is_err());
        assert!(RatePolicy::new(1, 3_601).is_err());
    }

    #[test]
    fn settings_come_from_one_variable_with_a_default_and_precise_errors() {
        assert_eq!(RateSettings::parse(None), Ok(RateSettings::default()));
        let custom = RateSettings::parse(Some(" 50/10s ")).unwrap();
        assert_eq!(custom.default, RatePolicy::new(50, 10).unwrap());
        assert!(!RateSettings::parse(Some("off")).unwrap().enabled);
        for bad in ["maybe", "0/1s", "10/0s", "10/1", "ten/1s", "10/s", "/1s"] {
            let err = RateSettings::parse(Some(bad)).unwrap_err();
            assert!(err.contains("tenant_rate_limit"), "{bad}: {err}");
        }
        assert!(RateSettings::parse(Some("0/1s"))
            .unwrap_err()
            .contains("quota"));
    }
}
