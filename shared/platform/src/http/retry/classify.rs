//! Which failures are transient, from a response's status and problem code.

use std::time::Duration;

use http::StatusCode;

/// What one attempt's result means for the retry loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The answer is final (success or not); do not try again.
    Final,
    /// A transient failure; another attempt may succeed.
    Transient {
        /// The server's `Retry-After`, when it sent one we understand.
        retry_after: Option<Duration>,
    },
}

/// Classifies an HTTP answer: 502 and 503 are transient, and so is a 504,
/// with two exceptions that come from Meridian's own services. A downstream
/// `deadline_exceeded` is final because the shared budget is gone, so another
/// attempt cannot help. A downstream `upstream_unavailable` is final because
/// that service already retried its own dependency. Only the layer next to a
/// failure retries it, so one fault costs each service at most one policy's
/// attempts rather than a product of every layer's. Everything else is final.
pub fn classify_status(
    status: StatusCode,
    problem_code: Option<&str>,
    retry_after: Option<&str>,
) -> Verdict {
    let already_retried_below = matches!(
        problem_code,
        Some("deadline_exceeded" | "upstream_unavailable")
    );
    let transient = matches!(
        status,
        StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT
    ) && !already_retried_below;
    if transient {
        Verdict::Transient {
            retry_after: retry_after.and_then(parse_retry_after),
        }
    } else {
        Verdict::Final
    }
}

/// `Retry-After` as delta-seconds. HTTP-date values are not honoured (a
/// deadline is milliseconds away; a date one second in the future is already
/// too coarse to be useful) and read as absent.
pub fn parse_retry_after(raw: &str) -> Option<Duration> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > 9 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> StatusCode {
        StatusCode::from_u16(code).unwrap()
    }

    #[test]
    fn bad_gateway_and_unavailable_are_transient() {
        assert_eq!(
            classify_status(status(502), None, None),
            Verdict::Transient { retry_after: None }
        );
        assert_eq!(
            classify_status(status(503), None, Some("1")),
            Verdict::Transient {
                retry_after: Some(Duration::from_secs(1))
            }
        );
    }

    #[test]
    fn a_downstream_deadline_is_final_but_a_proxy_timeout_is_not() {
        assert_eq!(
            classify_status(status(504), Some("deadline_exceeded"), None),
            Verdict::Final
        );
        assert_eq!(
            classify_status(status(504), None, None),
            Verdict::Transient { retry_after: None }
        );
    }

    #[test]
    fn a_downstream_that_already_retried_is_not_retried_again() {
        for status in [502, 503] {
            assert_eq!(
                classify_status(
                    self::status(status),
                    Some("upstream_unavailable"),
                    Some("1")
                ),
                Verdict::Final,
                "{status}"
            );
        }
        // The same status without the problem code is a transport-level
        // failure next to the caller: the caller retries it.
        assert_eq!(
            classify_status(status(503), None, None),
            Verdict::Transient { retry_after: None }
        );
    }

    #[test]
    fn successes_client_errors_and_500s_are_final() {
        for status in [200, 201, 204, 400, 401, 404, 409, 422, 500, 501] {
            assert_eq!(
                classify_status(self::status(status), None, None),
                Verdict::Final,
                "{status}"
            );
        }
    }

    #[test]
    fn retry_after_accepts_only_delta_seconds() {
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("1.5"), None);
        // Nine digits at most: more is no delay we could ever wait out.
        assert_eq!(
            parse_retry_after("999999999"),
            Some(Duration::from_secs(999_999_999))
        );
        assert_eq!(parse_retry_after("1234567890"), None);
        assert_eq!(parse_retry_after(""), None);
    }
}
