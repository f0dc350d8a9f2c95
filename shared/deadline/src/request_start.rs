//! A trusted front proxy's arrival stamp (`X-Request-Start`, as NGINX and
//! Heroku set it), so the budget starts when the request reached the edge
//! of the deployment, not when the gateway's instance got to run: time it
//! spent queued counts. Off unless configured: a client could send any
//! stamp, so only a proxy that overwrites the header may be trusted.

use std::time::Duration;

use crate::time::UnixMillis;

/// The header.
pub const X_REQUEST_START: &str = "x-request-start";

/// The arrival an `X-Request-Start` value states, if it is sane at `now`:
/// `t=` optional, then seconds (with a fraction: NGINX's `t=${msec}`),
/// milliseconds (13 digits) or microseconds (16 digits) since the epoch.
/// A stamp in the future (beyond 1 s of skew) or older than `max_age` is
/// ignored, and so is anything malformed: the gateway's own clock then
/// starts the budget.
pub fn parse(raw: &str, now: UnixMillis, max_age: Duration) -> Option<UnixMillis> {
    let value = raw.trim();
    let value = value.strip_prefix("t=").unwrap_or(value);
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if whole.is_empty()
        || whole.len() > 16
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let number: u64 = whole.parse().ok()?;
    let ms = match whole.len() {
        1..=10 => {
            let frac_ms: u64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
            number.checked_mul(1_000)?.checked_add(frac_ms)?
        }
        13 if fraction.is_empty() => number,
        16 if fraction.is_empty() => number / 1_000,
        _ => return None,
    };
    let stamp = UnixMillis::from_millis(ms);
    let skew = Duration::from_secs(1);
    let too_new = stamp.as_millis()
        > now
            .as_millis()
            .saturating_add(crate::time::duration_ms(skew));
    let too_old = now.since(stamp) > max_age;
    (!too_new && !too_old).then_some(stamp.min(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000_500;

    fn parsed(raw: &str) -> Option<u64> {
        parse(raw, UnixMillis::from_millis(NOW), Duration::from_secs(10)).map(|t| t.as_millis())
    }

    #[test]
    fn nginx_heroku_and_microsecond_stamps_are_read() {
        assert_eq!(parsed("t=1700000000.250"), Some(1_700_000_000_250));
        assert_eq!(parsed("1700000000.25"), Some(1_700_000_000_250));
        assert_eq!(parsed("t=1700000000"), Some(1_700_000_000_000));
        assert_eq!(parsed("1700000000400"), Some(1_700_000_000_400));
        assert_eq!(parsed("t=1700000000400123"), Some(1_700_000_000_400));
    }

    #[test]
    fn a_stamp_a_little_ahead_of_our_clock_is_now() {
        assert_eq!(parsed("1700000000900"), Some(NOW));
    }

    #[test]
    fn insane_stamps_are_ignored() {
        for raw in [
            "",
            "t=",
            "soon",
            "t=-5",
            "1700000000.x",
            "17000000004001",
            "1700000002000",
            "1699999990000",
            "t=1700000000.250.1",
            "１７００",
        ] {
            assert_eq!(parsed(raw), None, "{raw:?}");
        }
    }
}
