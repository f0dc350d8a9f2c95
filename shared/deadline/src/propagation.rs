//! The budget on the wire: `x-meridian-deadline` (absolute epoch ms) and
//! `x-meridian-budget-ms` (relative), and the rule a receiver applies.
//!
//! Two headers and not one because each covers the other's weakness: the
//! absolute deadline survives transit time, the relative budget survives a
//! receiver whose clock runs behind. Taking the earlier of the two is safe in
//! both cases, and their disagreement is how clock skew shows itself.

use std::time::Duration;

use thiserror::Error;

use crate::deadline::Deadline;
use crate::time::{duration_ms, UnixMillis};

/// Largest relative budget a hop accepts (one day); anything longer is not a
/// request budget but a mistake.
pub const MAX_PROPAGATED_BUDGET: Duration = Duration::from_secs(86_400);

/// Disagreement between the two headers above which clock skew is reported.
pub const DEFAULT_SKEW_THRESHOLD: Duration = Duration::from_millis(250);

/// The header values to send with a call made at `now` under `deadline`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetHeaders {
    /// Value for `x-meridian-deadline`.
    pub deadline: String,
    /// Value for `x-meridian-budget-ms`.
    pub budget_ms: String,
}

impl BudgetHeaders {
    /// Encodes `deadline` as seen at `now`.
    pub fn encode(deadline: Deadline, now: UnixMillis) -> Self {
        Self {
            deadline: deadline.instant().as_millis().to_string(),
            budget_ms: duration_ms(deadline.remaining(now)).to_string(),
        }
    }
}

/// Why a hop could not read the budget it was sent.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PropagationError {
    /// `x-meridian-deadline` was not sent.
    #[error("x-meridian-deadline is missing")]
    MissingDeadline,
    /// `x-meridian-budget-ms` was not sent.
    #[error("x-meridian-budget-ms is missing")]
    MissingBudget,
    /// `x-meridian-deadline` is not a whole number of epoch milliseconds.
    #[error("x-meridian-deadline must be Unix epoch milliseconds, got {0:?}")]
    MalformedDeadline(String),
    /// `x-meridian-budget-ms` is not a whole number of milliseconds in range.
    #[error("x-meridian-budget-ms must be 0..=86400000 milliseconds, got {0:?}")]
    MalformedBudget(String),
}

/// What a receiving hop makes of the two headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedBudget {
    /// The local deadline: `min(header deadline, arrival + budget)`.
    pub deadline: Deadline,
    /// Sender's deadline minus `arrival + budget`, in ms, when it is larger
    /// than the threshold either way: the clocks disagree by about that much.
    pub skew_ms: Option<i64>,
}

impl ReceivedBudget {
    /// Reads the headers of a request that arrived at `arrival`.
    pub fn decode(
        deadline: Option<&str>,
        budget_ms: Option<&str>,
        arrival: UnixMillis,
        skew_threshold: Duration,
    ) -> Result<Self, PropagationError> {
        let deadline_raw = deadline.ok_or(PropagationError::MissingDeadline)?;
        let budget_raw = budget_ms.ok_or(PropagationError::MissingBudget)?;
        let sent_deadline = parse_millis(deadline_raw)
            .map(UnixMillis::from_millis)
            .ok_or_else(|| PropagationError::MalformedDeadline(deadline_raw.to_owned()))?;
        let budget = parse_millis(budget_raw)
            .map(Duration::from_millis)
            .filter(|b| *b <= MAX_PROPAGATED_BUDGET)
            .ok_or_else(|| PropagationError::MalformedBudget(budget_raw.to_owned()))?;

        let by_budget = arrival.plus(budget);
        let disagreement = signed_diff(sent_deadline, by_budget);
        let skew_ms =
            (disagreement.unsigned_abs() > duration_ms(skew_threshold)).then_some(disagreement);
        Ok(Self {
            deadline: Deadline::at(sent_deadline).min(Deadline::at(by_budget)),
            skew_ms,
        })
    }
}

/// ASCII digits only, at most 16 of them (enough for epoch ms until year 316889).
fn parse_millis(raw: &str) -> Option<u64> {
    let raw = raw.trim_matches(|c| c == ' ' || c == '\t');
    if raw.is_empty() || raw.len() > 16 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

/// `a - b` in ms, saturating at the ends of `i64`.
fn signed_diff(a: UnixMillis, b: UnixMillis) -> i64 {
    let diff = i128::from(a.as_millis()) - i128::from(b.as_millis());
    i64::try_from(diff.clamp(i128::from(i64::MIN), i128::from(i64::MAX))).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const THRESHOLD: Duration = DEFAULT_SKEW_THRESHOLD;

    fn at(ms: u64) -> UnixMillis {
        UnixMillis::from_millis(ms)
    }

    #[test]
    fn encoding_carries_the_instant_and_the_time_left() {
        let h = BudgetHeaders::encode(Deadline::at(at(1_700_000_000_400)), at(1_700_000_000_000));
        assert_eq!(h.deadline, "1700000000400");
        assert_eq!(h.budget_ms, "400");
    }

    #[test]
    fn an_expired_deadline_encodes_a_zero_budget() {
        let h = BudgetHeaders::encode(Deadline::at(at(10)), at(50));
        assert_eq!(h.budget_ms, "0");
    }

    #[test]
    fn a_receiver_keeps_the_sooner_deadline_and_reports_skew_past_the_threshold() {
        // (deadline sent, budget 400 ms, our clock at arrival, skew seen)
        for (sent, now, skew, case) in [
            ("10400", 10_000, None, "same host: the hops agree"),
            // Its deadline looks 5.4 s away to us: trust the budget.
            ("15400", 10_000, Some(5_000), "sender's clock 5 s ahead"),
            // The deadline is sooner than the budget: trust the deadline.
            ("10400", 11_000, Some(-1_000), "sender's clock 1 s behind"),
            ("10400", 10_030, None, "transit time below the threshold"),
        ] {
            let a = ReceivedBudget::decode(Some(sent), Some("400"), at(now), THRESHOLD).unwrap();
            assert_eq!(a.deadline, Deadline::at(at(10_400)), "{case}");
            assert_eq!(a.skew_ms, skew, "{case}");
        }
        let late =
            ReceivedBudget::decode(Some("10400"), Some("400"), at(11_000), THRESHOLD).unwrap();
        assert!(late.deadline.is_expired(at(11_000)));
    }

    #[test]
    fn missing_headers_are_named() {
        assert_eq!(
            ReceivedBudget::decode(None, Some("1"), at(0), THRESHOLD),
            Err(PropagationError::MissingDeadline)
        );
        assert_eq!(
            ReceivedBudget::decode(Some("1"), None, at(0), THRESHOLD),
            Err(PropagationError::MissingBudget)
        );
    }

    #[test]
    fn malformed_headers_are_refused() {
        for bad in ["", "-1", "1e3", "0x10", "12345678901234567", "1.0", "abc"] {
            assert!(matches!(
                ReceivedBudget::decode(Some(bad), Some("10"), at(0), THRESHOLD),
                Err(PropagationError::MalformedDeadline(_))
            ));
            assert!(matches!(
                ReceivedBudget::decode(Some("10"), Some(bad), at(0), THRESHOLD),
                Err(PropagationError::MalformedBudget(_))
            ));
        }
        assert!(matches!(
            ReceivedBudget::decode(Some("10"), Some("86400001"), at(0), THRESHOLD),
            Err(PropagationError::MalformedBudget(_))
        ));
    }

    #[test]
    fn skew_is_reported_only_above_the_threshold() {
        let now = 1_000_000;
        let decode = |sent: u64| {
            ReceivedBudget::decode(Some(&sent.to_string()), Some("500"), at(now), THRESHOLD)
                .unwrap()
        };
        // Sent deadline 250 ms past arrival + budget: at the threshold, fine.
        assert_eq!(decode(now + 500 + 250).skew_ms, None);
        assert_eq!(decode(now + 500 + 251).skew_ms, Some(251));
        assert_eq!(decode(now + 500 - 251).skew_ms, Some(-251));
    }

    #[test]
    fn spaces_and_tabs_around_the_numbers_are_allowed() {
        let a =
            ReceivedBudget::decode(Some(" 1500\t"), Some("\t500 "), at(1_000), THRESHOLD).unwrap();
        assert_eq!(a.deadline, Deadline::at(at(1_500)));
        assert!(ReceivedBudget::decode(Some("15 00"), Some("500"), at(1_000), THRESHOLD).is_err());
    }

    #[test]
    fn deadlines_have_at_most_sixteen_digits() {
        let sixteen = "1".repeat(16);
        assert!(ReceivedBudget::decode(Some(&sixteen), Some("5"), at(0), THRESHOLD).is_ok());
        let seventeen = "1".repeat(17);
        assert_eq!(
            ReceivedBudget::decode(Some(&seventeen), Some("5"), at(0), THRESHOLD),
            Err(PropagationError::MalformedDeadline(seventeen.clone()))
        );
    }

    #[test]
    fn the_difference_of_two_instants_saturates() {
        assert_eq!(signed_diff(at(5), at(3)), 2);
        assert_eq!(signed_diff(at(3), at(5)), -2);
        assert_eq!(signed_diff(at(u64::MAX), at(0)), i64::MAX);
        assert_eq!(signed_diff(at(0), at(u64::MAX)), i64::MIN);
    }

    proptest! {
        #[test]
        fn what_a_sender_encodes_a_same_clock_receiver_decodes(now in 0u64..1 << 52, budget in 0u64..86_400_000) {
            let deadline = Deadline::after(at(now), Duration::from_millis(budget));
            let h = BudgetHeaders::encode(deadline, at(now));
            let a = ReceivedBudget::decode(Some(&h.deadline), Some(&h.budget_ms), at(now), THRESHOLD).unwrap();
            prop_assert_eq!(a.deadline, deadline);
            prop_assert_eq!(a.skew_ms, None);
        }

        #[test]
        fn the_received_deadline_is_never_later_than_either_header(
            sent in 0u64..1 << 52, budget in 0u64..86_400_000, arrival in 0u64..1 << 52
        ) {
            let a = ReceivedBudget::decode(Some(&sent.to_string()), Some(&budget.to_string()), at(arrival), THRESHOLD).unwrap();
            prop_assert!(a.deadline.instant() <= at(sent));
            prop_assert!(a.deadline.remaining(at(arrival)) <= Duration::from_millis(budget));
        }

        #[test]
        fn decoding_arbitrary_text_never_panics(d in "\\PC{0,24}", b in "\\PC{0,24}", arrival in any::<u64>()) {
            let _ = ReceivedBudget::decode(Some(&d), Some(&b), at(arrival), THRESHOLD);
        }
    }
}
