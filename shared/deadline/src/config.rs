//! The edge budget: how long a public request may take, from configuration
//! and the client's `x-meridian-timeout-ms`.

use std::time::Duration;

use thiserror::Error;

/// Budget used when the client asks for none (DESIGN.md default).
pub const DEFAULT_BUDGET: Duration = Duration::from_millis(3_000);
/// The most a client may ask for (DESIGN.md default).
pub const DEFAULT_MAX_BUDGET: Duration = Duration::from_millis(10_000);

/// The gateway's budget settings, from `request_budget_ms` and
/// `max_request_budget_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetConfig {
    default: Duration,
    max: Duration,
}

/// A budget setting that cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BudgetConfigError {
    /// A budget of zero would refuse every request.
    #[error("{0} must be at least 1 ms")]
    Zero(&'static str),
    /// The value is not a whole number of milliseconds.
    #[error("{0} must be a whole number of milliseconds, got {1:?}")]
    NotANumber(&'static str, String),
}

impl BudgetConfig {
    /// Settings from the two variables' text; the default is capped at the max.
    pub fn parse(default_ms: &str, max_ms: &str) -> Result<Self, BudgetConfigError> {
        let default = parse_setting("request_budget_ms", default_ms)?;
        let max = parse_setting("max_request_budget_ms", max_ms)?;
        Ok(Self::new(default, max))
    }

    /// Settings from durations; the default is capped at the max.
    pub fn new(default: Duration, max: Duration) -> Self {
        Self {
            default: default.min(max),
            max,
        }
    }

    /// The budget for a request that asked for none.
    pub fn default_budget(&self) -> Duration {
        self.default
    }

    /// The most any request may have.
    pub fn max_budget(&self) -> Duration {
        self.max
    }

    /// The budget for a request given its `x-meridian-timeout-ms` header:
    /// the default when absent, clamped to the max when larger.
    pub fn budget_for(&self, requested: Option<&str>) -> Result<Duration, InvalidTimeout> {
        match requested {
            None => Ok(self.default),
            Some(raw) => Ok(parse_client_timeout(raw)?.min(self.max)),
        }
    }
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self::new(DEFAULT_BUDGET, DEFAULT_MAX_BUDGET)
    }
}

fn parse_setting(name: &'static str, raw: &str) -> Result<Duration, BudgetConfigError> {
    let ms: u64 = raw
        .trim()
        .parse()
        .map_err(|_| BudgetConfigError::NotANumber(name, raw.to_owned()))?;
    if ms == 0 {
        return Err(BudgetConfigError::Zero(name));
    }
    Ok(Duration::from_millis(ms))
}

/// A client timeout header that is not a positive whole number of milliseconds.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("x-meridian-timeout-ms must be a whole number of milliseconds from 1 up, got {0:?}")]
pub struct InvalidTimeout(pub String);

/// Parses `x-meridian-timeout-ms`: ASCII digits only (surrounding spaces
/// allowed), at least 1. Numbers too large for `u64` are simply "large".
fn parse_client_timeout(raw: &str) -> Result<Duration, InvalidTimeout> {
    let digits = raw.trim_matches(|c| c == ' ' || c == '\t');
    let invalid = || InvalidTimeout(raw.to_owned());
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let ms = digits.parse::<u64>().unwrap_or(u64::MAX);
    if ms == 0 {
        return Err(invalid());
    }
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn config() -> BudgetConfig {
        BudgetConfig::new(ms(3_000), ms(10_000))
    }

    #[test]
    fn no_header_gets_the_default_budget() {
        assert_eq!(config().budget_for(None), Ok(ms(3_000)));
    }

    #[test]
    fn a_shorter_budget_is_granted_as_asked() {
        assert_eq!(config().budget_for(Some("1")), Ok(ms(1)));
        assert_eq!(config().budget_for(Some(" 400 ")), Ok(ms(400)));
    }

    #[test]
    fn a_larger_budget_is_clamped_to_the_max() {
        assert_eq!(config().budget_for(Some("60000")), Ok(ms(10_000)));
        assert_eq!(
            config().budget_for(Some("99999999999999999999999999")),
            Ok(ms(10_000))
        );
    }

    #[test]
    fn malformed_timeouts_are_refused() {
        for raw in ["", " ", "0", "-5", "+5", "1.5", "10ms", "abc", "1 000", "٣"] {
            assert!(config().budget_for(Some(raw)).is_err(), "{raw:?} accepted");
        }
    }

    #[test]
    fn the_default_never_exceeds_the_max() {
        let c = BudgetConfig::new(ms(20_000), ms(5_000));
        assert_eq!(c.default_budget(), ms(5_000));
    }

    #[test]
    fn settings_parse_from_variable_text() {
        assert_eq!(BudgetConfig::parse("3000", "10000"), Ok(config()));
        assert_eq!(
            BudgetConfig::parse("0", "10"),
            Err(BudgetConfigError::Zero("request_budget_ms"))
        );
        assert!(matches!(
            BudgetConfig::parse("3000", "ten"),
            Err(BudgetConfigError::NotANumber("max_request_budget_ms", _))
        ));
    }

    proptest! {
        #[test]
        fn any_accepted_budget_is_between_one_ms_and_the_max(raw in "\\PC*") {
            if let Ok(b) = config().budget_for(Some(&raw)) {
                prop_assert!(b >= ms(1) && b <= ms(10_000));
            }
        }

        #[test]
        fn any_digit_string_is_a_budget_unless_it_is_all_zeros(
            raw in "[ \t]{0,2}[0-9]{1,30}[ \t]{0,2}"
        ) {
            let digits = raw.trim_matches([' ', '\t']);
            let result = config().budget_for(Some(&raw));
            if digits.bytes().all(|b| b == b'0') {
                prop_assert!(result.is_err(), "{raw:?}");
            } else {
                let expected = digits.parse::<u64>().map_or(10_000, |n| n.min(10_000));
                prop_assert_eq!(result, Ok(ms(expected)));
            }
        }

        #[test]
        fn every_positive_number_is_accepted_and_clamped(n in 1u64..) {
            let b = config().budget_for(Some(&n.to_string())).unwrap();
            prop_assert_eq!(b, ms(n.min(10_000)));
        }
    }
}
